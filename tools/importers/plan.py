"""What an import writes: new cards, and the updates a changed source makes, three ways.

A card an import made says so in its frontmatter: `source: <kind>:<where>#<item>`.
Importing the same source again finds each card by that key. For a card found, each
managed key (title, type, description, aliases, tags, project) and the body is compared
three ways: what the import wrote last (the key's value at the newest commit with the
trailer `Cardmem-Source: import` whose message says it wrote that key), what the source
says now, what the card says now:

- the source did not change it, or the card already says it: nothing to do;
- the source changed it and the card still says what the import wrote: it is updated,
  one key by card.set_key, the body in place; every other byte stays;
- the source changed it and a person changed it too (or the card has uncommitted
  edits): the person's text is kept, and the report says so.

Items gone from the source leave their cards as they are (reported); a card a person
deleted is not made again (reported). A rule whose text
changed gets a new key; when a section lost as many rules as it gained, they are paired
in order, so the card is updated rather than duplicated.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from cardmem.store.cards import card as cardlib
from cardmem.store.git import runner as git
from cardmem.store.git import status as git_status
from cardmem.store.cards import paths
from cardmem.store.errors import CardmemError
from cardmem.store.learning.proposals import change_proposal, free_id, protected_types
from cardmem.store.cards.status import PROPOSED
from cardmem.store.store import Store

from .model import MANAGED, Draft

TRAILER = "Cardmem-Source: import"
IMPORT_TRAILER = "Cardmem-Import"  # `Cardmem-Import: <kind> <where>`: which source
PROPOSED_BY = "import"


@dataclass
class Outcome:
    """What the import does (or did) to one card."""

    id: str
    title: str
    action: str  # created | proposed | updated | unchanged | kept | gone
    fields: list[str] = field(default_factory=list)
    why: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    outcomes: list[Outcome] = field(default_factory=list)
    changes: dict[str, bytes | None] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)  # imported cards with uncommitted edits

    def lines(self) -> list[str]:
        """One line a card written, for the commit message."""
        return [f"{o.id}  {o.action}" + (f" ({', '.join(o.fields)})" if o.fields else "")
                for o in self.outcomes if o.action in ("created", "proposed", "updated")]


def source_of(kind: str, where: str, key: str) -> str:
    return f"{kind}:{where}#{key}"


def _imported(store: Store, prefix: str) -> tuple[dict[str, cardlib.Card], dict[str, str]]:
    """Cards whose `source` starts with prefix, by source; and change proposals an
    import made (target id -> the proposed text)."""
    found: dict[str, cardlib.Card] = {}
    proposed: dict[str, str] = {}
    for cid, path in store.card_files():
        try:
            raw = path.read_bytes()
            if b"source:" not in raw:
                continue
            c = cardlib.parse(cardlib.decode(raw), cid, path)
        except (OSError, cardlib.CardProblem):
            continue
        src = c.meta.get("source")
        if not isinstance(src, str) or not src.startswith(prefix):
            continue
        if c.meta.get("proposes_change_to"):
            proposed[str(c.meta["proposes_change_to"])] = c.body
        else:
            found.setdefault(src, c)
    return found, proposed


def _norm(value: Any) -> Any:
    if value in (None, "", []):
        return None
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).strip()


def _values(meta: dict[str, Any], body: str) -> dict[str, Any]:
    out = {k: _norm(meta.get(k)) for k in MANAGED}
    out["body"] = body.strip("\n")
    return out


def _with(text: str, key: str, value: Any) -> str:
    """text with one managed key (or the body) set to value, byte-preserving."""
    if key == "body":
        span = cardlib.split(text)
        start = span[2] if span else 0
        lead = "\n" if text[start:].startswith("\n") else ""
        return text[:start] + lead + (value + "\n" if value else "")
    if value is None:
        return cardlib.remove_key(text, key)
    return cardlib.set_key(text, key, value)


_WROTE = re.compile(r"^(created|proposed|updated)(?: \(([^)]*)\))?")


def _last_written(store: Store, cid: str) -> dict[str, Any]:
    """What the import last wrote into each managed key (and the body) of a card: the
    card's value at the newest import commit whose message says it wrote that key
    (`ID  created`, `ID  updated (tags, body)`). A key no import wrote is absent."""
    rel = store.rel(cid)
    log = git.run(store.root, "log", "--format=%x1e%H%n%B", f"--grep=^{TRAILER}$", "--", rel,
                  check=False)
    everything = [*MANAGED, "body"]
    old: dict[str, Any] = {}
    for rec in log.split("\x1e")[1:]:
        sha, _, message = rec.partition("\n")
        wrote: list[str] = []
        for line in message.splitlines():
            head, _, rest = line.partition("  ")
            if head == cid and (m := _WROTE.match(rest)):
                wrote = everything if m.group(1) != "updated" else \
                    [f.strip() for f in (m.group(2) or "").split(",")]
        need = [k for k in wrote if k in everything and k not in old]
        if not need:
            continue
        proc = git.call(store.root, ["show", f"{sha.strip()}:{rel}"])
        try:
            c = cardlib.parse(proc.stdout, cid) if proc.returncode == 0 else None
        except cardlib.CardProblem:
            c = None
        if c is not None:
            then = _values(c.meta, c.body)
            old.update({k: then[k] for k in need})
        if len(old) == len(everything):
            break
    return old


def _uncommitted(store: Store, rels: list[str]) -> set[str]:
    """Which of these paths have edits git has not committed (one git call)."""
    if not rels:
        return set()
    return set(git_status.changes(store.root, rels, check=False))


def _deleted(store: Store, kind: str, where: str, present: set[str]) -> dict[str, str]:
    """source -> id of the cards this import made that a person deleted since: the ids
    its commits say they made, no longer in the store, read back at their deletion."""
    label = f"{IMPORT_TRAILER}: {kind} {where}"
    log = git.run(store.root, "log", "--format=%x1e%B", "-F", f"--grep={label}", check=False)
    made = set()
    for message in log.split("\x1e")[1:]:
        if label not in message.splitlines():
            continue
        for line in message.splitlines():
            head, _, rest = line.partition("  ")
            if rest.startswith(("created", "proposed")) and head not in present:
                made.add(head)
    out: dict[str, str] = {}
    for cid in sorted(made):
        try:
            if store.exists(cid):
                continue
            rel = store.rel(cid)
        except CardmemError:
            continue
        sha = git.run(store.root, "log", "-1", "--format=%H", "--diff-filter=D", "--", rel,
                      check=False).strip()
        proc = git.call(store.root, ["show", f"{sha}^:{rel}"]) if sha else None
        if proc is not None and proc.returncode == 0:
            try:
                src = cardlib.parse(proc.stdout, cid).meta.get("source")
            except cardlib.CardProblem:
                continue
            if isinstance(src, str):
                out[src] = cid
    return out


def make(store: Store, kind: str, where: str, drafts: list[Draft], *,
         as_proposals: bool = False, today: date | None = None) -> Plan:
    """The plan for these drafts against the store as it is now (read only)."""
    prefix = source_of(kind, where, "")
    existing, proposed = _imported(store, prefix)
    wanted = {source_of(kind, where, d.key): d for d in drafts}
    deleted = _deleted(store, kind, where, {c.id for c in existing.values()})
    _pair(existing, wanted, prefix)
    protected = protected_types(store)
    plan = Plan(dirty=_uncommitted(store, [store.rel(c.id) for c in existing.values()]))
    taken: set[str] = set()
    for src, d in wanted.items():
        if src in existing:
            _update(store, src, existing[src], d, plan, proposed,
                    as_proposals and d.type in protected, taken)
            continue
        if src in deleted:
            plan.outcomes.append(Outcome(deleted[src], d.title, "kept", [], "deleted since it "
                                         "was imported; not made again"))
            continue
        meta: dict[str, Any] = {**d.fields(), "source": src}
        action = "created"
        if as_proposals and d.type in protected:
            meta.update(status=PROPOSED, proposed_by=PROPOSED_BY)
            action = "proposed"
        meta["created"] = today or date.today()
        cid = free_id(store, paths.id_for(d.title, d.type, d.project), taken)
        taken.add(cid)
        plan.changes[store.rel(cid)] = cardlib.render(meta, d.body).encode()
        plan.outcomes.append(Outcome(cid, d.title, action))
    for src, c in existing.items():
        if src not in wanted:
            plan.outcomes.append(Outcome(c.id, c.title, "gone", why="no longer in the source; "
                                         "kept as it is"))
    return plan


def _pair(existing: dict[str, cardlib.Card], wanted: dict[str, Draft], prefix: str) -> None:
    """Within a group (a section of rules), pair cards whose item is gone with new items,
    in order, when the counts match: the rule's text changed, so its key did."""
    groups: dict[str, tuple[list[str], list[str]]] = {}
    for src, d in wanted.items():
        if d.group and src not in existing:
            groups.setdefault(d.group, ([], []))[1].append(src)
    for src in existing:
        key = src[len(prefix):]
        if src not in wanted and "/" in key and key.rsplit("/", 1)[0] in groups:
            groups[key.rsplit("/", 1)[0]][0].append(src)
    for gone, new in groups.values():
        if gone and len(gone) == len(new):
            for old_src, new_src in zip(gone, new):
                existing[new_src] = existing.pop(old_src)


def _update(store: Store, src: str, card: cardlib.Card, d: Draft, plan: Plan,
            proposed: dict[str, str], propose: bool, taken: set[str]) -> None:
    now = _values(card.meta, card.body)
    new = _values(d.fields(), d.body)
    differ = [k for k in new if new[k] != now[k]]
    moved = card.meta.get("source") != src  # paired with a renamed item: its new key
    if not differ and not moved:
        plan.outcomes.append(Outcome(card.id, card.title, "unchanged"))
        return
    rel = store.rel(card.id)
    if rel in plan.dirty:
        plan.outcomes.append(Outcome(card.id, card.title, "kept", differ,
                                     "has uncommitted edits; not updated"))
        return
    old = _last_written(store, card.id)
    apply = [k for k in differ if k in old and now[k] == old[k]]
    kept = [k for k in differ if k not in apply]
    text = cardlib.set_key(card.text, "source", src) if moved else card.text
    for k in apply:
        text = _with(text, k, new[k])
    if apply and propose and card.meta.get("status", "active") != PROPOSED:
        if proposed.get(card.id, "").strip("\n") == text.strip("\n"):
            plan.outcomes.append(Outcome(card.id, card.title, "unchanged"))
        else:
            pid = free_id(store, f"{card.id}-proposed", taken)
            taken.add(pid)
            body = change_proposal(card, text, PROPOSED_BY)
            body = cardlib.set_key(body, "source", str(card.meta.get("source")))
            plan.changes[store.rel(pid)] = body.encode()
            plan.outcomes.append(Outcome(pid, card.title, "proposed", apply,
                                         f"a change to {card.id}, for `cardmem review`"))
    elif apply or moved:
        plan.changes[rel] = text.encode()
        plan.outcomes.append(Outcome(card.id, card.title, "updated", apply or ["source"]))
    if kept:
        why = ("changed by a person since it was imported; the source changed it too: "
               "kept the person's text" if all(k in old for k in kept) else
               "no import commit that wrote it was found; left as it is")
        plan.outcomes.append(Outcome(card.id, card.title, "kept", kept, why))
