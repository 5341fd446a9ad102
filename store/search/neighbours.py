"""Cards in a sequence lend each other score (issue 27): the turns of a conversation kept a
card a turn, numbered parts of one source. An answer often sits beside the card holding
the question's words ("How was the camping trip?" / "We roasted marshmallows"), so a
card next to a strong result is worth showing, and a card whose neighbours match too sits
in a stretch about the question. The lending leans forward: what answers or goes on
from a card comes after it, so a card borrows more from the cards before it than from
those after.

A sequence is cards whose ids differ only in the number they end with (`turns/d3-5`,
`turns/d3-6`; `sessions/session-09`, `sessions/session-10`): ids are the store's
addresses, so no key needs adding to a card for this.
"""
from __future__ import annotations

import re

# Fitted by bench/fusion_lab.py on design data only (LoCoMo conv-26/30/41, agents-md calib;
# bench/RESULTS.md, issue 27). A card's score gains MIX times its neighbours' scores (REACH
# cards on each side); a neighbour of one of the first FROM results is worth at least
# AFTER of that result's when it comes after it, BEFORE when it comes before.
MIX = 0.1
AFTER = 0.9
BEFORE = 0.7
FROM = 5
REACH = 2  # how many cards on each side are neighbours
# Only short cards (file size in bytes, at most) lend and borrow: one turn, one note of a
# sequence, whose answer may sit in the next card; a long card (a whole session) holds
# its own exchange, and the next one is another day.
SHORT = 1000

_NUMBERED = re.compile(r"(.*?)(\d+)")


def steps(cid: str) -> list[tuple[str, int]]:
    """(id, offset) of the cards before and after this one in its sequence, nearest first
    (none if it ends in no number); a zero-padded number keeps its width, and a shorter
    number below one that shows no padding (9 below 10) is looked for both ways: `9` and
    `09`."""
    m = _NUMBERED.fullmatch(cid)
    if not m:
        return []
    head, digits = m.groups()
    k, width = int(digits), len(digits)
    padded = digits.startswith("0")
    return [(f"{head}{name}", j - k) for d in range(1, int(REACH) + 1) for j in (k - d, k + d)
            if j >= 0 for name in dict.fromkeys(
                (f"{j:0{width}d}",) if padded else (str(j), f"{j:0{width}d}"))]


def around(cid: str) -> list[str]:
    """The ids before and after this one in its sequence, nearest first."""
    return [nb for nb, _ in steps(cid)]


def spread(scores: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """(each given card's score with its neighbours' share, the scores of the neighbours of
    the first FROM cards that were not given). scores: card id -> fused score. A card's
    score is its own plus MIX times its neighbours', or its best share of a neighbour's
    (AFTER of a card before it, BEFORE of a card after it), whichever is more."""
    first = sorted(scores, key=lambda c: (-scores[c], c))[:int(FROM)]
    new = [nb for cid in first for nb in around(cid) if nb not in scores]

    def lent(cid: str, own: float) -> float:
        near = [(scores.get(nb, 0.0), AFTER if off < 0 else BEFORE) for nb, off in steps(cid)]
        return max([own + MIX * sum(s for s, _ in near)] + [share * s for s, share in near])

    return ({cid: lent(cid, own) for cid, own in scores.items()},
            {cid: lent(cid, 0.0) for cid in dict.fromkeys(new)})
