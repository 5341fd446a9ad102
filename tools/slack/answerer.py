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
"""
from __future__ import annotations

import logging
import re
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from cardmem.store.store import Store
from cardmem.tools.walk_record import Limits

from .people import People, asker_name
from .settings import SlackSettings

log = logging.getLogger("cardmem.slack")
ACK_WAIT_S = 5.0  # the reply waits this long at most for its ack to land first
SEEN_KEEP = 20_000  # event ids and message keys remembered against redelivery
RECALL_S = 3600  # at start, the receipts this recent say what was already answered
MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
REMEMBER = re.compile(r"^remember\b[:,]?\s*(?:(?P<rule>rule)\b[:,]?\s*)?(?P<rest>.*)$",
                      re.IGNORECASE | re.DOTALL)
REMEMBER_HOW = ("To file a memory, say `remember TITLE: what to remember` "
                "(or `remember rule TITLE: …` for a rule, filed as a proposal for review).")
UNKNOWN_NOTE = ("\n\n_I have no person card for you yet. A teammate can file one with "
                "`slack: {user}` in its frontmatter, so I know who is asking._")


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
    slack: dict[str, Any] = field(default_factory=dict)  # the receipt's `slack` field
    ack: Future | None = None
    pile: Future | None = None  # rung 1, built for the ack line and handed to ask (or None)


class Seen:
    """A bounded set of keys, oldest forgotten first; thread-safe."""

    def __init__(self, keep: int = SEEN_KEEP) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()

    def add(self, *keys: str) -> bool:
        """True if none of the keys was seen before (all are remembered now)."""
        with self._lock:
            fresh = not any(k in self._keys for k in keys if k)
            for k in keys:
                if k:
                    self._keys[k] = None
                    self._keys.move_to_end(k)
            while len(self._keys) > self._keep:
                self._keys.popitem(last=False)
            return fresh


def seen_keys(event_id: str | None, channel: str | None, ts: str | None) -> tuple[str, str]:
    """The keys one delivery is known by: its event id, and its message (a DM mentioning the
    bot arrives twice, as message.im and app_mention: one message)."""
    return (f"event:{event_id}" if event_id else "",
            f"msg:{channel}:{ts}" if channel and ts else "")


def question_of(body: Mapping[str, Any], bot_user_id: str | None) -> tuple[str, dict[str, Any]] | None:
    """(text, event) for a mention of the bot or a direct message a person wrote; None for
    anything else (edits, bots, joins, channel chatter)."""
    ev = body.get("event") or {}
    kind = ev.get("type")
    if kind == "message" and ev.get("channel_type") != "im":
        return None
    if kind not in ("app_mention", "message") or ev.get("subtype") or ev.get("bot_id"):
        return None
    if not ev.get("user") or ev.get("user") == bot_user_id or not ev.get("channel"):
        return None
    text = " ".join(MENTION.sub(" ", str(ev.get("text") or "")).split())
    return (text, ev) if text else None


def retry_num(headers: Mapping[str, Any]) -> int:
    """X-Slack-Retry-Num (Bolt gives headers lower-cased, as lists); 0 if absent."""
    v = headers.get("x-slack-retry-num")
    v = v[0] if isinstance(v, (list, tuple)) and v else v
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


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
        self.counts = {"taken": 0, "duplicate": 0, "ignored": 0}
        self._count_lock = threading.Lock()  # Bolt runs listeners on several threads

    def take(self, body: Mapping[str, Any], headers: Mapping[str, Any],
             bot_user_id: str | None = None) -> str:
        """Queue the question in an event; 'taken', 'duplicate' or 'ignored'. Never blocks."""
        received = self.clock()
        found = question_of(body, bot_user_id)
        if found is None:
            return self._count("ignored")
        text, ev = found
        event_id = str(body.get("event_id") or "")
        if not self.seen.add(*seen_keys(event_id, ev["channel"], ev.get("ts"))):
            return self._count("duplicate")
        self._count("taken")
        ts = str(ev.get("ts") or "")
        q = Question(text, str(ev["user"]), str(ev["channel"]), ts, str(ev.get("thread_ts") or ts),
                     event_id, retry_num(headers), received)
        q.slack = {"channel": q.channel, "thread_ts": q.thread_ts, "ts": q.ts, "user": q.user,
                   "event_id": q.event_id or None, "retry": q.retry,
                   "kind": "dm" if ev.get("type") == "message" else "mention"}
        if self.settings.ack in ("line", "both"):
            q.pile = Future()  # the ack's thread sets it: after the reaction, never racing it
        q.ack = self.acks.submit(self._ack, q)
        self.pool.submit(self._answer, q)
        return "taken"

    def recall(self, window_s: float = RECALL_S) -> int:
        """Mark as seen the Slack deliveries the receipts of the last window_s answered, so
        a redelivery after a restart is not answered twice; how many receipts were read."""
        from datetime import datetime, timedelta, timezone

        from cardmem.tools import receipts

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
        from cardmem.tools import model
        from cardmem.tools.ask import ask

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
            ask(self.store, q.text, asker=asker_name(person, q.user), limits=limits,
                sdk=self.sdk, clock=self.clock, extra={"slack": q.slack}, pile=pile,
                deliver=lambda a: self._deliver(q, a, person))
        except model.ModelUnavailable as exc:
            log.error("no model for %s: %s", q.event_id, exc.why)
        except Exception as exc:  # noqa: BLE001 - the receipt has it; the server goes on
            log.error("answering %s failed: %s", q.event_id, exc)
        finally:
            if self.on_done is not None:
                self.on_done(q)

    def _deliver(self, q: Question, answer: Any, person: str | None) -> None:
        if q.ack is not None:  # the ack lands first in the thread
            try:
                q.ack.result(timeout=ACK_WAIT_S)
            except Exception:  # noqa: BLE001 - _ack records its own failure
                pass
        if answer.reply is None:  # on_deadline = silence: nothing is posted
            q.slack["reply"] = "silence"
            return
        text = answer.reply
        if person is None and self.greeted.add(q.user):
            text += UNKNOWN_NOTE.format(user=q.user)
        try:
            out = self.web.chat_postMessage(channel=q.channel, thread_ts=q.thread_ts, text=text)
            q.slack["reply"] = "posted"
            q.slack["reply_ts"] = out.get("ts")
        except Exception as exc:  # noqa: BLE001 - the receipt records a reply Slack refused
            q.slack["reply"] = "failed"
            q.slack["post_error"] = _slack_error(exc)
            log.warning("reply failed in %s: %s", q.channel, q.slack["post_error"])
        q.slack["reply_s"] = round(self.clock() - q.received, 3)


    def _file(self, q: Question, person: str | None, wish: re.Match[str]) -> None:
        """`remember TITLE: BODY` (off by default: `[slack] remember = true`): filed as the
        bot on the asker's behalf; a rule or user card only as a proposal. One receipt."""
        from datetime import datetime, timezone

        from cardmem.store.errors import CardmemError
        from cardmem.tools import receipts
        from cardmem.tools.agent_remember import remember

        rec: dict[str, Any] = {"id": receipts.new_id(), "question": q.text,
                               "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                               "asker": asker_name(person, q.user), "store": str(self.store.root),
                               "outcome": "filed", "slack": q.slack}
        title, sep, body = (wish.group("rest") or "").partition(":")
        try:
            if not sep:
                raise ValueError(REMEMBER_HOW)
            said_by = f"{person or 'slack user ' + q.user}, in Slack"
            out = remember(self.store, title.strip(), f"{body.strip()}\n\n(said by {said_by})"
                           if body.strip() else "", "feedback" if wish.group("rule") else "reference",
                           by="slack")
            rec["filed"] = out
            text = (f"Filed as a proposal: `{out['id']}`. {out['note']}" if out.get("proposed")
                    else f"{'Filed in' if out['created'] else 'Added to'} `{out['id']}`."
                    + (f" {out['note']}" if out.get("note") else ""))
        except (ValueError, CardmemError) as exc:
            rec.update(outcome="error", reason=str(exc))
            text = f"Not filed: {exc}"
        rec["reply"] = text
        try:
            self._deliver(q, _Said(text), person)
        finally:
            receipts.append(self.store, rec)


class _Said:
    """What _deliver needs of an answer: its reply."""

    def __init__(self, reply: str) -> None:
        self.reply = reply


def _slack_error(exc: BaseException) -> str:
    resp = getattr(exc, "response", None)
    if resp is not None and hasattr(resp, "get"):
        try:
            return f"{resp.status_code}: {resp.get('error')}"
        except Exception:  # noqa: BLE001
            pass
    return f"{type(exc).__name__}: {exc}"[:300]


def stderr_logging() -> None:
    """One line per warning on stderr (the server's only output besides its banner)."""
    h = logging.StreamHandler(sys.stderr)
    h.setFormatter(logging.Formatter("cardmem slack: %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)
