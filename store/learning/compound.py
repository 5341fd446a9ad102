"""Compounding: file extracted signals into the store, one commit per run (DESIGN §6).

Each signal goes to the History of the one existing card it clearly belongs to (its
rarest keywords overlap that card, and no other card comes close), else into the signal
card of the session's project, `projects/<project>/signals.md`, where that project's next
session finds it; a session with no project uses the day's card `signals/YYYY-MM-DD.md`.
Exact and near-duplicate signals are not filed twice. Protected types (feedback, user)
are never appended to: a signal that belongs there lands on the signal card with a note
naming the card it resembles.

If the write lock is busy, the run's signals wait in `.cardmem/spool/` (one JSON file
per run, written atomically) and the next run files them first. Nothing is dropped.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterable

from ..cards import card as cardlib
from ..errors import CardmemError
from ..cards import paths
from ..cards.paths import project_signals_id
from .proposals import rule_card, rule_lines
from ..cards.status import INACTIVE, is_active
from ..store import Store
from ..git.writer import Message, atomic_write, commit_changes

RAREST = 4  # keywords of a signal that decide where it belongs
CLEAR_MARGIN = 1.5  # the best card must outscore the runner-up by this factor
NEAR_DUPLICATE = 90  # rapidfuzz token_set_ratio at or above: the same signal
SPOOL = "spool"

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOP = set("""a an and are as at be been but by can did do does for from had has have how
i if in into is it its it's let me more most my no not of on once only or our out over same
should so some such than that the their them then there these they this those through to
too up use used using very was we were what when where which while who why will with would
you your after again also before between both each few further here just new now other
own via""".split())


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


# --- where a signal belongs --------------------------------------------------------

def keywords(text: str) -> set[str]:
    """Lower-case words of 3+ characters, hyphenated compounds also split into parts."""
    out: set[str] = set()
    for w in set(_WORD.findall(text.lower())):  # each word once: a card repeats its words
        w = w.strip(".-_")
        for p in (w, *_SEPARATORS.split(w)) if _SEPARATORS.search(w) else (w,):
            if len(p) >= 3 and p not in _STOP and not p.isdigit():
                out.add(p)
    return out


_SEPARATORS = re.compile(r"[.\-_]+")


def _card_words(c: cardlib.Card) -> set[str]:
    return keywords(" ".join([c.id.replace("/", " "), c.title, *c.aliases, *c.tags,
                              c.description, c.body]))


def _name_words(c: cardlib.Card) -> set[str]:
    """Words a card is called by: a signal naming them points at it twice as hard."""
    return keywords(" ".join([c.id.rsplit("/", 1)[-1], c.title, *c.aliases]))


_KIND = re.compile(r"^(?:Decision|Rule|Worked|Failed|Knowledge):\s*")


def _subject(line: str) -> str:
    """A signal line without its `Kind:` label (the label says nothing about the card)."""
    return _KIND.sub("", line.strip())


class Matcher:
    """Document frequencies over the store's cards, and the card a text clearly names."""

    def __init__(self, cards: Iterable[cardlib.Card]) -> None:
        self.cards = {c.id: c for c in cards}
        self.words = {cid: _card_words(c) for cid, c in self.cards.items()}
        self.names = {cid: _name_words(c) for cid, c in self.cards.items()}
        self.df: Counter[str] = Counter()
        for ws in self.words.values():
            self.df.update(ws)
        self.n = max(1, len(self.cards))

    def rarest(self, text: str, k: int = RAREST) -> list[str]:
        """The k keywords of text that the fewest cards contain (but at least one does)."""
        known = [w for w in keywords(_subject(text)) if self.df[w] > 0]
        return sorted(known, key=lambda w: (self.df[w], w))[:k]

    def best(self, text: str) -> tuple[str | None, list[str]]:
        """The one card the text clearly belongs to, or None; and the keywords used."""
        rare = self.rarest(text)
        if not rare:
            return None, rare
        idf = {w: math.log(1 + self.n / self.df[w]) for w in rare}
        scores: list[tuple[float, int, str]] = []
        for cid, ws in self.words.items():
            c = self.cards[cid]
            if c.type == "signal" or not is_active(c):
                continue
            hit = [w for w in rare if w in ws]
            if hit:
                names = self.names[cid]
                score = sum(idf[w] * (2 if w in names else 1) for w in hit)
                scores.append((score, len(hit), cid))
        return _choose(scores, rare)

    def type_of(self, cid: str) -> str | None:
        c = self.cards.get(cid)
        return c.type if c else None


class IndexMatcher:
    """The same choice as Matcher, answered by the lexical index (FTS5) without reading
    every card: document frequencies and the cards holding each rare word are queries."""

    def __init__(self, idx: Any) -> None:
        self.c = idx.conn
        self.n = max(1, self.c.execute("SELECT count(*) FROM cards").fetchone()[0])
        self._df: dict[str, int] = {}
        self.types: dict[str, str | None] = {}

    def _match(self, expr: str) -> list[int]:
        try:
            return [r[0] for r in self.c.execute("SELECT rowid FROM fts WHERE fts MATCH ?",
                                                 (expr,))]
        except Exception:  # noqa: BLE001 - a word FTS cannot take is no evidence
            return []

    def df(self, word: str) -> int:
        if word not in self._df:
            self._df[word] = len(self._match(_phrase(word)))
        return self._df[word]

    def rarest(self, text: str, k: int = RAREST) -> list[str]:
        known = [w for w in keywords(_subject(text)) if self.df(w) > 0]
        return sorted(known, key=lambda w: (self.df(w), w))[:k]

    def best(self, text: str) -> tuple[str | None, list[str]]:
        rare = self.rarest(text)
        if not rare:
            return None, rare
        idf = {w: math.log(1 + self.n / self.df(w)) for w in rare}
        hits: dict[int, list[str]] = {}
        named: dict[int, set[str]] = {}
        for w in rare:
            for n in self._match(_phrase(w)):
                hits.setdefault(n, []).append(w)
            for n in self._match("{title aliases}: " + _phrase(w)):
                named.setdefault(n, set()).add(w)
        if not hits:
            return None, rare
        ns = list(hits)
        rows: dict[int, tuple[str, str | None, str]] = {}
        for i in range(0, len(ns), 500):
            chunk = ns[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for n, cid, ctype, status in self.c.execute(
                    f"SELECT n, id, type, status FROM cards WHERE n IN ({marks})", chunk):
                rows[n] = (cid, ctype, status)
        scores = []
        for n, ws in hits.items():
            if n not in rows:
                continue
            cid, ctype, status = rows[n]
            self.types[cid] = ctype
            if ctype == "signal" or status in INACTIVE:
                continue
            score = sum(idf[w] * (2 if w in named.get(n, ()) else 1) for w in ws)
            scores.append((score, len(ws), cid))
        return _choose(scores, rare)

    def type_of(self, cid: str) -> str | None:
        return self.types.get(cid)


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _choose(scores: list[tuple[float, int, str]], rare: list[str]) -> tuple[str | None, list[str]]:
    """The best-scoring card if it holds enough rare words and clearly beats the next."""
    if not scores:
        return None, rare
    scores.sort(key=lambda s: (-s[0], s[2]))
    top, hits, cid = scores[0]
    runner = scores[1][0] if len(scores) > 1 else 0.0
    if hits >= min(2, len(rare)) and top >= CLEAR_MARGIN * runner:
        return cid, rare
    return None, rare


# --- duplicates --------------------------------------------------------------------

_ENTRY = re.compile(r"^\d{4}-\d{2}-\d{2}\s*·\s*session\s+\S+\s*·\s*(.*)$")


def entry_line(entry: str) -> str:
    """The `Kind: text` part of a History entry (after date and session)."""
    m = _ENTRY.match(entry.strip())
    return (m.group(1) if m else entry).strip()


def _norm(line: str) -> str:
    return " ".join(line.casefold().split())


def is_duplicate(line: str, existing: Iterable[str]) -> bool:
    """True if line equals or nearly equals (rapidfuzz) one of the existing lines."""
    from rapidfuzz import fuzz

    n = _norm(line)
    nums = _numbers(n)
    for e in existing:
        m = _norm(e)
        if n == m:
            return True
        # Other numbers make another fact ("max 12" -> "max 16"), however alike the words.
        if _numbers(m) == nums and fuzz.token_set_ratio(n, m) >= NEAR_DUPLICATE and \
                fuzz.ratio(n, m) >= NEAR_DUPLICATE - 10:
            return True
    return False


def _numbers(s: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)*", s))


# --- the spool ---------------------------------------------------------------------

def spool_dir(store: Store) -> Path:
    d = store.state_dir / SPOOL
    d.mkdir(exist_ok=True)
    return d


def spool(store: Store, batch: dict[str, Any]) -> Path:
    """Keep a run's signals for the next run: one JSON file, written atomically."""
    name = f"{time.time_ns()}-{os.getpid()}-{_safe(batch.get('session', ''))}.json"
    path = spool_dir(store) / name
    atomic_write(path, json.dumps(batch, ensure_ascii=False).encode())
    return path


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "", s)[:40] or "nosession"


def _spooled(store: Store) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in sorted(spool_dir(store).glob("*.json")):
        try:
            data = json.loads(p.read_text())
            if isinstance(data, dict) and isinstance(data.get("signals"), list):
                out.append((p, data))
        except (OSError, ValueError):
            continue  # a half-read file stays for a later run; atomic writes make this rare
    return out


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
        pending = _spooled(store)
        claimed[:] = [p for p, _ in pending]
        result.from_spool = sum(len(b["signals"]) for _, b in pending)
        batches = [b for _, b in pending] + ([batch] if lines else [])
        matcher, idx = _matcher(store)
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

    timeout = lock_timeout_s if lock_timeout_s is not None else \
        float(store.config["store"]["lock_timeout_s"])
    try:
        result.commit = commit_changes(store.root, compute, _LateMessage(message, source),
                                       agent=True, lock_timeout_s=timeout)
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
    from datetime import timedelta

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


def _matcher(store: Store) -> tuple[Any, Any]:
    """(matcher, open index or None): the index when it can answer, else a scan."""
    try:
        from ..index.db import Index

        idx = Index(store)
        idx.refresh()
        return IndexMatcher(idx), idx
    except Exception:  # noqa: BLE001 - no index (or a broken one): read the cards
        return Matcher(store.scan()[0]), None


def _propose_rule(store: Store, line: str, session: str, day: str, texts: dict[str, str],
                  rules: dict[str, list[str]], source: str) -> Filed:
    """A `Rule:` signal becomes a proposed feedback card (agents never set live rules);
    one that nearly repeats a rule or a proposal comes back unfiled, with a note."""
    rule = _subject(line)
    for cid, said in rules.items():
        if is_duplicate(rule, said):
            return Filed(None, line, session, day, f"(near-duplicate of {cid}; not proposed)")
    cid, text = rule_card(store, rule, f"{source} session {session}", texts)
    texts[cid] = text
    rules[cid] = [rule]  # a second wording in the same run is not proposed twice
    return Filed(cid, line, session, day, "(proposed: `cardmem review`)")
