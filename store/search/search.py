"""Search over the lexical index: safe queries, typo correction, ranking, confidence.

Its parts: terms.py (the query's terms, corrections, the Plan), candidates.py (tiers ranked
by bm25 under caps), snippets.py (which words matched where, snippets); this module
runs them and scores, labels and orders the results.

User text never reaches FTS5 syntax: the query is tokenized as the index is (ASCII words
by porter.py, FTS5's porter in Python; other text by FTS5's own tokenizers, in scratch
tables per connection; words seen before are cached per process), and every term goes
into the MATCH expression as a double-quoted string, so quotes, hyphens, colons,
parentheses, AND/OR/NOT/NEAR, `*`, `^`, non-Latin text and emoji are all just text. A
term missing from the index vocabulary is corrected against it (rapidfuzz, loaded only
then) before the query runs.
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index

from ..cards.paths import project_key
from ..cards.status import INACTIVE
from .candidates import Candidate, _candidates, _filters
from .confidence import CONFIDENCE, coverage, lexical_label
from ..index.schema import COLUMNS
from .snippets import Hits, _fields, _hits, _json_ids, _snippets, _texts
from . import terms
from .terms import Plan, plan

NAME_SET = {"title", "aliases"}
FUZZY_CUTOFF = 85  # rapidfuzz ratio of the whole query to a title or alias



class SearchResult:
    """What a search found: ranked results, corrections applied, and whether any is confident."""

    def __init__(self, query: str, results: list[dict[str, Any]],
                 corrected: dict[str, str], unknown: list[str],
                 empty_filter: str | None = None) -> None:
        self.query = query
        self.results = results
        self.corrected = corrected  # query term -> the vocabulary word searched instead
        self.unknown = unknown  # query terms neither found nor correctable
        self.no_confident_results = not any(r["confidence"] != "low" for r in results)
        # "type feedback in project acme-api" when no card at all passes the filters: the
        # query was never the problem
        self.empty_filter = empty_filter
        self.semantic: dict[str, Any] | None = None  # store/search/hybrid.py: model on or off, why
        self.rowids: dict[str, int] = {}  # each result's rowid in cards (hybrid.py fuses by it)
        self.bm25: dict[str, float] = {}  # each word-matched result's bm25, higher better
        # results holding a query word no other card holds (confidence.coverage)
        self.unique: set[str] = set()
        self.cover: dict[str, float] = {}  # the share of the query's information each holds
        self.note: str | None = None  # a line for stderr (the semantic fallback, once)

    def as_dict(self) -> dict[str, Any]:
        """The `cardmem search --json` document (DESIGN §10), plus corrections."""
        out = {"query": self.query, "results": self.results,
               "no_confident_results": self.no_confident_results,
               "corrected": self.corrected, "unknown_terms": self.unknown,
               "filter_matches_nothing": self.empty_filter is not None}
        if self.semantic is not None:
            out["semantic"] = self.semantic
        return out

    def __repr__(self) -> str:
        return f"SearchResult({self.query!r}, {len(self.results)} results)"


# --- scoring ----------------------------------------------------------------------------

def _confidence(coverage: float, names: float, rel: float) -> str:
    if names == 1 or (coverage == 1 and names >= 0.5 and rel >= 0.5):
        return "high"
    if (coverage == 1 and (names > 0 or rel >= 0.3)) or (coverage >= 0.5 and names >= 0.5):
        return "medium"
    return "low"


def run(idx: Index, query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None) -> SearchResult:
    limit = max(1, int(limit))
    query = query or ""
    p = plan(idx, query)
    results: list[dict[str, Any]] = []
    texts: dict[int, tuple[Any, ...]] = {}
    hits: dict[int, Hits] = {}
    if p.terms:
        # A few candidates past the limit, so that confidence can reorder them; more let
        # weaker tiers crowd out better-named cards (bench_search.py's labelled queries).
        found = _candidates(idx, p, max(limit + 2, 12), card_type, project)
        if found:
            texts = _texts(idx, found)
            hits = _hits(p, texts)
            results = _score(p, found, texts, hits)
    # Whole-query fuzzy matching of names, when some words were not found (or nothing was).
    if (p.unknown or not results) and query.strip():
        _merge(results, _fuzzy_names(idx, query, limit, card_type, project))
    _calibrate(idx, p, results)
    mark_stale(idx, results)
    results.sort(key=_order)
    results = results[:limit]
    if p.terms and results:
        _snippets(idx, p, results, texts, hits)
    rowids, bm25, covers, unique = {}, {}, {}, set()
    for r in results:
        desc = r.pop("_desc", "")
        rowids[r["id"]] = r.pop("_n")
        bm25[r["id"]] = r.pop("_bm25", 0.0)
        covers[r["id"]] = r.pop("_cover", 0.0)
        if r.pop("_unique", False):
            unique.add(r["id"])
        if not r.get("snippet"):
            r["snippet"] = " ".join(desc.split())[:200]
        r["match"] = "lexical"
    empty = None if results or not (card_type or project) else _empty_filter(idx, card_type,
                                                                             project)
    out = SearchResult(query, results, p.corrected, p.unknown, empty)
    out.rowids = rowids
    out.bm25 = bm25
    out.unique = unique
    out.cover = covers
    return out


def _empty_filter(idx: Index, card_type: str | None, project: str | None) -> str | None:
    """What the filters ask for, when no card at all has it ("type feedback and project
    acme-api"); None when some card does."""
    where, args = _filters(card_type, project)
    if idx.conn.execute(f"SELECT 1 FROM cards c WHERE 1{where} LIMIT 1", args).fetchone():
        return None
    return " and ".join(([f"type {card_type}"] if card_type else [])
                       + ([f"project {project_key(project)}"] if project else []))


def _calibrate(idx: Index, p: Plan, results: list[dict[str, Any]]) -> None:
    """Each word-matched result's label from the share of the query's information it
    holds (store/search/confidence.py), at most medium when they are all in its body; a name
    matched whole by rapidfuzz keeps its own."""
    bounds = terms._df_bounds(idx, [s for s, _ in p.stems])
    cover, unique = coverage(idx, p, [r["_n"] for r in results], bounds)
    for r in results:
        label = lexical_label(cover[r["_n"]])
        if label == "high" and r["matched"] == ["body"]:
            label = "medium"  # words met only in passing: found, not what the card is about
        r["_cover"] = cover[r["_n"]]
        if r["_n"] in unique:
            r["_unique"] = True  # the only card holding a word of the query, as typed
        if "title~" not in r["matched"] or CONFIDENCE.index(label) > CONFIDENCE.index(r["confidence"]):
            r["confidence"] = label



def mark_stale(idx: "Index", results: list[dict[str, Any]]) -> None:
    """Mark the results `cardmem maintain` found stale (and unchanged since): they rank lower."""
    if not results:
        return
    from ..maintain_record import stale

    found = stale(idx.root, {r["id"] for r in results})
    for r in results:
        if r["id"] in found:
            r["stale"] = True

def _order(r: dict[str, Any]) -> tuple[Any, ...]:
    """Better confidence first; a superseded, archived, proposed or stale card counts one
    level lower and comes after active cards of that level, so what is in force is read
    first."""
    inactive = r["status"] in INACTIVE or "stale" in r
    return (-(CONFIDENCE.index(r["confidence"]) - inactive), inactive, -r["score"], r["id"])


def _score(p: Plan, found: dict[int, Candidate], texts: dict[int, tuple[Any, ...]],
           hits: dict[int, Hits]) -> list[dict[str, Any]]:
    fields = _fields(p, hits)
    n_terms = len(p.terms)
    out = []
    for n, cid, title, ctype, status, proj, desc, *_ in texts.values():
        cand, per_term = found[n], fields[n]
        in_short = sum(1 for f in per_term if f)
        # Tiers "names" and "all" matched every term; "any" at least one, maybe in the body.
        coverage = 1.0 if cand.tier != "any" else max(in_short, 1) / n_terms
        names = sum(1 for f in per_term if f & NAME_SET) / n_terms
        if cand.tier == "names":
            names = 1.0
        score = 0.5 * cand.rel + 0.3 * coverage + 0.2 * names
        matched = set().union(*per_term)
        if cand.tier != "any" and in_short < n_terms or not matched:
            matched.add("body")
        out.append({"id": cid, "title": title, "type": ctype, "score": round(score, 4),
                    "confidence": _confidence(coverage, names, cand.rel),
                    "matched": sorted(matched, key=COLUMNS.index), "status": status,
                    "project": proj, "_n": n, "_desc": desc, "_bm25": cand.bm25})
    return out


def _names(idx: Index) -> tuple[list[str], list[int], list[int]]:
    """Every title and alias (rapidfuzz-processed), its card's rowid, and its length,
    sorted by length; cached per index generation, so one process loads them once."""
    from rapidfuzz import utils

    gen = idx.generation()
    cached = getattr(idx, "_names_cache", None)
    if cached and cached[0] == gen:
        return cached[1]
    pairs = []
    for n, title, aliases in idx.conn.execute("SELECT n, title, aliases FROM cards"):
        for name in (title, *aliases.split("\n")) if aliases else (title,):
            name = utils.default_process(name)
            pairs.append((len(name), name, n))
    pairs.sort()
    table = ([p[1] for p in pairs], [p[2] for p in pairs], [p[0] for p in pairs])
    idx._names_cache = (gen, table)  # type: ignore[attr-defined]
    return table


def _fuzzy_names(idx: Index, query: str, limit: int, card_type: str | None,
                 project: str | None) -> list[dict[str, Any]]:
    """Cards whose title or an alias is close to the whole query (rapidfuzz ratio)."""
    from bisect import bisect_left, bisect_right

    from rapidfuzz import fuzz, process, utils

    q = utils.default_process(query)
    if len(q) < 4:
        return []
    names, owner, lengths = _names(idx)
    # ratio = 2*matches/(len(a)+len(b)) >= c needs len(b) within [len(a)*c/(2-c), len(a)*(2-c)/c].
    c = FUZZY_CUTOFF / 100
    lo = bisect_left(lengths, int(len(q) * c / (2 - c)))
    hi = bisect_right(lengths, int(len(q) * (2 - c) / c) + 1)
    best: dict[int, float] = {}
    for _, score, j in process.extract(q, names[lo:hi], scorer=fuzz.ratio, processor=None,
                                       score_cutoff=FUZZY_CUTOFF, limit=limit * 3):
        n = owner[lo + j]
        best[n] = max(best.get(n, 0.0), score)
    if not best:
        return []
    where, args = _filters(card_type, project)
    out = []
    for n, cid, title, ctype, status, proj, desc in idx.conn.execute(
            "SELECT n, id, title, type, status, project, description FROM cards c"
            f" WHERE n IN (SELECT value FROM json_each(?)){where}", (_json_ids(best), *args)):
        score = best[n]
        out.append({"id": cid, "title": title, "type": ctype,
                    "score": round(0.8 * score / 100, 4),
                    "confidence": "high" if score >= 95 else "medium",
                    "matched": ["title~"], "status": status, "project": proj, "_n": n,
                    "_desc": desc})
    return out


def _merge(results: list[dict[str, Any]], extra: list[dict[str, Any]]) -> None:
    by_id = {r["id"]: r for r in results}
    for e in extra:
        r = by_id.get(e["id"])
        if r is None:
            results.append(e)
            continue
        if CONFIDENCE.index(e["confidence"]) > CONFIDENCE.index(r["confidence"]):
            r["confidence"] = e["confidence"]
        r["score"] = max(r["score"], e["score"])
        r["matched"] = [*r["matched"], "title~"]


