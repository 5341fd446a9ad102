"""Rung 1, the pile: what sits at the right addresses, in a fixed order, within a budget.

Nothing here ranks. Code decides how much the model may see (a character budget), never
what matters in it: sections come in a fixed order, cards inside a section in id order,
and each card is shown whole while the budget lasts, then by its description, then left
out, where every cut is counted and named. Feedback rules are the exception that is
never cut: over budget the remaining rules are still listed by title (the only text
allowed past the budget, and put last, so a host that cuts long context cuts them first).

Two piles are built here: `session_context` (a coding session starts: `cardmem context`,
the SessionStart hook) and `question_context` (someone asks: `cardmem ask`, under the walk).
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .holdings import Holdings, active_rules, catalog, holdings, is_active
from .paths import project_signals_id

if TYPE_CHECKING:  # a session's pile never imports the card parser (YAML) or the writer
    from .card import Card
    from .store import Store

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
MAP_COUNT = 200  # question_context: memory-map entries, at most
HOW_TO_REACH = ("Reach them with the search tool (`cardmem search QUERY`, MCP `search`) "
                "and read one by id (`cardmem show ID`, MCP `read_card`).")


class Pile:
    """A rendered pile: its Markdown, the card ids in it (in order) and what was cut.

    (A plain class: `dataclasses` pulls in `inspect`, 15 ms of every session start.)
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
    full_room = int(b.budget * full_share)
    spent_full = 0
    mode = "full"
    titles_only: list[Card] = []
    for c in rules:
        if mode == "full":
            block = _full(c)
            if spent_full + len(block) + 1 <= full_room and b.add(block, c.id):
                spent_full += len(block) + 1
                continue
            mode = "description"
        if mode == "description":
            if b.add(_described(c), c.id):
                b.cut(c.id, "rule shown by description only (budget)")
                continue
            mode = "title"
        titles_only.append(c)
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
    """The rules when a rules file carries them whole (store/rules_file.py): how many, where,
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
        b.add(f"No longer in force (ignore them in the rules file): "
              + ", ".join(f"`{i}`" for i in d.removed[:40])
              + (f" and {len(d.removed) - 40} more." if len(d.removed) > 40 else "."))
    if d.changed:
        b.add(f"### Changed since the rules file was loaded ({len(d.changed)}; these take "
              "precedence over the file)")
        closing = 200  # held back for the line that names what did not fit
        b.reserve += closing
        full_room, spent, mode = int(b.budget * CHANGED_RULES_SHARE), 0, "full"
        left: list[Any] = []
        for c in d.changed:
            if mode == "full":
                block = _full(c, "####")
                if spent + len(block) + 1 <= full_room and b.add(block, c.id):
                    spent += len(block) + 1
                    continue
                mode = "title"
            if mode == "title":
                if b.add(_titled(c), c.id):
                    b.cut(c.id, "changed rule shown by title only (budget)")
                    continue
                mode = "out"
            left.append(c)
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
    mode = "full"
    for c in cards:
        if mode == "full":
            if b.add((render or {}).get(c.id, _full)(c), c.id):
                continue
            mode = "description"
        if mode == "description":
            if b.add(_described(c), c.id):
                b.cut(c.id, f"{reason}: shown by description only")
                continue
            mode = "out"
        b.cut(c.id, reason)
    b.add("")


def _type_counts(counts: Counter) -> str:
    """`12 project, 3 feedback`: most frequent type first."""
    return ", ".join(f"{n} {t}" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _map_brief(h: Holdings, recent: list[tuple[str, str]]) -> list[str]:
    """The memory map in brief: counts per type and project, the newest titles."""
    lines = ["## Memory map", f"{h.total} cards: {_type_counts(h.type_counts)}."]
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


RECENT_CACHE = "recent-changes.json"  # in .cardmem/: the window's commits, per HEAD and day
_KEEP_IDS = MAP_RECENT_TITLES * 4  # card ids kept per commit (the lines show 3)


def _head(root: Path) -> str | None:
    """The commit HEAD names, read from .git without starting git (None if unsure)."""
    try:
        head = (root / ".git" / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[5:]
        loose = root / ".git" / ref
        if loose.is_file():
            return loose.read_text().strip() or None
        for line in (root / ".git" / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        pass
    return None


def _recent(store: Store) -> list[dict[str, Any]]:
    """The last commits of the recent-changes window, newest first.

    One git process, and none while HEAD and the day are what they were last time: the
    window's commits are kept in .cardmem/ (an adopted store's first commit can name
    10,000 files, which git takes tens of milliseconds to list).
    """
    from datetime import date

    head, day = _head(store.root), date.today().isoformat()
    cache = store.root / ".cardmem" / RECENT_CACHE
    if head:
        try:
            data = json.loads(cache.read_text())
            if data.get("head") == head and data.get("day") == day:
                return data["commits"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    commits = _git_recent(store)
    if head:
        try:
            from .lean import write_cache

            write_cache(cache, json.dumps({"head": head, "day": day, "commits": commits}).encode())
        except OSError:
            pass
    return commits


def _git_recent(store: Store) -> list[dict[str, Any]]:
    from datetime import datetime, timedelta, timezone

    from . import git

    since = (datetime.now(timezone.utc) - timedelta(days=RECENT_DAYS)).isoformat()
    try:
        log = git.log(store.root, limit=RECENT_COMMITS + 1, since=since)
    except Exception:  # a broken repo must not break the pile
        return []
    commits = []
    for c in log:
        ids = [f[:-3] for f in c.paths if f.endswith(".md")]
        commits.append({"commit": c.commit, "author": c.author.split(" <")[0], "date": c.date,
                        "subject": c.message.splitlines()[0] if c.message else "",
                        "ids": ids[:_KEEP_IDS], "n_ids": len(ids)})
    return commits


def _recent_lines(commits: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Recent commits as lines (newest first), and how many more there were."""
    lines = []
    for c in commits[:RECENT_COMMITS]:
        ids, n = c["ids"], c["n_ids"]
        more = f" +{n - 3}" if n > 3 else ""
        lines.append(f"- {c['date'][:10]} {c['author']}: {c['subject']}"
                     + (f" ({', '.join(ids[:3])}{more})" if ids else ""))
    return lines, max(0, len(commits) - RECENT_COMMITS)


def _recent_ids(commits: list[dict[str, Any]]) -> list[str]:
    """Ids the recent commits touched, newest first, each once (a few more than shown)."""
    ids: list[str] = []
    for c in commits:
        for cid in c["ids"]:
            if len(ids) >= _KEEP_IDS:
                return ids
            if cid not in ids:
                ids.append(cid)
    return ids


def _add_recent(b: _Builder, lines: list[str], more: int) -> None:
    if not lines:
        return
    if not b.fits(f"## Recent changes (last {RECENT_DAYS} days, from git)\n{lines[0]}"):
        b.cut(None, "recent changes (budget)", len(lines) + more)
        return
    b.add(f"## Recent changes (last {RECENT_DAYS} days, from git)")
    shown = 0
    for line in lines:
        if not b.add(line):
            break
        shown += 1
    if shown < len(lines) + more:
        b.cut(None, "older or further commits (see `cardmem log`)", len(lines) + more - shown)
    b.add("")


def _footer_text(out: int, total: int, partial: int) -> str:
    line = f"{out} of {total} cards left out"
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


# --- the project of a working directory ------------------------------------------

def _git_toplevel(folder: Path) -> Path | None:
    """The nearest folder at or above this one holding `.git` (what `git rev-parse
    --show-toplevel` finds), without starting git: the hook's start-up counts."""
    try:
        here = folder.resolve()
    except OSError:
        return None
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return None


def project_for(store: Store, cwd: str | os.PathLike[str] | None) -> str | None:
    """The project a working directory belongs to: its git top-level folder's name
    (else the folder's own name), mapped through `[projects]` in cardmem.toml."""
    if not cwd:
        return None
    folder = _git_toplevel(Path(cwd)) or Path(cwd)
    mapping = store.config.get("projects", {})
    for key in (str(folder), folder.name):
        if key in mapping:
            return mapping[key]
    return folder.name or None


# --- the two piles ---------------------------------------------------------------

def _budget(store: Store, budget: int | None) -> int:
    if budget is not None:
        return max(0, int(budget))
    try:
        return int(store.config["context"]["budget_chars"])
    except Exception:
        return DEFAULT_BUDGET


def _lessons(card: Card) -> str:
    """A project's signal card as its newest lessons first: the History's last lines."""
    body = card.body
    at = body.rfind("\n## History")
    lines = [ln for ln in (body[at:] if at >= 0 else body).splitlines() if ln.startswith("- ")]
    shown = lines[-LESSON_LINES:][::-1]
    more = f"\n({len(lines) - len(shown)} older lessons: `cardmem show {card.id}`)" \
        if len(lines) > len(shown) else ""
    return (f"### Recent lessons from {card.project or 'this project'}'s sessions "
            f"(`{card.id}`, newest first)\n" + "\n".join(shown) + more + "\n")


def _section_need(heading: str, blocks: Iterable[str]) -> int:
    return len(heading) + 2 + sum(len(x) + 1 for x in blocks)


def session_context(store: Store, project: str | None = None, cwd: str | None = None,
                    budget: int | None = None, rules_file: Path | None = None) -> Pile:
    """The pile a coding session starts with (rung 1).

    rules_file: a file the host loads whole at start-up (store/rules_file.py) that carries
    every rule: it is brought up to date, and the pile names it and shows only what changed
    since the host loaded it (Pile.delivered says what was found).
    Each section after the rules keeps a fair share of the budget (what it needs, at most
    its share), so a thousand rules never crowd out the user, the project or the map.
    """
    budget = _budget(store, budget)
    if project is None:
        project = project_for(store, cwd)
    commits = _recent(store)
    recent_ids = _recent_ids(commits)
    h = holdings(store, project, recent_ids)
    recent = [(cid, h.titles[cid]) for cid in recent_ids if cid in h.titles]  # cards only
    map_lines = _map_brief(h, recent)
    recent_lines, more = _recent_lines(commits)
    lesson = project_signals_id(project)
    project_cards = sorted(h.project_cards, key=lambda c: (c.id != lesson, c.id))
    render = {lesson: _lessons} if lesson else {}
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
        from .rules_file import limit_of, sync

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
            _add_cards(b, f"## Project {project} ({len(project_cards)} cards)",
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
    types = _type_counts(Counter(c.type or "untyped" for c in entries))
    if b.add(f"## Memory map ({len(entries)} cards: {types})"):
        shown = 0
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
