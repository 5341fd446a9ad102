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

This module imports no YAML or rapidfuzz at load time: a search process that finds the
index fresh never pays for them.
"""
from __future__ import annotations

import os
import sqlite3
import stat as statmod
from pathlib import Path
TYPE_CHECKING = False  # typing costs a search ~5 ms to import; annotations only
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Iterator

from ..cards.paths import id_of_path, project_key, project_of_id, target_problem
from .files import walk
from .schema import COLUMNS, TOKENIZE, WEIGHTS

SCHEMA = 5  # 5: the project column holds the project key (paths.project_key)
DB_NAME = "index.sqlite"
MMAP_BYTES = 256 << 20  # of the index file read through a memory map (10k cards: ~30 MB)
# Refreshes of at least PIPELINE_MIN files parse and insert BATCH files at a time, in one
# transaction (memory stays bounded); smaller ones parse everything before taking the lock.
PIPELINE_MIN, BATCH = 1000, 500

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

Stat = tuple[int, int]  # (mtime_ns, size)


def _hash(raw: bytes) -> str:
    # hashlib loads OpenSSL (~6 ms, far more on a busy machine): only a refresh that
    # found changed files hashes, so a search of a fresh index never imports it.
    from hashlib import blake2b

    return blake2b(raw, digest_size=16).hexdigest()


# O_NONBLOCK: a card the walk saw as a file but swapped for a named pipe since does not
# hang the open (a regular file ignores the flag).
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def _read_bytes(path: str, size: int) -> bytes:
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


def _text(value: Any) -> str:
    """Frontmatter values (scalars, lists, nested maps) as indexable text."""
    if value is None:
        return ""
    if isinstance(value, dict):
        return "\n".join(f"{k} {_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value)
    return str(value)


KNOWN_KEYS = frozenset(("title", "type", "description", "aliases", "tags", "project",
                        "status"))


def _lines(value: Any) -> str:
    """A list field (aliases, tags) as newline-joined text: "\n".join(card._as_list(value))
    (tests/store/test_fastmeta.py holds the two to the same)."""
    if value.__class__ is str:
        return value
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "\n".join([v if v.__class__ is str else str(v) for v in value if v is not None])
    return str(value)


def _row(card: Any) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """(cards columns, fts columns) of a parsed card, from the Card's own properties: the
    YAML path, and what tests hold the quicker _fields to."""
    extra = "\n".join(f"{k} {_text(v)}" for k, v in card.meta.items() if k not in KNOWN_KEYS)
    aliases, tags = "\n".join(card.aliases), "\n".join(card.tags)
    status = (card.status or "active").strip().lower()
    meta = (card.type, card.title, aliases, tags, card.project, status, card.description)
    return meta, (card.title, aliases, tags, card.description, card.body, extra)


def _text_row(cardlib: Any, fastmeta: Any, text: str, cid: str
              ) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """_row of the parsed card, without building the Card when the frontmatter is one
    quick_meta reads and names its title and type (card.from_meta's rules otherwise)."""
    span = cardlib.split(text)
    meta = fastmeta.quick_meta(text[span[0]:span[1]]) if span else None
    if meta is None:
        return _row(cardlib.parse(text, cid, None))  # YAML, or no frontmatter
    title, kind = meta.get("title"), meta.get("type")
    if title.__class__ is str and kind.__class__ is str:
        title, kind = title.strip(), kind.strip()
        if title and kind:
            return _fields(meta, title, kind, text[span[2]:], cid)
    return _row(cardlib.from_meta(cid, meta, text, span[2], None))


def _fields(meta: dict[str, Any], title: str, kind: str | None, body: str, cid: str
            ) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """The Card properties (aliases, tags, description, project, status) computed
    straight from the frontmatter: a cold index runs this 10k times."""
    get = meta.get
    extra = "\n".join([f"{k} {v if v.__class__ is str else _text(v)}"
                       for k, v in meta.items() if k not in KNOWN_KEYS])
    aliases, tags = _lines(get("aliases")), _lines(get("tags"))
    description = get("description")
    if description.__class__ is not str:
        description = "" if description is None else str(description)
    status = get("status")
    status = ("" if status is None else str(status)) or "active"
    project = project_key(get("project")) or project_of_id(cid)
    meta_cols = (kind, title, aliases, tags, project, status.strip().lower(), description)
    return meta_cols, (title, aliases, tags, description, body, extra)


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
        self._files = files
        # A base's documents are not cards: one whose frontmatter does not parse is indexed
        # as plain text, and as_text(path, why) told so (each time the file is read anew).
        self._as_text = as_text
        self._links: set[str] | None = None  # symlinked ids seen by the last walk
        self._dirs: dict[str, int] = {}  # folder -> mtime_ns, of the last walk
        self._touched: list[str] = []  # ids the last _refresh re-read or found gone
        self._gone: list[str] = []  # of those, the ones found gone
        self._conn: sqlite3.Connection | None = None
        self._ino: int | None = None

    @classmethod
    def open(cls, store: Any = None, **kw: Any) -> "Index":
        idx = cls(store, **kw)
        idx.conn  # noqa: B018 - open (and repair) now, not at first use
        return idx

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
                if _busy(exc):
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

    def _repairing(self, fn: Callable[[], Any]) -> Any:
        """Run fn; if the file turns out corrupt (a page deep inside), rebuild and retry once."""
        self._follow_swap()
        try:
            return fn()
        except sqlite3.DatabaseError as exc:
            if _busy(exc):
                raise _error(self.db_path, exc) from None
            self.close()
            _remove_db(self.db_path)
            self._conn = self._connect()
            try:
                return fn()
            except sqlite3.Error as again:
                raise _error(self.db_path, again) from None

    # --- keeping it fresh -------------------------------------------------------------

    def _stat_files(self) -> Iterator[tuple[str, str, os.stat_result]]:
        if self._files is None:
            self._links, self._dirs = set(), {}
            yield from walk(self.root, self._links, self._dirs)
            return
        self._links = None  # unknown: each changed file is checked with lstat
        for cid, path in self._files():
            try:
                st = os.stat(path)
            except OSError:
                continue
            yield cid, str(path), st

    def _known(self, only: set[str] | None = None) -> dict[str, tuple[int, int, str, bool]]:
        """id -> (mtime_ns, size, hash, is_problem) of everything indexed (or of `only`)."""
        c = self.conn
        queries = ["SELECT id, mtime_ns, size, hash, 0 FROM cards",
                   "SELECT id, mtime_ns, size, hash, 1 FROM problems"]
        if only is None:
            return {r[0]: r[1:] for q in queries for r in c.execute(q)}
        ids, known = sorted(only), {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for q in queries:
                known.update((r[0], r[1:]) for r in c.execute(f"{q} WHERE id IN ({marks})", chunk))
        return known

    def _stamps(self) -> dict[str, str]:
        """id -> "mtime_ns:size" of every indexed file, built in C: the freshness check."""
        c = self.conn
        stamps = dict(c.execute("SELECT id, mtime_ns || ':' || size FROM cards"))
        stamps.update(c.execute("SELECT id, mtime_ns || ':' || size FROM problems"))
        return stamps

    def refresh(self, walk: bool = False, status: Any = None) -> dict[str, int]:
        """Bring the index up to date with the tree; counts of what it did.

        In a store, git says which cards may have changed since the last walk and only
        those are stat-checked (store/index/freshness.py); otherwise, or with walk=True, every
        card is. `status`: an anchor.Status started earlier, to use (and close).
        """
        try:
            return self._repairing(lambda: self._fresh(walk, status))
        finally:
            if status is not None:
                status.close()

    def refresh_ids(self, ids: Iterable[str]) -> dict[str, int]:
        """Re-index just these ids (the watcher's call): changed, new or gone."""
        wanted = set(ids)
        counts = self._repairing(lambda: self._refresh(wanted))
        if self._touched and self._files is None:
            # rows changed outside a walk: git must not vouch for them
            from . import freshness as anchor

            anchor.settle(self.conn, None, None, self._touched, 0)
        return counts

    def _fresh(self, walk: bool, status: Any) -> dict[str, int]:
        from . import freshness as anchors  # os and time only, until git is asked

        root = str(self.root)
        if self._files is not None or not anchors.usable(root):
            return self._refresh(None)
        c = self.conn
        base = anchors.Anchor.load(c)
        if base is not None and base.current() and not walk:
            status = status or anchors.Status(root)
            found = anchors.check(root, c, self._rows(), base, status)
            if found is not None:
                ids, moved = found
                counts = self._refresh(ids)
                counts["unchanged"] = self._rows() - counts["added"] - counts["updated"]
                anchors.settle(c, base, moved, self._touched, 0)
                return counts
        if status is None or not status.full:  # a walk anchors on a full status, read first
            if status is not None:
                status.close()
            status = anchors.Status(root, full=True)
            status.paths()
        try:
            counts = self._refresh(None)
            made = anchors.after_walk(root, status, self._links or (), self._dirs)
            anchors.settle(c, base, made, self._gone, self._rows(), since_ns=status.started_ns)
        finally:
            status.close()
        return counts

    def _rows(self) -> int:
        """Files indexed: cards and problem files."""
        return self.conn.execute("SELECT (SELECT count(*) FROM cards)"
                                 " + (SELECT count(*) FROM problems)").fetchone()[0]

    def _refresh(self, only: set[str] | None) -> dict[str, int]:
        counts = dict(added=0, updated=0, removed=0, unchanged=0, problems=0)
        if only is None:
            stamps = self._stamps()
            files = self._stat_files()
        else:
            stamps = {k: f"{v[0]}:{v[1]}" for k, v in self._known(only).items()}
            files = self._stat_ids(only)
        todo: list[tuple[str, str, os.stat_result]] = []
        left = stamps  # what is still unseen: at the end, the files that are gone
        pop, seen = left.pop, 0
        for cid, path, st in files:
            seen += 1
            if pop(cid, None) != f"{st.st_mtime_ns}:{st.st_size}":
                todo.append((cid, path, st))
        gone = list(left)
        self._touched, self._gone = [cid for cid, _, _ in todo] + gone, gone
        if todo or gone:
            known = self._known({cid for cid, _, _ in todo} | set(gone))
            self._apply(todo, gone, known, counts)
        counts["unchanged"] += seen - len(todo)
        # problems: how many files the index holds as unreadable, after this refresh
        counts["problems"] = self.conn.execute("SELECT count(*) FROM problems").fetchone()[0]
        return counts

    def _stat_ids(self, ids: set[str]) -> Iterator[tuple[str, str, os.stat_result]]:
        """The files of these ids that exist and would be walked (same rules as walk)."""
        self._links = None
        for cid in sorted(ids):
            if id_of_path(cid + ".md") != cid:
                continue
            parts = cid.split("/")
            path = os.path.join(str(self.root), *parts) + ".md"
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if statmod.S_ISREG(st.st_mode) and not _hidden_link_dir(self.root, parts):
                yield cid, path, st

    def _apply(self, todo: list[tuple[str, str, os.stat_result]], gone: list[str],
               known: dict[str, tuple[int, int, str, bool]], counts: dict[str, int]) -> None:
        from ..cards import card as cardlib  # lazy: YAML is paid only when a card changed
        from . import fastmeta

        c = self.conn

        def read(batch: list[tuple[str, str, os.stat_result]]) -> list[tuple[str, Any]]:
            return [(cid, self._read(cardlib, fastmeta, cid, path, st, known.get(cid)))
                    for cid, path, st in batch]

        # Few files are all read before the write lock is taken. Many (a cold index) are
        # read and written batch by batch, so memory stays bounded, in this thread: a writer
        # thread inserting one batch while this one read the next (SQLite releases the GIL)
        # was slower even with the second core idle (Nov 30, 10k cards: 2.70 s wall against
        # 2.31 s; under load 1.61x the bare FTS5 load against 1.44x).
        size = len(todo) if len(todo) < PIPELINE_MIN else BATCH
        first = read(todo[:size])
        c.execute("BEGIN IMMEDIATE")
        try:
            self._write(c, first, gone, known, counts)
            for i in range(size, len(todo), BATCH):
                self._write(c, read(todo[i:i + BATCH]), [], known, counts)
            self._commit(c, counts)
        except BaseException:
            c.execute("ROLLBACK")
            raise

    @staticmethod
    def _commit(c: sqlite3.Connection, counts: dict[str, int]) -> None:
        c.execute("INSERT INTO meta VALUES('generation', '1') ON CONFLICT(key) DO UPDATE"
                  " SET value = CAST(value AS INTEGER) + 1")
        # How stale the typo-correction vocabulary is (see terms.vocabulary).
        changed = counts["added"] + counts["updated"] + counts["removed"]
        c.execute("INSERT INTO meta VALUES('changed_since_terms', ?) ON CONFLICT(key) DO UPDATE"
                  " SET value = CAST(value AS INTEGER) + ?", (str(changed), changed))
        c.execute("COMMIT")

    @staticmethod
    def _write(c: sqlite3.Connection, parsed: list[tuple[str, Any]], gone: list[str],
               known: dict[str, tuple[int, int, str, bool]], counts: dict[str, int]) -> None:
        """Apply read results in one transaction, in batches (a cold index is 10k inserts).

        Rows are looked up again under the write lock: another process (the watcher, a
        concurrent search) may have indexed some of these files since we looked.
        """
        ids = [cid for cid, _ in parsed] + gone
        existing: dict[str, int] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            existing.update(c.execute(f"SELECT id, n FROM cards WHERE id IN"
                                      f" ({','.join('?' * len(chunk))})", chunk).fetchall())
        drop = [(existing[cid],) for cid in gone if cid in existing]
        counts["removed"] += len(gone)
        next_n = (c.execute("SELECT max(n) FROM cards").fetchone()[0] or 0) + 1
        cards, fts, problems, touched = [], [], [], []
        for cid, (kind, st, digest, payload) in parsed:
            k = known.get(cid)
            mt, size = st.st_mtime_ns, st.st_size
            if kind == "same":  # touched, not changed: keep the row, note the new stat
                touched.append((k[3], (mt, size, cid)))
                counts["unchanged"] += 1
                continue
            if cid in existing:
                drop.append((existing[cid],))
            counts["updated" if k is not None else "added"] += 1
            if kind == "problem":
                problems.append((cid, payload[0], payload[1], size, mt, digest))
                continue
            meta, text = payload
            cards.append((next_n, cid, *meta, size, mt, digest))
            fts.append((next_n, *text))
            next_n += 1
        if drop:
            c.executemany("DELETE FROM fts WHERE rowid=?", drop)
            c.executemany("INSERT INTO names(names, rowid, title, aliases) SELECT 'delete', n,"
                          " title, aliases FROM cards WHERE n=?", drop)
            c.executemany("DELETE FROM cards WHERE n=?", drop)
        if c.execute("SELECT 1 FROM problems LIMIT 1").fetchone():
            c.executemany("DELETE FROM problems WHERE id=?",
                          [(cid,) for cid, item in parsed if item[0] != "same"]
                          + [(cid,) for cid in gone])
        c.executemany("UPDATE cards SET mtime_ns=?, size=? WHERE id=?",
                      [t for is_problem, t in touched if not is_problem])
        c.executemany("UPDATE problems SET mtime_ns=?, size=? WHERE id=?",
                      [t for is_problem, t in touched if is_problem])
        c.executemany("INSERT INTO problems VALUES (?,?,?,?,?,?)", problems)
        c.executemany("INSERT INTO cards(n, id, type, title, aliases, tags, project, status,"
                      " description, size, mtime_ns, hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                      cards)
        c.executemany("INSERT INTO fts(rowid, title, aliases, tags, description, body, extra)"
                      " VALUES (?,?,?,?,?,?,?)", fts)
        c.executemany("INSERT INTO names(rowid, title, aliases) VALUES (?,?,?)",
                      [(row[0], row[1], row[2]) for row in fts])

    def _read(self, cardlib: Any, fastmeta: Any, cid: str, path: str, st: os.stat_result,
              k: tuple[int, int, str, bool] | None) -> tuple[str, os.stat_result, str, Any]:
        """('same'|'problem'|'card', stat, hash, payload) for one changed file."""
        try:
            if (cid in self._links) if self._links is not None else os.path.islink(path):
                _check_inside(self.root, path)
            raw = _read_bytes(path, st.st_size)
        except OSError as exc:
            return "problem", st, "", (path, f"unreadable: {exc.strerror or exc}")
        except ValueError as exc:
            return "problem", st, "", (path, str(exc))
        digest = _hash(raw)
        if k is not None and k[2] == digest:
            return "same", st, digest, None
        try:
            return "card", st, digest, _text_row(cardlib, fastmeta, cardlib.decode(raw), cid)
        except cardlib.CardProblem as exc:
            if self._as_text is None:
                return "problem", st, digest, (path, str(exc))
            self._as_text(path, str(exc))
            text = cardlib.decode(raw)
            return "card", st, digest, _row(cardlib.from_meta(cid, {}, text, 0, None))

    def rebuild(self) -> dict[str, int]:
        """Index from scratch into a new file, then swap it in (`cardmem index --full`).

        The new file is copied over the live one with SQLite's backup API: one
        transaction, so readers and the watcher (WAL, open connections) see the old index
        or the new one, never a mix. A live file too broken for that is replaced instead.
        """
        tmp = self.db_path.with_name(f"{self.db_path.name}.new-{os.getpid()}")
        _remove_db(tmp)
        fresh = Index(root=self.root, db_path=tmp, files=self._files, as_text=self._as_text)
        try:
            fresh._conn = self._connect_file(tmp, wal=False)
            fresh._ino = os.stat(tmp).st_ino
            counts = fresh._refresh(None)
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
        return [{"id": r[0], "path": r[1], "reason": r[2]} for r in self._repairing(
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

    def generation(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return int(row[0]) if row else 0

    def search(self, query: str, limit: int = 10, card_type: str | None = None,
               project: str | None = None, semantic: bool = False) -> "Any":
        """Ranked cards for a query (no refresh; see the module-level search()); with
        semantic, fused with the nearest vectors when the model is there (store/index/hybrid.py)."""
        if semantic:
            from .hybrid import run
        else:
            from .search import run

        return self._repairing(lambda: run(self, query, limit, card_type, project))


def search(store: Any, query: str, limit: int = 10, card_type: str | None = None,
           project: str | None = None, index: Index | None = None, semantic: bool = True) -> Any:
    """Refresh the store's index, then search it: the one call most callers want."""
    idx = index or Index(store)
    try:
        idx.refresh()
        return idx.search(query, limit=limit, card_type=card_type, project=project,
                          semantic=semantic)
    finally:
        if index is None:
            idx.close()


def _busy(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _error(path: Path, exc: BaseException) -> Exception:
    """A failure of the index file as the one-line error users see."""
    from ..errors import CardmemError, StoreBusy

    if _busy(exc):
        return StoreBusy(f"index {path}", "another process kept it locked for 30 s")
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return CardmemError(f"index {path}", why)


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def _check_inside(root: Path, path: str) -> None:
    """A symlinked card must resolve to a .md file inside the folder (store.paths' rule)."""
    if why := target_problem(os.path.realpath(root), os.path.realpath(path)):
        raise ValueError(why)


def _hidden_link_dir(root: Path, parts: list[str]) -> bool:
    """True when a folder on the way is a symlink (walk() does not descend into those)."""
    p = str(root)
    for part in parts[:-1]:
        p = os.path.join(p, part)
        if os.path.islink(p):
            return True
    return False
