"""A card's headings and sections, found without `re`: the one finder of a card's
`## History` for the card parser (store/cards/card.py), the PreToolUse hook cutting a
rule's text (it imports no `re`) and the session's lessons.

A heading is a Markdown ATX heading of the body outside code fences (``` or ~~~, closed
only by the same character, at least as long: CommonMark); the History is the first
level-2 heading named History, in any case, to the next level-1 or level-2 heading.
"""
from __future__ import annotations

from .frontmatter import split


def lines_of(text: str) -> list[str]:
    """Lines with their endings, split at \\n only: str.splitlines also splits at form
    feeds, U+2028 and the like, which are ordinary characters inside a card's lines."""
    out = text.split("\n")
    last = out.pop()
    return [ln + "\n" for ln in out] + ([last] if last else [])


def headings(text: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, heading text, char offset) of the body's headings outside code
    fences: where a Markdown document divides (an importer splits a CLAUDE.md there)."""
    out: list[tuple[int, int, str, int]] = []
    fence, offset = "", 0
    span = split(text)
    body_start = span[2] if span else 0
    for i, ln in enumerate(lines_of(text)):
        if offset >= body_start:
            line = ln.rstrip("\r\n")
            f = _fence(line)
            if fence:
                if f and f[0] == fence[0] and len(f) >= len(fence) \
                        and not line.strip()[len(f):].strip():
                    fence = ""
            elif f:
                fence = f
            elif h := _heading(line):
                out.append((i, h[0], h[1], offset))
        offset += len(ln)
    return out


def section_span(text: str, title: str) -> tuple[int, int] | None:
    """(start, stop) of the first `## <title>` section: its heading to the next level-1/2
    heading (or the end), blank lines included; None without one."""
    heads = headings(text)
    for n, (_, level, name, off) in enumerate(heads):
        if level == 2 and name.strip().lower() == title.lower():
            return off, next((o for _, lv, _, o in heads[n + 1:] if lv <= 2), len(text))
    return None


def history_span(text: str) -> tuple[int, int] | None:
    """(start, stop) of a card's `## History` section, or None (most cards have none:
    one search spares them the heading walk)."""
    return section_span(text, "History") if "history" in text.casefold() else None


def _indent(line: str) -> int:
    i = 0
    while i < 3 and line.startswith(" ", i):
        i += 1
    return i


def _fence(line: str) -> str:
    """The run of ``` or ~~~ (3 or more) a fence line starts with, or ""."""
    i = _indent(line)
    mark = line[i:i + 1]
    if mark not in ("`", "~"):
        return ""
    j = i
    while line.startswith(mark, j):
        j += 1
    return line[i:j] if j - i >= 3 else ""


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (closing #s and blanks taken off), or None."""
    i = _indent(line)
    j = i
    while line.startswith("#", j):
        j += 1
    if not 1 <= j - i <= 6 or not line.startswith((" ", "\t"), j):
        return None
    name = line[j:].strip(" \t")
    closing = name.rstrip("#")
    if closing != name and closing.endswith((" ", "\t")):
        name = closing.rstrip(" \t")
    return (j - i, name) if name else None
