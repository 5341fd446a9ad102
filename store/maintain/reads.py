"""When each card was last read: `.cardmem/reads.log` (not in git), what `stale` weighs
beside git's last change.

Readers append `epoch id` lines (StoreRoot.note_reads, through store/appendlog.py): a
card shown by `cardmem show`, read by MCP `read_card`, among a search's top
SEARCH_READS results (CLI and MCP), or delivered whole (not cut to a title or
description) in the session-start context.
The log only grows between maintenance passes; `compact` (run by `cardmem maintain`)
keeps each card's newest line and drops cards that no longer exist.
"""
from __future__ import annotations

import os

from ..appendlog import rewrite
from ..root import READS_LOG


def _path(root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(root), ".cardmem", READS_LOG)


def _parse(data: bytes, into: dict[str, float]) -> None:
    for line in data.decode("utf-8", "replace").splitlines():
        stamp, _, cid = line.partition(" ")
        try:
            t = float(stamp)
        except ValueError:
            continue  # a torn or foreign line
        if cid and t > into.get(cid, 0.0):
            into[cid] = t


def last_read(root: str | os.PathLike[str]) -> dict[str, float]:
    """card id -> when it was last read (epoch seconds); {} when never."""
    out: dict[str, float] = {}
    try:
        with open(_path(root), "rb") as f:
            _parse(f.read(), out)
    except OSError:
        pass
    return out


def compact(root: str | os.PathLike[str], keep: "set[str] | None" = None) -> None:
    """Rewrite the log with one line per card (of `keep`, when given), under the readers'
    own lock (store/appendlog.py): a read noted meanwhile waits, then goes into the new
    log. Never raises."""
    def one_line_a_card(data: bytes) -> bytes:
        seen: dict[str, float] = {}
        _parse(data, seen)
        return "".join(f"{int(t)} {cid}\n" for cid, t in sorted(seen.items())
                       if keep is None or cid in keep).encode()

    try:
        rewrite(_path(root), one_line_a_card)
    except OSError:
        pass
