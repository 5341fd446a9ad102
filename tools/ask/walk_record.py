"""What a walk may spend and what it records: the `[walk]` floors (Limits), each tool
call and model request, the result a receipt is written from, and the mechanical
receipt that stands in for a reply no model composed in time.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cardmem.store import config
from cardmem.store.errors import CardmemError

_DEFAULTS = config.DEFAULTS["walk"]  # one source of the floors' defaults


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
        retries = walk.get("retries", cls.retries)
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
