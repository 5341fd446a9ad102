"""The one way anything writes to a store: lock, atomic files, one commit.

All writers (CLI, MCP, hooks, the watcher's auto-commit) call `commit_changes` through
one door, Store.commit (store/store.py), which sets the lock's timeout and what runs after
a commit. It takes the store's write lock, writes each file to a temporary file in its own
folder, fsyncs, renames it into place, stages exactly those paths and commits them: a
user's other uncommitted edits stay uncommitted. This module knows nothing of what is
derived from cards (the rules' tables): the caller's `after` brings that up to date.
"""
from __future__ import annotations

import glob
import os
import tempfile
import time
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from . import runner as git
from ..cards import paths
from ..cards.card import MAX_CARD_BYTES
from ..errors import CardmemError, StoreBusy
from .head_file import require_card_store, require_store

if TYPE_CHECKING:
    from ..progress import Progress

LOCK_FILE = ".cardmem/write.lock"
PENDING_FILE = ".cardmem/writing"


WAIT_SAID_S = 0.5  # a wait shorter than this is not worth a line


def _holder(lock_path: Path) -> str:
    """Who holds the lock, as its holder wrote it (`pid N (cardmem COMMAND)`)."""
    try:
        said = lock_path.read_text(errors="replace").strip()
    except OSError:
        said = ""
    return said or "another writer"


def _mark_holder(fd: int) -> None:
    """Write who holds the lock into the lock file, for a writer that waits on it."""
    what = " ".join(["cardmem", *sys.argv[1:2]]) if sys.argv[1:2] else "cardmem"
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} ({what})\n".encode(), 0)
    except OSError:
        pass  # only a courtesy to the next waiter


@contextmanager
def write_lock(root: Path, timeout_s: float = 10.0,
               progress: "Progress | None" = None) -> Iterator[None]:
    """Hold the store's write lock, or raise StoreBusy after timeout_s. progress (store/
    progress.py's) is told a wait past WAIT_SAID_S, naming the holder, in seconds of timeout_s.

    On POSIX this is flock(2) on .cardmem/write.lock, the same lock filelock's UnixFileLock
    takes (so the two exclude each other), without filelock's import, which was most of
    the CPU of a CLI write or a hook (bench/RESULTS.md, "Figures from comments").
    Elsewhere, filelock itself.
    """
    lock_path = root / LOCK_FILE
    lock_path.parent.mkdir(exist_ok=True)
    busy = StoreBusy(str(root), f"store busy: another writer held the lock for {timeout_s:g} s; "
                                "try again")
    try:
        import fcntl
    except ImportError:  # no flock: filelock's portable lock
        from filelock import FileLock, Timeout

        lock = FileLock(str(lock_path), timeout=timeout_s)
        try:
            lock.acquire()
        except Timeout:
            raise busy from None
        try:
            yield
        finally:
            lock.release()
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        start = time.monotonic()
        deadline, pause, waiting = start + timeout_s, 0.002, ""
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                now = time.monotonic()
                if now >= deadline:
                    if waiting and progress is not None:  # the bar ends before the error
                        progress(waiting, int(timeout_s), int(timeout_s))
                    raise busy from None
                if progress is not None and now - start >= WAIT_SAID_S:
                    waiting = waiting or f"waiting for the store's lock, held by {_holder(lock_path)}"
                    progress(waiting, int(now - start), int(timeout_s))
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        if waiting and progress is not None:
            progress(waiting, int(timeout_s), int(timeout_s))
        _mark_holder(fd)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock, also if this process dies


def temp_prefix(name: str) -> str:
    """The start of a temp file's name for a file: `.<name>.`, then mkstemp's 8 letters
    and `.tmp`; the name is cut (at a whole character) so that all of it fits NAME_MAX."""
    cut = name.encode()[:paths.NAME_MAX - len("..12345678.tmp")]
    return f".{cut.decode(errors='ignore')}."


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace path's content with data: readers see the old bytes or the new, never a mix.
    The file keeps its mode (a new one: 0644), or gets `mode` when given, from the start:
    the temporary file is made 0600 and only ever widened to it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# At most this many lines of a commit message's body name what changed; the rest are counted.
MESSAGE_LINES = 50


@dataclass
class Message:
    """A commit message for people, with machine-readable Cardmem-* trailers."""

    subject: str
    lines: list[str] = field(default_factory=list)
    source: str = "cli"
    session: str | None = None
    trailers: dict[str, str] = field(default_factory=dict)  # more `Cardmem-*: value` lines

    def text(self) -> str:
        parts = [self.subject.strip()]
        if self.lines:
            lines = self.lines[:MESSAGE_LINES]
            if len(self.lines) > MESSAGE_LINES:  # a batch of 1,000 cards: its diff lists them
                lines.append(f"... and {len(self.lines) - MESSAGE_LINES} more "
                             "(`git show --stat` lists them all)")
            parts.append("\n".join(lines))
        trailers = [f"Cardmem-Source: {self.source}"]
        if self.session:
            trailers.append(f"Cardmem-Session: {self.session}")
        trailers += [f"{k}: {v}" for k, v in self.trailers.items()]
        parts.append("\n".join(trailers))
        return "\n\n".join(parts) + "\n"


# How long a write waits for someone else's .git/index.lock to go (an editor's or a
# prompt's `git status` holds it for milliseconds) before calling it stale.
INDEX_LOCK_WAIT_S = 1.0


def check_writable(root: Path) -> None:
    """Refuse, with what to do, a store git cannot commit to right now.

    Call it holding the write lock: another cardmem writer's git holds index.lock while it
    commits, so outside the lock a live lock would look stale.
    """
    require_store(root)
    locks = git.commit_locks(root)
    deadline = time.monotonic() + INDEX_LOCK_WAIT_S
    for lock in locks:
        while lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        if lock.exists():
            raise git.lock_file_error(str(lock))
    if git.detached(root):
        raise CardmemError(f"store {root}",
                           f"HEAD is detached; run `git -C {root} switch <branch>` first")


class _AsIs:
    """Commit a path as it is on disk, writing nothing (the watcher's human edits)."""

    def __repr__(self) -> str:
        return "AS_IS"


AS_IS = _AsIs()
Changes = dict[str, "bytes | None | _AsIs"]


def commit_changes(root: Path, changes: "Changes | Callable[[], Changes]", message: Message, *,
                   agent: bool, lock_timeout_s: float = 10.0,
                   progress: "Progress | None" = None,
                   after: Callable[[list[str]], object] | None = None) -> str | None:
    """Write (bytes), delete (None) or take AS_IS store-relative paths; commit exactly them.

    `changes` may be a function: it then runs under the lock, so an edit computed from a
    card's current text never loses another writer's lines, and it may raise to refuse.
    `after(paths)` runs once a commit is made, still under the lock (it must not raise).
    Returns the new commit's sha, or None when nothing differs from HEAD.
    """
    require_card_store(root)  # before write_lock makes .cardmem/ in a non-store
    with write_lock(root, lock_timeout_s, progress):
        check_writable(root)
        recover(root)
        if callable(changes):
            changes = changes()
        rels = list(changes)
        if not rels:
            return None
        _refuse_oversized(changes)
        if agent:
            _refuse_unsaved(root, changes)
        # From the first file replaced to the commit, .cardmem/writing names the paths:
        # the next writer (under this lock, where no write is live) cleans up after one
        # killed in between (recover). One small file instead of listing folders each time.
        pending = root / PENDING_FILE
        pending.write_text("\n".join(rels) + "\n")
        try:
            sha = _write_and_commit(root, changes, message, agent)
        except BaseException:
            try:
                recover(root)  # unstage now, not at the next write
            except (CardmemError, OSError):
                pass  # (a git lock in the way): the next writer does it
            raise
        pending.unlink()
        if sha is not None and after is not None:
            after(rels)
        return sha


def _refuse_unsaved(root: Path, changes: "Changes") -> None:
    """An agent never writes over, or commits, what a person changed and has not committed:
    its write would replace their unsaved edit or sweep it into the agent's commit under
    the agent's name. Taken as is (AS_IS) is what a person saved: not refused."""
    from . import status

    dirty = status.changes(root, [rel for rel, data in changes.items() if data is not AS_IS])
    if dirty:
        rel, code = min(dirty.items())
        raise CardmemError(f"card {rel.removesuffix('.md')}",
                           f"has changes not yet committed ({status.kind(code)} by hand); "
                           "an agent does not write over them: commit or discard them "
                           "first; nothing written")


def _refuse_oversized(changes: "Changes") -> None:
    """Refuse a card over the size every reader skips, before anything is written: a card
    no search, context or map would ever show is a silent loss, not a write."""
    for rel, data in changes.items():  # any .md, not only paths.id_of_path's: none so large
        if rel.endswith(".md") and isinstance(data, bytes) and len(data) > MAX_CARD_BYTES:
            raise CardmemError(f"card {rel[:-3]}", f"would be {len(data):,} bytes; the limit "
                                                   f"is {MAX_CARD_BYTES:,} (readers skip "
                                                   "larger cards); nothing written")


def recover(root: Path) -> list[str]:
    """Clean up after a writer killed mid-write (call holding the write lock): remove its
    temp files, and unstage what it staged but did not commit, which a person's next
    `git commit` would otherwise sweep in. The files stay as the killed writer left them,
    uncommitted like any unsaved edit: it never reported success, and a commit under its
    message could claim a change it made only half of. Returns the paths unstaged."""
    pending = root / PENDING_FILE
    try:
        rels = [r for r in pending.read_text().splitlines() if r]
    except FileNotFoundError:
        return []
    for rel in rels:
        p = root / rel
        for stale in p.parent.glob(glob.escape(temp_prefix(p.name)) + "*.tmp"):
            stale.unlink(missing_ok=True)
    staged = []
    if rels:
        out = git.run(root, "diff", "--cached", "--name-only", "--no-renames", "-z", "--", *rels)
        if staged := [p for p in out.split("\0") if p]:
            git.run(root, "reset", "-q", "--", *staged)
    pending.unlink()
    return staged


def _write_and_commit(root: Path, changes: Changes, message: Message, agent: bool) -> str | None:
    rels = list(changes)
    new_files = []
    for rel, data in changes.items():
        path = root / rel
        try:
            if data is AS_IS:
                continue  # a person's bytes: committed as they are, never rewritten
            if data is None:
                path.unlink(missing_ok=True)
            elif not path.exists():
                new_files.append(rel)
                atomic_write(path, data)  # type: ignore[arg-type]
            elif path.read_bytes() != data:
                atomic_write(path, data)  # type: ignore[arg-type]
        except OSError as exc:  # a name too long here, a full disk: one line, no traceback
            raise CardmemError(rel, f"cannot write: {exc.strerror or exc}") from None
    # git commit --only takes the named paths' content from the work tree and commits
    # just them, whatever else the user has staged; only files new to the tree need
    # `git add` first. So an edit is one git call and a new card two.
    if new_files:
        git.run(root, "add", "-A", "--", *new_files)
    done = git.commit_paths(root, rels, message.text(), agent=agent)
    if done.returncode != 0:
        # A file that existed but git did not track yet, or nothing differs from HEAD
        # (a rewrite of the same bytes is no change): stage all and ask again.
        git.run(root, "add", "-A", "--", *rels)
        done = git.commit_paths(root, rels, message.text(), agent=agent)
        # --no-renames: a move lists its old path too.
        if done.returncode != 0:
            if git.run(root, "diff", "--cached", "--no-renames", "--name-only", "--",
                       *rels).strip():
                raise git.error("commit", done)
            return None
    return git.head_fast(root)
