"""Confidence labels that mean something (issue 16): calibrated on labelled questions.

A result's label comes from how much of the question's *information* the card holds:
the query's words weighted by their inverse document frequency (a rare word says more
than a common one), a word the index does not know at all counting as the rarest, so a
question about something the store never heard of ("salesforce apex bulkification")
cannot borrow confidence from the one common word it shares with a card ("trigger").
Where the semantic layer (store/search/semantic.py) scored the card, its cosine similarity
joins in.

The thresholds were fitted on the `calib` half of bench/questions/agents-md.jsonl and
judged on the `test` half (bench/bench_quality.py; figures in bench/RESULTS.md).
"""
from __future__ import annotations

import math
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CONFIDENCE = ("low", "medium", "high")  # the labels, weakest first
# Weighted coverage at or above which a lexical match is medium / high (fitted, calib half).
COVER_MEDIUM = 0.52
COVER_HIGH = 0.85
# Cosine similarity (store/search/semantic.py's model) at or above which a semantic match is
# medium / high; and the lower bar a card also found lexically must clear.
SIM_MEDIUM = 0.5
SIM_HIGH = 0.65
SIM_BOTH = 0.4
# At or above this similarity a card the words found is one the vectors found too
# (match "both").
SIM_NEAR = 0.33
# Below this similarity the vectors see no relation: a card whose question words are all
# in its body (met in passing) is then not vouched for. Just under the lowest similarity
# of any confident right answer on the calib half (0.203); bench/RESULTS.md.
SIM_UNRELATED = 0.2
# A query word (as typed: not corrected, not a prefix) held by at most this many cards of
# the store is an exact match of something rare: its card is never labelled low, and the
# fusion keeps it above cards that only look like the query (issue 27).
UNIQUE_DF = 1
# Such a card, first by its words, is at least medium when it holds this share of the
# query's information, or the vectors see a relation (SIM_UNRELATED).
COVER_UNIQUE = 0.75


def _idf(n_cards: int, df: int) -> float:
    return math.log(1 + (n_cards + 1) / (df + 0.5))


def coverage(idx: Any, p: Any, rowids: list[int], bounds: dict[str, tuple[int, int]]
             ) -> tuple[dict[int, float], set[int]]:
    """(rowid -> the idf-weighted share of the query's words found in that card (any
    field); the rowids holding a query word, as typed, that no other card of the store
    holds). Words neither in the index nor correctable weigh as much as the rarest word.
    bounds: terms._df_bounds of the query's stems (counted here where it has none)."""
    if not rowids or not (p.terms or p.unknown):
        return {n: 0.0 for n in rowids}, set()
    import json

    from .terms import quote

    c = idx.conn
    n_cards = c.execute("SELECT count(*) FROM cards").fetchone()[0] or 1
    fixed = {quote(w) for w in p.corrected.values()}
    ids = json.dumps([int(n) for n in rowids])
    weights: list[float] = []
    holders: list[set[int]] = []
    unique: set[int] = set()
    for expr, (stem, prefix) in zip(p.terms, p.stems):
        if stem in bounds:
            df = max(bounds[stem][1], 1)
        else:
            df = c.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (expr,)).fetchone()[0]
        weights.append(_idf(n_cards, df))
        holders.append({r for (r,) in c.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN"
            " (SELECT value FROM json_each(?))", (expr, ids))})
        exact = not prefix and expr not in fixed
        if exact and len(holders[-1]) == 1 and df <= UNIQUE_DF + (
                bounds[stem][1] - bounds[stem][0] if stem in bounds else 0):
            # the bound may count a few changed cards twice: count exactly
            if c.execute("SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 2)",
                         (expr,)).fetchone()[0] == 1:
                unique |= holders[-1]
    total = sum(weights) + len(p.unknown) * _idf(n_cards, 0)
    return ({n: sum(w for w, h in zip(weights, holders) if n in h) / total for n in rowids},
            unique)


def lexical_label(cover: float) -> str:
    return "high" if cover >= COVER_HIGH else "medium" if cover >= COVER_MEDIUM else "low"


def semantic_label(sim: float) -> str:
    return "high" if sim >= SIM_HIGH else "medium" if sim >= SIM_MEDIUM else "low"


def fused_label(lexical: str, sim: float, match: str, body_only: bool = False) -> str:
    """The better of the lexical label and the similarity's; a card both sides found
    needs less similarity to be medium (SIM_BOTH); a card matched by words in its body
    only, that the vectors see as unrelated (under SIM_UNRELATED), is low."""
    if body_only and sim < SIM_UNRELATED:
        lexical = "low"
    best = max(CONFIDENCE.index(lexical), CONFIDENCE.index(semantic_label(sim)))
    if match == "both" and sim >= SIM_BOTH:
        best = max(best, CONFIDENCE.index("medium"))
    return CONFIDENCE[best]


def stand_out(results: list[dict[str, Any]], cover: dict[str, float], unique: set[str]) -> None:
    """`high` only for a card the words single out: one labelled high while another result
    holds at least as much of the query's information (cover) is medium; the only card
    holding a word of the query (unique) keeps it. On design data of three kinds a high
    first result without this was right 0.94 (sessions), 0.66 (turns), 1.00 (notes) of
    the time; with it 1.00, 0.75, 1.00 (bench/RESULTS.md, issue 27)."""
    for r in results:
        mine = cover.get(r["id"], 0.0)
        if r["confidence"] == "high" and mine > 0 and r["id"] not in unique and any(
                o is not r and cover.get(o["id"], 0.0) >= mine for o in results):
            r["confidence"] = "medium"
