"""The one way anything writes to a store: lock, atomic files, one commit.

All writers (CLI, MCP, hooks, the watcher's auto-commit) call `commit_changes`. It takes
the store's write lock, writes each file to a temporary file in its own folder, fsyncs,
renames it into place, stages exactly those paths and commits them: a user's other
uncommitted edits stay uncommitted.
"""
from __future__ import annotations

import glob
import os
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from . import git, paths
from .errors import CardmemError, StoreBusy

LOCK_FILE = ".cardmem/write.lock"
PENDING_FILE = ".cardmem/writing"


@contextmanager
def write_lock(root: Path, timeout_s: float = 10.0) -> Iterator[None]:
    """Hold the store's write lock, or raise StoreBusy after timeout_s.

    On POSIX this is flock(2) on .cardmem/write.lock, the same lock filelock's UnixFileLock
    takes (so the two exclude each other), without filelock's import: 40-140 ms of CPU on
    every CLI write and hook, most of a write's cost. Elsewhere, filelock itself.
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
        deadline, pause = time.monotonic() + timeout_s, 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise busy from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock, also if this process dies


def atomic_write(path: Path, data: bytes) -> None:
    """Replace path's content with data: readers see the old bytes or the new, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():
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


@dataclass
class Message:
    """A commit message for people, with machine-readable Cardmem-* trailers."""

    subject: str
    lines: list[str] = field(default_factory=list)
    source: str = "cli"
    session: str | None = None

    def text(self) -> str:
        parts = [self.subject.strip()]
        if self.lines:
            parts.append("\n".join(self.lines))
        trailers = [f"Cardmem-Source: {self.source}"]
        if self.session:
            trailers.append(f"Cardmem-Session: {self.session}")
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
    paths.require_store(root)
    # The locks a commit takes: the index, HEAD and the branch's ref.
    locks = [root / ".git" / "index.lock", root / ".git" / "HEAD.lock"]
    try:
        ref = (root / ".git" / "HEAD").read_text().strip()
        if ref.startswith("ref: refs/"):
            locks.append(root / ".git" / (ref[5:] + ".lock"))
    except OSError:
        pass
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
                   agent: bool, lock_timeout_s: float = 10.0) -> str | None:
    """Write (bytes), delete (None) or take AS_IS store-relative paths; commit exactly them.

    `changes` may be a function: it then runs under the lock, so an edit computed from a
    card's current text never loses another writer's lines, and it may raise to refuse.
    Returns the new commit's sha, or None when nothing differs from HEAD.
    """
    paths.require_store(root)  # before write_lock makes .cardmem/ in a non-store
    with write_lock(root, lock_timeout_s):
        check_writable(root)
        if callable(changes):
            changes = changes()
        rels = list(changes)
        if not rels:
            return None
        # While files are being replaced, .cardmem/writing names them: a writer killed
        # mid-write leaves its temp files, which the next writer (under this lock, where
        # no write is live) removes. One small file instead of listing folders each time.
        pending = root / PENDING_FILE
        if pending.exists():
            for rel in pending.read_text().splitlines():
                p = root / rel
                for stale in p.parent.glob(f".{glob.escape(p.name)}.*.tmp"):
                    stale.unlink(missing_ok=True)
        pending.write_text("\n".join(rels) + "\n")
        new_files = []
        for rel, data in changes.items():
            path = root / rel
            if data is AS_IS:
                continue  # a person's bytes: committed as they are, never rewritten
            if data is None:
                path.unlink(missing_ok=True)
            elif not path.exists():
                new_files.append(rel)
                atomic_write(path, data)
            elif path.read_bytes() != data:
                atomic_write(path, data)
        pending.unlink()
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
        from .rules_file import after_write

        after_write(root, changes)
        return git.head_fast(root)
