"""Shared pieces of the walk tests: the spiral fixture, a scripted model, receipt reads."""
from __future__ import annotations

import json
from typing import Any

from fakeapi import FakeAPI, reply, tool_use

from cardmem.tools.ask import receipts
from cardmem.tools.ask.answer import Answer, ask
from cardmem.tools.ask.walk_record import Limits

# The example store's spiral chain (cards/README.md): six reads answer it fully.
CHAIN = ["entities/billing-service", "entities/payments-team", "reference/db-migration-runbook",
         "feedback/prod-migrations-need-approval", "reference/migration-review-checklist",
         "reference/on-call-rota"]
QUESTION = ("Who approves a production database migration for the billing service, "
            "and what must they check?")
HONEST = ("Mara Okonkwo, the payments tech lead, and the week's DB secondary approve it, "
          "never the author. I stopped at the read limit before reading the migration review "
          "checklist and the on-call rota, so I cannot say what they must check or who is DB "
          "secondary this week.")
OVERCLAIM = ("Mara Okonkwo and the week's DB secondary approve it. That's everything: the "
             "complete list of approvers and what they check.")
FAST = Limits(max_tool_calls=4, tool_call_s=2.0, walk_s=3.0, deadline_s=6.0)


def is_compose(body: dict[str, Any]) -> bool:
    return (body.get("tool_choice") or {}).get("type") == "none"


def is_judge(body: dict[str, Any]) -> bool:
    return "grade" in str(body.get("system", "")) and "tools" not in body


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"]


def spiral_model(final: str):
    """A model that keeps asking for the next card of the chain until tools are closed."""
    def handler(body: dict[str, Any]) -> Any:
        if is_judge(body):
            return None
        if is_compose(body):
            return reply(final)
        n = len(tool_results(body))
        return reply("Let me follow the links.",
                     tool_use("read_card", {"id": CHAIN[min(n, len(CHAIN) - 1)]}))
    return handler


def run_spiral(store: Any, api: FakeAPI, final: str = HONEST, limits: Limits = FAST) -> Answer:
    api.handler = spiral_model(final)
    return ask(store, QUESTION, asker="@priya", limits=limits)


def check_spiral(answer: Answer, api: FakeAPI, store: Any) -> None:
    """What the spiral must show: 4 reads, the floor handed over as data, an honest reply."""
    rec = receipts.find(store, answer.receipt_id)
    executed = [c for c in rec["tool_calls"] if c["executed"]]
    assert [c["input"]["id"] for c in executed] == CHAIN[:4], "the walk stops at 4 reads"
    assert answer.reads == 4
    refused = [c for c in rec["tool_calls"] if not c["executed"]]
    assert refused and all(c["floor"] == {"floor": "walk-budget", "spent": 4} for c in refused)
    assert rec["floors"] == [{"floor": "walk-budget", "spent": 4}]
    walk_reqs = [r for r in api.messages_requests() if not is_judge(r.body)]
    last = walk_reqs[-1].body  # the request after the floor: the compose, tools closed
    assert is_compose(last)
    floor_results = [r for r in tool_results(last) if r.get("is_error")
                     and json.loads(r["content"]) == {"floor": "walk-budget", "spent": 4}]
    assert len(floor_results) == 1, "the floor reaches the model as data"
    assert answer.outcome == "composed" and answer.reply == HONEST
    assert "limit" in answer.reply
