"""Rung 2, the walk (DESIGN §5): a manual tool-use loop with floors, not filters.

The model may reach back into memory through three address-only tools, each delegating
to the same store functions rung 1 uses, with the same caps. Code only meters cost:

- at most `max_tool_calls` tool calls per answer; every tool_use block the model sends is
  charged (unknown names and bad inputs too, so a confused model cannot loop for free);
  a call beyond the budget is not executed and is answered `{"floor": "walk-budget", ...}`;
- each walk-phase model request and each tool call is bounded by `tool_call_s` and by the
  time left in the walk;
- the walk phase ends at `walk_s` (`{"floor": "walk-time", ...}` is handed to the model);
- `deadline_s` always wins: a reserve of `min(10, deadline_s / 3)` seconds (or
  `[walk] compose_reserve_s`) is kept for the final compose, which is requested with
  tool_choice none and bounded only by the deadline. If no text is composed in time (or
  the model refuses, or answers empty, or the API fails), `on_deadline` decides:
  `silence` (no reply) or `receipt` (a marked mechanical listing of what was read).

The SDK's own retries are off (max_retries=0); this loop retries 429/529/5xx/timeouts/
dropped connections itself, a bounded number of times and only while time is left.
`anthropic` is never imported here (tools/model.py is its only importer): its errors are
recognised by class name.
"""
from __future__ import annotations

import copy
import functools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cardmem.store import config
from cardmem.store.cards import by_address as reading
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from . import model

TOOLS: list[dict[str, Any]] = [
    {"name": "read_card",
     "description": "Read one memory card whole (size-capped) by its id, e.g. "
                    "entities/billing-service. Ids are in the memory map.",
     "input_schema": {"type": "object", "properties": {
         "id": {"type": "string", "description": "the card id, e.g. people/mara-okonkwo"}},
         "required": ["id"]}},
    {"name": "read_memory_map",
     "description": "Every card's id, type, title and description, in id order (count-capped).",
     "input_schema": {"type": "object", "properties": {}}},
    {"name": "list_recent",
     "description": "Cards of a type changed since a time, newest first, from git history.",
     "input_schema": {"type": "object", "properties": {
         "type": {"type": "string", "description": "user, feedback, person, entity, project, "
                                                   "reference or signal; omit for all"},
         "since": {"type": "string", "description": "like 7d, 12h, 2w or an ISO date; "
                                                    "default 14d"}}}},
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)

_DEFAULTS = config.DEFAULTS["walk"]  # one source of the floors' defaults
MIN_REQUEST_S = 0.05  # less time than this left: do not start a request
WALL_GRACE_S = 0.25  # a request still running this long past its timeout is abandoned
INPUT_SHOWN = 2000  # characters of a tool input kept in the receipt


@dataclass(frozen=True)
class Limits:
    """The `[walk]` floors. Small values in tests keep the suite fast."""

    max_tool_calls: int = _DEFAULTS["max_tool_calls"]
    tool_call_s: float = _DEFAULTS["tool_call_s"]
    walk_s: float = _DEFAULTS["walk_s"]
    deadline_s: float = _DEFAULTS["deadline_s"]
    on_deadline: str = _DEFAULTS["on_deadline"]
    compose_reserve_s: float | None = None  # None: min(10, deadline_s / 3)
    retries: int = 2  # extra attempts per model request, inside the time left

    @property
    def reserve_s(self) -> float:
        if self.compose_reserve_s is not None:
            return min(self.compose_reserve_s, self.deadline_s)
        return min(10.0, self.deadline_s / 3)

    @classmethod
    def from_config(cls, walk: Mapping[str, Any]) -> "Limits":
        """From a checked `[walk]` section; the two extra keys are checked here."""
        reserve = walk.get("compose_reserve_s")
        retries = walk.get("retries", 2)
        if reserve is not None and (isinstance(reserve, bool) or not isinstance(reserve, (int, float))
                                    or reserve < 0):
            raise CardmemError("[walk] compose_reserve_s", f"expected seconds, got {reserve!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 10:
            raise CardmemError("[walk] retries", f"expected 0 to 10, got {retries!r}")
        return cls(int(walk["max_tool_calls"]), float(walk["tool_call_s"]), float(walk["walk_s"]),
                   float(walk["deadline_s"]), str(walk["on_deadline"]),
                   None if reserve is None else float(reserve), retries)


@dataclass
class ToolCall:
    """One tool_use block the model sent, and what it got back."""

    n: int
    tool: str
    input: Any
    executed: bool = False
    duration_s: float = 0.0
    bytes: int = 0
    error: str | None = None
    floor: dict[str, Any] | None = None
    repeat_of: int | None = None  # the same tool and input asked before, at call n
    result: str = ""  # exactly the tool_result content the model was given


@dataclass
class ModelRequest:
    phase: str  # walk | compose
    attempt: int
    at_s: float
    timeout_s: float
    duration_s: float = 0.0
    error: str | None = None
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class WalkResult:
    reply: str | None
    outcome: str  # composed | fallback
    fallback: str | None = None  # silence | receipt, when outcome is fallback
    reason: str | None = None  # why there is no composed text
    composed_in: str | None = None  # walk (the model answered while tools were open) | compose
    model: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    floors: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def tokens(self) -> dict[str, int]:
        return {"input": sum(r.input_tokens for r in self.requests),
                "output": sum(r.output_tokens for r in self.requests)}

    def as_dict(self) -> dict[str, Any]:
        return {"reply": self.reply, "outcome": self.outcome, "fallback": self.fallback,
                "reason": self.reason, "composed_in": self.composed_in, "model": self.model,
                "tool_calls": [asdict(c) for c in self.tool_calls],
                "requests": [asdict(r) for r in self.requests], "floors": self.floors,
                "tokens": self.tokens, "timings": self.timings}


def system_prompt(limits: Limits) -> str:
    return (
        "You answer a teammate's question from a team's memory: Markdown cards kept by "
        "cardmem. The first message holds what sits at the question's addresses (rung 1). "
        f"You may read more with the tools read_card, read_memory_map and list_recent: at most "
        f"{limits.max_tool_calls} tool calls and about {limits.walk_s:g} seconds in all. "
        "A tool result like {\"floor\": \"walk-budget\"} or {\"floor\": \"walk-time\"} means "
        "reading has stopped: answer with what you have, say plainly that you stopped at a "
        "limit and what you could not read. Answer only from what you read; never claim a "
        "list or an answer is complete when you could not read everything it needs.")


# ---- the tools: thin shells over store/cards/by_address.py ----------------------------------

def _tool_read_card(store: Store, inp: dict[str, Any]) -> Any:
    cid = inp.get("id")
    if not isinstance(cid, str):
        raise CardmemError("read_card", 'needs {"id": "<card id>"} with a string id')
    return reading.read_card(store, cid)


def _tool_memory_map(store: Store, inp: dict[str, Any]) -> Any:
    return reading.memory_map(store).as_dict()


def _tool_list_recent(store: Store, inp: dict[str, Any]) -> Any:
    card_type, since = inp.get("type"), inp.get("since")
    if card_type is not None and not isinstance(card_type, str):
        raise CardmemError("list_recent", "type must be a string (or omitted)")
    if since is not None and not isinstance(since, str):
        raise CardmemError("list_recent", "since must be a string like 7d (or omitted)")
    return {"changes": reading.list_recent(store, card_type or None, since or None)}


RUNNERS: dict[str, Callable[[Store, dict[str, Any]], Any]] = {
    "read_card": _tool_read_card, "read_memory_map": _tool_memory_map,
    "list_recent": _tool_list_recent}


def _bounded(fn: Callable[[], Any], timeout: float) -> tuple[Any, BaseException | None, bool]:
    """fn() in a daemon thread, waited for at most timeout: (value, error, timed_out).

    A store read or an HTTP request cannot be interrupted from outside; one that overruns
    is abandoned (reads change nothing; the request's own timeout ends it later).
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the caller
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name="cardmem-walk-tool")
    t.start()
    t.join(max(0.0, timeout))
    if t.is_alive():
        return None, None, True
    return box.get("value"), box.get("error"), False


def _shown_input(inp: Any) -> Any:
    """The input as the receipt keeps it: whole, or its JSON cut at INPUT_SHOWN characters."""
    try:
        text = json.dumps(inp, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(inp)
    if len(text) <= INPUT_SHOWN:
        return inp
    return {"cut_json": text[:INPUT_SHOWN], "chars": len(text)}


# ---- API errors, recognised without importing anthropic -----------------------------

class WallTimeout(Exception):
    """A model request outran its wall clock and was abandoned."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"no answer within {timeout:g} s (abandoned)")


def _error_kind(exc: BaseException) -> str | None:
    """timeout | connection | status | other-api, or None for a non-API error."""
    if isinstance(exc, WallTimeout):
        return "timeout"
    names = {c.__name__ for c in type(exc).__mro__}
    if "APIError" not in names or not type(exc).__module__.startswith("anthropic"):
        return None
    if "APITimeoutError" in names:
        return "timeout"
    if "APIConnectionError" in names:
        return "connection"
    if "APIStatusError" in names:
        return "status"
    return "other-api"


def _retryable(exc: BaseException) -> bool:
    kind = _error_kind(exc)
    if kind in ("timeout", "connection"):
        return True
    status = getattr(exc, "status_code", 0)
    return kind == "status" and (status in (408, 409, 429) or status >= 500)


def _backoff(exc: BaseException, attempt: int) -> float:
    """The server's retry-after if it says one, else 0.25 s doubling per attempt."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            if headers.get(key) is not None:
                return max(0.0, float(headers[key]) * scale)
        except (TypeError, ValueError):
            pass
    return 0.25 * 2 ** (attempt - 1)


class _Stop(Exception):
    """A request gave up: out of time, retries spent, or an error not worth retrying."""

    def __init__(self, why: str, out_of_time: bool = False, fatal: bool = False) -> None:
        super().__init__(why)
        self.why, self.out_of_time, self.fatal = why, out_of_time, fatal


# ---- the loop -----------------------------------------------------------------------

class Walk:
    def __init__(self, store: Store, sdk: Any, settings: model.ModelSettings, limits: Limits,
                 *, started: float | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 rung1: list[str] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.rung1 = rung1  # rung-1 addresses, for the mechanical receipt
        self.progress = progress or (lambda _step: None)  # told each tool call as it runs
        self.store, self.sdk, self.settings, self.limits = store, sdk, settings, limits
        self.clock, self.sleep = clock, sleep
        self.t0 = started if started is not None else clock()
        self.deadline = self.t0 + limits.deadline_s
        self.walk_end = min(self.t0 + limits.walk_s, self.deadline - limits.reserve_s)
        self.result = WalkResult(None, "fallback", model=settings.name)
        self.charged = 0  # tool calls counted against the budget

    def elapsed(self) -> float:
        return round(self.clock() - self.t0, 3)

    def run(self, user_text: str) -> WalkResult:
        r = self.result
        messages: list[dict[str, Any]] = [{"role": "user", "content": [
            {"type": "text", "text": user_text}]}]
        walk_start = self.elapsed()
        text, stop = self._walk(messages)
        r.timings["walk_s"] = round(self.elapsed() - walk_start, 3)
        if text is None and stop is None:
            compose_start = self.elapsed()
            text, stop = self._compose(messages)
            r.timings["compose_s"] = round(self.elapsed() - compose_start, 3)
        if text is not None:
            r.reply, r.outcome = text, "composed"
        else:
            r.outcome, r.reason = "fallback", stop or "no composed text"
            r.fallback = self.limits.on_deadline
            r.reply = mechanical_receipt(r, self.rung1) if r.fallback == "receipt" else None
        r.timings["total_s"] = self.elapsed()
        return r

    # The walk phase: tools open. Returns (text, None) if the model answered, (None, why)
    # if no compose should follow (refusal, fatal error), (None, None) to compose.
    def _walk(self, messages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        r = self.result
        while True:
            if self.clock() >= self.walk_end:
                self._floor_note(messages, self._time_floor())
                return None, None
            try:
                msg = self._request(messages, "walk", self.walk_end, tools=True)
            except _Stop as stop:
                if stop.fatal:
                    return None, stop.why
                if stop.out_of_time and self.clock() >= self.walk_end - MIN_REQUEST_S:
                    self._floor_note(messages, self._time_floor())
                return None, None
            if msg.stop_reason == "refusal":
                return None, "the model refused"
            uses = [b for b in msg.content if b.type == "tool_use"]
            text = _text(msg)
            if not uses:
                if text.strip():
                    r.composed_in = "walk"
                    return text, None
                return None, None  # an empty answer: ask once more, tools closed
            messages.append({"role": "assistant", "content": _replayable(msg)})
            results = [self._tool(u) for u in uses]
            messages.append({"role": "user", "content": results})
            if any(c.floor for c in r.tool_calls[-len(uses):]):
                return None, None

    def _compose(self, messages: list[dict[str, Any]]) -> tuple[str | None, str | None]:
        messages[-1]["content"].append({"type": "text", "text": (
            "Reading is closed now. Answer the question from what you have read; if you "
            "stopped at a limit, say so and what you could not read.")})
        try:
            msg = self._request(messages, "compose", self.deadline, tools=False)
        except _Stop as stop:
            return None, "deadline" if stop.out_of_time else stop.why
        if msg.stop_reason == "refusal":
            return None, "the model refused"
        text = _text(msg)
        return (text, None) if text.strip() else (None, "empty reply")

    def _request(self, messages: list[dict[str, Any]], phase: str, end: float,
                 *, tools: bool) -> Any:
        """One model request with bounded retries, each try bounded by the time to `end`."""
        attempt = 0
        while True:
            attempt += 1
            left = end - self.clock()
            if left < MIN_REQUEST_S:
                raise _Stop(f"out of time for the {phase} request", out_of_time=True)
            timeout = min(self.limits.tool_call_s, left) if phase == "walk" else left
            rec = ModelRequest(phase, attempt, self.elapsed(), round(timeout, 3))
            self.result.requests.append(rec)
            start = self.clock()
            body = copy.deepcopy(messages)  # an abandoned try must not see later turns
            create = functools.partial(
                self.sdk.messages.create, model=self.settings.name,
                max_tokens=self.settings.max_tokens, system=system_prompt(self.limits),
                messages=body, tools=TOOLS, tool_choice={"type": "auto" if tools else "none"},
                timeout=timeout)
            # The SDK's timeout bounds each wait for bytes, not the whole reply (a server
            # dripping bytes would outlast it), so a wall clock backs it up.
            msg, exc, walled = _bounded(create, timeout + WALL_GRACE_S)
            if walled:
                exc = WallTimeout(timeout)
            if exc is not None:
                rec.duration_s = round(self.clock() - start, 3)
                if _error_kind(exc) is None:
                    rec.error = f"{type(exc).__name__}: {exc}"
                    raise exc
                rec.error = str(exc) if walled else model.describe(exc, timeout)
                if not _retryable(exc):
                    raise _Stop(rec.error, fatal=True) from None
                if end - self.clock() < MIN_REQUEST_S:  # the try used up the time to `end`
                    raise _Stop(rec.error, out_of_time=True) from None
                if attempt > self.limits.retries:
                    raise _Stop(f"{rec.error} (after {attempt} tries)",
                                out_of_time=end - self.clock() < MIN_REQUEST_S) from None
                wait = _backoff(exc, attempt)
                if self.clock() + wait >= end - MIN_REQUEST_S:
                    raise _Stop(f"{rec.error} (no time left to retry)") from None
                self.sleep(wait)
                continue
            rec.duration_s = round(self.clock() - start, 3)
            rec.stop_reason = msg.stop_reason
            usage = getattr(msg, "usage", None)
            rec.input_tokens = int(getattr(usage, "input_tokens", 0) or 0)
            rec.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
            self.result.model = getattr(msg, "model", None) or self.result.model
            return msg

    def _time_floor(self) -> dict[str, Any]:
        return {"floor": "walk-time", "spent": round(self.clock() - self.t0, 2)}

    def _note_floor(self, floor: dict[str, Any]) -> None:
        if not any(f["floor"] == floor["floor"] for f in self.result.floors):
            self.result.floors.append(floor)

    def _floor_note(self, messages: list[dict[str, Any]], floor: dict[str, Any]) -> None:
        """Hand a floor hit between turns to the model as data, in the last user turn."""
        self._note_floor(floor)
        messages[-1]["content"].append({"type": "text", "text": json.dumps(floor)})

    def _tool(self, block: Any) -> dict[str, Any]:
        """Run (or refuse, at a floor) one tool_use block; the tool_result for it."""
        r = self.result
        inp = block.input
        call = ToolCall(len(r.tool_calls) + 1, str(block.name), _shown_input(inp))
        r.tool_calls.append(call)
        for prev in r.tool_calls[:-1]:
            if prev.tool == call.tool and prev.input == call.input and prev.floor is None:
                call.repeat_of = prev.n
                break
        floor = None
        if self.charged >= self.limits.max_tool_calls:
            floor = {"floor": "walk-budget", "spent": self.charged}
        elif self.clock() >= self.walk_end - MIN_REQUEST_S:
            floor = self._time_floor()
        if floor:
            call.floor = floor
            self._note_floor(floor)
            return self._result(block, call, json.dumps(floor), error=True)
        self.charged += 1
        runner = RUNNERS.get(call.tool)
        if runner is None:
            call.error = f"unknown tool {call.tool!r}; the tools are {', '.join(TOOL_NAMES)}"
            return self._result(block, call, call.error, error=True)
        if not isinstance(inp, dict):
            call.error = f"{call.tool}: input must be a JSON object"
            return self._result(block, call, call.error, error=True)
        call.executed = True
        self.progress(f"walk: {call.tool} {_shown_arg(inp)} ({self.charged} of "
                      f"{self.limits.max_tool_calls}, {self.elapsed():.1f} s)")
        bound = min(self.limits.tool_call_s, self.walk_end - self.clock())
        start = self.clock()
        value, exc, timed_out = _bounded(lambda: runner(self.store, inp), bound)
        call.duration_s = round(self.clock() - start, 3)
        if timed_out:
            call.error = f"{call.tool} took longer than {bound:.2f} s; abandoned"
        elif isinstance(exc, (CardmemError, ValueError)):
            call.error = str(exc)  # e.g. "id '../../etc/passwd': climbs out of the store (..)"
        elif exc is not None:
            call.error = f"{call.tool} failed: {type(exc).__name__}: {exc}"
        if call.error:
            return self._result(block, call, call.error, error=True)
        return self._result(block, call, json.dumps(value, ensure_ascii=False, default=str))

    @staticmethod
    def _result(block: Any, call: ToolCall, content: str, error: bool = False) -> dict[str, Any]:
        call.result, call.bytes = content, len(content.encode())
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.id, "content": content}
        if error:
            out["is_error"] = True
        return out


def _shown_arg(inp: dict[str, Any]) -> str:
    """The gist of a tool call's input for a progress line: an id or a query."""
    value = next((inp[k] for k in ("id", "query", "name") if k in inp), "")
    return " ".join(str(value).split())[:60]


def _text(msg: Any) -> str:
    return "".join(b.text for b in msg.content if b.type == "text")


def _replayable(msg: Any) -> list[dict[str, Any]]:
    """The assistant turn as request blocks: non-empty text and tool_use, nothing else."""
    out: list[dict[str, Any]] = []
    for b in msg.content:
        if b.type == "text" and b.text.strip():
            out.append({"type": "text", "text": b.text})
        elif b.type == "tool_use":
            out.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
    return out


def mechanical_receipt(r: WalkResult, rung1: list[str] | None = None) -> str:
    """The on_deadline = receipt reply: a marked listing of what was read, no words of ours."""
    lines = [f"[cardmem: no composed answer ({r.reason or 'deadline'}); "
             "this is a mechanical receipt of what was read, not a reply]"]
    if rung1 is not None:
        lines.append(f"Read first (rung 1): {', '.join(rung1) if rung1 else 'nothing'}")
    for c in r.tool_calls:
        what = f"{c.tool} {json.dumps(c.input, ensure_ascii=False)[:120]}"
        status = (f"not run: {c.floor['floor']}" if c.floor else
                  f"error: {c.error}" if c.error else f"{c.bytes} bytes")
        lines.append(f"- {what}: {status}")
    if not r.tool_calls:
        lines.append("- no tool calls")
    if r.floors:
        lines.append("Floors hit: " + ", ".join(json.dumps(f) for f in r.floors))
    return "\n".join(lines)
