"""Wikilinks in a card's text: `[[target]]`, `[[target#section]]`, `[[target|label]]`.

Links inside code (fenced blocks, `inline code`) are not links: `[[tool.uv.index]]` in a
TOML example is no wikilink. What a target names is its `key`, the same for every reader
(the broken-link finder, rm and mv): `[[/Reference/API.md]]` names `reference/api`.
"""
from __future__ import annotations

import re
from typing import Iterator

LINK = re.compile(r"\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(\|[^\[\]\n]*)?\]\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.M | re.S)
_INLINE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _blank(m: re.Match[str]) -> str:
    return re.sub(r"[^\n]", " ", m.group(0))


def links(text: str) -> Iterator[tuple[str, int]]:
    """(target, offset) of each wikilink outside code; offsets are into `text`."""
    if "[[" not in text:  # most cards: no blanking of their code for nothing
        return
    plain = _INLINE.sub(_blank, _FENCE.sub(_blank, text))
    for m in LINK.finditer(plain):
        yield m.group(1).strip(), m.start(1)


def key(name: str) -> str:
    """What a link target or a card's id, title or alias is compared by: case and runs
    of spaces aside, a leading or trailing "/" and a ".md" ending aside."""
    return " ".join(name.removesuffix(".md").strip("/").casefold().split())


def relink(text: str, target: str, new: str) -> str:
    """text with every link to `target` (outside code) pointing at `new`, label and
    section kept; every other byte as it was."""
    plain = _INLINE.sub(_blank, _FENCE.sub(_blank, text))
    out, last = [], 0
    for m in LINK.finditer(plain):
        if m.group(1).strip() == target:
            out.append(text[last:m.start(1)] + new)
            last = m.end(1)
    return "".join(out) + text[last:]
