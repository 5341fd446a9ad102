"""Proposals: what an agent writes as a rule waits for a person (DESIGN §6, §10).

Agents (MCP, the memory tool, the stop hook's extraction) never make or change a live
card of a protected type (`[extract] protected_types`: feedback and user by default).
What they write becomes a proposal, a card with `status: proposed` and `proposed_by:
<who>`, which the session's rules leave out (store/cards/status.py). It is one of two kinds:

- a new card, at its own id. Accepting it sets `status: active` and removes
  `proposed_by`; if it says `supersedes: ID`, that card is marked `status: superseded`
  (kept, so its history stays readable, but no longer in force).
- a change to an existing card: `proposes_change_to: ID`, and a body that is the whole
  new text of that card. Accepting it replaces that card's text in place (the change is
  an edit of that card, so `git log -p ID` shows it as one) and removes the proposal.
  `change_base` is a hash of the card as the agent saw it: if a person has edited the
  card since, accept refuses rather than undo their edit.

`cardmem review` lists proposals; accept and reject are one commit each, with the
person's own git identity and `Cardmem-Source: review`. Every edit of a card here is
byte-preserving (card.set_key / card.remove_key).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterable

from ..cards import card as cardlib, distinct
from ..git import runner as git
from ..cards import paths
from ..errors import CardmemError
from ..cards.status import PROPOSED, status_of
from ..store import Store
from ..git.writer import Message
from ..index.pile_view import catalog

MERGE_KEY = "maintain_merge"  # the merge finding a change proposal is part of
CHANGE_KEYS = ("proposes_change_to", "change_base", MERGE_KEY)  # written by cardmem only
SOURCE = "review"


def protected_types(store: Store) -> set[str]:
    return set(store.config["extract"]["protected_types"])


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def parsed(text: str | None, cid: str) -> cardlib.Card | None:
    """The card a text makes, or None (absent, or not a card: the index skips it)."""
    if text is None:
        return None
    try:
        return cardlib.parse(text, cid)
    except cardlib.CardProblem:
        return None


def is_proposal(card: cardlib.Card | None) -> bool:
    return card is not None and status_of(card) == PROPOSED


def mark_proposed(text: str, proposed_by: str) -> str:
    """A card's text as a new-card proposal; the keys only cardmem writes are removed."""
    for key in CHANGE_KEYS:
        text = cardlib.remove_key(text, key)
    text = cardlib.set_key(text, "status", PROPOSED)
    return cardlib.set_key(text, "proposed_by", proposed_by)


def change_proposal(target: cardlib.Card, new_text: str, proposed_by: str,
                    card_type: str | None = None) -> str:
    """A proposal card whose body is, byte for byte, the new text of `target`."""
    meta: dict[str, Any] = {"title": f"Change to {target.title}",
                            "type": card_type or target.type or "feedback",
                            "status": PROPOSED, "proposed_by": proposed_by,
                            "proposes_change_to": target.id, "change_base": digest(target.text),
                            "created": date.today()}
    head = cardlib.render(meta, "")
    span = cardlib.split(head)
    assert span is not None
    return head[:span[1]] + "---\n" + new_text


def free_id(store: Store, base: str, taken: Iterable[str] = ()) -> str:
    """base, else base-2, base-3, …: the first id with no card (nor one of `taken`)."""
    taken = set(taken)
    cid, n = base, 1
    while store.exists(cid) or cid in taken:
        n += 1
        cid = f"{base}-{n}"
    return cid


# --- what an agent's write becomes ---------------------------------------------------

@dataclass
class AgentWrite:
    """Where an agent's text goes: `plain` (as written), `proposal` (in place, marked
    proposed) or `change` (a separate proposal card naming `target`)."""

    id: str
    text: str
    kind: str
    target: str | None = None
    created: bool = True  # False: an existing proposal was edited


def guard(store: Store, cid: str, old: str | None, new: str, proposed_by: str,
          taken: Iterable[str] = ()) -> AgentWrite:
    """What an agent writing `new` over `old` (None: a new file) at `cid` may do.

    A live card of a protected type (or one the new text would make protected) is never
    touched: a change proposal is made beside it. A new protected card, or an edit of a
    proposal, stays a proposal however the text sets its status.
    """
    protected = protected_types(store)
    before, after = parsed(old, cid), parsed(new, cid)
    if is_proposal(before):
        assert before is not None
        text = mark_proposed(new, str(before.meta.get("proposed_by") or proposed_by))
        for key in CHANGE_KEYS:  # an agent does not retarget a change proposal
            if before.meta.get(key) is not None:
                text = cardlib.set_key(text, key, str(before.meta[key]))
        return AgentWrite(cid, text, "proposal", created=False)
    # A text that does not parse counts by its folder: an agent must not take over a
    # rule by breaking its YAML.
    was = before.type if before else (paths.type_from_id(cid) if old is not None else None)
    becomes = after.type if after else None
    if old is not None and (was in protected or becomes in protected):
        target = before or cardlib.Card(cid, {}, old, cid.rsplit("/", 1)[-1], None, text=old)
        pid = free_id(store, f"{cid}-proposed", taken)
        kind = was if was in protected else becomes
        return AgentWrite(pid, change_proposal(target, new, proposed_by, kind), "change", cid)
    if becomes in protected or is_proposal(after):
        # A card an agent calls a proposal says truly who proposed it, and no change key
        # it wrote itself points it at another card.
        return AgentWrite(cid, mark_proposed(new, proposed_by), "proposal")
    return AgentWrite(cid, new, "plain")


def live_protected(store: Store, cid: str, text: str) -> bool:
    """A card of a protected type that is not a proposal: only a person changes it."""
    card = parsed(text, cid)
    return card is not None and card.type in protected_types(store) and not is_proposal(card)


def live_rule_text(store: Store, cid: str) -> str | None:
    """The text of the live protected card at cid (no link followed), else None."""
    p = store.root / f"{cid}.md"
    if p.is_symlink() or not p.is_file():
        return None
    try:
        text = cardlib.decode(p.read_bytes())
    except (cardlib.CardProblem, OSError):
        return None
    return text if live_protected(store, cid, text) else None


def propose_remember(store: Store, title: str, body: str, *, card_type: str,
                     project: str | None, proposed_by: str, source: str,
                     session: str | None = None, target: str | None = None) -> AgentWrite:
    """`remember` by an agent for a protected type: a proposal, one commit.

    A new title is a new-card proposal; a title whose card exists proposes appending a
    dated section to it (a change proposal), or appends to the card if it is a proposal.
    `target`: the card of that title found elsewhere (Store.titled), instead of the slug.
    """
    base = target or paths.id_for(title, card_type, project)
    today = date.today().isoformat()
    msg = Message(f"propose: {base}", [], source, session)
    done: list[AgentWrite] = []

    def compute() -> dict[str, bytes | None]:
        done.clear()
        write = None
        if store.exists(base):
            old = store.read(base)
            write = guard(store, base, old.text, cardlib.append_section(old.text, today, body),
                          proposed_by)
        if write is None or write.kind == "plain":  # no card, or one of another type there
            meta: dict[str, Any] = {"title": title, "type": card_type}
            if project:
                meta["project"] = project
            meta.update(status=PROPOSED, proposed_by=proposed_by, created=date.today())
            write = AgentWrite(free_id(store, base), cardlib.render(meta, body), "proposal")
        done.append(write)
        msg.subject = f"propose: {write.id}"
        what = (f"change to {write.target}" if write.target else
                "new " + card_type if write.created else "addition to this proposal")
        msg.lines = [f"{write.id}  proposed {what} (by {proposed_by}); `cardmem review`"]
        return {store.rel(write.id): write.text.encode()}

    store.commit(compute, msg, agent=True)
    return done[0]


# --- rules from extraction ----------------------------------------------------------

RULE_FOLDER = "feedback"
RULE_TITLE_CHARS = 80


def rule_lines(store: Store) -> dict[str, list[str]]:
    """id -> the lines each rule card says (title, description, body lines), for every
    card under feedback/, in force or proposed: what a new `Rule:` might repeat."""
    out: dict[str, list[str]] = {}
    for p in sorted((store.root / RULE_FOLDER).rglob("*.md")):
        if (cid := paths.id_of_path(p.relative_to(store.root).as_posix())) is None:
            continue
        try:
            c = cardlib.load(p, cid)
        except (cardlib.CardProblem, OSError):
            continue
        body = [ln.strip().lstrip("-*#> ").strip() for ln in c.body.splitlines()]
        out[cid] = [t for t in [c.title, c.description, *body] if t]
    return out


def rule_title(rule: str) -> str:
    """A rule's title: the rule itself, cut at a word to RULE_TITLE_CHARS with `...`."""
    return rule if len(rule) <= RULE_TITLE_CHARS else \
        rule[:RULE_TITLE_CHARS - 3].rsplit(" ", 1)[0] + "..."


def rule_card(store: Store, rule: str, proposed_by: str,
              taken: Iterable[str] = ()) -> tuple[str, str]:
    """(id, text) of a new proposal for an extracted rule, at a free id under feedback/."""
    title = rule_title(rule)
    cid = free_id(store, f"{RULE_FOLDER}/{paths.slugify(title)}", taken)
    meta = {"title": title, "type": "feedback", "status": PROPOSED, "proposed_by": proposed_by,
            "created": date.today()}
    return cid, cardlib.render(meta, rule)


# --- review ------------------------------------------------------------------------

@dataclass
class Proposal:
    id: str
    title: str
    type: str | None
    body: str
    proposed_by: str
    commit: str | None  # the commit that created it
    supersedes: list[str] = field(default_factory=list)
    changes: str | None = None  # the card it proposes to change

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "type": self.type, "body": self.body,
                "proposed_by": self.proposed_by, "commit": self.commit,
                "supersedes": self.supersedes, "proposes_change_to": self.changes}


def _ids(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def proposals(store: Store) -> list[Proposal]:
    """Every card with `status: proposed`, in id order, with the commit that made it."""
    entries, _ = catalog(store)
    cards = []
    for e in sorted(entries, key=lambda e: e.id):
        if status_of(e) == PROPOSED:
            try:
                cards.append(store.read(e.id))
            except CardmemError:
                continue  # gone or broken since it was indexed
    made = _creating_commits(store, [store.rel(c.id) for c in cards])
    return [Proposal(c.id, c.title, c.type, c.body, str(c.meta.get("proposed_by") or ""),
                     made.get(store.rel(c.id)), _ids(c.meta.get("supersedes")),
                     (_ids(c.meta.get("proposes_change_to")) or [None])[0])
            for c in cards]


def _creating_commits(store: Store, rels: list[str]) -> dict[str, str]:
    """path -> the newest commit that added it (one git call for all)."""
    if not rels:
        return {}
    out = git.run(store.root, "log", "--diff-filter=A", "--no-renames", "--format=\x1e%H",
                  "--name-only", "--", *rels, check=False)
    made: dict[str, str] = {}
    for rec in out.split("\x1e")[1:]:
        sha, *files = rec.strip().splitlines()
        for f in files:
            made.setdefault(f.strip(), sha)
    return made


@dataclass
class Decision:
    """What accept or reject did: the commit and one line per card it touched."""

    id: str
    commit: str | None
    lines: list[str]


def _proposal(store: Store, cid: str, verb: str) -> cardlib.Card:
    card = store.read(cid)
    if status_of(card) != PROPOSED:
        raise CardmemError(f"card {card.id}", f"is not a proposal (status: {status_of(card)}); "
                                              f"only proposals can be {verb}ed "
                                              "(`cardmem review` lists them)")
    return card


def accept(store: Store, cid: str) -> Decision:
    """Put a proposal in force, as a person's commit (see the module docstring)."""
    cid = paths.normalize_id(cid)
    msg = Message(f"review: accept {cid}", [], SOURCE)

    def compute() -> dict[str, bytes | None]:
        card = _proposal(store, cid, "accept")
        if card.meta.get("proposes_change_to"):
            return _accept_change(store, card, msg)
        text = cardlib.remove_key(cardlib.set_key(card.text, "status", "active"), "proposed_by")
        changes: dict[str, bytes | None] = {store.rel(card.id): text.encode()}
        msg.lines = [f"{card.id}  accepted: now in force (proposed by "
                     f"{card.meta.get('proposed_by') or 'unknown'})"]
        for old_id in _ids(card.meta.get("supersedes")):
            msg.lines.append(_supersede(store, old_id, card.id, changes))
        return changes

    return Decision(cid, store.commit(compute, msg, agent=False), msg.lines)


def _supersede(store: Store, old_id: str, by: str, changes: dict[str, bytes | None]) -> str:
    """Mark the card a proposal supersedes; say what was done (or why not)."""
    try:
        old = store.read(old_id)
    except CardmemError as exc:
        return f"{old_id}  not marked superseded: {exc.why}"
    if old.id == by or status_of(old) != "active":
        return f"{old.id}  left as it is (status: {status_of(old)})"
    changes[store.rel(old.id)] = cardlib.set_key(old.text, "status", "superseded").encode()
    return f"{old.id}  superseded by {by} (kept, no longer in force)"


def _accept_change(store: Store, card: cardlib.Card, msg: Message) -> dict[str, bytes | None]:
    target = str(card.meta["proposes_change_to"])
    try:
        current = store.read(target)
    except CardmemError as exc:
        raise CardmemError(f"card {card.id}", f"proposes a change to {target}, which cannot "
                                              f"be read ({exc.why}); reject it") from None
    if digest(current.text) != str(card.meta.get("change_base") or ""):
        raise CardmemError(f"card {card.id}", f"{target} changed after this proposal was "
                                              "made; edit it by hand and reject the proposal")
    msg.lines = [f"{current.id}  replaced by the text proposed in {card.id} "
                 f"(proposed by {card.meta.get('proposed_by') or 'unknown'})",
                 f"{card.id}  removed (accepted)"]
    return {store.rel(current.id): card.body.encode(), store.rel(card.id): None}


def reject(store: Store, cid: str) -> Decision:
    """Remove a proposal, as a person's commit. A part of a merge `maintain` proposed
    (MERGE_KEY) takes the whole merge with it: every proposal of it is removed and its
    cards are remembered as distinct (store/cards/distinct.py), so it is not proposed
    again while they are unchanged."""
    cid = paths.normalize_id(cid)
    msg = Message(f"review: reject {cid}", [], SOURCE)

    def compute() -> dict[str, bytes | None]:
        card = _proposal(store, cid, "reject")
        msg.lines = [f"{card.id}  rejected and removed (proposed by "
                     f"{card.meta.get('proposed_by') or 'unknown'})"]
        out: dict[str, bytes | None] = {store.rel(card.id): None}
        if merge := card.meta.get(MERGE_KEY):
            out.update(_reject_merge(store, card, str(merge), msg.lines))
        return out

    return Decision(cid, store.commit(compute, msg, agent=False), msg.lines)


def _reject_merge(store: Store, card: cardlib.Card, merge: str,
                  lines: list[str]) -> dict[str, bytes | None]:
    parts = [card] + [store.read(p.id) for p in proposals(store)
                      if p.id != card.id and p.changes]
    parts = [c for c in parts if str(c.meta.get(MERGE_KEY) or "") == merge]
    out: dict[str, bytes | None] = {store.rel(c.id): None for c in parts}
    lines += [f"{c.id}  rejected with it (the same merge, {merge})" for c in parts[1:]]
    cards = {str(c.meta["proposes_change_to"]): str(c.meta.get("change_base") or "")
             for c in parts if c.meta.get("proposes_change_to")}
    if len(cards) > 1:
        out[distinct.FILE] = distinct.with_decision(store.root, cards)
        lines.append(f"{', '.join(sorted(cards))}  remembered as distinct "
                     f"({distinct.FILE}): not proposed as duplicates again while unchanged")
    return out
