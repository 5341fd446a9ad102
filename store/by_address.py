"""Address-only reads, shared by the walk, the MCP server and the CLI.

None of these rank or reorder: they return what sits at an address, in a fixed order,
cut only by size and count caps that are reported, never silent.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .git import runner as git
from .cards import paths
from .cards.card import Card, CardProblem, history, load
from .store import Store

CARD_CHARS = 8000  # one card handed to a model, whole up to this
MAP_COUNT = 200  # entries of the memory map handed to a model


def capped_card(card: Card, max_chars: int = CARD_CHARS) -> dict[str, Any]:
    """A card whole, or cut at max_chars with the cut said."""
    text = card.text
    cut = max(0, len(text) - max_chars)
    return {"id": card.id, "type": card.type, "title": card.title,
            "text": text[:max_chars] if cut else text, "truncated_chars": cut,
            "history": history(card.text)[-5:]}


def read_card(store: Store, card_id: str, max_chars: int = CARD_CHARS) -> dict[str, Any]:
    """The card at an id (BadId / NotFound / CardmemError otherwise), size-capped."""
    return capped_card(store.read(card_id), max_chars)


@dataclass
class MemoryMap:
    entries: list[dict[str, str]]
    total: int
    problems: int

    def as_dict(self) -> dict[str, Any]:
        return {"entries": self.entries, "total": self.total, "shown": len(self.entries),
                "left_out": self.total - len(self.entries), "unreadable": self.problems}


def cards_at(store: Store, card_type: str | None = None, project: str | None = None
             ) -> tuple[list[Card], list[Any]]:
    """The cards of a type and a project (either may be None; a project by its name or its
    key, as --project takes it), in id order, and the files that did not parse (all of
    them: their type is not known)."""
    cards, problems = store.scan()
    key = paths.project_key(project)
    picked = [c for c in cards if (card_type is None or c.type == card_type)
              and (key is None or c.project == key)]
    return sorted(picked, key=lambda c: c.id), problems


def memory_map(store: Store, card_type: str | None = None, project: str | None = None,
               limit: int = MAP_COUNT) -> MemoryMap:
    """Every card's id, type, title and description (`cards_at`), count-capped."""
    picked, problems = cards_at(store, card_type, project)
    return MemoryMap([c.brief() for c in picked[:limit]], len(picked), len(problems))


def parse_since(since: str | None, default_days: int = 14) -> datetime:
    """'7d', '12h', '2w', an ISO date or datetime; None -> default_days ago. UTC."""
    now = datetime.now(timezone.utc)
    if not since:
        return now - timedelta(days=default_days)
    s = since.strip()
    units = {"h": "hours", "d": "days", "w": "weeks", "m": "minutes"}
    if s[:-1].isdigit() and s[-1:] in units:
        return now - timedelta(**{units[s[-1]]: int(s[:-1])})
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"since {since!r}: expected like 7d, 12h, 2w or an ISO date") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def list_recent(store: Store, card_type: str | None = None, since: str | None = None,
                limit: int = 50) -> list[dict[str, Any]]:
    """Cards changed since a time, newest first, read from git history (deterministic).

    Each card appears once, at its newest change; deleted cards are listed as such.
    """
    after = parse_since(since)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for commit in git.log(store.root, since=after.isoformat()):
        for rel in commit.paths:
            if rel in seen or (cid := paths.id_of_path(rel)) is None:
                continue
            seen.add(rel)
            entry: dict[str, Any] = {"id": cid, "commit": commit.commit[:10],
                                     "date": commit.date, "author": commit.author,
                                     "message": commit.message.splitlines()[0]}
            path = store.root / rel
            if not path.exists():
                if card_type is None:
                    out.append({**entry, "type": None, "title": None, "deleted": True})
                continue
            try:
                card = load(path, cid)
            except (CardProblem, OSError):
                continue
            if card_type is not None and card.type != card_type:
                continue
            out.append({**entry, "type": card.type, "title": card.title, "deleted": False})
            if len(out) >= limit:
                return out
    return out
