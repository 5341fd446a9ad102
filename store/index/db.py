"""The lexical index: `.cardmem/index.sqlite`, derived from the cards and always rebuildable.

One row per card in `cards` (id, type, title, aliases, tags, project, status, size,
mtime_ns, content hash) and the same card's text in the FTS5 table `fts` (title, aliases,
tags, description, body, extra = unknown frontmatter keys), sharing the rowid.

Freshness without a daemon: `refresh()` walks the tree with stat only and compares
(mtime_ns, size) with the rows; only changed files are read, a content hash skips
touch-only changes, and a refresh with nothing to do writes nothing. Indexing only ever
reads cards.

Any folder of Markdown files can be indexed, not only a store: an "attached base" (a
read-only folder of docs, frontmatter optional) gets its own file with

    Index(root=Path("/docs"), db_path=Path("/state/docs.sqlite"))

and `files=` may replace the default walk with any callable returning (id, path) pairs.
The store's own index is `Index(store)` (root = store.root, db = .cardmem/index.sqlite).

Here: the file and its connection, rebuild and verify, and reading; keeping the rows
fresh is the Refresher it holds (refresh.py), a card's rows rows.py, the tables' columns
schema.py.
This module imports no YAML or rapidfuzz at load time: a search process that finds the
index fresh never pays for them.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable

from .refresh import Refresher
from .schema import COLUMNS, TOKENIZE, WEIGHTS

SCHEMA = 5  # 5: the project column holds the project key (paths.project_key)
DB_NAME = "index.sqlite"
MMAP_BYTES = 256 << 20  # of the index file read through a memory map (10k cards: ~30 MB)

_DDL = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cards(
    n INTEGER PRIMARY KEY,          -- the rowid shared with fts
    id TEXT NOT NULL UNIQUE,
    type TEXT, title TEXT NOT NULL, aliases TEXT NOT NULL, tags TEXT NOT NULL,
    project TEXT, status TEXT NOT NULL, description TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS problems(
    id TEXT PRIMARY KEY, path TEXT NOT NULL, reason TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash TEXT NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    {", ".join(COLUMNS)}, tokenize='{TOKENIZE}');
CREATE VIRTUAL TABLE IF NOT EXISTS fts_vocab USING fts5vocab(fts, 'row');
-- names only (title, aliases), over the cards table: a word common in bodies is rare in
-- names, so ranking the cards *named* by a common word stays cheap (see candidates.py)
CREATE VIRTUAL TABLE IF NOT EXISTS names USING fts5(
    title, aliases, content='cards', content_rowid='n', tokenize='{TOKENIZE}');
-- fts_vocab, materialised on demand for typo correction (see terms.vocabulary)
CREATE TABLE IF NOT EXISTS terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
"""

class Index:
    """The lexical index of one folder of cards.

    Index(store) or Index.open(store) for a store's own index; Index(root=..., db_path=...)
    for any other folder (see the module docstring). Opening a missing or corrupt file
    (re)creates it; the next refresh() fills it.
    """

    def __init__(self, store: Any = None, *, root: Path | str | None = None,
                 db_path: Path | str | None = None,
                 files: Callable[[], Iterable[tuple[str, Path | str]]] | None = None,
                 as_text: Callable[[str, str], None] | None = None) -> None:
        if store is None and root is None:
            raise TypeError("Index needs a store or a root")
        self.root = Path(root if root is not None else store.root)
        if db_path is None:
            db_path = self.root / ".cardmem" / DB_NAME
        self.db_path = Path(db_path)
        self.refresher = Refresher(self, files, as_text)
        self._conn: sqlite3.Connection | None = None
        self._ino: int | None = None

    @classmethod
    def open(cls, store: Any = None, **kw: Any) -> "Index":
        idx = cls(store, **kw)
        idx.conn  # noqa: B018 - open (and repair) now, not at first use
        return idx

    def refresh(self, walk: bool = False, status: Any = None) -> dict[str, int]:
        """Bring the index up to date with the folder (Refresher.refresh)."""
        return self.refresher.refresh(walk, status)

    def refresh_ids(self, ids: Iterable[str]) -> dict[str, int]:
        """Re-index just these ids, changed, new or gone (Refresher.refresh_ids)."""
        return self.refresher.refresh_ids(ids)

    # --- the connection --------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (opened, and repaired if need be, on first use)."""
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _follow_swap(self) -> None:
        """Reopen if the file was replaced under us (a rebuild that could not copy in place)."""
        if self._conn is not None:
            try:
                ino = os.stat(self.db_path).st_ino
            except OSError:
                ino = None
            if ino != self._ino:
                self.close()

    def _connect(self) -> sqlite3.Connection:
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = self._connect_file(self.db_path)
            except sqlite3.DatabaseError as exc:
                if busy(exc):
                    raise
                _remove_db(self.db_path)  # corrupt, foreign or an older schema: derived data
                conn = self._connect_file(self.db_path)
            self._ino = os.stat(self.db_path).st_ino
        except (OSError, sqlite3.Error) as exc:
            raise _error(self.db_path, exc) from None
        return conn

    @staticmethod
    def _connect_file(path: Path, wal: bool = True) -> sqlite3.Connection:
        conn = sqlite3.connect(str(path), timeout=30.0, isolation_level=None,
                               check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA):
                raise sqlite3.DatabaseError(f"index schema {version}, expected {SCHEMA}")
            if wal:
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # Pages read from a mapping, not copied by a read() each: a search reads a few
            # hundred scattered pages (doclists, one docsize row per ranked match, the
            # candidates' rows), which cost 6% of a median search at 10k cards as reads.
            # SQLite keeps the mapping right across its own writers; only truncating the
            # file from outside SQLite under a reader would hurt (SIGBUS), as for any mmap.
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            if version == 0:
                conn.executescript(_DDL)
                weights = ", ".join(str(w) for w in WEIGHTS)
                conn.execute("INSERT INTO fts(fts, rank) VALUES('rank', ?)",
                             (f"bm25({weights})",))
                conn.execute("INSERT INTO names(names, rank) VALUES('rank', ?)",
                             (f"bm25({WEIGHTS[0]}, {WEIGHTS[1]})",))
                conn.execute(f"PRAGMA user_version = {SCHEMA}")
            conn.execute("SELECT count(*) FROM meta").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def repairing(self, fn: Callable[[], Any]) -> Any:
        """Run fn; if the file turns out corrupt (a page deep inside), rebuild and retry once."""
        self._follow_swap()
        try:
            return fn()
        except sqlite3.DatabaseError as exc:
            if busy(exc):
                raise _error(self.db_path, exc) from None
            self.close()
            _remove_db(self.db_path)
            self._conn = self._connect()
            try:
                return fn()
            except sqlite3.Error as again:
                raise _error(self.db_path, again) from None

    def rebuild(self) -> dict[str, int]:
        """Index from scratch into a new file, then swap it in (`cardmem index --full`).

        The new file is copied over the live one with SQLite's backup API: one
        transaction, so readers and the watcher (WAL, open connections) see the old index
        or the new one, never a mix. A live file too broken for that is replaced instead.
        Vectors outlive it, matched to cards by text (vector_rows.keep/restore), and this
        process's caches learn of it.
        """
        from . import vector_rows

        try:
            kept = vector_rows.keep(self)
        except sqlite3.DatabaseError:  # too broken to read: the vectors are made anew too
            kept = []
        tmp = self.db_path.with_name(f"{self.db_path.name}.new-{os.getpid()}")
        _remove_db(tmp)
        fresh = Index(root=self.root, db_path=tmp, files=self.refresher.files,
                      as_text=self.refresher.as_text)
        try:
            fresh._conn = self._connect_file(tmp, wal=False)
            fresh._ino = os.stat(tmp).st_ino
            counts = fresh.refresher.update(None)
            try:
                live = self.conn
                fresh._conn.backup(live)
            except sqlite3.DatabaseError:
                self.close()
                fresh.close()
                _remove_db(self.db_path)
                os.replace(tmp, self.db_path)
                self._conn = self._connect()
        finally:
            fresh.close()
            _remove_db(tmp)
        vector_rows.restore(self, kept)
        return counts

    def verify(self, deep: bool = False) -> list[str]:
        """Check the file (SQLite quick_check; with deep, FTS5's integrity-check too, which
        re-reads every card's text); if anything is wrong, rebuild it. Returns what was
        wrong. Searches do not pay for this: damage SQLite reports while reading is
        repaired on the spot, silent damage is found here (`cardmem index`, doctor)."""
        wrong: list[str] = []
        try:
            rows = self.conn.execute("PRAGMA quick_check").fetchall()
            wrong += [str(r[0]) for r in rows if r[0] != "ok"]
            if deep and not wrong:
                self.conn.execute("INSERT INTO fts(fts) VALUES('integrity-check')")
                self.conn.execute("INSERT INTO names(names) VALUES('integrity-check')")
        except sqlite3.DatabaseError as exc:
            wrong.append(str(exc))
        if wrong:
            self.close()
            _remove_db(self.db_path)
            self._conn = self._connect()
            self.refresh()
        return wrong

    # --- reading ----------------------------------------------------------------------

    def problems(self) -> list[dict[str, str]]:
        """Files that failed to parse as cards: id, path, reason (as of the last refresh)."""
        return [{"id": r[0], "path": r[1], "reason": r[2]} for r in self.repairing(
            lambda: self.conn.execute("SELECT id, path, reason FROM problems ORDER BY id")
            .fetchall())]

    def ids(self) -> list[str]:
        self._follow_swap()
        return [r[0] for r in self.conn.execute("SELECT id FROM cards ORDER BY id")]

    def rows(self) -> list[tuple[Any, ...]]:
        """Every card row and its FTS text, by id: what two equal indexes agree on."""
        self._follow_swap()
        return self.conn.execute(
            "SELECT c.id, c.type, c.title, c.aliases, c.tags, c.project, c.status,"
            " c.description, c.size, c.mtime_ns, c.hash, f.title, f.aliases, f.tags,"
            " f.description, f.body, f.extra FROM cards c JOIN fts f ON f.rowid = c.n"
            " ORDER BY c.id").fetchall()

    def heads(self) -> list[tuple[str, str | None, str, str, str | None]]:
        """(id, type, title, aliases, status) of every card: lookups by name."""
        self._follow_swap()
        return self.conn.execute("SELECT id, type, title, aliases, status FROM cards").fetchall()

    def hashes(self) -> dict[str, str]:
        """id -> content hash of everything indexed, cards and problem files: what changed."""
        self._follow_swap()
        return dict(self.conn.execute(
            "SELECT id, hash FROM cards UNION ALL SELECT id, hash FROM problems"))

    def count(self) -> int:
        self._follow_swap()
        return self.conn.execute("SELECT count(*) FROM cards").fetchone()[0]

    def matching_rowids(self, expr: str) -> list[int]:
        """Rowids (cards.n) of the cards an FTS5 expression matches, unranked; raises
        sqlite3.Error for an expression FTS5 cannot take."""
        return [r[0] for r in self.conn.execute("SELECT rowid FROM fts WHERE fts MATCH ?",
                                                (expr,))]

    def kinds(self, rowids: list[int]) -> dict[int, tuple[str, str | None, str | None]]:
        """rowid -> (id, type, status) of these cards."""
        import json

        return {n: (cid, ctype, status) for n, cid, ctype, status in self.conn.execute(
            "SELECT n, id, type, status FROM cards WHERE n IN (SELECT value FROM json_each(?))",
            (json.dumps(rowids),))}

    def generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0


def busy(exc: BaseException) -> bool:
    """Whether an error is SQLite's: another writer held the file past the busy timeout."""
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _error(path: Path, exc: BaseException) -> Exception:
    """A failure of the index file as the one-line error users see."""
    from ..errors import CardmemError, StoreBusy

    if busy(exc):
        return StoreBusy(f"index {path}", "another process kept it locked for 30 s")
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return CardmemError(f"index {path}", why)


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass
