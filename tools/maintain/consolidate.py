"""`maintain --apply` (M2): each finding it can act on becomes one agent commit a person
can read (`cardmem log`) and undo (`cardmem revert`), with `Cardmem-Source: maintain`.

- broken-link whose card git saw renamed: the link is pointed at the new id;
- duplicate cards (a group, store/maintain/duplicates.py): each other card's title and
  aliases become aliases of the kept one, its History lines and every paragraph with a
  sentence the kept card does not say move over (checked: a merge that would lose a
  sentence is not applied), and it is marked `status: superseded`, `superseded_by:
  <kept>` (kept, readable);
- contradiction: the loser is marked `status: superseded`, `superseded_by: <winner>`;
- long-history: folded (fold.py), the raw lines kept below the rewritten text;
- unfiled-answer (mine.py): the answer becomes a proposed card, its receipt as source.
Drift, stale cards and repeated History lines are a person's to fix: nothing is applied.

A live protected card (`[extract] protected_types`: feedback, user) is never changed:
when a change would touch one, every card of that change gets a change proposal instead
(store/learning/proposals.py), in one commit, for `cardmem review`; a merge's proposals
carry its finding's name, so rejecting one rejects them all and remembers the cards as
distinct (store/cards/distinct.py). A card changed once in a run
is not changed again in it: that finding waits for the next run, and the notes say so.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import markdown
from cardmem.store.learning import proposals
from cardmem.store.errors import CardmemError, StoreBusy
from cardmem.store.maintain import Finding, Survey
from cardmem.store.maintain import history as hist
from cardmem.store.maintain.facts import sentences
from cardmem.store.cards.links import relink
from cardmem.store.git.writer import Message
from cardmem.tools import model

from .fold import rewrite
from .mine import proposed_card

SOURCE = "maintain"  # the commits' Cardmem-Source, and proposals' proposed_by
MAX_CHANGES = 50  # commits one run makes; the rest wait for the next run (and say so)


@dataclass
class Change:
    """One commit: `edit` maps the current texts of `ids` to their new texts."""

    kind: str
    subject: str
    ids: list[str]
    edit: Callable[[dict[str, str]], dict[str, str]]
    lines: list[str] = field(default_factory=list)
    key: str | None = None  # the finding's name: its proposals carry it (a reject is whole)


def superseded(text: str, by: str) -> str:
    return cardlib.set_key(cardlib.set_key(text, "status", "superseded"), "superseded_by", by)


def _paragraphs(body: str) -> list[str]:
    """A body's paragraphs (fenced code kept whole, by store/cards/markdown.py's one fence
    rule), a heading as a bold first line."""
    out: list[str] = []
    cur: list[str] = []
    run = ""
    for ln in body.splitlines():
        if run:  # inside a fence: kept as it is, up to the line that closes it
            cur.append(ln)
            run = "" if markdown.closes(ln, run) else run
            continue
        if run := markdown.fence(ln):
            cur.append(ln)
            continue
        head = markdown.heading(ln)
        if head or not ln.strip():
            if cur:
                out.append("\n".join(cur))
            # a heading moves as a bold line: the kept card's sections stay its own
            cur = [f"**{head[1]}**"] if head else []
        else:
            cur.append(ln)
    if cur:
        out.append("\n".join(cur))
    return out


def _said(text: str) -> set[str]:
    """The sentences a card says: its names, description and body (History aside)."""
    c = cardlib.parse(text, "card")
    return (sentences("\n\n".join([c.title, *c.aliases, c.description]))
            | sentences(hist.parts(text)[1]))


def merged(keep: str, other: str, keep_id: str, other_id: str, today: str) -> tuple[str, str]:
    """(kept card's new text, other's new text) of merging other into keep: other's
    title and aliases become aliases, each of its paragraphs with a sentence the kept card
    lacks moves over whole, its History lines too. CardmemError when the result would
    still lack one of other's sentences: then nothing is merged."""
    k, o = cardlib.parse(keep, keep_id), cardlib.parse(other, other_id)
    taken = {a.casefold() for a in (k.title, *k.aliases)}
    aliases = list(k.aliases)
    for a in (o.title, *o.aliases):
        if a.strip() and a.casefold() not in taken:
            aliases.append(a)
            taken.add(a.casefold())
    text = cardlib.set_key(keep, "aliases", aliases) if aliases != k.aliases else keep
    said = _said(text)  # its names now include the other's
    new = [p for p in ([o.description] if o.description else []) + _paragraphs(hist.parts(other)[1])
           if not sentences(p) <= said]
    if new:
        text = cardlib.append_section(text, f"Merged from {other_id}", "\n\n".join(new))
    for line in cardlib.history(other):
        text = cardlib.append_history(text, line)
    moved = (f"{len(new)} paragraph(s) it alone said" if new else
             "nothing else: the kept card says each of its sentences")
    text = cardlib.append_history(text, f"{today} · maintain · Merged {other_id} (a duplicate): "
                                        f"its name, aliases, history and {moved}")
    if lost := _said(other) - _said(text):
        raise CardmemError(f"card {other_id}", f"merging it into {keep_id} would lose "
                                               f"{len(lost)} sentence(s), e.g. {min(lost)!r}; "
                                               "not merged")
    return text, superseded(other, keep_id)


def plan(survey: Survey, f: Finding, notes: list[str]) -> Change | None:
    """The change a finding asks for, or None (a person's to fix, or not possible)."""
    fix, today = f.fix or {}, date.today().isoformat()
    if f.kind == "broken-link" and fix:
        cid, target, new = fix["card"], fix["target"], fix["new"]
        return Change(f.kind, f"maintain: relink {cid}", [cid],
                      lambda t: {cid: relink(t[cid], target, new)},
                      [f"{cid}  [[{target}]] -> [[{new}]] (git saw it renamed)"])
    if f.kind == "duplicate" and fix:
        keep, others = fix["keep"], list(fix["others"])

        def merge(t: dict[str, str]) -> dict[str, str]:
            out = {keep: t[keep]}
            for other in others:
                out[keep], out[other] = merged(out[keep], t[other], keep, other, today)
            return out

        names = ", ".join(others)
        return Change(f.kind, f"maintain: merge {names} into {keep}", [keep, *others], merge,
                      [f"{keep}  takes {names}: names, aliases, history and every sentence "
                       "it lacked", *(f"{o}  superseded by {keep} (a duplicate)" for o in others),
                       f"    {f.detail}"], key=f.key)
    if f.kind == "contradiction" and fix:
        keep, lose = fix["keep"], fix["lose"]
        return Change(f.kind, f"maintain: {lose} superseded by {keep}", [keep, lose],
                      lambda t: {lose: superseded(t[lose], keep)},
                      [f"{lose}  superseded by {keep}: they contradict ({f.detail})",
                       f"    {f.suggestion.split('(', 1)[-1].split(')')[0]}"])
    if f.kind == "long-history" and fix:
        return _fold(survey, f, notes)
    if f.kind == "unfiled-answer" and fix:
        return _file_answer(survey, fix)
    return None


def _file_answer(survey: Survey, fix: dict[str, Any]) -> Change:
    rid = fix["receipt"]
    change = Change("unfiled-answer", "maintain: propose an answer as a card", [], lambda t: {},
                    [f"from receipt {rid}: judged supported; no card said it"])

    def new_card(_: dict[str, str]) -> dict[str, str]:
        cid, text = proposed_card(survey.store, fix, [])
        change.subject = f"maintain: propose: {cid}"
        change.lines.append(f"{cid}  proposed (a new reference card); `cardmem review`")
        return {cid: text}

    change.edit = new_card
    return change


def _fold(survey: Survey, f: Finding, notes: list[str]) -> Change | None:
    cid, keep = f.fix["card"], int(f.fix["keep"])  # type: ignore[index]
    cfg = survey.store.config["model"]
    try:
        model.resolve(cfg)
    except model.ModelError as exc:
        if not any(n.startswith("long-history: not folded") for n in notes):
            notes.append(f"long-history: not folded, no model ({exc.why})")
        return None
    text = survey.store.read(cid).text
    _, body, lines, _ = hist.parts(text)
    old = lines[:-keep] if keep else lines
    try:
        new_body = rewrite(survey.cards[cid].title, body, old, cfg)
    except model.ModelError as exc:
        notes.append(f"long-history {cid}: not folded: {exc.why}")
        return None
    base = proposals.digest(text)

    def fold(t: dict[str, str]) -> dict[str, str]:
        if proposals.digest(t[cid]) != base:
            raise CardmemError(f"card {cid}", "changed while the model rewrote it; not folded")
        return {cid: hist.folded(t[cid], new_body, keep)}

    return Change(f.kind, f"maintain: fold the History of {cid}", [cid], fold,
                  [f"{cid}  text rewritten from its {len(old)} oldest History lines, "
                   f"which stay below it in ## {hist.FOLDED}; {keep} kept in ## History"])


def _pending(store) -> set[str]:
    """Cards a maintain proposal already waits on (so a run does not propose twice)."""
    return {p.changes for p in proposals.proposals(store) if p.proposed_by == SOURCE and p.changes}


def commit(store, change: Change) -> dict[str, Any] | None:
    """Make the change one agent commit (or one commit of proposals); what was done."""
    msg = Message(change.subject, list(change.lines), SOURCE)
    made: list[str] = []
    written: list[str] = []

    def compute() -> dict[str, bytes | None]:
        made.clear()
        texts = {cid: store.read(cid).text for cid in change.ids}
        new = {k: v for k, v in change.edit(texts).items() if v != texts.get(k)}
        written[:] = list(new)
        msg.subject, msg.lines = change.subject, list(change.lines)
        guarded = [k for k in new if k in texts and proposals.live_protected(store, k, texts[k])]
        if not guarded or not new:
            return {store.rel(k): v.encode() for k, v in new.items()}
        if waiting := sorted(_pending(store) & set(new)):
            raise CardmemError(f"card {waiting[0]}", "a maintain proposal for it already "
                                                     "waits in `cardmem review`")
        out: dict[str, bytes | None] = {}
        for cid, text in new.items():
            pid = proposals.free_id(store, f"{cid}-proposed", made)
            made.append(pid)
            proposal = proposals.change_proposal(store.read(cid), text, SOURCE)
            if change.key:
                proposal = cardlib.set_key(proposal, proposals.MERGE_KEY, change.key)
            out[store.rel(pid)] = proposal.encode()
        msg.subject = change.subject.replace("maintain: ", "maintain: propose: ", 1)
        msg.lines += [f"{', '.join(guarded)}  protected: not changed; proposed in "
                      f"{', '.join(made)} for `cardmem review`"]
        return out

    sha = store.commit(compute, msg, agent=True)
    if sha is None:
        return None
    out: dict[str, Any] = {"kind": change.kind, "commit": sha, "subject": msg.subject,
                           "ids": change.ids or written}
    if made:
        out["proposals"] = list(made)
    return out


def consolidate(survey: Survey, found: list[Finding], notes: list[str]) -> list[dict[str, Any]]:
    """Apply what can be applied of `found`, one commit each; what was committed."""
    applied: list[dict[str, Any]] = []
    touched: set[str] = set()
    for n, f in enumerate(found):
        if f.fix is None or (f.kind == "broken-link" and "card" not in f.fix):
            continue
        if len(applied) >= MAX_CHANGES:
            left = sum(1 for g in found[n:] if g.fix is not None)
            notes.append(f"applied {MAX_CHANGES} changes, the most one run makes; "
                         f"{left} finding(s) wait for the next run")
            break
        ids = [v for k, v in f.fix.items() if k in ("card", "keep", "lose")] \
            + list(f.fix.get("others", []))
        if touched & set(ids):
            notes.append(f"{f.kind} {' '.join(f.ids)}: left for the next run "
                         "(a card of it changed in this one)")
            continue
        change = plan(survey, f, notes)
        if change is None:
            continue
        try:
            done = commit(survey.store, change)
        except StoreBusy:
            raise
        except CardmemError as exc:
            notes.append(f"{f.kind} {' '.join(f.ids)}: not applied: {exc}")
            continue
        if done:
            f.applied = done["commit"]
            applied.append(done)
            touched.update(change.ids)
    return applied
