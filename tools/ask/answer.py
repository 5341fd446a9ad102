"""Answering a question: rung 1 (the pile) and rung 2 (the walk), with a receipt always.

    answer = ask(store, "Who approves a billing migration?", asker="@priya")
    answer.reply        # the composed text; the marked receipt (on_deadline = receipt); or None
    answer.receipt_id   # the line in .cardmem/receipts/ recording what was read and spent

Every path writes exactly one receipt: composed, fallback, no key, and errors.

On the claude-code route (a Claude Code login, no API key) there is no walk: `claude -p`
runs with no tools, and a walk needs ours. Rung 1 alone answers many questions, so the
model composes from it, told it cannot read more, and the receipt says the walk was
skipped; failing instead would leave a subscription user with no `ask` at all.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from .. import model
from . import receipts
from .walk import MIN_REQUEST_S, Walk
from .walk_record import Limits, ModelRequest, WalkResult, mechanical_receipt

MAX_QUESTION = 4000
NO_WALK = "skipped: the claude-code route runs claude -p without tools; no reads beyond the first cards"
RUNG1_SYSTEM = (
    "You answer a teammate's question from a team's memory: Markdown cards kept by "
    "cardmem. The first message holds what sits at the question's addresses (rung 1); you "
    "cannot read more cards for this answer. Answer only from it. If it does not settle "
    "the question, say so and what is missing; never claim a list or an answer is "
    "complete when you could not read everything it needs.")


@dataclass
class Answer:
    reply: str | None
    receipt_id: str
    outcome: str  # composed | fallback | unavailable | error
    fallback: str | None = None
    reason: str | None = None
    floors: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: int = 0  # tool_use blocks the model sent
    reads: int = 0  # of those, the ones run (not refused at a floor or as unknown)
    receipt: dict[str, Any] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"reply": self.reply, "receipt_id": self.receipt_id, "outcome": self.outcome,
                "fallback": self.fallback, "reason": self.reason, "floors": self.floors,
                "tool_calls": self.tool_calls, "reads": self.reads}


def user_message(pile_text: str, question: str, asker: str | None) -> str:
    who = f"{asker} asks" if asker else "The question"
    return f"{pile_text.rstrip()}\n\n---\n{who}:\n{question}"


def ask(store: Store, question: str, asker: str | None = None, *, limits: Limits | None = None,
        sdk: Any = None, clock: Callable[[], float] = time.monotonic,
        extra: dict[str, Any] | None = None,
        deliver: Callable[[Answer], None] | None = None,
        progress: Callable[[str], None] | None = None, pile: Any = None) -> Answer:
    """Answer a question from memory; always appends one receipt (then re-raises errors).

    extra: more fields for the receipt (a host's own, e.g. `slack`: channel, thread, user);
    the receipt is written last, so a host may fill them in until then. deliver: called
    with the answer before the receipt is written, so what delivery did is in it; on an
    error too (no reply, outcome error or unavailable, the reason), so a host can say so.
    progress: told each step as it starts (a person waits up to deadline_s).
    pile: rung 1 already built for this question and asker (a host that built it for its
    ack, as `cardmem slack` does), else built here; its build time is then the host's.
    """
    say = progress or (lambda _step: None)
    t0 = clock()  # restarted once the client is built: see below
    rid = receipts.new_id()
    rec: dict[str, Any] = {"id": rid, "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "question": question, "asker": asker, "store": str(store.root),
                           **(extra or {})}
    answer = Answer(None, rid, "error")
    walk: Walk | None = None
    delivered = False  # deliver is called once: on success, or with the error
    try:
        question = (question or "").strip()
        if not question:
            raise CardmemError("question", "is empty")
        if len(question) > MAX_QUESTION:
            raise CardmemError("question", f"is longer than {MAX_QUESTION} characters")
        limits = limits or Limits.from_config(store.config["walk"])
        settings = model.settings(store.config.get("model"))
        rec["limits"] = {**limits.__dict__, "reserve_s": limits.reserve_s}
        try:
            route = "api" if sdk is not None else model.resolve(settings)[0]
            rec["route"] = route
            rec["model"] = settings.claude_model if route == "claude-code" else settings.name
            if route == "api":
                if sdk is None:
                    say("starting the model's client (api)")  # its import takes seconds
                sdk = sdk or model.client(settings, max_retries=0)  # the walk retries itself
        except model.ModelUnavailable as exc:
            answer.outcome, answer.reason = "unavailable", exc.why
            raise
        # The deadline clocks the answer, not process start-up: the first client of a
        # process pays the SDK's import (seconds: bench/RESULTS.md, "Figures from comments"),
        # recorded here on its own.
        setup_s, t0 = round(clock() - t0, 3), clock()
        from cardmem.store.context import question_context

        if pile is None:
            pile = question_context(store, question, asker=asker,
                                    budget=int(store.config["context"]["budget_chars"]))
        rec["rung1"] = pile.as_dict()  # the text too: the judge grades against what was seen
        rec["timings"] = {"client_s": setup_s, "rung1_s": round(clock() - t0, 3)}
        text = user_message(pile.text, question, asker)
        say(f"starting from {len(pile.addresses)} cards; asking the model ({route})")
        if route == "claude-code":
            rec["walk"] = NO_WALK
            try:
                result = rung1_only(settings, limits, text, t0, clock, pile.addresses)
            except model.ModelUnavailable as exc:  # e.g. not logged in, found only now
                answer.outcome, answer.reason = "unavailable", exc.why
                raise
        else:
            walk = Walk(store, sdk, settings, limits, started=t0, clock=clock,
                        rung1=pile.addresses, progress=say)
            result = walk.run(text)
        _fill(answer, rec, result)
        if deliver is not None:
            delivered = True
            deliver(answer)
        return answer
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # the asker stopped it: no failure to count
            answer.outcome = "interrupted"
        if answer.outcome == "error":
            answer.reason = str(exc) or type(exc).__name__
        elif answer.outcome == "interrupted":
            answer.reason = "interrupted (Ctrl-C)"
        if walk is not None:  # keep what the walk did before it failed
            _fill(Answer(None, rid, "error"), rec, walk.result)
        rec.update(outcome=answer.outcome, reason=answer.reason, reply=None, fallback=None)
        if deliver is not None and not delivered and isinstance(exc, Exception):
            try:
                deliver(answer)
            except Exception:  # noqa: BLE001 - the error being raised is the one to report
                pass
        raise
    finally:
        rec.setdefault("timings", {})["total_s"] = round(clock() - t0, 3)
        answer.receipt = rec
        receipts.append(store, rec)


def rung1_only(settings: model.ModelSettings, limits: Limits, text: str, t0: float,
               clock: Callable[[], float], rung1: list[str]) -> WalkResult:
    """One compose over rung 1 within the deadline, recorded as the walk records its own."""
    r = WalkResult(None, "fallback", model=settings.claude_model)
    left = t0 + limits.deadline_s - clock()
    if left < MIN_REQUEST_S:
        r.reason = "deadline"
    else:
        req = ModelRequest("compose", 1, round(clock() - t0, 3),
                           round(min(settings.timeout_s, left), 3))
        r.requests.append(req)
        start = clock()
        try:
            out = model.complete(RUNG1_SYSTEM, text, cfg=settings, timeout_s=req.timeout_s)
        except model.ModelUnavailable:
            raise
        except model.ModelError as exc:
            req.error = r.reason = exc.why
        else:
            req.stop_reason, r.model = out.stop_reason, out.model
            req.input_tokens = out.usage.get("input_tokens", 0)
            req.output_tokens = out.usage.get("output_tokens", 0)
            if out.text.strip():
                r.reply, r.outcome, r.composed_in = out.text, "composed", "rung1"
            else:
                r.reason = "empty reply"
        req.duration_s = r.timings["compose_s"] = round(clock() - start, 3)
    if r.outcome != "composed":
        r.fallback = limits.on_deadline
        r.reply = mechanical_receipt(r, rung1) if r.fallback == "receipt" else None
    r.timings["total_s"] = round(clock() - t0, 3)
    return r


def _fill(answer: Answer, rec: dict[str, Any], r: WalkResult) -> None:
    walked = r.as_dict()
    timings = {**rec.get("timings", {}), **walked.pop("timings")}
    rec.update(walked)
    rec["timings"] = timings
    answer.reply, answer.outcome = r.reply, r.outcome
    answer.fallback, answer.reason = r.fallback, r.reason
    answer.floors, answer.tool_calls = r.floors, len(r.tool_calls)
    answer.reads = sum(c.executed for c in r.tool_calls)
