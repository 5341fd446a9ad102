"""Dialog-shaped cards scored by their best turns too (issue 27): a card that keeps a whole
conversation (a body of `Name: line` paragraphs, a chat log, a meeting's transcript) is
about many things, one or two turns each. bm25 over the whole card weighs the question's
words against every other turn of it; the turn that answers is found by scoring the
turns themselves, the way bm25 scores cards.

Only cards of that shape: a long note of paragraphs is one subject, and scoring its
paragraphs apart let generic notes (a CONTRIBUTING card) climb over the one that answers
(bench/RESULTS.md, issue 27, third pass). A card is a dialog when most of its paragraphs
are turns and its speakers come back (`Step 1:`, `Step 2:` is a list, not a dialog).
"""
from __future__ import annotations

import re
import sqlite3

from ..index.schema import COLUMNS, TOKENIZE
from .snippets import _json_ids
from .terms import plan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index

# Fitted by a lab on design data only (LoCoMo conv-26/30/41 session cards; bench/RESULTS.md,
# issue 27, branch `sessions`). A dialog card's fused score gains MIX times its turn score
# (its best turn's bm25, the turns of the pool's dialog cards scored together) as a share
# of the best dialog card's.
MIX = 0.35
# A dialog: at least MIN_TURNS turns, at least TURN_SHARE of its paragraphs turns, and no
# more distinct speakers than half its turns.
MIN_TURNS = 4
TURN_SHARE = 0.8

_TURN = re.compile(r"([^\W\d_][\w.'\- ]{0,39}): \S")


def turns(body: str) -> list[str]:
    """The body's turns (paragraphs opening with a speaker's name and a colon), flattened;
    none when the body is not dialog-shaped."""
    paras = [" ".join(p.split()) for p in (body or "").split("\n\n")]
    paras = [p for p in paras if p]
    said = [(m.group(1), p) for p in paras for m in [_TURN.match(p)] if m]
    speakers = {who for who, _ in said}
    if (len(said) < MIN_TURNS or len(said) < TURN_SHARE * len(paras)
            or len(speakers) > len(said) / 2):
        return []
    return [p for _, p in said]


def turn_scores(idx: "Index", query: str, bodies: "dict[int, str]") -> dict[int, float]:
    """Each dialog card's turn score (rowid -> its best turn's bm25, higher better) for the
    query's terms (terms.plan's, as the words searched them); cards of another shape, or
    whose turns hold no query term, are left out."""
    rows = [(n, t) for n, body in bodies.items() for t in turns(body)]
    if not rows:
        return {}
    p = plan(idx, query)
    if not p.terms:
        return {}
    # A scratch database of its own, in memory: one transaction for all the rows (the
    # index's connection commits each statement, and FTS5 writes a segment per commit).
    mem = sqlite3.connect(":memory:")
    try:
        mem.execute("CREATE VIRTUAL TABLE turns USING fts5(n UNINDEXED, body,"
                    f" tokenize='{TOKENIZE}')")
        with mem:
            mem.executemany("INSERT INTO turns(n, body) VALUES (?, ?)", rows)
        best: dict[int, float] = {}
        for n, score in mem.execute("SELECT n, -bm25(turns) FROM turns WHERE turns MATCH ?",
                                    (" OR ".join(p.terms),)):
            best[n] = max(score, best.get(n, score))
        return best
    finally:
        mem.close()


def lend(idx: "Index", query: str, fused: "dict[int, dict[str, Any]]") -> None:
    """The fused results' scores (rowid -> result) raised by their turn scores: MIX times
    each dialog card's share of the best one's."""
    bodies = dict(idx.conn.execute(
        f"SELECT id, c{COLUMNS.index('body')} FROM fts_content"
        " WHERE id IN (SELECT value FROM json_each(?))", (_json_ids(fused),)))
    got = turn_scores(idx, query, bodies)
    top = max(got.values(), default=0.0)
    if top <= 0:
        return
    for n, score in got.items():
        if n in fused:
            fused[n]["score"] = round(fused[n]["score"] + MIX * score / top, 4)
