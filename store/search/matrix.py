"""The vectors kept in memory: one float32 matrix of a model's vectors, read once by a
long-lived process (the MCP server, the watcher) and then patched, not reread.

The matrix holds the int8 vectors as stored (store/search/semantic.py writes them), as
float32 so the product costs no per-query conversion: a card's own vector, then its
passages', rows ordered by card rowid. It is kept on the Index (vector_rows.cache),
named by its connection: a reopened file starts afresh.

When is it stale? A commit by another process moves `PRAGMA data_version`, one by this
connection its `total_changes`; only then is the index's vector log asked (store/index/
vector_rows.py: the cards whose vectors changed, kept by SQLite triggers). A commit that
touched no vector (the watcher indexing a save, a read note) costs one small query; one
that did rereads only those cards' rows (bench/RESULTS.md, branch mcpfast). A log that
cannot say (a rebuilt file, or a reader too far behind) means reading them all.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

from .embedding import dim_of
from ..index.vector_rows import cache, changed_since, ensure, mark


class Kept:
    """A model's vectors as read at `mark` (vector_rows.mark), and the connection's state
    (data_version, total_changes) when that was last checked."""

    __slots__ = ("stamp", "conn", "seen", "mark", "ids", "mat")

    def __init__(self, stamp: str, conn: Any, seen: tuple[int, int],
                 at: tuple[str | None, int], ids: Any, mat: Any) -> None:
        self.stamp, self.conn, self.seen, self.mark, self.ids, self.mat = (
            stamp, conn, seen, at, ids, mat)


def seen(c: Any) -> tuple[int, int]:
    """What moves when anything is committed to the index: by another connection
    (data_version), or by this one (total_changes)."""
    return c.execute("PRAGMA data_version").fetchone()[0], c.total_changes


def matrix(idx: Any, model_stamp: str) -> tuple[Any, Any]:
    """(the card rowid of each row, ascending; float32 matrix: the int8 vectors as
    stored, a card's own vector then its passages') of this model's vectors, kept per
    connection and patched from the vector log when they change."""
    c = idx.conn
    now = seen(c)
    got = cache(idx).get("matrix")
    if isinstance(got, Kept) and got.stamp == model_stamp and got.conn is c:
        if got.seen == now:
            return got.ids, got.mat
        at = mark(c)
        if at == got.mark and at[0] is not None:  # no log: it cannot vouch for anything
            got.seen = now
            return got.ids, got.mat
        changed = changed_since(c, got.mark)
        if changed is not None:
            got.ids, got.mat = _patched(c, model_stamp, got.ids, got.mat, changed)
            got.seen, got.mark = now, at
            return got.ids, got.mat
    ensure(c)
    at = mark(c)  # before the rows: a change after it is read again next time, no harm
    ids, mat = _read(c, model_stamp, None)
    cache(idx)["matrix"] = Kept(model_stamp, c, now, at, ids, mat)
    return ids, mat


def _read(c: Any, stamp: str, only: list[int] | None) -> tuple[Any, Any]:
    """(rowid of each row, float32 rows) of this model's vectors, of the cards `only`
    names (None: every card), by rowid."""
    import json

    import numpy as np

    dim = dim_of(stamp)
    sql = "SELECT n, vec FROM vectors WHERE model = ?"
    args: tuple[Any, ...] = (stamp,)
    if only is not None:
        sql += " AND n IN (SELECT value FROM json_each(?))"
        args += (json.dumps(only),)
    ns, counts, blobs = [], [], []
    for n, vec in c.execute(sql + " ORDER BY n", args):
        ns.append(n)
        counts.append(len(vec) // dim)
        blobs.append(vec)
    ids = np.repeat(np.array(ns, dtype=np.int64), counts).astype(np.int64)
    mat = (np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(ids), dim)
           .astype(np.float32) if ns else np.zeros((0, dim), dtype=np.float32))
    return ids, mat


def _patched(c: Any, stamp: str, ids: Any, mat: Any, changed: set[int]) -> tuple[Any, Any]:
    """ids and mat with the rows of the `changed` cards replaced by what the index holds
    now (none: the card lost its vector): one copy, in rowid order."""
    import numpy as np

    if not changed:
        return ids, mat
    order = sorted(changed)
    new_ids, new = _read(c, stamp, order)
    lo = np.searchsorted(ids, order, "left")
    hi = np.searchsorted(ids, order, "right")
    nlo = np.searchsorted(new_ids, order, "left")
    nhi = np.searchsorted(new_ids, order, "right")
    id_parts, parts, at = [], [], 0
    for a, b, na, nb in zip(lo.tolist(), hi.tolist(), nlo.tolist(), nhi.tolist()):
        id_parts += [ids[at:a], new_ids[na:nb]]
        parts += [mat[at:a], new[na:nb]]
        at = b
    id_parts.append(ids[at:])
    parts.append(mat[at:])
    return np.concatenate(id_parts), np.concatenate(parts)
