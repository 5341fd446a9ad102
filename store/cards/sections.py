"""A card's `## History` section, found with plain string operations: the one finder.

The card parser (card.history, card.history_span), maintain, the session-start pile and
the PreToolUse hook (a rule's text without its History, when the rule fires) all read
a card's History here, so they agree on which section it is: the first level-2 heading
named History (any case, closing #s and blanks aside) outside code fences and after the
frontmatter, to the next level-1 or level-2 heading. Fences and headings by markdown.py's
rules, as card.section_span reads them. No `re`: the hook imports none
(tests/hosts/test_pretool.py).
"""
from __future__ import annotations

from .frontmatter import split
from .markdown import closes, fence, heading

TITLE = "history"


def history_span(text: str, body: bool = False) -> tuple[int, int] | None:
    """(start, stop) in text of its History section: the heading line to the next level-1/2
    heading (or the end), blank lines included; None without one. body: text is a card's
    body (what follows its frontmatter), not the whole card."""
    inside, offset, start = "", 0, -1
    span = None if body else split(text)
    body_start = span[2] if span else 0
    for ln in text.split("\n"):
        at, offset = offset, offset + len(ln) + 1
        if at < body_start:
            continue
        line = ln.rstrip("\r")
        if inside:
            if closes(line, inside):
                inside = ""
        elif run := fence(line):
            inside = run
        elif (head := heading(line)) is not None and head[0] <= 2:
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
