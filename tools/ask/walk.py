"""Rung 2, the walk (DESIGN §5): a manual tool-use loop with floors, not filters.

The model may reach back into memory through three address-only tools, each delegating
to the same store functions the MCP server uses, with the same caps. Code only meters cost:

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
`anthropic` is never imported here (tools/model.py talks to the model): its errors are
recognised by class name.
"""
from __future__ import annotations

import copy
import functools
import json
import time
from collections.abc import Callable
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from .. import model
from .walk_record import Limits, ModelRequest, ToolCall, WalkResult, mechanical_receipt
from .walk_retry import WallTimeout, backoff, bounded, error_kind, retryable
from .walk_tools import RUNNERS, TOOL_NAMES, TOOLS, shown_arg, shown_input

MIN_REQUEST_S = 0.05  # less time than this left: do not start a request
WALL_GRACE_S = 0.25  # a request still running this long past its timeout is abandoned


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
            msg, exc, walled = bounded(create, timeout + WALL_GRACE_S)
            if walled:
                exc = WallTimeout(timeout)
            if exc is not None:
                rec.duration_s = round(self.clock() - start, 3)
                if error_kind(exc) is None:
                    rec.error = f"{type(exc).__name__}: {exc}"
                    raise exc
                rec.error = str(exc) if walled else model.describe(exc, timeout)
                if not retryable(exc):
                    raise _Stop(rec.error, fatal=True) from None
                if end - self.clock() < MIN_REQUEST_S:  # the try used up the time to `end`
                    raise _Stop(rec.error, out_of_time=True) from None
                if attempt > self.limits.retries:
                    raise _Stop(f"{rec.error} (after {attempt} tries)",
                                out_of_time=end - self.clock() < MIN_REQUEST_S) from None
                wait = backoff(exc, attempt)
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
        call = ToolCall(len(r.tool_calls) + 1, str(block.name), shown_input(inp))
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
        self.progress(f"walk: {call.tool} {shown_arg(inp)} ({self.charged} of "
                      f"{self.limits.max_tool_calls}, {self.elapsed():.1f} s)")
        bound = min(self.limits.tool_call_s, self.walk_end - self.clock())
        start = self.clock()
        value, exc, timed_out = bounded(lambda: runner(self.store, inp), bound)
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
