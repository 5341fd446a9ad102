"""Freshness from git: which cards may differ from the index, without a stat of each card.

A walk stats every card before each search (at 10k cards most of a search's time, nearly
all of it system calls; bench/RESULTS.md, "Figures from comments"). In a store, git already
knows which files differ from HEAD, and `git status` can run in a separate process while
the search process starts up. So the index keeps an *anchor* in its meta table: a commit H
and a set S of card ids ("suspects"), with the claim

    every card file outside S has the content it has in H, and the index holds it.

Then the only cards that may have changed since are

    S ∪ (what git status lists now) ∪ (git diff --name-only H HEAD)

and those get the ordinary stat-then-hash check. Every other card is clean now and
unchanged between H and HEAD, so the file is H's version, which the index holds.

How the claim is kept true:
- A full walk makes it, with HEAD and `git status` read *before* the walk starts: a card
  clean then, whose stat the walk finds as indexed, is H's version. Suspects: every path
  git listed, every symlinked card (git sees the link, not its target), cards git is told
  not to look at (assume-unchanged, skip-worktree), cards the walk found gone, and every
  card whose indexed mtime is later than the status's start, whoever indexed it.
- A check moves H to the new HEAD by adding diff(H, HEAD) to S; every index change
  outside a walk (the watcher's refresh_ids) adds its ids to S. S only grows, so a card
  once suspect is stat-checked on every search until a walk anchors anew: past
  limit(cards) suspects, after MAX_AGE_S, or when git fails or says anything unexpected.
- All of it happens in one transaction per refresh (settle), which keeps suspects other
  processes added meanwhile.
- What git cannot see (a clean file whose bytes changed because a filter or
  core.autocrlf changed, a touch) is caught by the next walk, MAX_AGE_S at the latest.

Only a store's own index (its root the top of a git work tree with a commit) is anchored;
attached bases and folders without git always walk.
"""
from __future__ import annotations

import os  # and only time at load: the search command spawns git before loading more
import time
import stat as statmod

from ..git import status as git_status
from ..git.head_file import head, is_repo
from ..git.spawn import Git

TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    import sqlite3
    from typing import Iterable

META_KEY = "anchor"
MAX_AGE_S = 600  # a full walk at least this often, for what git cannot see
# mtimes come from the kernel's coarse clock, and some filesystems keep whole seconds
MTIME_SLACK_NS = 2_000_000_000
SUSPECTS_MIN = 256  # suspects allowed: max(SUSPECTS_MIN, cards // 10), then walk again

# git status without touching .git/index (a status that refreshed it would take
# index.lock from under a writer's commit), in one thread (threads cost more CPU than
# they save here). A walk's status lists untracked and ignored paths too; a check's
# only tracked ones: new files show in their folder's mtime (check_dirs), which spares
# git a read of every folder.
_STATUS = ["-c", "core.preloadIndex=false", *git_status.ARGS]
_FULL = ["--untracked-files=all", "--ignored=matching"]
_TRACKED = ["--untracked-files=no"]


def usable(root: str) -> bool:
    """A store root at the top of its own work tree (a `.git` folder or worktree file)."""
    return is_repo(root)


class Status:
    """HEAD, and a `git status` started now and read later: it runs while Python does
    other start-up work (the search command starts it before its imports). A full one
    (for a walk) also starts `git ls-files -v`, read after the walk: only its first 64 KiB
    fit the pipe meanwhile (a 10k-card store lists ~600 KB), so the rest, a few ms of
    git's time, waits for the read."""

    def __init__(self, root: str, full: bool = False) -> None:
        self.full = full
        self.started_ns = time.time_ns()
        self.head = head(root)
        self._read = False
        self._listed: list[str] | None = None
        self._git: Git | None = None
        self._flags: Git | None = None
        if self.head is None:
            return  # no commit yet (or a HEAD we cannot read): nothing to anchor to
        self._git = Git(root, [*_STATUS, *(_FULL if full else _TRACKED)])
        if full:
            self._flags = Git(root, ["ls-files", "-v", "-z"])

    def paths(self) -> list[str] | None:
        """The listed paths (folders end in "/"), or None if git failed."""
        if not self._read and self._git is not None:
            self._read = True
            out = self._git.paths()
            self._listed = None if out is None else list(git_status.entries(out))
        return self._listed

    def hidden(self) -> list[str] | None:
        """Tracked paths git does not compare with their files (assume-unchanged,
        skip-worktree): status never lists them, so they are always suspects."""
        out = self._flags.paths() if self._flags is not None else None
        if out is None:
            return None
        return [p[2:] for p in out if p[:1].islower() or p[:1] == "S"]

    def close(self) -> None:
        for g in (self._git, self._flags):
            if g is not None:
                g.close()


# --- paths to card ids ------------------------------------------------------------------

def card_ids(root: str, paths: Iterable[str]) -> set[str]:
    """Card ids of git paths; a listed folder (untracked, ignored, a nested repository)
    is walked for its cards. Same rules as index.walk."""
    from .files import walk
    from ..cards.paths import id_of_path

    ids: set[str] = set()
    for p in paths:
        if p.endswith("/"):
            folder = p.rstrip("/")
            if any(part.startswith(".") for part in folder.split("/")):
                continue  # a hidden folder (.cardmem/) holds no cards
            full = os.path.join(root, folder)
            if not os.path.islink(full):
                ids.update(cid for cid, _, _ in walk(full, prefix=folder + "/"))
        elif (cid := id_of_path(p)) is not None:
            ids.add(cid)
    return ids


# --- the anchor in the index's meta table -----------------------------------------------

class Anchor:
    """head: H; suspects: S; at: when a walk made it; dirs: folder -> mtime_ns when its
    entries were last known (RACY: changed too recently to trust, listed every time)."""

    def __init__(self, head: str, suspects: set[str], at: float,
                 dirs: dict[str, int]) -> None:
        self.head, self.suspects, self.at, self.dirs = head, suspects, at, dirs

    def current(self) -> bool:
        return time.time() - self.at <= MAX_AGE_S

    @classmethod
    def load(cls, conn: sqlite3.Connection) -> "Anchor | None":
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        if row is None:
            return None
        try:
            import json

            d = json.loads(row[0])
            return cls(str(d["head"]), set(d["suspects"]), float(d["at"]), dict(d["dirs"]))
        except (ValueError, KeyError, TypeError):
            return None

    def dumps(self) -> str:
        import json

        return json.dumps({"head": self.head, "suspects": sorted(self.suspects),
                           "at": self.at, "dirs": self.dirs}, sort_keys=True)


def limit(cards: int) -> int:
    return max(SUSPECTS_MIN, cards // 10)


RACY = -1


def _trusted(dirs: dict[str, int], since_ns: int) -> dict[str, int]:
    """Folder mtimes as an anchor keeps them: one too close to since_ns may hide a later
    change within the same clock tick, so it is RACY (listed on every check)."""
    return {d: (m if m < since_ns - MTIME_SLACK_NS else RACY) for d, m in dirs.items()}


def check_dirs(root: str, conn: sqlite3.Connection, dirs: dict[str, int],
               since_ns: int) -> tuple[set[str], dict[str, int]]:
    """Cards added, removed or renamed since the anchor, from one stat per folder: what
    `git status -uall` would list as untracked, without git reading every folder.

    A folder whose mtime moved is listed; the cards named there but not in the index,
    and those in the index but no longer there, are returned. A new folder is walked
    whole; a gone one gives all its indexed cards. Edits of names that stayed are
    git status's business (tracked) or already suspects (untracked at the walk, or new
    since: returned here when they appeared). Returns (ids, folder mtimes to keep).
    """
    from .files import walk
    from ..cards.paths import id_of_path

    found: set[str] = set()
    kept = dict(dirs)
    for rel in sorted(dirs):
        full = os.path.join(root, rel) if rel else root
        try:
            st = os.lstat(full)
            mtime = st.st_mtime_ns if statmod.S_ISDIR(st.st_mode) else None
        except OSError:
            mtime = None
        if mtime is not None and mtime == dirs[rel]:
            continue
        prefix = rel + "/" if rel else ""
        indexed = _indexed_in(conn, prefix)
        if mtime is None:  # gone (or no longer a folder): the parent lists what is new
            found |= indexed
            del kept[rel]
            continue
        kept[rel] = mtime  # taken before the listing: a later change moves it again
        listed = set()
        try:
            with os.scandir(full) as it:
                entries = [(e.name, e.is_dir(follow_symlinks=False), e.path) for e in it
                           if e.name[0] != "."]
        except OSError:
            entries = []
        for name, is_dir, path in entries:
            if not is_dir:
                if (cid := id_of_path(prefix + name)) is not None:
                    listed.add(cid)
            elif prefix + name not in dirs:  # a new folder: all of it
                new: dict[str, int] = {}
                found.update(cid for cid, _, _ in walk(path, None, new, prefix + name + "/"))
                kept.update(new)
        found |= listed ^ indexed
    return found, _trusted(kept, since_ns)


def _indexed_in(conn: sqlite3.Connection, prefix: str) -> set[str]:
    """Ids the index holds (cards and problem files) directly in the folder `prefix`."""
    out = set()
    for table in ("cards", "problems"):
        if prefix:
            rows = conn.execute(f"SELECT id FROM {table} WHERE id > ? AND id < ?",
                                (prefix, prefix[:-1] + "0"))  # "0" sorts right after "/"
        else:
            rows = conn.execute(f"SELECT id FROM {table} WHERE instr(id, '/') = 0")
        out.update(r[0] for r in rows if "/" not in r[0][len(prefix):])
    return out


def check(root: str, conn: sqlite3.Connection, cards: int, anchor: Anchor,
          status: Status) -> tuple[set[str], Anchor | None] | None:
    """(ids to stat-check, the anchor moved to the new HEAD or grown, None if the same)
    from git and the folders' mtimes; None: walk instead."""
    found, dirs = check_dirs(root, conn, anchor.dirs, status.started_ns)
    listed, now = status.paths(), status.head
    if listed is None or now is None or len(listed) > limit(cards):
        return None
    changed: list[str] = []
    if now != anchor.head:
        diff = Git(root, ["diff", "--name-only", "-z", "--no-renames", anchor.head, now,
                          "--"]).paths()
        if diff is None:
            return None  # H is gone (a rebase, a gc): walk and anchor again
        changed = diff
    suspects = anchor.suspects | card_ids(root, [*listed, *changed]) | found
    if len(suspects) > limit(cards):
        return None
    if now == anchor.head and suspects == anchor.suspects and dirs == anchor.dirs:
        return suspects, None
    return suspects, Anchor(now, suspects, anchor.at, dirs)


def after_walk(root: str, before: Status, links: Iterable[str],
               dirs: dict[str, int]) -> Anchor | None:
    """The anchor a walk makes, from HEAD and a full git status read *before* the walk
    started (the claim needs that order), and the folder mtimes the walk took; None
    when this store cannot be anchored now. What was written since the status started
    joins it in settle()."""
    listed = before.paths()
    if listed is None or before.head is None or not before.full:
        return None
    hidden = before.hidden()
    if hidden is None:
        return None
    return Anchor(before.head, card_ids(root, [*listed, *hidden]) | set(links), time.time(),
                  _trusted(dirs, before.started_ns))


def settle(conn: sqlite3.Connection, base: Anchor | None, new: Anchor | None,
           touched: Iterable[str], cards: int, since_ns: int | None = None) -> None:
    """Keep the anchor true after a refresh, in one transaction.

    base: the anchor read before the refresh; new: what the refresh makes of it (a walk's
    fresh anchor, a check's moved one, or None); touched: ids whose rows it changed or
    removed (a walk passes those it found gone: its re-read rows come from since_ns).
    since_ns (a walk's status start): rows of cards written since then are suspects,
    whoever indexed them. Suspects that other processes added since `base`
    (the watcher's refresh_ids) are kept. If another walk re-anchored meanwhile, a check
    adds what it touched to that anchor and a walk drops it (the next one walks again).
    """
    touched = set(touched)
    walked = since_ns is not None
    if not walked and new is None and not touched:
        return
    if walked and new is None and Anchor.load(conn) is None:
        return  # nothing to drop (a store without commits walks every time)
    conn.execute("BEGIN IMMEDIATE")
    try:
        cur = Anchor.load(conn)
        same = (cur is not None and base is not None
                and (cur.head, cur.at) == (base.head, base.at))
        final: Anchor | None
        if walked and new is not None and (cur is None or same):
            recent = {r[0] for q in ("cards", "problems") for r in conn.execute(
                f"SELECT id FROM {q} WHERE mtime_ns >= ?", (since_ns - MTIME_SLACK_NS,))}
            added = cur.suspects - base.suspects if same else set()  # type: ignore[union-attr]
            final = Anchor(new.head, new.suspects | recent | touched | added, new.at, new.dirs)
            if len(final.suspects) > limit(cards):
                final = None
        elif walked or cur is None:
            final = None if walked else cur  # a walk that cannot anchor drops the old one
        elif same and new is not None:
            final = Anchor(new.head, new.suspects | (cur.suspects - base.suspects) | touched,
                           cur.at, new.dirs)  # type: ignore[union-attr]
        else:
            final = Anchor(cur.head, cur.suspects | touched, cur.at, cur.dirs)
        if final is None:
            conn.execute("DELETE FROM meta WHERE key = ?", (META_KEY,))
        elif cur is None or final.dumps() != cur.dumps():
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (META_KEY, final.dumps()))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
