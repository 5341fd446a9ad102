"""A card body's headings and sections outside code fences, and its `## History`: the one
finder of a card's History (the pile's lessons, a rule's text, maintain, filing).

Plain string operations, no `re`: a rule's text is cut here in the PreToolUse hook, which
imports no `re` (tests/hosts/test_pretool.py). Headings as CommonMark's ATX headings: up
to three spaces, one to six `#`, a space or tab, the text, an optional closing run of
`#`; a fence of three or more backticks or tildes closes only on the same character, at
least as long, so a ``` inside a ```` block or a ~~~ block does not end it.
"""
from __future__ import annotations

from functools import lru_cache

from .frontmatter import split


def lines(text: str) -> list[str]:
    """Lines with their endings, split at \\n only: str.splitlines also splits at form
    feeds, U+2028 and the like, which are ordinary characters inside a card's lines."""
    out = text.split("\n")
    last = out.pop()
    return [ln + "\n" for ln in out] + ([last] if last else [])


def _indent(line: str) -> int | None:
    """Where a line's text starts after at most three spaces (None: indented more)."""
    i = len(line) - len(line.lstrip(" "))
    return i if i <= 3 else None


def _fence(line: str) -> str:
    """The run of three or more backticks or tildes a line opens with, or ""."""
    i = _indent(line)
    if i is None or line[i:i + 1] not in ("`", "~"):
        return ""
    run = len(line) - i - len(line[i:].lstrip(line[i]))
    return line[i:i + run] if run >= 3 else ""


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line, or None."""
    i = _indent(line)
    if i is None or line[i:i + 1] != "#":
        return None
    rest = line[i:].lstrip("#")
    level = len(line) - i - len(rest)
    if level > 6 or rest[:1] not in (" ", "\t"):
        return None
    text = rest.lstrip(" \t").rstrip(" \t")
    closed = text.rstrip("#")
    if closed != text and closed[-1:] in (" ", "\t"):  # a closing run after a space
        text = closed.rstrip(" \t")
    return level, text


def headings(text: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, heading text, char offset) of the body's headings outside code
    fences: where a Markdown document divides (an importer splits a CLAUDE.md there)."""
    out: list[tuple[int, int, str, int]] = []
    fence, offset = "", 0
    span = split(text)
    body_start = span[2] if span else 0
    for i, ln in enumerate(lines(text)):
        if offset >= body_start and ln.lstrip(" ")[:1] in ("#", "`", "~"):
            line = ln.rstrip("\r\n")
            f = _fence(line)
            if fence:
                if f and f[0] == fence[0] and len(f) >= len(fence) \
                        and not line.strip()[len(f):].strip():
                    fence = ""
            elif f:
                fence = f
            elif (h := _heading(line)) and h[1]:
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
    """(start, stop) in a card's text of its `## History` section: section_span's (the
    first level-2 heading named History, in any case, outside code), or None."""
    if "##" not in text or "history" not in text.lower():  # most cards: no heading walk
        return None
    return _history_span(text)


@lru_cache(maxsize=8192)  # maintain asks three times per card: its text, lines, length
def _history_span(text: str) -> tuple[int, int] | None:
    return section_span(text, "History")


def history(text: str) -> list[str]:
    """The entries of a card text's History section, oldest first (no YAML needed)."""
    if (span := history_span(text)) is None:
        return []
    start, stop = span  # blank lines at its end are no entries: no need to trim them
    return [ln[2:].strip() for ln in lines(text[start:stop])[1:] if ln.startswith("- ")]
