"""Candidates: the cards a query's terms match, in tiers (named by every word, holding
every word, holding some), each ranked by bm25 under a cap.
"""
from __future__ import annotations

import sqlite3

from ..cards.paths import project_key
from ..index.schema import WEIGHTS
from .terms import Plan
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index

# --- candidates -------------------------------------------------------------------------

# At most this many matching rows are ranked by bm25 in one query: FTS5 ranks every match
# before sorting, and a word in half of 100k cards would cost most of a search's time
# (bench/RESULTS.md, "Figures from comments").
# Past the cap the newest CAP matches are ranked. 300 rather than 500 took 12% off the
# median search at 10k cards; of 1,195 labelled bench queries as many found their card
# first (507), 715 in the top 10 instead of 718, and 50 changed their top result (one
# common word matching hundreds of cards: the best of the newer ones comes first).
CAP = 300
# The "any" tier (cards holding some of the words, not all) gets a smaller cap. It is the
# fallback below cards named by or holding every word, and its OR matches most of the
# store for common words: ranking 200 of them instead of 500 took a fifth off the median
# search (bench_search.py, 10k cards) and changed the top result of 4 of 798 labelled
# queries, none of them finding its source card less often. See also _any_terms().
CAP_ANY = 200


def _filters(card_type: str | None, project: str | None) -> tuple[str, list[Any]]:
    sql, args = "", []
    if card_type:
        sql += " AND c.type = ?"
        args.append(card_type)
    if project:
        sql += " AND c.project = ?"
        args.append(project_key(project))
    return sql, args


# bm25 with the weights the index configured as its `rank`, called directly: ORDER BY rank
# makes FTS5 prepare a sorting statement (and one to read the weights) on every query.
# Ties go to the lower rowid, as FTS5's own sort of rank leaves them.
_BM25 = {"fts": "bm25(fts, {})".format(", ".join(str(w) for w in WEIGHTS)),
         "names": f"bm25(names, {WEIGHTS[0]}, {WEIGHTS[1]})"}
_NO_ROWID = -(2 ** 63)
PROBE = -1  # _ranked's `bound` when the CAP bound is not known yet: found in the query


def _ranked(c: sqlite3.Connection, table: str, expr: str, k: int, where: str,
            args: list[Any], bound: int | None = PROBE, cap: int = CAP
            ) -> list[tuple[int, float]]:
    """(rowid, bm25 higher-is-better) of the best k matches of expr in table, among its
    newest cap matches: `bound` is the rowid they start after (None: no more than cap
    match; PROBE: not known, the statement finds it)."""
    params: list[Any] = [expr]
    cond = ""
    if bound == PROBE:
        cond = (f" AND {table}.rowid > coalesce((SELECT rowid FROM {table} WHERE {table}"
                f" MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET {int(cap)}), {_NO_ROWID})")
        params.append(expr)
    elif bound is not None:
        cond = f" AND {table}.rowid > {int(bound)}"
    join = " JOIN cards c ON c.n = {t}.rowid".format(t=table) if where else ""
    sql = (f"SELECT {table}.rowid, {_BM25[table]} AS score FROM {table}{join}"
           f" WHERE {table} MATCH ?{cond}{where} ORDER BY score, {table}.rowid LIMIT ?")
    return [(r, -rank) for r, rank in c.execute(sql, (*params, *args, k))]


def _any_terms(p: Plan) -> tuple[list[str], bool]:
    """The words the any tier ORs, and whether the counts show they match no more than
    CAP_ANY cards. All the words, unless together they may match more while the rarest
    of them cannot; then only those rarest: bm25 weighs a rare word most, so their cards
    are the ones it ranks first anyway, where the newest CAP_ANY cards holding any word
    would be mostly cards holding only a common one."""
    known = sorted((most, i) for i, most in enumerate(p.most) if most is not None)
    rare: list[int] = []
    total = 0
    for most, i in known:
        if total + most > CAP_ANY:
            break
        rare.append(i)
        total += most
    if not rare:
        return p.terms, False
    return [p.terms[i] for i in sorted(rare)], True


def _bounds(p: Plan) -> tuple[int | None, int | None, int | None]:
    """The cap bounds of the names, all and any tiers: None where the terms' counts show
    that no more than the tier's cap of cards can match (an AND of terms matches no more
    cards than its rarest term, an OR no more than all of them together, and `names`
    holds a subset of the text `fts` holds); PROBE where the ranked query must find the
    bound itself."""
    known = [n for n in p.most if n is not None]
    every: int | None = PROBE
    if known and min(known) <= CAP:
        every = None
    some: int | None = None if _any_terms(p)[1] else PROBE
    return every, every, some


class Candidate:
    __slots__ = ("n", "bm25", "rel", "tier")

    def __init__(self, n: int, bm25: float, tier: str) -> None:
        self.n, self.bm25, self.tier, self.rel = n, bm25, tier, 0.0


def _candidates(idx: Index, p: Plan, k: int, card_type: str | None,
                project: str | None) -> dict[int, Candidate]:
    """k cards: named by every term; then holding every term; then any term, each tier
    filling what the tiers above it left of the k.

    Each tier's bm25 is relative to its own best (rel), so tiers need not share a scale.
    """
    c = idx.conn
    where, args = _filters(card_type, project)
    found: dict[int, Candidate] = {}
    names, every, some = _bounds(p)
    tiers = [("names", "names", " AND ".join(p.terms), names, CAP),
             ("all", "fts", " AND ".join(p.terms), every, CAP)]
    if len(p.terms) > 1:
        rare, _ = _any_terms(p)
        tiers.append(("any", "fts", " OR ".join(rare), some, CAP_ANY))
        if len(rare) < len(p.terms):  # too few cards hold the rare words: any word at all
            tiers.append(("any", "fts", " OR ".join(p.terms), PROBE, CAP_ANY))
    for tier, table, expr, bound, cap in tiers:
        if len(found) >= k:
            break
        rows = _ranked(c, table, expr, k, where, args, bound, cap)
        best = max((b for _, b in rows), default=0.0)
        for n, b in rows:
            if len(found) >= k:
                break
            if n not in found:
                cand = found[n] = Candidate(n, b, tier)
                cand.rel = b / best if best > 0 else 1.0
    return found
