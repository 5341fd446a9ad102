"""A card's `## History` section, found with plain string operations: the one finder.

The card parser (card.history, card.history_span), maintain, the session-start pile and
the PreToolUse hook (a rule's text without its History, when the rule fires) all read
a card's History here, so they agree on which section it is: the first level-2 heading
named History (any case, closing #s and blanks aside) outside code fences and after the
frontmatter, to the next level-1 or level-2 heading. No `re`: the hook imports none
(tests/hosts/test_pretool.py). card.section_span's regular expressions are the same rules
(tests/store/test_history_section.py holds the two together).
"""
from __future__ import annotations

from .frontmatter import split

TITLE = "history"


def history_span(text: str, body: bool = False) -> tuple[int, int] | None:
    """(start, stop) in text of its History section: the heading line to the next level-1/2
    heading (or the end), blank lines included; None without one. body: text is a card's
    body (what follows its frontmatter), not the whole card."""
    fence, offset, start = "", 0, -1
    span = None if body else split(text)
    body_start = span[2] if span else 0
    for ln in text.split("\n"):
        at, offset = offset, offset + len(ln) + 1
        if at < body_start:
            continue
        line = ln.rstrip("\r")
        run = _fence(line)
        if fence:
            if run and run[0] == fence[0] and len(run) >= len(fence) \
                    and not line.strip()[len(run):].strip():
                fence = ""
        elif run:
            fence = run
        elif (head := _heading(line)) is not None and head[0] <= 2:
            if start >= 0:
                return start, at
            if head[0] == 2 and head[1].strip().lower() == TITLE:
                start = at
    return (start, len(text)) if start >= 0 else None


def history_entries(text: str, span: tuple[int, int] | None | bool = True) -> list[str]:
    """The entries (`- ` lines) of text's History section, oldest first, without the
    `- `; span: history_span(text), when the caller has it."""
    if span is True:
        span = history_span(text)
    if not span:
        return []
    start, stop = span  # blank lines at its end are no entries: no need to trim them
    return [ln[2:].strip() for ln in text[start:stop].split("\n")[1:] if ln.startswith("- ")]


def _indent(line: str) -> int:
    """Leading spaces, when at most 3 (a fence or heading may start there); else -1."""
    n = len(line) - len(line.lstrip(" "))
    return n if n <= 3 else -1


def _fence(line: str) -> str:
    """The run of 3+ backticks or tildes a fence line starts with, or ""."""
    n = _indent(line)
    if n < 0 or n == len(line) or line[n] not in "`~":
        return ""
    rest = line[n:]
    run = rest[:len(rest) - len(rest.lstrip(rest[0]))]
    return run if len(run) >= 3 else ""


def _heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (`## Name ##`), or None."""
    n = _indent(line)
    if n < 0:
        return None
    rest = line[n:].lstrip("#")
    level = len(line) - n - len(rest)
    name = rest.lstrip(" \t")
    if not 1 <= level <= 6 or name == rest:  # 7+ #s, or no blank after them: no heading
        return None
    name = name.rstrip(" \t")
    bare = name.rstrip("#")
    if bare != name and bare[-1:] in (" ", "\t"):  # closing #s after a blank
        name = bare.rstrip(" \t")
    return (level, name) if name else None
