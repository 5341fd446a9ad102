"""Lexical and semantic search fused (issue 16): reciprocal-rank fusion of FTS5's ranking
and the nearest vectors (store/index/semantic.py), with calibrated confidence.

Each result says why it came: `match` is "lexical" (FTS5 found it), "semantic" (only the
vectors did) or "both". When the model is missing or broken the search is the lexical one
and says so once (`semantic` in the JSON document, a line on stderr from the CLI).
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .db import Index
    from .search import SearchResult
    from .semantic import Similarities

from . import confidence

# Fitted on the calib half of bench/questions/agents-md.jsonl (bench_quality.py): the
# usual RRF constant, the semantic ranking weighed 0.7 of the lexical one, similarity
# added on top (SIM_WEIGHT: 0.01 of similarity outweighs one rank step, so among cards
# both sides found it orders them), better confidence first.
RRF_K = 60
SEMANTIC_WEIGHT = 0.7
SIM_WEIGHT = 0.03
POOL = 20  # candidates taken from each side before fusing
# Cards a search embeds at most (~9 ms of CPU each here, bench/RESULTS.md): a store new to the model is embedded
# by `cardmem index`, the watcher or the MCP server, not by one shell search.
SYNC_MAX = 50


def run(idx: "Index", query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None) -> "SearchResult":
    from . import embedding  # semantic (hashlib: OpenSSL, ~11 M instructions) only with a model
    from .search import run as lexical

    limit = max(1, int(limit))
    model = embedding.embedder()
    sims = None
    if model is not None:
        from . import semantic

        res = lexical(idx, query, max(limit, POOL), card_type, project)  # the fusion's pool
        try:
            # While a background embedder works (the watcher's, `cardmem index`'s), a
            # search embeds nothing itself: it leaves it the work (store/index/vectors.py).
            from .vectors import busy

            lagging = embedding.BACKFILL or busy(idx.db_path.parent)
            embed_max = 0 if lagging else SYNC_MAX
            pending = semantic.sync(idx, model, limit=embed_max)["pending"]
            sims = semantic.similarities(idx, model, query)
        except Exception as exc:  # noqa: BLE001 - a failing model must not fail the search
            embedding.fail(f"{type(exc).__name__}: {exc}")  # lexical from now on
            model = None
    if model is None:  # the lexical search itself: its pool follows the limit (search.run)
        res = lexical(idx, query, limit, card_type, project)
        res.semantic = {"status": "off", "reason": embedding.reason()}
        if not embedding.turned_off():  # the user's own choice needs no telling
            why = f"semantic search unavailable ({embedding.reason()})"
            res.note = _note_once(idx, why, f"{why}; lexical results only")
        return res
    res.semantic = {"status": "on", "model": model.stamp}
    if pending:
        res.semantic["not_embedded"] = pending
        how = ("(being embedded in the background)" if lagging else
               "(searches embed a few each); `cardmem index` embeds them")
        res.note = _note_once(idx, "pending", f"semantic search: {pending} cards not embedded"
                              f" yet {how}")
    _fuse(idx, res, sims, limit, card_type, project)
    return res


def _rows_sql() -> str:
    from .schema import COLUMNS

    return ("SELECT c.n, c.id, c.title, c.type, c.status, c.project, c.description,"
            f" substr(f.c{COLUMNS.index('body')}, 1, 400) FROM cards c JOIN fts_content f"
            " ON f.id = c.n WHERE c.n IN (SELECT value FROM json_each(?))")


def _fuse(idx: "Index", res: "SearchResult", sims: "Similarities", limit: int,
          card_type: str | None, project: str | None) -> None:
    from .search import _filters, _json_ids, _order, mark_stale

    lex = res.results
    where, args = _filters(card_type, project)
    # The nearest cards that pass the filters: with a filter, from many more (most of
    # the nearest may be of another type or project).
    ranked = sims.top(POOL * (20 if where else 1))
    near: list[tuple[int, float]] = []
    if ranked:
        ok = {n for (n,) in idx.conn.execute(
            f"SELECT n FROM cards c WHERE n IN (SELECT value FROM json_each(?)){where}",
            (_json_ids([n for n, _ in ranked]), *args))}
        near = [(n, s) for n, s in ranked if n in ok][:POOL]
    fused: dict[int, dict[str, Any]] = {}
    for rank, r in enumerate(lex):
        n = res.rowids[r["id"]]
        r["match"] = "lexical"
        r["_rrf"] = 1 / (RRF_K + rank + 1)
        r["similarity"] = round(sims.get(n, 0.0), 4)
        fused[n] = r
    sem_rank = {n: rank for rank, (n, _) in enumerate(near)}
    new = [n for n, _ in near if n not in fused]
    rows = {row[0]: row for row in idx.conn.execute(_rows_sql(), (_json_ids(new),))} if new else {}
    for n, s in near:
        r = fused.get(n)
        if r is None:
            _, cid, title, ctype, status, proj, desc, body = rows[n]
            words = [w for w in (desc or body or "").split() if not w.startswith("#")]
            r = fused[n] = {"id": cid, "title": title, "type": ctype, "score": 0.0,
                            "confidence": "low", "matched": [], "status": status,
                            "project": proj, "snippet": " ".join(words)[:200],
                            "match": "semantic", "_rrf": 0.0, "similarity": round(s, 4)}
        else:
            r["match"] = "both"
        r["_rrf"] += SEMANTIC_WEIGHT / (RRF_K + sem_rank[n] + 1)
    for r in fused.values():
        r["confidence"] = confidence.fused_label(r["confidence"], r["similarity"], r["match"],
                                                 r["matched"] == ["body"])
        rrf = r.pop("_rrf") + SIM_WEIGHT * r["similarity"]
        r["score"] = round(rrf * (RRF_K + 1) / (1 + SEMANTIC_WEIGHT), 4)  # rank terms ~1 at first on both; the similarity adds up to ~1
    mark_stale(idx, [r for r in fused.values() if r["match"] == "semantic"])  # as search.run
    out = sorted(fused.values(), key=_order)[:limit]
    res.results = out
    res.no_confident_results = not any(r["confidence"] != "low" for r in out)


def _note_once(idx: "Index", key: str, line: str) -> str | None:
    """A line for stderr, said once per store for each key (kept in the index's meta):
    a shell user is told, not nagged on every search."""
    c = idx.conn
    row = c.execute("SELECT value FROM meta WHERE key = 'semantic_note'").fetchone()
    if row and row[0] == key:
        return None
    try:
        c.execute("INSERT OR REPLACE INTO meta VALUES('semantic_note', ?)", (key,))
    except Exception:  # noqa: BLE001 - a busy index: say it again next time
        pass
    return line
