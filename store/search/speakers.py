"""A question that names a speaker, over cards that each hold one turn of a conversation
(issue 27): "What pet does Caroline have?" is answered in Caroline's own words far more
often than in what the other person said about her. When the fused first result is a
turn spoken by someone else and one of the next few results is a turn of the person the
question names, that one goes first. Only the first place changes: the first results as a
set are the same, so what any@5 and all@5 measure does not move.

A turn card is a card whose body is one paragraph opening with `Name: ` (after at most a
lead-in ending in ", ", as in `On 8 May, 2023, Caroline: ...`): the `Name:` rule of
dialog.py, applied to a card that holds a single turn.
"""
from __future__ import annotations

import re

from ..index.schema import COLUMNS
from .dialog import _TURN
from .snippets import _json_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index

# Fitted on design data only (LoCoMo conv-26/30/41 turn cards; bench/RESULTS.md, issue 27,
# branch `anyone`): how far down the fused results a turn of the named speaker is looked
# for.
WITHIN = 5

# The lead-in is bounded: a long one-line card is not searched for a speaker far into it.
_OPENING = re.compile(r"(?:[^\n]{0,80}?, )?" + _TURN.pattern)


def speaker(body: str) -> str | None:
    """Who speaks in a card holding one turn (its body one paragraph opening `Name: `,
    after at most a lead-in ending in ", "); None for any other card."""
    text = (body or "").strip()
    if not text or "\n\n" in text:
        return None
    m = _OPENING.match(text)
    return m.group(1).strip() if m else None


def named_first(idx: "Index", query: str, out: "list[dict[str, Any]]",
                rowid: "dict[str, int]") -> str | None:
    """The id of the card to put first, or None: among the first WITHIN results (`out`,
    in order; rowid: result id -> cards rowid), the best turn of the one speaker the query
    names, when the first result is a turn of another speaker."""
    top = out[:int(WITHIN)]
    if len(top) < 2:
        return None
    bodies = dict(idx.conn.execute(
        f"SELECT id, c{COLUMNS.index('body')} FROM fts_content"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (_json_ids(rowid[r["id"]] for r in top),)))
    who = [speaker(bodies.get(rowid[r["id"]], "")) for r in top]
    # The name as written, two letters at least: a one-paragraph `A: ...` (a FAQ's answer)
    # or `Note: ...` card is not a person the query names by its article or a common word.
    named = {s for s in who if s and len(s) > 1 and re.search(rf"\b{re.escape(s)}\b", query)}
    if len(named) != 1 or who[0] is None or who[0] in named:
        return None
    return next(r["id"] for r, s in zip(top, who) if s in named)
