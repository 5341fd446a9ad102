"""The semantic layer's model and vectors (issue 16): embeddings beside the FTS5 index.

The model is store/search/embedding.py's (USE multilingual v3, from its PyPI package).

Vectors live in the index file, table `vectors`: one row per card rowid with the card's
content hash, the model stamp (name@version/dim/recipe) and its vectors as int8 unit
vectors times 127, one byte a dimension (512 for USE; read by the dimension the stamp
names), one after the other: the card's own (the mean of the two of card_text()), then
one per passage of a long card (passages(); issue 27). `sync()` brings them in
line with the cards after the index's own refresh: rows of cards gone or changed are
dropped, new and changed cards are embedded, a card renamed keeps its vector (found by
the text it was made from), and rows of another model stamp are never read and are
replaced. Nothing here runs unless a semantic search, the watcher or `cardmem index`
asks: the session-start hook never loads the model.
"""
from __future__ import annotations

import hashlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .embedding import Embedder

from .embedding import query_vector
from .matrix import matrix, seen
from ..index.vector_rows import cache, changed_since, ensure, forget, mark

TEXT_CHARS = 300  # of a card's body embedded after its title and description
# A long card is embedded as its passages too (issue 27): one truncated vector found a
# session of a conversation only by its first turns. A passage is a paragraph, one under
# SHORT_CHARS joined to the next, one over PASSAGE_CHARS cut; a card keeps MAX_PASSAGES.
SHORT_CHARS = 200
PASSAGE_CHARS = 500
MAX_PASSAGES = 64
# A card's similarity: (1 - SECOND) x its best row's + SECOND x its second best's. One
# passage alone near the query is weaker evidence than two (bench/fusion_lab.py, design
# data: session all@10 0.888 -> 0.903, agents-md calib hit@1 0.82 -> 0.87).
SECOND = 0.5
SCALE = 127.0  # int8 storage of unit vectors

# --- vectors in the index ---------------------------------------------------------------

def card_text(title: str, project: str | None, description: str, body: str) -> tuple[str, str]:
    """What is embedded for a card as a whole: its name (project and title), and its name
    with the description and the start of the body. The card's vector is the mean of the
    two: on the labelled set that beat either alone (hit@1 84% against 68% and 60%,
    semantic ranking only; bench/RESULTS.md)."""
    head = (f"{project}: {title}" if project else title).strip()
    parts = [head, (description or "").strip(), " ".join((body or "").split())[:TEXT_CHARS]]
    return head, ". ".join(p for p in parts if p)


def passages(body: str) -> list[str]:
    """A card body's passages: its paragraphs (a turn of a conversation, a section's
    text), a short one (a heading) joined to the next, a long one cut at words into
    PASSAGE_CHARS windows; at most MAX_PASSAGES (the rest joins the last). Empty when
    the body is short enough for the card's own vector to hold it whole."""
    flat = " ".join((body or "").split())
    if len(flat) <= TEXT_CHARS:
        return []
    out: list[str] = []
    carry = ""
    for para in (body or "").split("\n\n"):
        para = " ".join(para.split())
        if not para:
            continue
        para = f"{carry} {para}".strip() if carry else para
        if len(para) < SHORT_CHARS:
            carry = para
            continue
        carry = ""
        while len(para) > PASSAGE_CHARS:
            cut = para.rfind(" ", PASSAGE_CHARS // 2, PASSAGE_CHARS)
            cut = cut if cut > 0 else PASSAGE_CHARS
            out.append(para[:cut])
            para = para[cut:].strip()
        if para:
            out.append(para)
    if carry:
        if out and len(carry) < SHORT_CHARS:
            out[-1] = f"{out[-1]} {carry}"
        else:
            out.append(carry)
    if len(out) > MAX_PASSAGES:
        out[MAX_PASSAGES - 1:] = [" ".join(out[MAX_PASSAGES - 1:])[:PASSAGE_CHARS]]
    return out


def card_texts(title: str, project: str | None, description: str, body: str) -> list[str]:
    """Every text embedded for a card: card_text()'s two (their mean is the card's first
    vector), then each passage with the card's name before it (one vector each)."""
    head, whole = card_text(title, project, description, body)
    return [head, whole] + [f"{head}. {p}" for p in passages(body)]


def _texts_sql() -> str:
    from ..index.schema import COLUMNS

    return ("SELECT c.n, c.hash, c.title, c.project, c.description, f.c{body} FROM cards c"
            " JOIN fts_content f ON f.id = c.n WHERE c.n IN (SELECT value FROM json_each(?))"
            ).format(body=COLUMNS.index("body"))


def stale(idx: Any, model_stamp: str) -> tuple[list[int], int]:
    """(rowids of cards whose vector is missing, of another card text or model; how many
    vector rows belong to no card or another model)."""
    c = idx.conn
    ensure(c)
    todo = [n for (n,) in c.execute(
        "SELECT c.n FROM cards c LEFT JOIN vectors v ON v.n = c.n"
        " WHERE v.n IS NULL OR v.hash != c.hash OR v.model != ?", (model_stamp,))]
    extra = c.execute("SELECT count(*) FROM vectors v WHERE v.model != ? OR NOT EXISTS"
                      " (SELECT 1 FROM cards c WHERE c.n = v.n)", (model_stamp,)).fetchone()[0]
    return todo, extra


def sync(idx: Any, model: "Embedder", limit: int | None = None) -> dict[str, int]:
    """Bring the index's vectors in line with its cards (after idx.refresh()), embedding
    at most `limit` cards (None: all). Returns counts: embedded, reused (renamed or
    unchanged text), dropped, pending (cards left without a vector)."""
    import json

    np = model._np
    counts = {"embedded": 0, "reused": 0, "dropped": 0, "pending": 0}
    ensure(idx.conn)  # the vector log first: its making is a commit of its own
    now = seen(idx.conn)  # before the state: a commit after it is seen next time
    state, waiting = _synced(idx, model.stamp)
    if waiting is not None and (not waiting or limit == 0):  # nothing to do here
        counts["pending"] = len(waiting)
        return counts
    todo, extra = stale(idx, model.stamp)
    waiting = frozenset(todo)
    pending = counts["pending"] = max(0, len(todo) - limit) if limit is not None else 0
    todo = todo[:len(todo) - pending]
    if not todo and not extra:  # (every one waits: limit 0)
        _mark_synced(idx, model.stamp, state, now, waiting)
        return counts
    c = idx.conn
    # Vectors of this model by the text they were made from: a renamed card (new rowid,
    # same text) or a touched one (new hash, same text) keeps its vector.
    by_key = dict(c.execute("SELECT key, vec FROM vectors WHERE model = ?", (model.stamp,)))
    rows: list[tuple[int, str, str, bytes | None, list[str]]] = []
    sql = _texts_sql()
    for at in range(0, len(todo), 500):
        part = json.dumps(todo[at:at + 500])
        for n, h, title, proj, desc, body in c.execute(sql, (part,)):
            texts = card_texts(title, proj, desc, body)
            key = hashlib.sha1("\0".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
            rows.append((n, h, key, by_key.get(key), texts))
    need = [r for r in rows if r[3] is None]
    vecs: dict[int, bytes] = {}
    at = 0
    while at < len(need):  # a few hundred texts a batch, whole cards
        part, size = [], 0
        while at < len(need) and (not part or size + len(need[at][4]) <= 256):
            part.append(need[at])
            size += len(need[at][4])
            at += 1
        emb = model.encode([t for r in part for t in r[4]])
        q = np.clip(np.rint(emb * SCALE), -127, 127).astype(np.int8)
        i = 0
        for r in part:
            k = len(r[4])
            # the card's own vector: the mean of its name and its start; then its passages
            first = np.clip(np.rint((emb[i] + emb[i + 1]) / 2 * SCALE), -127, 127).astype(np.int8)
            vecs[r[0]] = first.tobytes() + q[i + 2:i + k].tobytes()
            i += k
    new = {n: old if old is not None else vecs[n] for n, _, _, old, _ in rows}
    c.execute("BEGIN IMMEDIATE")
    try:
        # Nobody committed since this sync looked (its state, read before the join): then
        # what this commit leaves is known to be in line. Otherwise (cards saved while the
        # model worked) the next sync looks again.
        alone = _state(idx) == state
        gone = [n for (n,) in c.execute("SELECT n FROM vectors WHERE model != ? OR n NOT IN"
                                        " (SELECT n FROM cards)", (model.stamp,))]
        c.execute("DELETE FROM vectors WHERE n IN (SELECT value FROM json_each(?))",
                  (json.dumps(gone),))
        c.executemany("INSERT OR REPLACE INTO vectors(n, hash, key, model, vec) VALUES (?,?,?,?,?)",
                      [(n, h, key, model.stamp, new[n]) for n, h, key, _, _ in rows])
        after = _state(idx)  # what this commit leaves: no other writer until it is done
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        forget(idx)
        raise
    counts["dropped"] = len(gone)
    counts["embedded"] = len(need)
    counts["reused"] = len(rows) - len(need)
    if not pending and alone:
        _mark_synced(idx, model.stamp, after, None, frozenset())
    return counts


# What an open Index keeps between searches (a long-lived process: the MCP server, the
# watcher), on the Index itself so that it goes with it: "synced", the state of the index
# when a sync last found nothing to do but, maybe, cards waiting for a background
# embedder (a search then skips the join of cards and vectors), and "matrix", this model's vectors in memory (store/search/matrix.py). The
# index's state is (generation, the vector log's mark): a refresh by any process moves
# the first, a vector written by any process the second; it is read only when something
# was committed at all (matrix.seen). Each entry names its connection: a reopened file
# starts afresh.

def _state(idx: Any) -> tuple[Any, ...]:
    return idx.generation(), mark(idx.conn)


def _synced(idx: Any, stamp: str) -> tuple[Any, frozenset[int] | None]:
    """(the index's state now; the cards a sync of this model found without a vector at
    this state, with nothing else to do, or since then as the vector log tells: None
    when no sync saw it)."""
    c, kept = idx.conn, cache(idx)
    now = seen(c)
    got = kept.get("synced")
    if not got or got[1] != stamp or got[2] is not c:
        return _state(idx), None
    if got[3] == now:
        return got[0], got[4]
    state = _state(idx)
    if state[1][0] is None:  # no vector log: only the join can say
        return state, None
    waiting = got[4] if got[0] == state else _waiting_since(idx, stamp, got[0], got[4], state)
    if waiting is None:
        return state, None
    kept["synced"] = (state, stamp, c, now, waiting)
    return state, waiting


def _waiting_since(idx: Any, stamp: str, then: Any, waiting: frozenset[int],
                   now: Any) -> frozenset[int] | None:
    """The cards without a vector now, when since the synced state `then` (with `waiting`)
    only vectors changed: an embedder's commit elsewhere, checked for the cards it wrote
    (from the vector log), not by the join of every card. None: only the join can say
    (cards changed, the log cannot tell, or it left a row of no card or another model)."""
    import json

    if then[0] != now[0]:
        return None  # cards changed (a refresh)
    changed = changed_since(idx.conn, then[1])
    if changed is None:
        return None
    ns = json.dumps(sorted(changed))
    c = idx.conn
    if c.execute("SELECT 1 FROM vectors v WHERE v.n IN (SELECT value FROM json_each(?1))"
                 " AND (v.model != ?2 OR NOT EXISTS (SELECT 1 FROM cards c WHERE c.n = v.n))"
                 " LIMIT 1", (ns, stamp)).fetchone():
        return None
    out = {n for (n,) in c.execute(
        "SELECT c.n FROM cards c LEFT JOIN vectors v ON v.n = c.n"
        " WHERE c.n IN (SELECT value FROM json_each(?1))"
        " AND (v.n IS NULL OR v.hash != c.hash OR v.model != ?2)", (ns, stamp))}
    return frozenset((waiting - changed) | out)


def _mark_synced(idx: Any, stamp: str, state: Any, now: Any, waiting: frozenset[int]) -> None:
    """A sync of this model found nothing to do at `state` but the `waiting` cards without
    a vector (read at `now`; None: check the state again next time)."""
    cache(idx)["synced"] = (state, stamp, idx.conn, now, waiting)


class Similarities:
    """The query's cosine similarity to every card with a vector (rowids ascending): a
    card's is the mean of its best two rows' (its own vector's and its passages'; SECOND
    weighs the second), `best` its best row's alone (passage() says which); the nearest
    are taken with a partial sort, so only a few leave numpy."""

    def __init__(self, ids: Any, sims: Any) -> None:
        import numpy as np

        self._rows, self._row_sims = ids, sims
        if len(ids):
            starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
            self.ids, self.sims = ids[starts], np.maximum.reduceat(sims, starts)
            self.best = self.sims
            if SECOND:
                counts = np.diff(np.r_[starts, len(ids)])
                top = np.repeat(self.sims, counts)
                rest = np.where(sims >= top, -1.0, sims)
                second = np.maximum.reduceat(rest, starts)
                second = np.where(counts > 1, second, self.sims)
                self.sims = (1 - SECOND) * self.sims + SECOND * np.maximum(second, 0)
            self._starts = starts
        else:
            self.ids, self.sims, self._starts = ids, sims, ids
            self.best = sims

    def __len__(self) -> int:
        return len(self.ids)

    def passage(self, n: int) -> int:
        """Which of card n's passages (semantic.passages(), from 0) is nearest the query;
        -1 when its own vector is (or it has none)."""
        import numpy as np

        at = int(np.searchsorted(self.ids, n))
        if at >= len(self.ids) or self.ids[at] != n:
            return -1
        start = int(self._starts[at])
        end = int(self._starts[at + 1]) if at + 1 < len(self._starts) else len(self._rows)
        return int(np.argmax(self._row_sims[start:end])) - 1

    def top(self, k: int) -> list[tuple[int, float]]:
        """The k nearest (rowid, similarity), nearest first, ties by rowid."""
        import numpy as np

        v = self.sims
        if k <= 0 or not len(v):
            return []
        pos = np.arange(len(v))
        if k < len(v):
            kth = np.partition(v, len(v) - k)[len(v) - k]
            pos = np.flatnonzero(v >= kth)  # every tie of the k-th too: the order is exact
        pos = pos[np.lexsort((pos, -v[pos]))][:k]
        return list(zip(self.ids[pos].tolist(), v[pos].tolist()))

    def get(self, n: int, default: float = 0.0, best: bool = False) -> float:
        """One card's similarity (default: the card has no vector); with best, its best
        row's alone."""
        import numpy as np

        at = int(np.searchsorted(self.ids, n))
        v = self.best if best else self.sims
        return float(v[at]) if at < len(self.ids) and self.ids[at] == n else default


def similarities(idx: Any, model: "Embedder", query: str) -> Similarities:
    """The query's similarity to each card (none for an empty query)."""
    np = model._np
    ids, mat = matrix(idx, model.stamp)
    if not len(ids) or not query.strip():
        return Similarities(ids[:0], np.zeros(0, dtype=np.float32))
    a, b = model.affine  # the model's cosines on the scale the fusion was fitted on
    sims = mat @ (query_vector(model, query) * (a / SCALE)).astype(np.float32)
    return Similarities(ids, sims + np.float32(b) if b else sims)
