"""A fast path for the frontmatter most cards have, used when indexing many cards.

PyYAML (even its C loader) builds each document through Python-level constructors:
a five-key card parsed 0.12 ms through YAML and 0.03 ms here (3,000 parses each, Nov 30),
so at 10k cards about a second saved per full index. Most frontmatter is a
flat run of `key: value` and `key: [a, b]` lines. `quick_meta` reads exactly that subset
and returns None for anything else (nesting, block lists, escapes, anchors, comments
after values, numbers, nulls, booleans...), so the caller falls back to card.parse. The
values it accepts are strings, decided with the card loader's own implicit resolvers, so
the result equals what card.parse would give (tests/store/test_index.py holds this).
"""
from __future__ import annotations

import re
from typing import Any

from .card import Card, _Loader, from_meta

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Characters YAML refuses or treats specially anywhere in a line: fall back.
_UNSAFE = re.compile(r"[\t\\\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
# The card loader's implicit resolvers (int, float, null, bool...), one regex per first
# character, as YAML looks them up.
_RESOLVERS = {first: tuple(rx for _, rx in resolvers)
              for first, resolvers in _Loader.yaml_implicit_resolvers.items() if resolvers}
_FLOW_SPECIAL = re.compile(r"[,\[\]{}]")


_SEEN: dict[tuple[str, bool], str | None] = {}  # keys, types and tags repeat across cards


def _plain(value: str, flow: bool) -> str | None:
    """A plain scalar that YAML reads as this very string, else None (memoised)."""
    try:
        return _SEEN[value, flow]
    except KeyError:
        pass
    if len(_SEEN) > 50_000:
        _SEEN.clear()
    out = _SEEN[value, flow] = _plain_uncached(value, flow)
    return out


def _plain_uncached(value: str, flow: bool) -> str | None:
    if not value or value[0] in _INDICATORS or ": " in value or " #" in value:
        return None
    if value[-1] == ":" or (flow and _FLOW_SPECIAL.search(value)):
        return None
    for rx in _RESOLVERS.get(value[0], ()):
        if rx.match(value):
            return None  # a number, null, bool, merge key...: let YAML decide
    return value


def _quoted(value: str) -> str | None:
    if len(value) < 2 or value[0] != value[-1]:
        return None
    inner = value[1:-1]
    if value[0] == '"':
        return inner if '"' not in inner else None
    if value[0] == "'":
        out = inner.replace("''", "")
        return inner.replace("''", "'") if "'" not in out else None
    return None


def _scalar(value: str, flow: bool = False) -> str | None:
    if value[:1] in ("'", '"'):
        return _quoted(value)
    return _plain(value, flow)


def _flow_list(value: str) -> list[str] | None:
    inner = value[1:-1].strip()
    if not inner:
        return []
    if "'" in inner or '"' in inner:  # commas inside quotes: split only simple cases
        parts = re.findall(r"""\s*("[^"]*"|'[^']*'|[^,'"]+)\s*(?:,|$)""", inner)
        if ",".join(parts).replace(" ", "") != inner.replace(" ", "").rstrip(","):
            return None
    else:
        parts = inner.split(",")
        if parts[-1].strip() == "":
            parts.pop()  # YAML allows one trailing comma
    out = []
    for p in parts:
        item = _scalar(p.strip(), flow=True)
        if item is None:
            return None
        out.append(item)
    return out


def quick_meta(block: str) -> dict[str, Any] | None:
    """The frontmatter mapping if it is flat and simple, else None (use YAML)."""
    if _UNSAFE.search(block):
        return None
    meta: dict[str, Any] = {}
    for line in block.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if not colon or not _KEY.fullmatch(key) or _plain(key, False) is None:
            return None
        if value[:1] != " ":
            return None  # `key:` is null in YAML and `a:b` a plain string: let YAML say so
        value = value.strip(" ")
        if not value:
            return None
        if value[0] == "[" and value[-1] == "]":
            parsed: Any = _flow_list(value)
        else:
            parsed = _scalar(value)
        if parsed is None:
            return None
        meta[key] = parsed
    return meta


def parse(cardlib: Any, text: str, card_id: str, path: Any = None) -> Card:
    """card.parse, through the fast path when the frontmatter allows it."""
    span = cardlib.split(text)
    meta = quick_meta(text[span[0]:span[1]]) if span else None
    if meta is None:
        return cardlib.parse(text, card_id, path)
    return from_meta(card_id, meta, text, span[2], path)
