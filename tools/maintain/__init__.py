"""Maintenance that needs more than the store: the model-judged `contradiction` kind
(contradictions.py), answers worth filing (`unfiled-answer`, mine.py, M3) and
`--apply`'s consolidating commits (consolidate.py, fold.py).

    run(store, only={"duplicate"}, apply=False) -> Report(findings, notes, applied)
    reject(store, "dup-3f0c9a1b2c") -> Decision: a person says a finding's cards differ
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cardmem.store import maintain_record as rec
from cardmem.store.cards import distinct
from cardmem.store.errors import CardmemError
from cardmem.store.git.writer import Message
from cardmem.store.learning.proposals import Decision, digest
from cardmem.store.maintain import MODEL_FREE, Finding, OutOfTime, Survey, duplicates, findings, reads, within

from . import consolidate, contradictions, mine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cardmem.store.progress import Progress


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # kinds skipped, and why
    applied: list[dict[str, Any]] = field(default_factory=list)  # commit, subject, ids

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"findings": [f.as_dict() for f in self.findings],
                               "notes": self.notes}
        if self.applied:
            out["applied"] = self.applied
        return out


def run(store, only: set[str] | None = None, *, apply: bool = False, record: bool = True,
        progress: Progress | None = None, cpu_s: float | None = None) -> Report:
    """The findings of the kinds in `only` (all when None); with apply, consolidated.
    What stays open is recorded for doctor, search and context (store/maintain_record.py).
    With cpu_s, the pass stops cleanly once it has used that much CPU: the kinds checked
    by then are recorded, the rest are not, nothing is applied, and a note says so."""
    report_to = within(cpu_s, progress) if cpu_s is not None else progress
    survey = Survey.of(store)
    kinds = [k for k in MODEL_FREE if only is None or k in only]
    report = Report()
    done: list[str] = []
    try:
        for kind in kinds:
            report.findings += findings(store, {kind}, survey, report_to)
            done.append(kind)
    except OutOfTime as exc:
        report.notes.append(f"cut off: {exc}; not checked: {', '.join(kinds[len(done):])}")
        apply = False
        only = set(done)  # and no model-judged kind either
    kinds = done
    if only is None or "contradiction" in only:
        found, note = contradictions.judge_all(survey)
        report.findings.extend(found)
        if note:
            report.notes.append(note)
        if not (note or "").startswith("contradiction: skipped"):
            kinds.append("contradiction")
    if only is None or "unfiled-answer" in only:
        found, note = mine.find(survey, judge_now=apply)
        report.findings.extend(found)
        report.notes += [note] if note else []
        kinds.append("unfiled-answer")
    if apply:
        report.applied = consolidate.consolidate(survey, report.findings, report.notes)
    if record:
        rec.save(store.root, {k: [f.as_dict() for f in report.findings
                                  if f.kind == k and not f.applied] for k in kinds}, survey.now)
        if "stale" in kinds:
            reads.compact(store.root, keep=set(survey.cards))
    return report


def reject(store, key: str):
    """A person says the cards of duplicate finding `key` are different: they are
    remembered as distinct (store/cards/distinct.py) in one commit of theirs, and not
    found again while each is unchanged."""
    survey = Survey.of(store)
    found = [f for f in duplicates.find(survey) if f.key == key.strip()]
    if not found:
        raise CardmemError(f"finding {key}", "is no open duplicate finding; `cardmem maintain "
                                             "--only duplicate` lists them with their names")
    ids = found[0].ids
    msg = Message(f"maintain: distinct {', '.join(ids)}",
                  [f"{cid}  not a duplicate of the others (a person's call, {key})" for cid in ids],
                  "maintain")

    def compute() -> dict[str, bytes | None]:
        now = {cid: digest(store.read(cid).text) for cid in ids}
        if now != {cid: digest(survey.cards[cid].text) for cid in ids}:
            raise CardmemError(f"finding {key}", "a card of it changed meanwhile; run "
                                                 "`cardmem maintain` again")
        return {distinct.FILE: distinct.with_decision(store.root, now)}

    return Decision(key, store.commit(compute, msg, agent=False), msg.lines)
