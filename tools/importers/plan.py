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

Which card an item is, is decided by identity.py: its key (`source:`), else its text
(the same, or nearly: a reworded rule), never its place. Items gone from the source leave
their cards as they are (reported); a card a person deleted (committed or not) is never
made again, whatever else moved (reported).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from cardmem.store.cards import card as cardlib
from cardmem.store.git import runner as git
from cardmem.store.git import status as git_status
from cardmem.store.cards import paths
from cardmem.store.learning.proposals import change_proposal, free_id, protected_types
from cardmem.store.cards.status import PROPOSED
from cardmem.store.store import Store

from .identity import Known, match
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


def _last_written(store: Store, cid: str) -> dict[str, Any]:
    """What the import last wrote into each managed key (and the body) of a card: the
    card's value at the newest import commit that wrote that key. A commit that added
    the card wrote every key; one that changed it wrote the keys that differ from the
    commit before (an import commits only what it changes; a person's uncommitted edits
    are never in it). Read from the commits' files, not their messages, which name at
    most MESSAGE_LINES cards. A key no import wrote is absent."""
    rel = store.rel(cid)
    log = git.run(store.root, "-c", "core.quotePath=false", "log", "--format=%x1e%H",
                  "--name-status", "--no-renames", f"--grep=^{TRAILER}$", "--", rel,
                  check=False)
    everything = [*MANAGED, "body"]
    old: dict[str, Any] = {}
    for rec in log.split("\x1e")[1:]:
        sha, *lines = [ln for ln in rec.strip().splitlines() if ln]
        status = lines[0].split("\t", 1)[0] if lines else ""  # the log names rel only
        then = _values_at(store, sha, rel, cid) if status in ("A", "M") else None
        if then is None:
            continue
        before = _values_at(store, f"{sha}^", rel, cid) if status == "M" else None
        wrote = [k for k in everything if k not in old and (before is None
                                                               or before[k] != then[k])]
        old.update({k: then[k] for k in wrote})
        if len(old) == len(everything):
            break
    return old


def _values_at(store: Store, rev: str, rel: str, cid: str) -> dict[str, Any] | None:
    """A card's managed values (and body) as the commit rev holds it; None if it does not
    (or it does not parse)."""
    proc = git.call(store.root, ["show", f"{rev}:{rel}"])
    if proc.returncode != 0:
        return None
    try:
        c = cardlib.parse(proc.stdout, cid)
    except cardlib.CardProblem:
        return None
    return _values(c.meta, c.body)


def _uncommitted(store: Store, rels: list[str]) -> set[str]:
    """Which of these paths have edits git has not committed (one git call)."""
    if not rels:
        return set()
    return set(git_status.changes(store.root, rels, check=False))


def _deleted(store: Store, kind: str, where: str, live: set[str]) -> list[Known]:
    """The cards this source's imports wrote that a person deleted since, each as it was
    when deleted: at the commit before the deletion, or at HEAD when the deletion is not
    committed yet. The paths are those its commits added or changed (read from the
    commits' files, not their messages, which name at most MESSAGE_LINES cards); a card
    whose key is live again was moved, not deleted. A last version that does not parse
    (a person broke its YAML, then deleted it) is read as the import last wrote it."""
    label = f"{IMPORT_TRAILER}: {kind} {where}"
    log = git.run(store.root, "-c", "core.quotePath=false", "log", "--format=%x1e%B%x1f%H",
                  "--name-status", "--no-renames", "-F", f"--grep={label}", check=False)
    wrote: dict[str, str] = {}  # rel -> the newest import commit that wrote it
    for rec in log.split("\x1e")[1:]:
        message, _, files = rec.partition("\x1f")
        if label not in message.splitlines():
            continue
        sha, *lines = files.strip("\n").splitlines()
        for line in lines:
            status, _, rel = line.partition("\t")
            if status in ("A", "M") and rel.endswith(".md"):
                wrote.setdefault(rel, sha)
    gone = sorted(rel for rel in wrote if not (store.root / rel).exists())
    if not gone:
        return []
    at: dict[str, str] = {}  # rel -> the commit whose tree holds it as last seen
    out = git.run(store.root, "-c", "core.quotePath=false", "log", "--format=%x1e%H",
                  "--name-only", "--no-renames", "--diff-filter=D", "--", *gone, check=False)
    for rec in out.split("\x1e")[1:]:
        sha, *rels = rec.strip().splitlines()
        for rel in rels:
            at.setdefault(rel.strip(), f"{sha}^")
    found: list[Known] = []
    for rel in gone:
        # deleted, not yet committed: HEAD holds it; else the commit before its deletion
        c = _parsed_at(store, rel, ["HEAD", *([at[rel]] if rel in at else []), wrote[rel]])
        if c is None:
            continue
        src = c.meta.get("source")
        if isinstance(src, str) and src.startswith(source_of(kind, where, "")) \
                and src not in live and not c.meta.get("proposes_change_to"):
            found.append(Known(src, c, deleted=True))
    return found


def _parsed_at(store: Store, rel: str, revs: list[str]) -> cardlib.Card | None:
    """The card at rel as the first of revs that holds it in a form that parses."""
    for rev in revs:
        proc = git.call(store.root, ["show", f"{rev}:{rel}"])
        if proc.returncode == 0:
            try:
                return cardlib.parse(proc.stdout, rel[:-3])
            except cardlib.CardProblem:
                continue
    return None


def make(store: Store, kind: str, where: str, drafts: list[Draft], *,
         as_proposals: bool = False, today: date | None = None) -> Plan:
    """The plan for these drafts against the store as it is now (read only)."""
    prefix = source_of(kind, where, "")
    existing, proposed = _imported(store, prefix)
    wanted = {source_of(kind, where, d.key): d for d in drafts}
    known = [Known(src, c) for src, c in existing.items()]
    known += _deleted(store, kind, where, set(existing))
    found = match(wanted, known, prefix, lambda k: _earlier_bodies(store, k.card.id))
    protected = protected_types(store)
    plan = Plan(dirty=_uncommitted(store, [store.rel(c.id) for c in existing.values()]))
    taken: set[str] = set()
    for src, d in wanted.items():
        k = found.get(src)
        if k is not None and k.deleted:
            plan.outcomes.append(Outcome(k.card.id, d.title, "kept", [], "deleted since it "
                                         "was imported; not made again"))
            continue
        if k is not None:
            _update(store, src, k.card, d, plan, proposed,
                    as_proposals and d.type in protected, taken)
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
    matched = {id(k) for k in found.values()}
    for k in known:
        if not k.deleted and id(k) not in matched:
            plan.outcomes.append(Outcome(k.card.id, k.card.title, "gone",
                                         why="no longer in the source; kept as it is"))
    return plan


def _earlier_bodies(store: Store, cid: str) -> list[str]:
    """What the import last wrote into a card's body (its identity, when a person has
    edited the body since)."""
    body = _last_written(store, cid).get("body")
    return [body] if isinstance(body, str) else []


def _update(store: Store, src: str, card: cardlib.Card, d: Draft, plan: Plan,
            proposed: dict[str, str], propose: bool, taken: set[str]) -> None:
    now = _values(card.meta, card.body)
    new = _values(d.fields(), d.body)
    differ = [k for k in new if new[k] != now[k]]
    moved = card.meta.get("source") != src  # found by its text: the item's key changed
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
