"""What comes in from Slack, checked before anything acts on it.

    check_signature(raw, timestamp, signature, secret)   # Refused(401) unless Slack signed raw
    body = parse(raw)                                     # Refused(400): not UTF-8 JSON object
    why = bad_shape(body)                                 # a reason, or None
    found = question_of(body, bot_user_id)                # (clean text, event) or None

Over HTTP the signature is checked on the raw bytes before anything parses them, so
junk from whoever can reach the port costs an HMAC and a 4xx, never a parse or a log of
its own. A signed event whose fields have the wrong types (a `channel` that is an object)
is refused, not answered somewhere odd. The text is cleaned of what no receipt, commit or
HTTP body can carry (lone surrogates, which JSON can escape, and control characters).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

log = logging.getLogger("cardmem.slack")
MAX_BODY = 1 << 20  # bytes; an event with a 40,000-character message is well under this
MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
SLACK_ID = re.compile(r"[A-Za-z0-9]{1,64}")  # channel, user, team ids: C0…, U0…, W0…, D0…
SLACK_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")
UNSAFE = re.compile(r"[\ud800-\udfff]|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
QUESTION_TYPES = ("app_mention", "message")
SEEN_KEEP = 20_000  # event ids and message keys remembered against redelivery


class Refused(Exception):
    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status, self.why = status, why


def check_signature(raw: bytes, timestamp: str | None, signature: str | None, secret: str,
                    now: float | None = None) -> None:
    """Slack's v0 HMAC-SHA256 over the bytes `v0:{timestamp}:{raw}`, within 5 minutes;
    else Refused(401). (slack_sdk's verifier decodes the body first: junk would raise.)"""
    if not timestamp or not signature:
        raise Refused(401, "unsigned (no X-Slack-Signature or X-Slack-Request-Timestamp)")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise Refused(401, "X-Slack-Request-Timestamp is not a number")
    if abs((time.time() if now is None else now) - int(timestamp)) > 300:
        raise Refused(401, "stale or future timestamp (over 5 minutes off)")
    mac = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + raw, hashlib.sha256)
    if not hmac.compare_digest(b"v0=" + mac.hexdigest().encode(),
                               signature.encode("utf-8", "replace")):
        raise Refused(401, "bad signature")


def parse(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object; Refused(400) for anything else."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(400, "body is not UTF-8") from None
    try:
        body = json.loads(text)
    except ValueError:
        raise Refused(400, "body is not JSON") from None
    if not isinstance(body, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        raise Refused(400, f"body is {kind.get(type(body), 'a number')}, not a JSON object")
    return body


def bad_shape(body: Mapping[str, Any]) -> str | None:
    """Why an event callback cannot be taken as it is (a field of the wrong type), or None.
    A missing user, channel or ts is not wrong: such events are not questions."""
    if body.get("type") != "event_callback":
        return None
    if not isinstance(body.get("event_id", ""), str):
        return "event_id is not a string"
    ev = body.get("event")
    if not isinstance(ev, dict):
        return "event is not an object"
    for key in ("type", "subtype", "bot_id", "channel_type", "text", "thread_ts"):
        if ev.get(key) is not None and not isinstance(ev[key], str):
            return f"event.{key} is {type(ev[key]).__name__}, not a string"
    if ev.get("type") not in QUESTION_TYPES or ev.get("subtype"):
        return None
    for key, pattern in (("user", SLACK_ID), ("channel", SLACK_ID), ("ts", SLACK_TS),
                         ("thread_ts", SLACK_TS)):
        value = ev.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return f"event.{key} is {type(value).__name__}, not a string"
        if not pattern.fullmatch(value):
            return f"event.{key} {value[:40]!r} is not a Slack {'timestamp' if 'ts' in key else 'id'}"
    return None


def clean(text: str) -> str:
    """Text any receipt, commit or HTTP body can carry: a lone surrogate becomes U+FFFD, a
    control character other than newline and tab goes."""
    return UNSAFE.sub(lambda m: "\ufffd" if m.group() >= "\ud800" else "", text)


def question_of(body: Mapping[str, Any], bot_user_id: str | None) -> tuple[str, dict[str, Any]] | None:
    """(clean text, event) for a mention of the bot or a direct message a person wrote; None
    for anything else (edits, bots, joins, channel chatter). Call bad_shape first."""
    ev = body.get("event") or {}
    kind = ev.get("type")
    if kind == "message" and ev.get("channel_type") != "im":
        return None
    if kind not in QUESTION_TYPES or ev.get("subtype") or ev.get("bot_id"):
        return None
    if not ev.get("user") or ev.get("user") == bot_user_id or not ev.get("channel"):
        return None
    text = " ".join(MENTION.sub(" ", clean(ev.get("text") or "")).split())
    return (text, ev) if text else None


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


def retry_num(headers: Mapping[str, Any]) -> int:
    """X-Slack-Retry-Num (Bolt gives headers lower-cased, as lists); 0 if absent."""
    v = headers.get("x-slack-retry-num")
    v = v[0] if isinstance(v, (list, tuple)) and v else v
    try:
        return int(v or 0)
    except (TypeError, ValueError):
        return 0


class Quiet:
    """At most one log line per reason a minute, so whoever can reach the port cannot fill
    the log; the next line says how many were not logged."""

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self._last: dict[str, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def refused(self, what: str, why: str) -> bool:
        """Log `refused WHAT: WHY` unless this reason was logged in the last minute."""
        now = time.monotonic()
        with self._lock:
            at, skipped = self._last.get(why, (-self.every_s - 1, 0))
            if now - at < self.every_s:
                self._last[why] = (at, skipped + 1)
                return False
            self._last[why] = (now, 0)
            if len(self._last) > 1000:  # reasons quote ids: keep the table bounded
                self._last.clear()
        more = f" ({skipped} more like it not logged)" if skipped else ""
        log.warning("refused %s: %s%s", what, why, more)
        return True
