"""A fast path for the frontmatter most cards have, used when indexing many cards.

PyYAML (even its C loader) builds each document through Python-level constructors,
several times slower than this reader on a five-key card: a cost a full index pays once
per card (bench/RESULTS.md, "Figures from comments"). Most frontmatter is a
flat run of `key: value` and `key: [a, b]` lines. `quick_meta` reads exactly that subset
and returns None for anything else (nesting, block lists, escapes, anchors, comments
after values, numbers, nulls, booleans...), so the caller falls back to card.parse. The
values it accepts are strings, decided with the card loader's own implicit resolvers, so
the result equals what card.parse would give (tests/store/index/test_index.py holds this).

A cold index runs this once per card, so it is written for speed: keys and plain values
repeat across cards (type, status, tags, dates) and are memoised; a line of printable
characters skips the unsafe-character regex.
"""
from __future__ import annotations

import re
from typing import Any

from ..cards import card as cardlib
from ..cards.card import _Loader

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
# Characters YAML refuses or treats specially anywhere in a line, and the line breaks
# other than \n that YAML or str.splitlines know (\r, \x85, \u2028...): fall back.
_UNSAFE = re.compile(
    r"[\t\\\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# The card loader's implicit resolvers (int, float, null, bool...), one regex per first
# character, as YAML looks them up.
_RESOLVERS = {first: tuple(rx for _, rx in resolvers)
              for first, resolvers in _Loader.yaml_implicit_resolvers.items() if resolvers}
_FLOW_SPECIAL = re.compile(r"[,\[\]{}]")
_FLOW_QUOTED = re.compile(r"""\s*("[^"]*"|'[^']*'|[^,'"]+)\s*(?:,|$)""")

# Memos (keys, types, tags and dates repeat across cards), cleared when they grow large.
_MISS = object()
_SEEN_BLOCK: dict[str, str | None] = {}  # plain scalar -> itself or None, as a mapping value
_SEEN_FLOW: dict[str, str | None] = {}  # the same inside a flow list [a, b]
_KEYS: dict[str, bool] = {}  # key -> whether it is a plain, simple key


def _plain(value: str, flow: bool) -> str | None:
    """A plain scalar that YAML reads as this very string, else None (memoised)."""
    seen = _SEEN_FLOW if flow else _SEEN_BLOCK
    out = seen.get(value, _MISS)
    if out is _MISS:
        if len(seen) > 50_000:
            seen.clear()
        out = seen[value] = _plain_uncached(value, flow)
    return out  # type: ignore[return-value]


def _plain_uncached(value: str, flow: bool) -> str | None:
    if not value or value[0] in _INDICATORS or ": " in value or " #" in value:
        return None
    if value[-1] == ":" or (flow and _FLOW_SPECIAL.search(value)):
        return None
    for rx in _RESOLVERS.get(value[0], ()):
        if rx.match(value):
            return None  # a number, null, bool, merge key...: let YAML decide
    return value


def _key_ok(key: str) -> bool:
    ok = _KEYS.get(key)
    if ok is None:
        if len(_KEYS) > 10_000:
            _KEYS.clear()
        ok = _KEYS[key] = bool(_KEY.fullmatch(key)) and _plain_uncached(key, False) is not None
    return ok


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
    # Only spaces are YAML's white space here (str.strip() would also eat a no-break space).
    inner = value[1:-1].strip(" ")
    if not inner:
        return []
    if "'" in inner or '"' in inner:  # commas inside quotes: split only simple cases
        parts = _FLOW_QUOTED.findall(inner)
        if ",".join(parts).replace(" ", "") != inner.replace(" ", "").rstrip(","):
            return None
    else:
        parts = inner.split(",")
        if parts[-1].strip(" ") == "":
            parts.pop()  # YAML allows one trailing comma
    out = []
    seen = _SEEN_FLOW
    for p in parts:
        p = p.strip(" ")
        item = seen.get(p, _MISS)
        if item is _MISS:
            item = _scalar(p, flow=True)
        if item is None:
            return None
        out.append(item)
    return out


# One `key: value` line (the text after "\n"): a key as _KEY, then the value, read here
# when it is a whole "double-quoted" string or [flow list], else kept raw for _value.
_SIMPLE_LINE = re.compile(
    r'\n([A-Za-z_][A-Za-z0-9_-]*): +(?:"([^"\n]*)" *(?=\n)|(\[[^\n]*\]) *(?=\n)|([^\n]+))')


def quick_meta(block: str) -> dict[str, Any] | None:
    """The frontmatter mapping if it is flat and simple, else None (use YAML)."""
    # The usual block: every line `key: value`, printable, no backslash, no \r: one
    # regex finds them all. Anything else (blank or comment lines, CRLF...) goes line
    # by line; both read each line alike.
    if "\\" not in block and block.replace("\n", " ").isprintable():
        found = _SIMPLE_LINE.findall("\n" + block)
        if len(found) == block.count("\n"):
            meta: dict[str, Any] = {}
            keys = _KEYS
            for key, quoted, flow, raw in found:
                ok = keys.get(key)
                if not (ok if ok is not None else _key_ok(key)):
                    return None
                if raw:
                    value = _value(raw.strip(" "))
                elif flow:
                    value = _flow_list(flow)
                else:
                    value = quoted  # the regex checked it: no quote or backslash inside
                if value is None:
                    return None
                meta[key] = value
            return meta
    return _by_line(block)


def _value(value: str) -> Any:
    """The string or list of strings a stripped `key: value` value is, or None."""
    if not value:
        return None  # `key:` is null in YAML
    first = value[0]
    if first == '"' or first == "'":
        return _quoted(value)
    if first == "[":
        return _flow_list(value) if value[-1] == "]" else None
    return _plain(value, False)


def _by_line(block: str) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    keys, unsafe = _KEYS, _UNSAFE.search
    for line in block.split("\n"):
        if line[-1:] == "\r":
            line = line[:-1]
        # isprintable() is False for every character _UNSAFE names (and for a few YAML
        # accepts, such as a no-break space): only those lines pay for the regex.
        if "\\" in line or (not line.isprintable() and unsafe(line)):
            return None
        if not line.strip(" ") or line[0] == "#":
            continue
        key, colon, value = line.partition(":")
        if not colon or value[:1] != " ":
            return None  # `key:` is null in YAML and `a:b` a plain string: let YAML say so
        ok = keys.get(key)
        if not (ok if ok is not None else _key_ok(key)):
            return None
        parsed = _value(value.strip(" "))
        if parsed is None:
            return None
        meta[key] = parsed
    return meta


def parse(text: str, card_id: str, path: Any = None) -> Any:
    """card.parse's Card, its frontmatter read by quick_meta when it can (a whole-store
    pass such as maintain's reads 10k cards)."""
    span = cardlib.split(text)
    meta = quick_meta(text[span[0]:span[1]]) if span else None
    if meta is None:
        return cardlib.parse(text, card_id, path)  # YAML, or no frontmatter
    return cardlib.from_meta(card_id, meta, text, span[2], path)
