"""The vectors table in the index file: its rows outlive a rebuild, every change to them
is logged (a reader keeping them in memory reads only what changed), and what an open
Index caches of them is dropped when they change.

Storage only: what is embedded, and how vectors are searched, is store/search/semantic.py;
the vectors kept in memory are store/search/matrix.py's.
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


# Which cards' vectors changed, in commit order, written by SQLite itself (triggers), so
# no writer can forget it: a long-lived reader (the MCP server) that keeps every vector in
# memory rereads only those cards' rows when another process commits. The log keeps the
# last LOG_KEEP changes (trimmed every LOG_TRIM); a reader further behind rereads all. Its
# epoch (meta 'vector_log') is drawn when the log is made: a rebuild copies a new file in
# place, whose log starts again under another epoch.
LOG_KEEP = 8192
LOG_TRIM = 1024
LOG_DDL = (
    "CREATE TABLE IF NOT EXISTS vector_log(seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " n INTEGER NOT NULL)",
    "CREATE TRIGGER IF NOT EXISTS vector_log_insert AFTER INSERT ON vectors"
    " BEGIN INSERT INTO vector_log(n) VALUES (new.n); END",
    "CREATE TRIGGER IF NOT EXISTS vector_log_update AFTER UPDATE ON vectors"
    " BEGIN INSERT INTO vector_log(n) VALUES (old.n), (new.n); END",
    "CREATE TRIGGER IF NOT EXISTS vector_log_delete AFTER DELETE ON vectors"
    " BEGIN INSERT INTO vector_log(n) VALUES (old.n); END",
    f"CREATE TRIGGER IF NOT EXISTS vector_log_trim AFTER INSERT ON vector_log"
    f" WHEN new.seq % {LOG_TRIM} = 0"
    f" BEGIN DELETE FROM vector_log WHERE seq <= new.seq - {LOG_KEEP}; END",
    "INSERT OR IGNORE INTO meta VALUES('vector_log', lower(hex(randomblob(8))))",
)


def ensure(c: Any) -> None:
    """The vectors table and its change log, made if missing (one transaction); a file
    this connection may not write keeps no log (readers then reread all: mark())."""
    import sqlite3

    c.execute(DDL)
    if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'vector_log_trim'").fetchone():
        return
    own = not c.in_transaction
    try:
        if own:
            c.execute("BEGIN IMMEDIATE")
        for sql in LOG_DDL:
            c.execute(sql)
        if own:
            c.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if own and c.in_transaction:
            c.execute("ROLLBACK")
        if "readonly" not in str(exc):
            raise
    except BaseException:
        if own and c.in_transaction:
            c.execute("ROLLBACK")
        raise


def mark(c: Any) -> tuple[str | None, int]:
    """Where the vectors stand: (the log's epoch, its last change), read in one statement;
    (None, 0) where there is no log (a file rebuilt just now, before ensure(); one this
    process may not write): then it says nothing, and a reader reads again."""
    row = _log(c, "max")
    return (row[0], row[1] or 0) if row else (None, 0)


def changed_since(c: Any, since: tuple[str | None, int]) -> set[int] | None:
    """The cards whose vector rows changed after `since` (a mark()); None when the log
    cannot say (another epoch: a rebuilt file; or trimmed past it): read them all."""
    epoch, seq = since
    row = _log(c, "min")
    if not row or epoch is None or row[0] != epoch or (row[1] is not None and row[1] > seq + 1):
        return None
    return {n for (n,) in c.execute("SELECT n FROM vector_log WHERE seq > ?", (seq,))}


def _log(c: Any, end: str) -> tuple[str | None, int | None] | None:
    """(the log's epoch, its first or last seq), or None when there is no log."""
    import sqlite3

    try:
        return c.execute("SELECT (SELECT value FROM meta WHERE key = 'vector_log'),"
                         f" (SELECT {end}(seq) FROM vector_log)").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise


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
