"""One question's life in Slack, from the event to the receipt.

    answerer = Answerer(store, web, settings)     # web: a slack_sdk WebClient
    answerer.take(body, headers, bot_user_id)      # from the Bolt listener: never blocks

- Slack delivers at least once: an `event_id` (and a message's channel and ts) is taken
  once; a retry (`X-Slack-Retry-Num`) of one already taken is dropped. A retry of one
  never seen is answered: its first delivery was lost. Across a restart, what was
  answered is known from the receipts of the last hour (read at start; Slack's retries
  end within minutes); a question cut off by a crash before its receipt is answered again.
- Acks don't walk: the ack (a reaction, and/or a short threaded line built from rung 1
  alone) runs on its own small pool the moment the event is taken, never behind a walk.
  An ack line's rung-1 pile is built once, after the reaction, and handed to `ask`.
- The answer runs on a pool of `[slack] concurrency` threads, so one slow question never
  blocks the others; the time it queued is taken off its deadline (`[walk] deadline_s`
  counts from the event), and `[walk] on_deadline` decides what a late answer sends.
- `ask` writes the receipt, with a `slack` field: channel, thread, user, person card,
  event id, retry number, ack and reply latency (seconds from the event's arrival), the
  reply's ts or the post's error. Every taken question leaves one.
- The Web API client retries a 429 after its Retry-After (slack_sdk's handler).
- Every taken question ends in a message in its thread and a receipt: the answer; or what
  went wrong ("Sorry, I could not answer that: …"); or, past `[slack] queue` questions
  waiting, a busy line. A question over ask's 4,000 characters is cut, and the reply says
  so. Past MAX_ACKS_WAITING events not yet acked, nothing more is taken (`full()`; the
  HTTP front answers 503 and Slack retries later): memory stays bounded under a flood.
- Events are checked first (intake.py): a field of the wrong type is refused and logged
  once; the text is cleaned of lone surrogates and control characters.
"""
from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any
from datetime import datetime, timedelta, timezone

from cardmem.store.store import Store
from cardmem.tools.ask.walk_record import Limits

from .intake import Quiet, Seen, bad_shape, question_of, retry_num, seen_keys
from .people import People, asker_name
from .settings import SlackSettings
from cardmem.tools.ask.answer import MAX_QUESTION, ask
from cardmem.tools.ask import receipts
from cardmem.store.errors import CardmemError
from cardmem.tools.agents.remember import remember

log = logging.getLogger("cardmem.slack")
ACK_WAIT_S = 5.0  # the reply waits this long at most for its ack to land first
RECALL_S = 3600  # at start, the receipts this recent say what was already answered
MAX_ACKS_WAITING = 2000  # events taken but not yet acked; past it take() drops (full())
SLACK_TEXT = 40_000  # characters chat.postMessage keeps; a longer reply is cut, saying so
REMEMBER = re.compile(r"^remember\b[:,]?\s*(?:(?P<rule>rule)\b[:,]?\s*)?(?P<rest>.*)$",
                      re.IGNORECASE | re.DOTALL)
REMEMBER_HOW = ("To file a memory, say `remember TITLE: what to remember` "
                "(or `remember rule TITLE: …` for a rule, filed as a proposal for review).")
UNKNOWN_NOTE = ("\n\n_I have no person card for you yet. A teammate can file one with "
                "`slack: {user}` in its frontmatter, so I know who is asking._")
CUT_NOTE = "_(Your question was {was:,} characters; I read the first {kept:,}.)_\n\n"
BUSY = ("I have {n} questions waiting ahead of this one, more than I keep queued; "
        "please ask again in a few minutes.")
SORRY = "Sorry, I could not answer that: {why}"


@dataclass
class Question:
    text: str
    user: str
    channel: str
    ts: str  # the message's ts (the reaction goes on it)
    thread_ts: str  # where the ack and reply go
    event_id: str
    retry: int
    received: float  # monotonic seconds when the event was taken
    cut_from: int = 0  # the question's length before it was cut to ask's limit (0: not cut)
    slack: dict[str, Any] = field(default_factory=dict)  # the receipt's `slack` field
    ack: Future | None = None
    pile: Future | None = None  # rung 1, built for the ack line and handed to ask (or None)


class Answerer:
    def __init__(self, store: Store, web: Any, settings: SlackSettings, *,
                 limits: Limits | None = None, sdk: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_done: Callable[[Question], None] | None = None) -> None:
        self.store, self.web, self.settings = store, web, settings
        self.limits = limits or Limits.from_config(store.config["walk"])
        self.sdk, self.clock, self.on_done = sdk, clock, on_done
        self.people = People(store)
        self.seen = Seen()
        self.recalled = self.recall()
        self.greeted = Seen()  # unknown askers told once per run how to be filed
        self.pool = ThreadPoolExecutor(settings.concurrency, thread_name_prefix="cardmem-answer")
        self.acks = ThreadPoolExecutor(4, thread_name_prefix="cardmem-ack")
        self.counts = {"taken": 0, "duplicate": 0, "ignored": 0, "refused": 0, "busy": 0,
                       "dropped": 0}
        self.quiet = Quiet()  # refusals: one log line per reason a minute
        self._waiting = {"acks": 0, "answers": 0}  # submitted, not yet finished
        self._count_lock = threading.Lock()  # Bolt runs listeners on several threads

    def take(self, body: Mapping[str, Any], headers: Mapping[str, Any],
             bot_user_id: str | None = None) -> str:
        """Queue the question in an event: 'taken', 'busy' (taken, told to ask again later),
        'duplicate', 'ignored', 'refused' (a field of the wrong type) or 'dropped' (full()).
        Never blocks."""
        received = self.clock()
        why = bad_shape(body)
        if why:
            self.quiet.refused("an event", f"{why} (event {str(body.get('event_id'))[:40]})")
            return self._count("refused")
        found = question_of(body, bot_user_id)
        if found is None:
            return self._count("ignored")
        text, ev = found
        event_id = str(body.get("event_id") or "")
        if self.full():
            self.quiet.refused("events", f"over {MAX_ACKS_WAITING} waiting to be acked")
            return self._count("dropped")
        if not self.seen.add(*seen_keys(event_id, ev["channel"], ev.get("ts"))):
            return self._count("duplicate")
        ts = str(ev.get("ts") or "")
        q = Question(text, str(ev["user"]), str(ev["channel"]), ts, str(ev.get("thread_ts") or ts),
                     event_id, retry_num(headers), received)
        q.slack = {"channel": q.channel, "thread_ts": q.thread_ts, "ts": q.ts, "user": q.user,
                   "event_id": q.event_id or None, "retry": q.retry,
                   "kind": "dm" if ev.get("type") == "message" else "mention"}
        _cut(q)
        with self._count_lock:
            waiting = self._waiting["answers"]
            busy = waiting >= self.settings.concurrency + self.settings.queue
            self._waiting["acks"] += 1
            self._waiting["answers"] += 0 if busy else 1
        if busy:
            self.acks.submit(self._busy, q, waiting)
            return self._count("busy")
        self._count("taken")
        if self.settings.ack in ("line", "both"):
            q.pile = Future()  # the ack's thread sets it: after the reaction, never racing it
        q.ack = self.acks.submit(self._ack, q)
        self.pool.submit(self._answer, q)
        return "taken"

    def full(self) -> bool:
        """True while MAX_ACKS_WAITING events wait for their ack: take no more for now."""
        return self._waiting["acks"] >= MAX_ACKS_WAITING

    def _done(self, what: str) -> None:
        with self._count_lock:
            self._waiting[what] -= 1

    def recall(self, window_s: float = RECALL_S) -> int:
        """Mark as seen the Slack deliveries the receipts of the last window_s answered, so
        a redelivery after a restart is not answered twice; how many receipts were read."""
        after = datetime.now(timezone.utc) - timedelta(seconds=window_s)
        n = 0
        try:
            for rec in receipts.written_since(self.store, after, contains=b'"slack"'):
                s = rec.get("slack")
                if isinstance(s, dict):
                    self.seen.add(*seen_keys(s.get("event_id"), s.get("channel"), s.get("ts")))
                    n += 1
        except OSError as exc:  # the server still starts; say what it could not read
            log.warning("cannot read receipts to skip redelivered events: %s", exc)
        return n

    def _count(self, what: str) -> str:
        with self._count_lock:
            self.counts[what] += 1
        return what

    def close(self, wait: bool = True) -> None:
        self.acks.shutdown(wait=wait)
        self.pool.shutdown(wait=wait)

    # ---- the ack: rung 1 only --------------------------------------------------------

    def _ack(self, q: Question) -> None:
        how = self.settings.ack
        try:
            if how in ("reaction", "both"):
                self.web.reactions_add(channel=q.channel, timestamp=q.ts, name=self.settings.reaction)
                q.slack.setdefault("ack_s", round(self.clock() - q.received, 3))
            if how in ("line", "both"):
                self.web.chat_postMessage(channel=q.channel, thread_ts=q.thread_ts,
                                          text=self._ack_line(q))
                q.slack.setdefault("ack_s", round(self.clock() - q.received, 3))
        except Exception as exc:  # noqa: BLE001 - a failed ack is recorded, the answer goes on
            q.slack["ack_error"] = _slack_error(exc)
            log.warning("ack failed in %s: %s", q.channel, q.slack["ack_error"])
        finally:
            if q.pile is not None and not q.pile.done():  # no pile: ask builds its own
                q.pile.set_result(None)
            self._done("acks")

    def _pile(self, q: Question) -> Any:
        from cardmem.store.context import question_context

        t0 = self.clock()
        pile = question_context(self.store, q.text,
                                asker=asker_name(self.people.card_for(q.user), q.user),
                                budget=int(self.store.config["context"]["budget_chars"]))
        q.slack["rung1_s"] = round(self.clock() - t0, 3)
        return pile

    def _ack_line(self, q: Question) -> str:
        person = self.people.card_for(q.user)
        pile = self._pile(q)
        if q.pile is not None:
            q.pile.set_result(pile)
        named = [a for a in pile.addresses  # the cards the question names, not the rules
                 if a != person and not a.startswith(("feedback/", "user/"))][:3]
        where = f" Starting from {', '.join(f'`{a}`' for a in named)}." if named else ""
        return f"Looking in memory.{where} The answer follows in this thread."

    # ---- the answer ------------------------------------------------------------------

    def _answer(self, q: Question) -> None:
        person, asked = None, False
        try:
            person = self.people.card_for(q.user)
            q.slack["person"] = person
            wish = REMEMBER.match(q.text) if self.settings.remember else None
            if wish:
                self._file(q, person, wish)
                return
            pile = None
            if q.pile is not None:  # built by the ack; else ask builds it
                try:
                    pile = q.pile.result(timeout=max(0.0, self.limits.deadline_s
                                                     - (self.clock() - q.received)))
                except Exception:  # noqa: BLE001 - e.g. the ack pool backed up: build it here
                    pile = None
            waited = self.clock() - q.received
            q.slack["queued_s"] = round(waited, 3)
            # The deadline counts from the event, not from when a worker was free.
            left = max(0.0, self.limits.deadline_s - waited)
            limits = replace(self.limits, deadline_s=left, walk_s=min(self.limits.walk_s, left))
            asked = True  # from here ask writes the receipt and delivers, errors too
            ask(self.store, q.text, asker=asker_name(person, q.user), limits=limits,
                sdk=self.sdk, clock=self.clock, extra={"slack": q.slack}, pile=pile,
                deliver=lambda a: self._deliver(q, a, person))
        except Exception as exc:  # noqa: BLE001 - said in the thread and the receipt
            why = getattr(exc, "why", None) or str(exc) or type(exc).__name__
            log.error("answering %s failed: %s", q.event_id or q.ts, why)
            if not asked:
                self._own_receipt(q, person, "error", SORRY.format(why=why[:300]), reason=why)
        finally:
            self._done("answers")
            if self.on_done is not None:
                self.on_done(q)

    def _deliver(self, q: Question, answer: Any, person: str | None) -> None:
        if q.ack is not None:  # the ack lands first in the thread
            try:
                q.ack.result(timeout=ACK_WAIT_S)
            except Exception:  # noqa: BLE001 - _ack records its own failure
                pass
        text = answer.reply
        if text is None and answer.outcome in ("error", "unavailable"):
            text = q.slack["said"] = SORRY.format(why=str(answer.reason)[:300])
        if text is None:  # on_deadline = silence: nothing is posted
            q.slack["reply"] = "silence"
            return
        if q.cut_from:
            text = CUT_NOTE.format(was=q.cut_from, kept=len(q.text)) + text
        if person is None and answer.outcome not in ("error", "unavailable", "busy") \
                and self.greeted.add(q.user):
            text += UNKNOWN_NOTE.format(user=q.user)
        if len(text) > SLACK_TEXT:
            q.slack["reply_cut_from"] = len(text)
            note = f"\n\n_(cut: the reply ran to {len(text):,} characters, past Slack's {SLACK_TEXT:,})_"
            text = text[:SLACK_TEXT - len(note)] + note
        try:
            out = self.web.chat_postMessage(channel=q.channel, thread_ts=q.thread_ts, text=text)
            q.slack["reply"] = "posted"
            q.slack["reply_ts"] = out.get("ts")
        except Exception as exc:  # noqa: BLE001 - the receipt records a reply Slack refused
            q.slack["reply"] = "failed"
            q.slack["post_error"] = _slack_error(exc)
            log.warning("reply failed in %s: %s", q.channel, q.slack["post_error"])
        q.slack["reply_s"] = round(self.clock() - q.received, 3)

    def _busy(self, q: Question, waiting: int) -> None:
        """Past the queue's bound: told so in the thread at once, with a receipt."""
        try:
            self._own_receipt(q, None, "busy", BUSY.format(n=waiting))
        finally:
            self._done("acks")
            if self.on_done is not None:
                self.on_done(q)

    def _own_receipt(self, q: Question, person: str | None, outcome: str, text: str,
                     **fields: Any) -> None:
        """A receipt for a question `ask` never saw (filed, busy, failed before it), after
        `text` is posted in the thread, so the receipt says how that went."""
        rec: dict[str, Any] = {"id": receipts.new_id(), "question": q.text,
                               "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                               "asker": asker_name(person, q.user), "store": str(self.store.root),
                               "outcome": outcome, **fields, "reply": text, "slack": q.slack}
        try:
            self._deliver(q, _Said(text, outcome), person)
        finally:
            receipts.append(self.store, rec)

    def _file(self, q: Question, person: str | None, wish: re.Match[str]) -> None:
        """`remember TITLE: BODY` (off by default: `[slack] remember = true`): filed as the
        bot on the asker's behalf; a rule or user card only as a proposal. One receipt."""
        title, sep, body = (wish.group("rest") or "").partition(":")
        try:
            if not sep:
                raise ValueError(REMEMBER_HOW)
            said_by = f"{person or 'slack user ' + q.user}, in Slack"
            out = remember(self.store, title.strip(), f"{body.strip()}\n\n(said by {said_by})"
                           if body.strip() else "", "feedback" if wish.group("rule") else "reference",
                           by="slack")
        except (ValueError, CardmemError) as exc:
            self._own_receipt(q, person, "error", f"Not filed: {exc}", reason=str(exc))
            return
        text = (f"Filed as a proposal: `{out['id']}`. {out['note']}" if out.get("proposed")
                else f"{'Filed in' if out['created'] else 'Added to'} `{out['id']}`."
                + (f" {out['note']}" if out.get("note") else ""))
        self._own_receipt(q, person, "filed", text, filed=out)


class _Said:
    """What _deliver needs of an answer: its reply and outcome."""

    def __init__(self, reply: str, outcome: str) -> None:
        self.reply, self.outcome = reply, outcome


def _cut(q: Question) -> None:
    """A question over ask's limit, cut at a word to fit it; the reply will say so."""
    if len(q.text) > MAX_QUESTION:
        q.cut_from = q.slack["cut_from"] = len(q.text)
        head = q.text[:MAX_QUESTION]
        q.text = head.rsplit(" ", 1)[0] if " " in head[MAX_QUESTION // 2:] else head


def _slack_error(exc: BaseException) -> str:
    resp = getattr(exc, "response", None)
    if resp is not None and hasattr(resp, "get"):
        try:
            return f"{resp.status_code}: {resp.get('error')}"
        except Exception:  # noqa: BLE001
            pass
    return f"{type(exc).__name__}: {exc}"[:300]


class OneLine(logging.Formatter):
    """`cardmem slack: MESSAGE`, an exception as `: Type: what` on the same line, never a
    traceback (Bolt's and slack_sdk's records come here too)."""

    def format(self, record: logging.LogRecord) -> str:
        msg = " ".join(record.getMessage().split())
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            msg += f": {type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        return f"cardmem slack: {msg}"


def stderr_logging() -> None:
    """One line per warning on stderr (the server's only output besides its banner)."""
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(OneLine())
    log.addHandler(h)
    log.setLevel(logging.INFO)
