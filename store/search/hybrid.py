"""Lexical and semantic search fused (issues 16, 27): FTS5's results and the nearest
vectors (store/search/semantic.py), scored together, with calibrated confidence.

The words go first: needs_vectors() decides from their result whether the model is asked
at all. When it is, a card's score is its lexical score as a share of the best card's
plus its similarity; the card holding most of the query's information stays first when
it alone holds a word of the query; cards only the vectors found are shown only over a
similarity floor, never to pad the list.

Each result says why it came: `match` is "lexical" (FTS5 found it), "semantic" (only the
vectors did), "both", or "neighbour" (it sits next to a strong result in a sequence of
cards, store/search/neighbours.py). When the model is missing or broken the search is the lexical one
and says so once (`semantic` in the JSON document, a line on stderr from the CLI).
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index
    from .search import SearchResult
    from .semantic import Similarities

from . import confidence

# Fitted by bench/fusion_lab.py on design data only (LoCoMo conv-26/30/41, session and
# turn cards; the calib half of bench/questions/agents-md.jsonl); bench/RESULTS.md.
# A card's fused score: its lexical score as a share of the best one's (search.py's
# score: bm25 within its tier, coverage, names), plus SEMANTIC_WEIGHT times its cosine
# similarity (its best passage's, store/search/semantic.py).
SEMANTIC_WEIGHT = 2.5
# A card only the vectors found is shown when its similarity reaches SIM_FLOOR: under it,
# nothing is memory worth an agent's reading (no padding up to the limit).
SIM_FLOOR = 0.4
# The words' first card, when it is the only card holding a word of the query as typed (a
# unique token, a rare name), stays first (confidence.UNIQUE_DF).
PIN_UNIQUE = True
# The similarity at which the vectors lift such a card, holding under COVER_UNIQUE of the
# query, to medium: the bar any card both sides found clears to be medium (SIM_BOTH).
SIM_PIN = confidence.SIM_BOTH
POOL = 20  # candidates taken from each side before fusing
NEIGHBOURS = True  # cards in a sequence lend each other score (store/search/neighbours.py)
DIALOG = True  # a conversation kept in one card is scored by its best turns too (dialog.py)
SPEAKERS = True  # a turn of the speaker a question names goes first (speakers.py)
# Cards a search embeds at most (each costs the search CPU: bench/RESULTS.md, "Figures from
# comments"): a store new to the model is embedded by `cardmem index`, the watcher or the
# MCP server, not by one shell search.
SYNC_MAX = 50
# More cards than this still without a vector after a search's SYNC_MAX (an import, an
# adopted folder, a pull), and the search starts the background embedder `cardmem index`
# starts: else every later search would pay for SYNC_MAX more until all were done.
BACKGROUND_AT = 200


def needs_vectors(lexical: "SearchResult", query: str) -> bool:
    """Whether the vectors could improve on this lexical result (search.run's, for the
    query): False when the words answer it alone, so the model need not even be loaded.
    That is: the first result holds a word of the query no other card holds, and is
    labelled high (a unique token, a rare name, every rare word of the question). Words
    of another script, no result, or only weak ones: True."""
    res = lexical.results
    if not res or not query.isascii():
        return True
    top = res[0]
    return not (top["id"] in lexical.unique and top["confidence"] == "high"
                and (len(res) == 1 or res[1]["id"] not in lexical.unique))


def run(idx: "Index", query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None) -> "SearchResult":
    from . import embedding  # semantic (hashlib: OpenSSL, ~11 M instructions) only with a model
    from .search import run as lexical

    limit = max(1, int(limit))
    if embedding.turned_off():  # words only, as the user asked: the lexical search itself
        res = lexical(idx, query, limit, card_type, project)
        res.semantic = {"status": "off", "reason": embedding.reason()}
        return res
    # One lexical search, as wide as the fusion's pool: it decides whether the model is
    # asked, and it is what the vectors are fused with.
    res = lexical(idx, query, max(limit, POOL), card_type, project)
    if not needs_vectors(res, query):
        res.semantic = {"status": "skipped", "reason": "the words answer it"}
        return _cut(res, limit)
    model = embedding.embedder()
    sims = None
    if model is not None:
        from . import semantic
        from ..index.db import busy as busy_index

        try:
            # While a background embedder works (the watcher's, `cardmem index`'s), a
            # search embeds nothing itself: it leaves it the work (store/search/vectors.py).
            from .vectors import busy, spawn

            lagging = embedding.BACKFILL or busy(idx.db_path.parent)
            embed_max = 0 if lagging else SYNC_MAX
            pending = semantic.sync(idx, model, limit=embed_max)["pending"]
            if not lagging and pending > BACKGROUND_AT:
                lagging = spawn(idx.root, idx.db_path) is not None
            sims = semantic.similarities(idx, model, query)
        except Exception as exc:  # noqa: BLE001 - a failing model must not fail the search
            if busy_index(exc):
                # Another writer held the index past its busy timeout: not the model's
                # fault; this search is lexical, the next one has the vectors again.
                res.semantic = {"status": "off", "reason": "the index was busy; try again"}
                return _cut(res, limit)
            embedding.fail(f"{type(exc).__name__}: {exc}")  # lexical from now on
            model = None
    if model is None:
        res.semantic = {"status": "off", "reason": embedding.reason()}
        why = f"semantic search unavailable ({embedding.reason()})"
        res.note = _note_once(idx, why, f"{why}; lexical results only")
        return _cut(res, limit)
    res.semantic = {"status": "on", "model": model.stamp}
    if pending:
        res.semantic["not_embedded"] = pending
        how = ("(being embedded in the background)" if lagging else
               "(searches embed a few each); `cardmem index` embeds them")
        res.note = _note_once(idx, "pending", f"semantic search: {pending} cards not embedded"
                              f" yet {how}")
    fuse(idx, res, sims, limit, card_type, project)
    return res


def _cut(res: "SearchResult", limit: int) -> "SearchResult":
    """The pool's first `limit` results, as the lexical search would have returned them."""
    res.results = res.results[:limit]
    res.no_confident_results = not any(r["confidence"] != "low" for r in res.results)
    return res


def _rows_sql(key: str = "n") -> str:
    """The rows of cards by rowid (key n, a JSON list of ints) or by id (a list of ids)."""
    from ..index.schema import COLUMNS

    return ("SELECT c.n, c.id, c.title, c.type, c.status, c.project, c.description,"
            f" f.c{COLUMNS.index('body')} FROM cards c JOIN fts_content f"
            f" ON f.id = c.n WHERE c.{key} IN (SELECT value FROM json_each(?))")


def _lend(idx: "Index", fused: "dict[int, dict[str, Any]]", sims: "Similarities",
          where: str, args: list[Any]) -> None:
    """Cards in a sequence lend each other score (store/search/neighbours.py): the fused
    results' scores mixed with their neighbours', and the neighbours of the first few
    results added (match "neighbour") when a card of the store has that id and passes
    the filters."""
    import json

    from . import neighbours

    short = {n for (n,) in idx.conn.execute(
        "SELECT n FROM cards WHERE n IN (SELECT value FROM json_each(?)) AND size <= ?",
        (json.dumps(list(fused)), neighbours.SHORT))}
    by_id = {r["id"]: r for n, r in fused.items() if n in short}
    mixed, new = neighbours.spread({cid: r["score"] for cid, r in by_id.items()})
    for cid, score in mixed.items():
        by_id[cid]["score"] = round(score, 4)
    if not new:
        return
    for n, cid, title, ctype, status, proj, desc, body in idx.conn.execute(
            _rows_sql("id") + " AND c.size <= ?" + where,
            (json.dumps(list(new)), neighbours.SHORT, *args)):
        sim = round(sims.get(n, 0.0), 4)
        fused[n] = {"id": cid, "title": title, "type": ctype, "score": round(new[cid], 4),
                    "confidence": confidence.fused_label("low", sim, "neighbour"),
                    "matched": [], "status": status, "project": proj,
                    "snippet": _snippet(desc, body, -1), "match": "neighbour",
                    "similarity": sim}


def fuse(idx: "Index", res: "SearchResult", sims: "Similarities", limit: int,
         card_type: str | None, project: str | None) -> None:
    """res (the lexical search's pool) reordered and completed by the similarities."""
    from .search import _filters, _json_ids, mark_stale

    lex = res.results
    where, args = _filters(card_type, project)
    # The nearest cards that pass the filters: with a filter, from many more (most of
    # the nearest may be of another type or project).
    ranked = [(n, s) for n, s in sims.top(POOL * (20 if where else 1))
              if sims.get(n, best=True) >= SIM_FLOOR]  # some passage near enough
    near: list[tuple[int, float]] = []
    if ranked:
        ok = {n for (n,) in idx.conn.execute(
            f"SELECT n FROM cards c WHERE n IN (SELECT value FROM json_each(?)){where}",
            (_json_ids([n for n, _ in ranked]), *args))}
        near = [(n, s) for n, s in ranked if n in ok][:POOL]
    fused: dict[int, dict[str, Any]] = {}
    best = max((r["score"] for r in lex), default=0.0) or 1.0
    for r in lex:
        n = res.rowids[r["id"]]
        r["match"] = "lexical"
        r["_f"] = r["score"] / best
        r["similarity"] = round(sims.get(n, 0.0), 4)
        fused[n] = r
    new = [n for n, _ in near if n not in fused]
    rows = {row[0]: row for row in idx.conn.execute(_rows_sql(), (_json_ids(new),))} if new else {}
    for n, s in near:
        r = fused.get(n)
        if r is None:
            if n not in rows:  # deleted (another process's refresh) since `ok` was read
                continue
            _, cid, title, ctype, status, proj, desc, body = rows[n]
            r = fused[n] = {"id": cid, "title": title, "type": ctype, "score": 0.0,
                            "confidence": "low", "matched": [], "status": status,
                            "project": proj, "snippet": _snippet(desc, body, sims.passage(n)),
                            "match": "semantic", "_f": 0.0, "similarity": round(s, 4)}
    for r in fused.values():
        if r["match"] == "lexical" and r["similarity"] >= confidence.SIM_NEAR:
            r["match"] = "both"  # the vectors see it near the query too
    # The card holding most of the query's information (confidence.coverage), when it
    # holds a query word no other card holds, stays first, labelled at least medium when
    # that is most of the query; else when the vectors see a relation and the words name
    # what the card is about (not its body alone), or the vectors vouch for it as they
    # must for any card both sides found (SIM_PIN): one rare word of a longer question,
    # met in passing, is not an answer by itself.
    cover = res.cover
    first = max(lex, key=lambda r: (cover.get(r["id"], 0.0), r["id"] in res.unique, r["_f"])
                )["id"] if lex else None
    pinned = {first} & res.unique if PIN_UNIQUE else set()
    for r in fused.values():
        r["confidence"] = confidence.fused_label(r["confidence"], r["similarity"], r["match"],
                                                 r["matched"] == ["body"])
        if r["id"] in pinned and r["confidence"] == "low" and (
                cover.get(r["id"], 0.0) >= confidence.COVER_UNIQUE
                or r["similarity"] >= SIM_PIN or r["similarity"] >= confidence.SIM_UNRELATED
                and r["matched"] != ["body"]):
            r["confidence"] = "medium"
        r["score"] = round(r.pop("_f") + SEMANTIC_WEIGHT * r["similarity"], 4)
    if DIALOG:
        from . import dialog

        dialog.lend(idx, res.query, fused)
    if NEIGHBOURS:
        _lend(idx, fused, sims, where, args)
    mark_stale(idx, [r for r in fused.values() if r["match"] in ("semantic", "neighbour")])
    out = sorted(fused.values(), key=lambda r: _fused_order(r, pinned))
    if SPEAKERS:  # before the cut: the first result is the same whatever the limit
        from .speakers import named_first

        lead = named_first(idx, res.query, out, {r["id"]: n for n, r in fused.items()})
        if lead is not None:
            out.sort(key=lambda r: _fused_order(r, pinned, lead))
    out = out[:limit]
    confidence.stand_out(out, cover, res.unique)  # labels only: the order is the score's
    res.results = out
    res.no_confident_results = not any(r["confidence"] != "low" for r in out)


def _fused_order(r: dict[str, Any], pinned: set[str], lead: str | None = None
                 ) -> tuple[Any, ...]:
    """A card holding a query word no other card holds first; then the lead (a turn of
    the speaker the query names, speakers.py); then by fused score; a superseded,
    archived, proposed or stale card after the active ones (as search._order)."""
    from ..cards.status import INACTIVE

    inactive = r["status"] in INACTIVE or "stale" in r
    return (inactive, r["id"] not in pinned, r["id"] != lead, -r["score"], r["id"])


def _snippet(desc: str, body: str, passage: int) -> str:
    """A card only the vectors found: its nearest passage, else its description or start."""
    if passage >= 0:
        from .semantic import passages

        got = passages(body)
        if passage < len(got):
            return got[passage][:200]
    words = [w for w in (desc or body or "").split() if not w.startswith("#")]
    return " ".join(words)[:200]


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
