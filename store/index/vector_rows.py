"""The vectors table in the index file: its rows outlive a rebuild, and what an open
Index caches of them is dropped when they change.

Storage only: what is embedded, and how vectors are searched, is store/search/semantic.py.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DDL = """CREATE TABLE IF NOT EXISTS vectors(
    n INTEGER PRIMARY KEY,     -- the card's rowid in cards
    hash TEXT NOT NULL,        -- the card's content hash when it was embedded
    key TEXT NOT NULL,         -- sha1 of the text embedded (a renamed card keeps its vector)
    model TEXT NOT NULL,       -- the model stamp, name@version/dim/recipe
    vec BLOB NOT NULL)"""


def ensure(c: Any) -> None:
    c.execute(DDL)


def keep(idx: Any) -> list[tuple[str, str, bytes]]:
    """Every (key, model, vector) of the index, to outlive `cardmem index --full`."""
    c = idx.conn
    if not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone():
        return []
    return c.execute("SELECT key, model, vec FROM vectors").fetchall()


def restore(idx: Any, kept: list[tuple[str, str, bytes]]) -> None:
    """Put kept vectors back as rows of no card: the next sync() takes each one a card's
    text still matches (nothing re-embedded) and drops the rest. Index.rebuild() calls it
    (even with nothing kept): it tells this process's caches the index changed."""
    forget(idx)
    if not kept:
        return
    c = idx.conn
    ensure(c)
    c.execute("BEGIN IMMEDIATE")
    try:
        c.executemany("INSERT INTO vectors(n, hash, key, model, vec) VALUES (?, '', ?, ?, ?)",
                      [(-i, key, model, vec) for i, (key, model, vec) in enumerate(kept, 1)])
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        raise


def cache(idx: Any) -> dict[str, tuple[Any, ...]]:
    got = getattr(idx, "_semantic_cache", None)
    if got is None:
        got = idx._semantic_cache = {}
    return got


def forget(idx: Any) -> None:
    cache(idx).clear()
