"""One card file as the index's rows: its bytes read in one system call, its content
hash, and the (cards columns, fts columns) of its text; fastmeta's quick frontmatter
reader when it can, the Card's own properties (YAML) when it cannot."""
from __future__ import annotations

import os
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any

from ..cards.paths import project_key, project_of_id


def content_hash(raw: bytes) -> str:
    # hashlib loads OpenSSL (bench/RESULTS.md, "Figures from comments"): only a refresh
    # that found changed files hashes, so a search of a fresh index never imports it.
    from hashlib import blake2b

    return blake2b(raw, digest_size=16).hexdigest()


# O_NONBLOCK: a card the walk saw as a file but swapped for a named pipe since does not
# hang the open (a regular file ignores the flag).
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def read_bytes(path: str, size: int) -> bytes:
    """The file's bytes, `size` being its stat: one open, read and close system call each
    (open() adds a buffered reader, an fstat and a read to find the end: a cold index
    reads 10k files)."""
    fd = os.open(path, _O_READ)
    try:
        raw = os.read(fd, size + 1)
        if len(raw) > size:  # it grew since the stat: read to the end
            chunks = [raw]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            raw = b"".join(chunks)
    finally:
        os.close(fd)
    return raw


def field_text(value: Any) -> str:
    """Frontmatter values (scalars, lists, nested maps) as indexable text."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return "\n".join(f"{k} {field_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "\n".join(field_text(v) for v in value)
    return str(value)


KNOWN_KEYS = frozenset(("title", "type", "description", "aliases", "tags", "project",
                        "status"))


def list_text(value: Any) -> str:
    """A list field (aliases, tags) as newline-joined text: "\n".join(card._as_list(value))
    (tests/store/index/test_fastmeta.py holds the two to the same)."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join([v if v.__class__ is str else str(v) for v in value if v is not None])
    return str(value)


def card_row(card: Any) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """(cards columns, fts columns) of a parsed card, from the Card's own properties: the
    YAML path, and what tests hold the quicker meta_row to."""
    extra = "\n".join(f"{k} {field_text(v)}" for k, v in card.meta.items() if k not in KNOWN_KEYS)
    aliases, tags = "\n".join(card.aliases), "\n".join(card.tags)
    status = (card.status or "active").strip().lower()
    meta = (card.type, card.title, aliases, tags, card.project, status, card.description)
    return meta, (card.title, aliases, tags, card.description, card.body, extra)


def text_row(cardlib: Any, fastmeta: Any, text: str, cid: str
              ) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """card_row of the parsed card, without building the Card when the frontmatter is one
    quick_meta reads and names its title and type (card.from_meta's rules otherwise)."""
    span = cardlib.split(text)
    meta = fastmeta.quick_meta(text[span[0]:span[1]]) if span else None
    if meta is None:
        return card_row(cardlib.parse(text, cid, None))  # YAML, or no frontmatter
    title, kind = meta.get("title"), meta.get("type")
    if title.__class__ is str and kind.__class__ is str:
        title, kind = title.strip(), kind.strip()
        if title and kind:
            return meta_row(meta, title, kind, text[span[2]:], cid)
    return card_row(cardlib.from_meta(cid, meta, text, span[2], None))


def meta_row(meta: dict[str, Any], title: str, kind: str | None, body: str, cid: str
            ) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The Card properties (aliases, tags, description, project, status) computed
    straight from the frontmatter: a cold index runs this 10k times."""
    get = meta.get
    extra = "\n".join([f"{k} {v if v.__class__ is str else field_text(v)}"
                       for k, v in meta.items() if k not in KNOWN_KEYS])
    aliases, tags = list_text(get("aliases")), list_text(get("tags"))
    description = get("description")
    if description.__class__ is not str:
        description = "" if description is None else str(description)
    status = get("status")
    status = ("" if status is None else str(status)) or "active"
    project = project_key(get("project")) or project_of_id(cid)
    meta_cols = (kind, title, aliases, tags, project, status.strip().lower(), description)
    return meta_cols, (title, aliases, tags, description, body, extra)
