"""The pile's building blocks: a budgeted builder, how a card is rendered, and the
sections every pile shares (rules, a section of cards, the footer).

Nothing here ranks: sections come in a fixed order, cards inside a section in id order,
and each card is shown whole while the budget lasts, then by its description, then left
out, where every cut is counted and named. Feedback rules are never cut: over budget the
remaining rules are still listed by title (the only text allowed past the budget, and put
last, so a host that cuts long context cuts them first).
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from ..index.pile_view import active_rules
from ..wording import plural

if TYPE_CHECKING:  # a session's pile never imports the card parser (YAML) or the writer
    from ..cards.card import Card
    from ..store import Store

DEFAULT_BUDGET = 9000
# Full rule texts may fill at most this share of the budget, so the user card and the
# project still get room; past it, rules are shown by description, then by title.
RULES_FULL_SHARE = 0.6
# The most of the budget each later section may hold back from the rules before them.
USER_SHARE, PROJECT_SHARE, MAP_SHARE, RECENT_SHARE = 0.15, 0.3, 0.15, 0.1
LESSON_LINES = 12  # a project's newest lessons shown at session start
CHANGED_RULES_SHARE = 0.4  # rules changed since the host loaded its rules file, whole
RECENT_DAYS = 14
RECENT_COMMITS = 8
MAP_RECENT_TITLES = 5
HOW_TO_REACH = ("Reach them with the search tool (`cardmem search QUERY`, MCP `search`) "
                "and read one by id (`cardmem show ID`, MCP `read_card`).")


class Pile:
    """A rendered pile: its Markdown, the card ids in it (in order) and what was cut.

    (A plain class: `dataclasses` pulls in `inspect`, which every session start would pay
    for; bench/RESULTS.md, "Figures from comments".)
    """

    __slots__ = ("text", "addresses", "left_out", "budget", "notices", "delivered",
                 "proposals")

    def __init__(self, text: str, addresses: list[str], left_out: list[dict[str, Any]],
                 budget: int, notices: list[str] | None = None) -> None:
        self.text, self.addresses, self.left_out = text, addresses, left_out
        self.budget = budget
        self.notices = notices if notices is not None else []  # unreadable cards met
        self.delivered: Any = None  # the rules file's rules_file.Delivery, if one was used
        self.proposals = 0  # agent-written rules waiting for a person's review

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "chars": len(self.text), "budget": self.budget,
                "addresses": self.addresses, "left_out": self.left_out,
                "notices": self.notices}

    def whole(self) -> list[str]:
        """The cards in it whole: not those cut to a description or title (left_out)."""
        short = {e["id"] for e in self.left_out if "id" in e}
        return [cid for cid in self.addresses if cid not in short]

    def __repr__(self) -> str:
        return (f"Pile({len(self.text)} chars, {len(self.addresses)} cards, "
                f"{len(self.left_out)} cuts)")


class _Builder:
    """Appends blocks while they fit the budget; title-only rule lines are exempt."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.parts: list[str] = []
        self.used = 0  # characters counted against the budget
        self.reserve = 0  # held back for the sections still to come
        self.addresses: list[str] = []
        self._seen: set[str] = set()
        self.tail: list[str] = []  # exempt lines that go last (the title-only rules)
        self.left_out: list[dict[str, Any]] = []

    def room(self) -> int:
        return self.budget - self.used - self.reserve

    def fits(self, block: str) -> bool:
        return len(block) + 1 <= self.room()

    def add(self, block: str, card_id: str | None = None, exempt: bool = False) -> bool:
        """Add block (plus its newline) if it fits; exempt blocks always go in."""
        if not exempt and not self.fits(block):
            return False
        self.parts.append(block)
        if not exempt:
            self.used += len(block) + 1
        if card_id and card_id not in self._seen:
            self._seen.add(card_id)
            self.addresses.append(card_id)
        return True

    def cut(self, card_id: str | None, reason: str, count: int = 1) -> None:
        entry: dict[str, Any] = {"reason": reason, "count": count}
        if card_id:
            entry["id"] = card_id
        self.left_out.append(entry)

    def text(self) -> str:
        parts = self.parts + ([""] + self.tail if self.tail else [])
        return "\n".join(parts) + ("\n" if parts else "")


# --- rendering one card ----------------------------------------------------------

def _one_line(s: str) -> str:
    return " ".join(s.split())


def _full(card: Card, level: str = "###") -> str:
    desc = f"\n_{_one_line(card.description)}_" if card.description else ""
    return f"{level} {_one_line(card.title)} (`{card.id}`){desc}\n{card.body.strip()}\n"


def _described(card: Card) -> str:
    desc = f" — {_one_line(card.description)}" if card.description else ""
    return f"- {_one_line(card.title)} (`{card.id}`){desc}"


def _titled(card: Card) -> str:
    return f"- {_one_line(card.title)} (`{card.id}`)"


def _add_rules(b: _Builder, cards: list[Card], full_share: float = RULES_FULL_SHARE) -> None:
    """Every rule: full text while its share lasts, then description, then title only.

    The steps only go down: once a rule no longer fits whole, the rest are described,
    and once a description no longer fits (the sections after keep their reserve), the
    rest are listed by title past the budget.
    """
    rules = active_rules(cards)
    if not rules:
        return
    b.add(f"## Rules ({len(rules)}, always in force)")
    titles_only = _step_down(b, rules, _full, int(b.budget * full_share), _described,
                             "rule shown by description only (budget)")
    if titles_only:
        # Listed last, past the budget: a host that cuts long context cuts these titles,
        # not the user, the project or the map.
        b.add(f"({len(titles_only)} more rules: titles at the end.)", exempt=True)
        b.tail.append("## Further rules, titles only (over budget; read each by id)")
        for c in titles_only:
            b.tail.append(_titled(c))
            b.addresses.append(c.id)
            b._seen.add(c.id)
            b.cut(c.id, "rule shown by title only (budget)")
    b.add("")


def _add_delivered_rules(b: _Builder, d: Any, project: str | None) -> None:
    """The rules when a rules file carries them whole (store/rules/host_file.py): how many, where,
    and only what changed since the host loaded that file, within the budget.

    What changed is shown whole while it fits, then by title; past the budget the rest are
    counted and their ids named as far as room allows: they are in the rewritten file from
    the next session on. None of it goes past the budget: the host would cut it all.
    """
    mine = d.by_project.get(project, 0) if project else 0
    scoped = sum(d.by_project.values())
    where = (f"{d.total} rules are in force, loaded whole at start-up from the rules file "
             f"{d.path} (in your instructions as \"Standing rules (cardmem memory)\").")
    if scoped:
        where += (f" {d.total - scoped} apply to every session"
                  + (f"; {mine} more only to this session's project, {project}" if mine else "")
                  + (f"; {scoped - mine} belong to other projects: ignore those here."
                     if scoped - mine else "."))
    if d.listed:
        where += (f" {d.listed} of them are listed there by title only (the file's size "
                  "limit): read one whole with `cardmem show ID` before acting on it.")
    b.add(f"## Rules ({d.total}, always in force)\n{where}")
    if d.removed:
        b.add("No longer in force (ignore them in the rules file): "
              + ", ".join(f"`{i}`" for i in d.removed[:40])
              + (f" and {len(d.removed) - 40} more." if len(d.removed) > 40 else "."))
    if d.changed:
        b.add(f"### Changed since the rules file was loaded ({len(d.changed)}; these take "
              "precedence over the file)")
        closing = 200  # held back for the line that names what did not fit
        b.reserve += closing
        left = _step_down(b, d.changed, lambda c: _full(c, "####"),
                          int(b.budget * CHANGED_RULES_SHARE), _titled,
                          "changed rule shown by title only (budget)")
        b.reserve -= closing
        if left:
            ids = ", ".join(f"`{c.id}`" for c in left[:3])
            b.add(f"{len(left)} more changed rules ({ids}{', …' if len(left) > 3 else ''}): "
                  "read them with `cardmem show ID`; the file holds them from the next session.")
            for c in left:
                b.cut(c.id, "changed rule not shown (budget): in the rules file next session")
    b.add("")


def _add_cards(b: _Builder, heading: str, cards: list[Card], reason: str,
               render: dict[str, Any] | None = None) -> None:
    """A section of cards: whole while they fit, then by description, then counted out.
    render: id -> a function rendering that card instead of whole (a project's lessons)."""
    if not cards:
        return
    if not b.fits(heading + "\n" + _described(cards[0])) or not b.add(heading):
        for c in cards:
            b.cut(c.id, reason)
        return
    whole = render or {}
    for c in _step_down(b, cards, lambda c: whole.get(c.id, _full)(c), b.budget, _described,
                        f"{reason}: shown by description only"):
        b.cut(c.id, reason)
    b.add("")


def _step_down(b: _Builder, cards: list[Any], whole: Any, whole_room: int, short: Any,
               short_reason: str) -> list[Any]:
    """Add cards in order, whole (at most whole_room characters of them), then in short
    while they fit; the steps only go down. Returns the cards that neither step fit."""
    spent, step, left = 0, 0, []
    for c in cards:
        if step == 0:
            block = whole(c)
            if spent + len(block) + 1 <= whole_room and b.add(block, c.id):
                spent += len(block) + 1
                continue
            step = 1
        if step == 1:
            if b.add(short(c), c.id):
                b.cut(c.id, short_reason)
                continue
            step = 2
        left.append(c)
    return left


def _type_counts(counts: Counter) -> str:
    """`12 project, 3 feedback`: most frequent type first."""
    return ", ".join(f"{n} {t}" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _counted(total: int, counts: Counter) -> str:
    """`15 cards: 12 project, 3 feedback`; an empty store's `0 cards` alone."""
    types = _type_counts(counts)
    return f"{plural(total, 'card')}: {types}" if types else plural(total, "card")



def _footer_text(out: int, total: int, partial: int) -> str:
    line = f"{out} of {plural(total, 'card')} left out"
    if partial:
        line += f", {partial} shown by description or title only"
    return f"_{line}. {HOW_TO_REACH}_"


def _footer(b: _Builder, total: int) -> None:
    """How many cards are not in the pile, and how to reach them."""
    partial = sum(1 for e in b.left_out if "id" in e and "only" in e["reason"])
    b.reserve = 0
    b.add(_footer_text(total - len(b.addresses), total, partial))


def _footer_room(total: int) -> int:
    """The most characters the footer can take (numbers at their widest)."""
    return len(_footer_text(total, total, total)) + 1


def _budget(store: Store, budget: int | None) -> int:
    if budget is not None:
        return max(0, int(budget))
    try:
        return int(store.config["context"]["budget_chars"])
    except Exception:
        return DEFAULT_BUDGET

