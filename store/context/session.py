"""The pile a coding session starts with (`cardmem context`, the SessionStart hook)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..index.pile_view import Holdings, active_rules, holdings
from ..git.head_file import enclosing_repo
from ..cards.paths import project_key, project_signals_id
from ..wording import plural
from .pile import (LESSON_LINES, MAP_RECENT_TITLES, MAP_SHARE,
                   PROJECT_SHARE, RECENT_SHARE, USER_SHARE, Pile, _add_cards,
                   _add_delivered_rules, _add_rules, _budget, _Builder, _footer,
                   _counted, _footer_room, _full)
from .recent import _add_recent, _recent, _recent_ids, _recent_lines

if TYPE_CHECKING:  # a session's pile never imports the card parser (YAML) or the writer
    from ..cards.card import Card
    from ..store import Store

def _map_brief(h: Holdings, recent: list[tuple[str, str]]) -> list[str]:
    """The memory map in brief: counts per type and project, the newest titles."""
    lines = ["## Memory map", f"{_counted(h.total, h.type_counts)}."]
    if h.project_counts:
        lines.append("Projects: " + ", ".join(f"{p} ({n})" for p, n in
                                              sorted(h.project_counts.items())) + ".")
    titles = [f"{title} (`{cid}`)" for cid, title in recent][:MAP_RECENT_TITLES]
    if titles:
        lines.append("Most recently changed: " + "; ".join(titles) + ".")
    if h.problems:
        lines.append(f"{len(h.problems)} card file(s) could not be read (see `cardmem doctor`).")
    return lines


def _add_map_brief(b: _Builder, lines: list[str]) -> None:
    # Whole, else the counts alone (worth more than nothing), else counted as cut.
    if not b.add("\n".join(lines) + "\n") and not b.add("\n".join(lines[:2]) + "\n"):
        b.cut(None, "memory map (budget)")




def _git_toplevel(folder: Path) -> Path | None:
    """The nearest folder at or above this one holding `.git` (what `git rev-parse
    --show-toplevel` finds), without starting git: the hook's start-up counts."""
    found = enclosing_repo(folder)
    return Path(found) if found is not None else None


def project_for(store: Store, cwd: str | os.PathLike[str] | None) -> str | None:
    """The project a working directory belongs to: its git top-level folder's name
    (else the folder's own name), mapped through `[projects]` in cardmem.toml, as its
    key (paths.project_key: the folder name cards of it live under projects/)."""
    if not cwd:
        return None
    folder = _git_toplevel(Path(cwd)) or Path(cwd)
    mapping = store.config.get("projects", {})
    for key in (str(folder), folder.name):
        if key in mapping:
            return project_key(mapping[key])
    return project_key(folder.name)


def _lessons(card: Card) -> str:
    """A project's signal card as its newest lessons first: the History's last lines (of
    the section the learner appends to: card.history's)."""
    from ..cards.sections import history_entries, history_span  # not card.py: a warm
    # start never loads it; an index entry has a body, no whole text

    found = history_span(card.body, body=True)
    lines = [f"- {entry}" for entry in history_entries(card.body, found)]
    shown = lines[-LESSON_LINES:][::-1]
    more = f"\n({len(lines) - len(shown)} older lessons: `cardmem show {card.id}`)" \
        if len(lines) > len(shown) else ""
    return (f"### Recent lessons from {card.project or 'this project'}'s sessions "
            f"(`{card.id}`, newest first)\n" + "\n".join(shown) + more + "\n")


def _stale(store: Store, cards: list[Card]) -> set[str]:
    """The cards the last `cardmem maintain` found stale (and unchanged since)."""
    if not cards:
        return set()
    from ..maintain_record import stale

    return stale(store.root, {c.id for c in cards})


def _stale_full(card: Card) -> str:
    head, _, rest = _full(card).partition("\n")
    return (f"{head} — stale: unchanged for long while the project moved on; check it "
            f"before relying on it\n{rest}")


def _section_need(heading: str, blocks: Iterable[str]) -> int:
    return len(heading) + 2 + sum(len(x) + 1 for x in blocks)


def session_context(store: Store, project: str | None = None, cwd: str | None = None,
                    budget: int | None = None, rules_file: Path | None = None) -> Pile:
    """The pile a coding session starts with (rung 1).

    rules_file: a file the host loads whole at start-up (store/rules/host_file.py) that carries
    every rule: it is brought up to date, and the pile names it and shows only what changed
    since the host loaded it (Pile.delivered says what was found).
    Each section after the rules keeps a fair share of the budget (what it needs, at most
    its share), so a thousand rules never crowd out the user, the project or the map.
    """
    budget = _budget(store, budget)
    project = project_key(project) if project is not None else project_for(store, cwd)
    commits = _recent(store)
    recent_ids = _recent_ids(commits)
    h = holdings(store, project, recent_ids)
    recent = [(cid, h.titles[cid]) for cid in recent_ids if cid in h.titles]  # cards only
    map_lines = _map_brief(h, recent)
    recent_lines, more = _recent_lines(commits)
    lesson = project_signals_id(project)
    stale = _stale(store, h.project_cards)
    project_cards = sorted(h.project_cards, key=lambda c: (c.id != lesson, c.id in stale, c.id))
    render = {lesson: _lessons} if lesson else {}
    render.update((cid, _stale_full) for cid in stale)
    footer = _footer_room(h.total)
    map_room = min(len("\n".join(map_lines)) + 2, int(budget * MAP_SHARE))
    recent_room = min(len("\n".join(recent_lines)) + 50, int(budget * RECENT_SHARE)) \
        if recent_lines else 0
    user_room = min(_section_need("## User", (_full(c) for c in h.users)),
                    int(budget * USER_SHARE)) if h.users else 0
    project_room = min(_section_need(f"## Project {project} (0000 cards)",
                                     (render.get(c.id, _full)(c) for c in project_cards)),
                       int(budget * PROJECT_SHARE)) if project else 0
    b = _Builder(budget)
    b.reserve = footer + map_room + recent_room + user_room + project_room
    b.add("# Memory (cardmem)")
    b.add(f"Cards from the store at {store.root}. Rules first; then the user, the project, "
          "a map and what changed recently.\n")
    delivered = None
    if rules_file is not None:
        from ..rules.host_file import limit_of, sync

        delivered = sync(store.root, active_rules(h.rules), Path(rules_file),
                         limit=limit_of(store))
    if delivered is not None and delivered.ok:
        _add_delivered_rules(b, delivered, project)
        changed = {c.id for c in delivered.changed}
        for c in active_rules(h.rules):  # whole in the file the host loaded: they reach it
            if c.id not in b._seen and c.id not in changed:
                b._seen.add(c.id)
                b.addresses.append(c.id)
    else:
        _add_rules(b, h.rules)
    proposals = h.proposals
    if proposals:
        b.add(f"({proposals} agent-proposed rule{'s await' if proposals != 1 else ' awaits'} "
              "a person's review (`cardmem review`); not in force until accepted.)\n")
    b.reserve -= user_room
    _add_cards(b, "## User", h.users, "user card (budget)")
    b.reserve -= project_room
    if project:
        if project_cards:
            stale_note = f"; {len(stale)} stale, last" if stale else ""
            _add_cards(b, f"## Project {project} ({plural(len(project_cards), 'card')}{stale_note})",
                       project_cards, f"project {project} card (budget)", render)
        else:
            b.add(f"## Project {project}\nNo cards for this project yet.\n")
    b.reserve = footer + recent_room
    _add_map_brief(b, map_lines)
    b.reserve = footer
    _add_recent(b, recent_lines, more)
    _footer(b, h.total)
    pile = Pile(b.text(), b.addresses, b.left_out, budget, h.problems)
    pile.delivered, pile.proposals = delivered, proposals
    return pile


