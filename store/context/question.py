"""The pile a question is answered from (rung 1 under `cardmem ask`)."""
from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Iterable

from ..index.pile_view import catalog, is_active
from .pile import (Pile, _add_cards, _add_rules, _budget, _Builder, _described,
                   _counted, _footer, _footer_room, _one_line)

if TYPE_CHECKING:  # a session's pile never imports the card parser (YAML) or the writer
    from ..cards.card import Card
    from ..store import Store

def _norm_alias(s: str) -> str:
    return _one_line(s).casefold().lstrip("@")


def find_person(cards: list[Card], asker: str) -> Card | None:
    """The person card answering to asker by handle, e-mail, title or alias (any case)."""
    want = _norm_alias(asker)
    if not want:
        return None
    for c in sorted(cards, key=lambda c: c.id):
        if c.type not in ("person", "user"):
            continue
        names = [c.title, *c.aliases, c.id.rsplit("/", 1)[-1]]
        if any(_norm_alias(n) == want for n in names if n):
            return c
    return None


def _names_in(question: str, names: Iterable[str]) -> bool:
    q = question.casefold()
    for n in names:
        n = _one_line(n).casefold()
        if len(n) < 2:
            continue
        # Whole words: no letter or digit glued to either side.
        if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", q):
            return True
    return False


def named_cards(cards: list[Card], question: str, types: tuple[str, ...] = ("entity", "person")
                ) -> list[Card]:
    """Cards of entities the question names by title or alias, on word boundaries, by id."""
    return sorted((c for c in cards if c.type in types and is_active(c)
                   and _names_in(question, [c.title, *c.aliases])), key=lambda c: c.id)


def question_context(store: Store, question: str, asker: str | None = None,
                     budget: int | None = None) -> Pile:
    """The pile a question is answered from (rung 1 under `cardmem ask`)."""
    budget = _budget(store, budget)
    cards, problems = catalog(store)
    entries = sorted(cards, key=lambda c: c.id)
    footer = _footer_room(len(cards))
    person = find_person(cards, asker) if asker else None
    named = [c for c in named_cards(cards, question) if person is None or c.id != person.id]
    named_room = sum(len(_described(c)) + 1 for c in named) + (30 if named else 0)
    b = _Builder(budget)
    # Long rules must leave room for the named cards (by description at least) and a map.
    b.reserve = footer + int(budget * 0.15) + named_room
    b.add("# Memory (cardmem)")
    if asker:
        if person:
            _add_cards(b, f"## The asker ({_one_line(asker)})", [person], "asker card (budget)")
        else:
            b.add(f"## The asker\n{_one_line(asker)}: no person card answers to this name.\n")
    _add_rules(b, cards)
    b.reserve = footer + int(budget * 0.15)
    _add_cards(b, "## Named in the question", named, "named card (budget)")
    b.reserve = footer
    types = Counter(c.type or "untyped" for c in entries)
    if b.add(f"## Memory map ({_counted(len(entries), types)})"):
        shown = 0
        from ..by_address import MAP_COUNT  # the walk's memory map's cap: one map

        for c in entries[:MAP_COUNT]:
            if not b.add(f"- `{c.id}` [{c.type or '?'}] {_one_line(c.title)}"
                         + (f" — {_one_line(c.description)}" if c.description else "")):
                break
            shown += 1
        if shown < len(entries):
            b.cut(None, "memory map entries (count cap or budget)", len(entries) - shown)
        b.add("")
    else:
        b.cut(None, "memory map (budget)")
    _footer(b, len(cards))
    return Pile(b.text(), b.addresses, b.left_out, budget, problems)

