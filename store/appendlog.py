"""The one writer of the append-only logs in .cardmem/: the hook log, the rules' firings,
the reads log, the receipts and the updates log.

A record (whole lines) goes in with one write to a file opened O_APPEND, under an
exclusive flock, so concurrent writers never interleave or tear a line. A log given
`max_bytes` is rotated first, under the same lock, once it has reached that size: it
becomes `<name>.1` (one older generation kept) and the record starts a new file. Only
os and fcntl: the PreToolUse hook writes through it.
"""
from __future__ import annotations

import fcntl
import os

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
            if _still_at(fd, path):  # else another writer rotated it while we waited
                os.replace(path, path + ".1")
            os.close(fd)
            fd = -1  # closed: a reopen that fails must not close it twice
            fd = _locked(path, mode)
        view = memoryview(raw)
        while view:  # one write for any sane size; loop only on a short write
            view = view[os.write(fd, view):]
    finally:
        if fd >= 0:
            os.close(fd)  # closing releases the lock


def _locked(path: str, mode: int) -> int:
    fd = os.open(path, _FLAGS, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:
        os.close(fd)
        raise
    return fd


def _still_at(fd: int, path: str) -> bool:
    try:
        st, here = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)
