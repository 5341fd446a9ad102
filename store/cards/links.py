"""Wikilinks in a card's text: `[[target]]`, `[[target#section]]`, `[[target|label]]`.

Links inside code (fenced blocks, by markdown.py's rules, and `inline code`) are not links:
`[[tool.uv.index]]` in a TOML example is no wikilink. What a target names is its `key`, the
same for every reader (the broken-link finder, rm and mv): `[[/Reference/API.md]]` names
`reference/api`.
"""
from __future__ import annotations

import re
from typing import Iterator

from .markdown import code_spans

LINK = re.compile(r"\[\[([^\[\]|#\n]+)(#[^\[\]|\n]*)?(\|[^\[\]\n]*)?\]\]")
_INLINE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)


def _blank(m: re.Match[str]) -> str:
    return _spaces(m.group(0))


def _spaces(code: str) -> str:
    return re.sub(r"[^\n]", " ", code)


def without_code(text: str) -> str:
    """text with its code (fenced blocks, then inline code) blanked, newlines and offsets kept."""
    out, last = [], 0
    for a, b in code_spans(text):
        out += [text[last:a], _spaces(text[a:b])]
        last = b
    out.append(text[last:])
    return _INLINE.sub(_blank, "".join(out))


def links(text: str) -> Iterator[tuple[str, int]]:
    """(target, offset) of each wikilink outside code; offsets are into `text`."""
    if "[[" not in text:  # most cards: no blanking of their code for nothing
        return
    plain = without_code(text)
    for m in LINK.finditer(plain):
        yield m.group(1).strip(), m.start(1)


def key(name: str) -> str:
    """What a link target or a card's id, title or alias is compared by: case and runs
    of spaces aside, a leading or trailing "/" and a ".md" ending aside."""
    return " ".join(name.removesuffix(".md").strip("/").casefold().split())


def relink(text: str, target: str, new: str) -> str:
    """text with every link to `target` (outside code) pointing at `new`, label and
    section kept; every other byte as it was."""
    plain = without_code(text)
    out, last = [], 0
    for m in LINK.finditer(plain):
        if m.group(1).strip() == target:
            out.append(text[last:m.start(1)] + new)
            last = m.end(1)
    return "".join(out) + text[last:]
