"""Card statuses: which ones put a card in force (DESIGN §2, §10).

A card is in force unless its status says otherwise. `proposed` is what agents write
for a protected type (a rule, the user card): it waits for `cardmem review accept`.
"""
from __future__ import annotations

from typing import Any

PROPOSED = "proposed"
INACTIVE = frozenset({"superseded", "archived", PROPOSED})


def status_of(card: Any) -> str:
    """The status as the index keeps it: trimmed, lower case, `active` when unset."""
    return (str(card.status or "").strip().lower()) or "active"


def is_active(card: Any) -> bool:
    return status_of(card) not in INACTIVE
