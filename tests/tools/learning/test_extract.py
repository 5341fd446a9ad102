"""Extraction: the strict contract filter, and one real SDK call against the fake API."""
from __future__ import annotations

import pytest

from cardmem.tools.learning.extract import SYSTEM, Signal, contract_lines, extract, render_excerpt
from cardmem.tools.model import ModelUnavailable


def test_keeps_only_contract_lines():
    reply = """Here is what I found:
Decision: deploy with uv sync --frozen
- Rule: bullets are not contract lines
rule: lower-case kinds are not either
Worked:no space after the colon is not either
Worked: make rollback SERVICE=acme-api took 90 s
  Failed: pip-sync left stale wheels in the image  
Knowledge: the jobs queue is RabbitMQ 3.13
Insight: an unknown kind is dropped
**Decision:** markdown is dropped
Decision:
Rule: always run pytest with -x
"""
    assert [s.line for s in contract_lines(reply)] == [
        "Decision: deploy with uv sync --frozen",
        "Worked: make rollback SERVICE=acme-api took 90 s",
        "Failed: pip-sync left stale wheels in the image",
        "Knowledge: the jobs queue is RabbitMQ 3.13",
        "Rule: always run pytest with -x",
    ]


@pytest.mark.parametrize("reply", ["EMPTY", "EMPTY\n", "  EMPTY  ", "", "Nothing to report.",
                                   "Decision: EMPTY"])
def test_empty_and_noise_give_nothing(reply):
    assert contract_lines(reply) == []


def test_repeats_and_runaway_lines_dropped():
    long = "Knowledge: " + "x" * 1000
    out = contract_lines("Decision: a  b\nDecision: A B\n" + long + "\nWorked: c\n")
    assert [s.line for s in out] == ["Decision: a b", "Worked: c"]


def test_at_most_twelve_signals():
    reply = "\n".join(f"Knowledge: fact number {i}" for i in range(30))
    assert len(contract_lines(reply)) == 12


def test_render_excerpt_accepts_dicts_objects_and_pairs():
    class T:
        role, text = "assistant", "done"

    out = render_excerpt([{"role": "user", "text": "hi"}, T(), ("user", "bye")])
    assert out == "[user]\nhi\n\n[assistant]\ndone\n\n[user]\nbye"


def test_one_model_call_through_the_sdk(model_env):
    model_env.add("Sure! Here you go:\nDecision: keep -x locally\nnot a line\nKnowledge: CI runs 4 agents\n")
    turns = [{"role": "user", "text": "run the tests with -x please"},
             {"role": "assistant", "text": "Ran `pytest -x`; first failure in test_api.py"}]
    out = extract(turns, cfg={"name": "claude-test", "max_tokens": 300, "timeout_s": 5})
    assert out == [Signal("Decision", "keep -x locally"), Signal("Knowledge", "CI runs 4 agents")]
    reqs = model_env.messages_requests()
    assert len(reqs) == 1
    body = reqs[0].body
    assert body["system"] == SYSTEM and body["model"] == "claude-test"
    assert "run the tests with -x please" in body["messages"][0]["content"]
    for phrase in ("hypothetical", "quoted or", "personal data", "EMPTY"):
        assert phrase in SYSTEM


def test_no_key_is_model_unavailable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelUnavailable):
        extract([{"role": "user", "text": "hello"}])


def test_empty_excerpt_needs_no_call(model_env):
    assert extract([]) == []
    assert model_env.messages_requests() == []
