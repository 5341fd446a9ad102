"""Compounding: file extracted signals into the store, one commit per run (DESIGN §6).

Each signal goes to the History of the one existing card it clearly belongs to (its
rarest keywords overlap that card, and no other card comes close), else into the signal
card of the session's project, `projects/<project>/signals.md`, where that project's next
session finds it; a session with no project uses the day's card `signals/YYYY-MM-DD.md`.
Exact and near-duplicate signals are not filed twice. Protected types (feedback, user)
are never appended to: a signal that belongs there lands on the signal card with a note
naming the card it resembles. Which card a signal belongs to, and whether it is a
duplicate, is decided in store/learning/matching.py.

If the write lock is busy, the run's signals wait in `.cardmem/spool/` (one JSON file
per run, written atomically: store/learning/spool.py) and the next run files them first.
Nothing is dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Iterable

from ..cards import card as cardlib
from ..errors import CardmemError
from ..cards import paths
from ..cards.paths import project_signals_id
from .matching import entry_line, is_duplicate, open_matcher, signal_subject
from .proposals import rule_card, rule_lines
from .spool import spool, spooled_batches
from ..store import Store
from ..git.writer import Message


@dataclass(frozen=True)
class Filed:
    """One signal and where it went (or why it was not filed)."""

    card: str | None
    line: str  # "Kind: text"
    session: str
    day: str
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"card": self.card, "line": self.line, "session": self.session,
                "day": self.day, "note": self.note}


@dataclass
class Result:
    commit: str | None = None
    filed: list[Filed] = field(default_factory=list)
    duplicates: list[Filed] = field(default_factory=list)
    spooled: str | None = None  # path of the spool file when the lock was busy
    from_spool: int = 0
    error: str | None = None  # why nothing was committed (the signals were spooled)

    def as_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "filed": [f.as_dict() for f in self.filed],
                "duplicates": [f.as_dict() for f in self.duplicates],
                "spooled": self.spooled, "from_spool": self.from_spool, "error": self.error}


# --- filing --------------------------------------------------------------------------

def short_session(session: str | None) -> str:
    return (session or "unknown")[:7]


def day_card_id(day: str) -> str:
    return f"signals/{day}"


def _day_card_text(day: str) -> str:
    meta = {"title": f"Signals {day}", "type": "signal",
            "description": f"Unreviewed learnings extracted from sessions on {day}.",
            "created": date.fromisoformat(day)}
    return cardlib.render(meta, f"Signals extracted from coding sessions on {day}.\n\n## History\n")


def signal_card_id(project: str | None, day: str) -> str:
    """Where a signal that matches no card goes: its project's card, else the day's."""
    return project_signals_id(project) or day_card_id(day)


def _project_card_text(project: str, day: str) -> str:
    meta = {"title": f"Signals from {project} sessions", "type": "signal", "project": project,
            "description": f"Unreviewed learnings from coding sessions in {project}.",
            "created": date.fromisoformat(day)}
    return cardlib.render(meta, f"Signals extracted from coding sessions in {project}, "
                                "newest last.\n\n## History\n")


def _new_signal_card_text(cid: str, day: str) -> str:
    prefix, suffix = "projects/", "/signals"
    if cid.startswith(prefix) and cid.endswith(suffix):
        return _project_card_text(cid[len(prefix):-len(suffix)], day)
    return _day_card_text(day)


def file_signals(store: Store, signals: Iterable[Any], session: str | None, *,
                 source: str = "stop-hook", day: str | None = None,
                 lock_timeout_s: float | None = None, project: str | None = None) -> Result:
    """File signals ("Kind: text" strings or objects with .line) and spooled ones: one commit.

    Signals that match no card go to `project`'s signal card (else the day card). On a
    busy lock the signals are spooled, project and all, and Result.spooled names the file.
    `lock_timeout_s` waits less for the lock than the store's setting (Store.lock_timeout).
    """
    day = day or date.today().isoformat()
    lines = [s if isinstance(s, str) else s.line for s in signals]
    batch = {"session": session or "", "day": day, "source": source, "signals": lines,
             "project": project}
    result = Result()
    sessions: set[str] = set()  # the full session ids filed from, for the commit's trailer
    claimed: list[Path] = []
    protected = set(store.config["extract"]["protected_types"])

    def compute() -> dict[str, bytes | None]:
        # Runs under the write lock: the spool is claimed here, so two runs never both file it.
        result.filed.clear()
        result.duplicates.clear()
        pending = spooled_batches(store)
        claimed[:] = [p for p, _ in pending]
        result.from_spool = sum(len(b["signals"]) for _, b in pending)
        batches = [b for _, b in pending] + ([batch] if lines else [])
        matcher, idx = open_matcher(store)
        texts: dict[str, str] = {}

        def text_of(cid: str, bday: str) -> str:
            if cid not in texts:
                path = store.path(cid)
                texts[cid] = path.read_text(encoding="utf-8") if path.exists() \
                    else _new_signal_card_text(cid, bday)
            return texts[cid]

        signal_history = _recent_signal_lines(store)
        rules = rule_lines(store)
        for b in batches:
            sid = short_session(b.get("session"))
            bday = str(b.get("day") or day)
            for line in b["signals"]:
                line = " ".join(str(line).split())
                flagged = ""
                if line.startswith("Rule:"):
                    proposal = _propose_rule(store, line, sid, bday, texts, rules,
                                             str(b.get("source") or source))
                    if proposal.card:
                        result.filed.append(proposal)
                        sessions.add(str(b.get("session") or ""))
                        continue
                    flagged = proposal.note
                target, _ = matcher.best(line)
                note = ""
                if target and (matcher.type_of(target) or "") in protected:
                    note = f"(resembles {target})"
                    target = None
                if flagged:  # a rule already there, or proposed: a note on the signal card
                    target, note = None, flagged
                dest = target or signal_card_id(b.get("project"), bday)
                existing = [entry_line(e) for e in cardlib.history(text_of(dest, bday))]
                if is_duplicate(line, existing + signal_history):
                    result.duplicates.append(Filed(dest, line, sid, bday, "duplicate"))
                    continue
                entry = f"{bday} · session {sid} · {line}" + (f" {note}" if note else "")
                texts[dest] = cardlib.append_history(texts[dest], entry)
                signal_history.append(line)
                result.filed.append(Filed(dest, line, sid, bday, note))
                sessions.add(str(b.get("session") or ""))
        if idx is not None:
            idx.close()
        changed = {f.card for f in result.filed if f.card}
        return {store.rel(cid): texts[cid].encode() for cid in sorted(changed)}

    def message() -> Message:
        sids = sorted({f.session for f in result.filed})
        subject = (f"compound: {len(result.filed)} signal{'s' * (len(result.filed) != 1)} "
                   f"from session{'s' * (len(sids) != 1)} {', '.join(sids)}")
        width = max((len(f.card or "") for f in result.filed), default=0)
        body = [f"{(f.card or '').ljust(width)}  {f.line}" + (f" {f.note}" if f.note else "")
                for f in result.filed]
        full = sorted(s for s in sessions if s)  # Claude Code's whole id: greppable
        return Message(subject, body, source, ", ".join(full) if full else session)

    try:
        result.commit = store.commit(compute, _LateMessage(message, source), agent=True,
                                     wait_s=lock_timeout_s)
    except CardmemError as exc:
        # Busy, or git cannot commit right now: keep this run's signals for the next one.
        if lines:
            result.spooled = str(spool(store, batch))
        result.filed.clear()
        result.error = str(exc)
        return result
    for p in claimed:
        p.unlink(missing_ok=True)  # filed (or found to be duplicates) in this commit
    return result


class _LateMessage(Message):
    """A commit message written after compute() decided what was filed."""

    def __init__(self, build, source: str) -> None:
        super().__init__("compound", [], source)
        self._build = build

    def text(self) -> str:
        return self._build().text()


SIGNAL_DAYS = 60  # duplicates are looked for in this many days of signal cards


def _recent_signal_lines(store: Store) -> list[str]:
    """The signal lines of the last SIGNAL_DAYS day cards (by their dated ids)."""
    folder = store.root / "signals"
    if not folder.is_dir():
        return []
    since = (date.today() - timedelta(days=SIGNAL_DAYS)).isoformat()
    out: list[str] = []
    for p in sorted(folder.glob("*.md")):
        if paths.id_of_path(f"signals/{p.name}") is None:
            continue
        if p.stem[:10] < since and re.match(r"\d{4}-\d{2}-\d{2}", p.stem):
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out += [entry_line(e) for e in cardlib.history(text)]
    return out




def _propose_rule(store: Store, line: str, session: str, day: str, texts: dict[str, str],
                  rules: dict[str, list[str]], source: str) -> Filed:
    """A `Rule:` signal becomes a proposed feedback card (agents never set live rules);
    one that nearly repeats a rule or a proposal comes back unfiled, with a note."""
    rule = signal_subject(line)
    for cid, said in rules.items():
        if is_duplicate(rule, said):
            return Filed(None, line, session, day, f"(near-duplicate of {cid}; not proposed)")
    cid, text = rule_card(store, rule, f"{source} session {session}", texts)
    texts[cid] = text
    rules[cid] = [rule]  # a second wording in the same run is not proposed twice
    return Filed(cid, line, session, day, "(proposed: `cardmem review`)")
