"""Removing and renaming cards: one commit each, through the store's one write door.

A rename rewrites every `[[link]]` that names the old id (in any card, the moved one
included; links by title or alias still resolve and are left as they are), so no link
breaks; git sees the move as a rename (`git log --follow`). A removal names the cards
that still link to what it removed, since those links now name nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cards import paths
from .cards.links import key, links, relink
from .errors import CardmemError, NotFound
from .git.writer import Message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .store import Store


@dataclass
class Moved:
    old: str
    new: str
    commit: str | None
    relinked: list[str] = field(default_factory=list)  # cards whose links were rewritten

    def as_dict(self) -> dict[str, object]:
        return {"old": self.old, "new": self.new, "commit": self.commit,
                "relinked": self.relinked}


@dataclass
class Removed:
    id: str
    commit: str | None
    linked_from: list[str] = field(default_factory=list)  # cards whose links now break

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "removed": True, "commit": self.commit,
                "linked_from": self.linked_from}


def _texts(store: "Store") -> dict[str, str]:
    """Every card file's text (id -> text), broken ones included: a link is a link."""
    out = {}
    for cid, path in store.card_files():
        try:
            out[cid] = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue
    return out


def _targets(text: str, names: set[str]) -> set[str]:
    """The link targets in text (as written) that name one of `names` (keys)."""
    return {t for t, _ in links(text) if key(t) in names}


def _existing(store: "Store", card_id: str) -> str:
    cid = paths.normalize_id(card_id)
    if not store.exists(cid):
        raise NotFound(f"card {cid}", "no such card (`cardmem list` shows the ids)")
    return cid


def _refuse_protected(store: "Store", cid: str, agent: bool) -> None:
    kind = paths.type_from_id(cid)
    if agent and kind in store.config["extract"]["protected_types"]:
        raise CardmemError(f"card {cid}", f"is a {kind} card an agent may not remove or rename")


def rename(store: "Store", old_id: str, new_id: str, *, agent: bool = False,
           source: str = "cli") -> Moved:
    """Move a card to a new id and point every link to the old id at the new one."""
    old = _existing(store, old_id)
    new = paths.normalize_id(new_id)
    if new == old:
        raise CardmemError(f"card {new}", "is the card's id already", exit_code=2)
    _refuse_protected(store, old, agent)
    moved = Moved(old, new, None)

    def compute() -> dict[str, bytes | None]:
        if store.exists(new):
            raise CardmemError(f"card {new}", "already exists; choose another id or "
                                              f"`cardmem rm {new}` first")
        texts = _texts(store)
        if old not in texts:
            raise CardmemError(f"card {old}", "cannot be read as text; nothing moved")
        names = {key(old)}
        changes: dict[str, bytes | None] = {store.rel(old): None}
        moved.relinked.clear()
        for cid, text in texts.items():
            targets = _targets(text, names)
            for target in sorted(targets):
                text = relink(text, target, new)
            if targets:
                moved.relinked.append(new if cid == old else cid)
            if targets or cid == old:
                changes[store.rel(new if cid == old else cid)] = text.encode()
        return changes

    lines = [f"{old} -> {new}"]
    moved.commit = store.commit(compute, Message(f"mv: {old} -> {new}", lines, source),
                                agent=agent)
    return moved


def remove(store: "Store", card_id: str, *, agent: bool = False, source: str = "cli") -> Removed:
    """Delete a card (one commit; `cardmem revert` brings it back)."""
    cid = _existing(store, card_id)
    _refuse_protected(store, cid, agent)
    names = {key(cid)}
    try:
        card = store.read(cid)
        names |= {key(n) for n in (card.title, *card.aliases) if n}
    except CardmemError:
        pass  # a broken card is removed all the same; links by id are still found
    done = Removed(cid, None)

    def compute() -> dict[str, bytes | None]:
        if not store.exists(cid):
            raise NotFound(f"card {cid}", "no such card")
        done.linked_from = sorted(c for c, text in _texts(store).items()
                                  if c != cid and _targets(text, names))
        return {store.rel(cid): None}

    done.commit = store.commit(compute, Message(f"rm: {cid}", [cid], source), agent=agent)
    return done
