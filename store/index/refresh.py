"""Keeping the index fresh: the Refresher each Index (store/index/db.py) holds.

A refresh stats files (a walk, git's word on what changed, or given ids), compares
(mtime_ns, size) with the rows, reads only the changed files (store/index/rows.py) and
writes them in one transaction; a refresh with nothing to do writes nothing.
"""
from __future__ import annotations

import os
import stat as statmod
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path
    from typing import Any, Callable, Iterable, Iterator

from ..cards.paths import id_of_path, target_problem
from .files import walk

# Refreshes of at least PIPELINE_MIN files parse and insert BATCH files at a time, in one
# transaction (memory stays bounded); smaller ones parse everything before taking the lock.
PIPELINE_MIN, BATCH = 1000, 500


class Refresher:
    """Brings one Index's rows up to date with its folder. It keeps what a refresh learns
    (the last walk's symlinks and folders, the ids it touched) and asks the index only
    for its connection and its repair-and-retry."""

    def __init__(self, index: Any, files: Callable[[], Iterable[tuple[str, Path | str]]] | None,
                 as_text: Callable[[str, str], None] | None) -> None:
        self.index = index
        self.root = index.root
        self.files = files  # None: the store's own walk
        # A base's documents are not cards: one whose frontmatter does not parse is indexed
        # as plain text, and as_text(path, why) told so (each time the file is read anew).
        self.as_text = as_text
        self._links: set[str] | None = None  # symlinked ids seen by the last walk
        self._dirs: dict[str, int] = {}  # folder -> mtime_ns, of the last walk
        self.touched: list[str] = []  # ids the last refresh re-read or found gone
        self._gone: list[str] = []  # of those, the ones found gone

    @property
    def conn(self) -> sqlite3.Connection:
        return self.index.conn

    def _stat_files(self) -> Iterator[tuple[str, str, os.stat_result]]:
        if self.files is None:
            self._links, self._dirs = set(), {}
            yield from walk(self.root, self._links, self._dirs)
            return
        self._links = None  # unknown: each changed file is checked with lstat
        for cid, path in self.files():
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
        card is. `status`: a freshness.Status started earlier, to use (and close).
        """
        try:
            return self.index.repairing(lambda: self._fresh(walk, status))
        finally:
            if status is not None:
                status.close()

    def refresh_ids(self, ids: Iterable[str]) -> dict[str, int]:
        """Re-index just these ids (the watcher's call): changed, new or gone."""
        wanted = set(ids)
        counts = self.index.repairing(lambda: self.update(wanted))
        if self.touched and self.files is None:
            # rows changed outside a walk: git must not vouch for them
            from . import freshness

            freshness.settle(self.conn, None, None, self.touched, 0)
        return counts

    def _fresh(self, walk: bool, status: Any) -> dict[str, int]:
        from . import freshness  # os and time only, until git is asked

        root = str(self.root)
        if self.files is not None or not freshness.usable(root):
            return self.update(None)
        c = self.conn
        base = freshness.Anchor.load(c)
        if base is not None and base.current() and not walk:
            status = status or freshness.Status(root)
            found = freshness.check(root, c, self._rows(), base, status)
            if found is not None:
                ids, moved = found
                counts = self.update(ids)
                counts["unchanged"] = self._rows() - counts["added"] - counts["updated"]
                freshness.settle(c, base, moved, self.touched, 0)
                return counts
        if status is None or not status.full:  # a walk anchors on a full status, read first
            if status is not None:
                status.close()
            status = freshness.Status(root, full=True)
            status.paths()
        try:
            counts = self.update(None)
            made = freshness.after_walk(root, status, self._links or (), self._dirs)
            freshness.settle(c, base, made, self._gone, self._rows(), since_ns=status.started_ns)
        finally:
            status.close()
        return counts

    def _rows(self) -> int:
        """Files indexed: cards and problem files."""
        return self.conn.execute("SELECT (SELECT count(*) FROM cards)"
                                 " + (SELECT count(*) FROM problems)").fetchone()[0]

    def update(self, only: set[str] | None) -> dict[str, int]:
        """Stat the files (all, or `only` these ids), re-read the changed ones, drop the
        gone ones; no word from git asked or given (refresh() does that)."""
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
        self.touched, self._gone = [cid for cid, _, _ in todo] + gone, gone
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
        from . import fastmeta, rows  # a search of a fresh index loads neither

        c = self.conn

        def read(batch: list[tuple[str, str, os.stat_result]]) -> list[tuple[str, Any]]:
            return [(cid, self._read(cardlib, fastmeta, rows, cid, path, st, known.get(cid)))
                    for cid, path, st in batch]

        # Few files are all read before the write lock is taken. Many (a cold index) are
        # read and written batch by batch, so memory stays bounded, in this thread: a writer
        # thread inserting one batch while this one read the next (SQLite releases the GIL)
        # was slower even with the second core idle (bench/RESULTS.md, "Figures from comments").
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

    def _read(self, cardlib: Any, fastmeta: Any, rows: Any, cid: str, path: str,
              st: os.stat_result, k: tuple[int, int, str, bool] | None
              ) -> tuple[str, os.stat_result, str, Any]:
        """('same'|'problem'|'card', stat, hash, payload) for one changed file."""
        try:
            if (cid in self._links) if self._links is not None else os.path.islink(path):
                _check_inside(self.root, path)
            raw = rows.read_bytes(path, st.st_size)
        except OSError as exc:
            return "problem", st, "", (path, f"unreadable: {exc.strerror or exc}")
        except ValueError as exc:
            return "problem", st, "", (path, str(exc))
        digest = rows.content_hash(raw)
        if k is not None and k[2] == digest:
            return "same", st, digest, None
        try:
            text = cardlib.decode(raw)
            return "card", st, digest, rows.text_row(cardlib, fastmeta, text, cid)
        except cardlib.CardProblem as exc:
            if self.as_text is None:
                return "problem", st, digest, (path, str(exc))
            self.as_text(path, str(exc))
            text = cardlib.decode(raw)
            return "card", st, digest, rows.card_row(cardlib.from_meta(cid, {}, text, 0, None))


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
