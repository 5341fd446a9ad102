"""The one writer of the append-only logs in .cardmem/: the hook log, the rules' firings,
the reads log, the receipts and the updates log.

A record (whole lines) goes in with one write to a file opened O_APPEND, under an
exclusive flock, so concurrent writers never interleave or tear a line. A log given
`max_bytes` is rotated first, under the same lock, once it has reached that size: it
becomes `<name>.1` (one older generation kept) and the record starts a new file. A log
rewritten whole (`rewrite`: the reads log compacted) is replaced under the same lock,
and a writer that waited for it writes to the new file, so no line is lost. Only os and
fcntl: the PreToolUse hook writes through it.
"""
from __future__ import annotations

import fcntl
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT


def append(path: str | os.PathLike[str], data: str | bytes, *, max_bytes: int = 0,
           mode: int = 0o644) -> None:
    """Append `data` (whole lines) to the log at `path`; raises OSError (a caller that
    must never fail, a hook, catches it)."""
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else data
    if not raw:
        return
    path = os.fspath(path)
    fd = _locked(path, mode)
    try:
        if max_bytes and os.fstat(fd).st_size >= max_bytes:
            os.replace(path, path + ".1")  # ours to move: the lock holder's, at `path`
            os.close(fd)
            fd = -1  # closed: a reopen that fails must not close it twice
            fd = _locked(path, mode)
        view = memoryview(raw)
        while view:  # one write for any sane size; loop only on a short write
            view = view[os.write(fd, view):]
    finally:
        if fd >= 0:
            os.close(fd)  # closing releases the lock


def rewrite(path: str | os.PathLike[str], change: Callable[[bytes], bytes]) -> None:
    """Replace the log at `path` with `change(its bytes)`, under its lock: what writers
    append meanwhile waits, then goes into the new file. Raises OSError (FileNotFoundError
    when there is no log)."""
    path = os.fspath(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = _locked(path, 0, os.O_RDONLY)  # the file now there: another rewrite may have replaced it
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, os.fstat(fd).st_mode & 0o777)
        try:
            view = memoryview(change(b"".join(chunks)))
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)  # the writers waiting on the old file find it gone, and reopen


def _locked(path: str, mode: int, flags: int = _FLAGS) -> int:
    """The log opened (for appending, unless `flags` say otherwise) and locked: the file
    now at `path` (one rewritten or rotated while we waited for its lock is opened again)."""
    while True:
        fd = os.open(path, flags, mode)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            raise
        if _still_at(fd, path):
            return fd
        os.close(fd)


def _still_at(fd: int, path: str) -> bool:
    try:
        st, here = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)
