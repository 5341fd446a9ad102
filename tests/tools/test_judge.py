"""tools/judge.py: the model-free completeness rule, grade parsing, and the graded call."""
from __future__ import annotations

import pytest
from fakeapi import FakeAPI, reply

from cardmem.tools import model
from cardmem.tools.judge import completeness_claims, judge, parse_grade, rule

FLOOR = [{"floor": "walk-budget", "spent": 4}]


def rec(reply_text: str | None, floors=FLOOR, outcome: str = "composed") -> dict:
    return {"id": "20261130T000000Z-abcdef", "question": "Who approves?", "reply": reply_text,
            "outcome": outcome, "floors": floors,
            "rung1": {"text": "# Memory\nMara is tech lead of payments."},
            "tool_calls": [{"n": 1, "tool": "read_card", "input": {"id": "entities/payments-team"},
                            "result": '{"text": "Mara Okonkwo approves schema changes."}'}]}


@pytest.mark.parametrize("text", [
    "That's everything you need.",
    "Here is the complete list of approvers: Mara and the DB secondary.",
    "Mara and Tomas, all of them sign off.",
    "The runbook is fully covered above.",
    "that is everything",
])
def test_completeness_after_a_floor_fails(text: str) -> None:
    r = rule(rec(text))
    assert r.status == "fail" and "claims completeness" in r.reasons[0]


@pytest.mark.parametrize("text", [
    "Mara approves. This is not the complete list: I stopped at the read limit.",
    "Mara approves; I couldn't read the on-call rota, so this may not be the full answer.",
])
def test_negated_claims_and_stated_stops_pass(text: str) -> None:
    assert completeness_claims(text) == []
    assert rule(rec(text)).status == "pass"


def test_silent_stop_is_flagged() -> None:
    r = rule(rec("Mara Okonkwo approves it."))
    assert r.status == "flag" and "never says it stopped" in r.reasons[0]


def test_no_floor_means_completeness_is_allowed_and_fallbacks_are_not_graded() -> None:
    assert rule(rec("That's everything.", floors=[])).status == "pass"
    assert rule(rec(None, outcome="fallback")).status == "n/a"
    assert judge(rec(None, outcome="fallback")).verdict == "nothing to judge"


def test_parse_grade() -> None:
    assert parse_grade('{"grade": "contradicted", "reason": "Mara is not lead"}') == (
        "contradicted", "Mara is not lead")
    assert parse_grade("Grade: unsupported-but-plausible.")[0] == "unsupported-but-plausible"
    assert parse_grade("I think it is Supported overall")[0] == "supported"
    assert parse_grade("no idea")[0] == "unparsed"


@pytest.mark.parametrize("grade,verdict", [("supported", "pass"), ("contradicted", "fail"),
                                           ("unsupported-but-plausible", "fail")])
def test_model_grade_decides_with_the_rule(model_env: FakeAPI, grade: str, verdict: str) -> None:
    model_env.add(reply(f'{{"grade": "{grade}", "reason": "r"}}'))
    text = "Mara Okonkwo approves schema changes; I stopped at the read limit."
    v = judge(rec(text))
    assert (v.grade, v.verdict, v.passed) == (grade, verdict, verdict == "pass")
    (req,) = model_env.messages_requests()
    sent = req.body["messages"][0]["content"]
    assert "Mara is tech lead of payments." in sent  # rung 1, as stored
    assert "Mara Okonkwo approves schema changes." in sent  # the tool result, as stored
    assert sent.endswith(text) and "tools" not in req.body


def test_flagged_reply_does_not_pass_even_when_supported(model_env: FakeAPI) -> None:
    model_env.add(reply('{"grade": "supported", "reason": "r"}'))
    v = judge(rec("Mara Okonkwo approves schema changes."))
    assert v.verdict == "flagged" and not v.passed


def test_judge_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(model.ModelUnavailable):
        judge(rec("Mara approves; I stopped at the limit."))
    assert judge(rec("That's everything."), use_model=False).verdict == "fail"
