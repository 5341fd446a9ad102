"""Card statuses: which ones put a card in force (DESIGN §2, §10).

A card is in force unless its status says otherwise. `proposed` is what agents write
for a protected type (a rule, the user card): it waits for `cardmem review accept`.
"""
from __future__ import annotations

import re
from typing import Any

from .frontmatter import split

PROPOSED = "proposed"
INACTIVE = frozenset({"superseded", "archived", PROPOSED})


def status_of(card: Any) -> str:
    """The status as the index keeps it: trimmed, lower case, `active` when unset."""
    return (str(card.status or "").strip().lower()) or "active"


def is_active(card: Any) -> bool:
    return status_of(card) not in INACTIVE


_PROPOSED_LINE = re.compile(r"^status[ \t]*:[ \t]*(['\"]?)proposed\1[ \t]*(?:#.*)?\r?$",
                            re.M | re.I)


def says_proposed(text: str) -> bool:
    """Whether a card's text sets `status: proposed`, read without YAML: for the
    last-resort paths that list rules by file name when nothing else works."""
    span = split(text)
    return bool(span and _PROPOSED_LINE.search(text, span[0], span[1]))
