"""M3: an `ask` answer the judge grades supported, saying what no card says, becomes a
proposed card with its receipt as source; the judge (through the fake Messages API)
gates it."""
from __future__ import annotations

import json

import pytest
from maintainkit import corpus_store, git

from cardmem.store.cards import card as cardlib
from cardmem.tools.ask import receipts
from cardmem.tools.maintain import run

QUESTION = "Which Go test suites in temporal must run with the race detector?"
REPLY = ("The functional test suites under tests/ and the history service's shard tests run "
         "with -race in CI; the persistence tests skip it because they take forty minutes.")
PASS = {"verdict": "pass", "rule": {"verdict": "pass"}, "grade": {"verdict": "pass"}}
FAIL = {"verdict": "fail", "rule": {"verdict": "pass"}, "grade": {"verdict": "fail"}}


@pytest.fixture
def store(tmp_path):
    return corpus_store(tmp_path / "store", ("temporal",))


def answered(store, reply: str = REPLY, rid: str = "20261201T100000Z-abcdef",
             verdict: dict | None = None) -> str:
    receipts.append(store, {"id": rid, "question": QUESTION, "outcome": "composed",
                            "reply": reply, "rung1": {"text": "cards read: testing"},
                            "tool_calls": []})
    if verdict:
        receipts.append_judge(store, rid, verdict)
    return rid


@pytest.mark.corpus
def test_a_supported_answer_no_card_states_is_found_and_filed_once(store, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rid = answered(store, verdict=PASS)
    head = git(store, "rev-parse", "HEAD")
    [f] = run(store, {"unfiled-answer"}).findings
    assert f.kind == "unfiled-answer" and f.ids == [rid] and "supported" in f.detail
    assert git(store, "rev-parse", "HEAD") == head  # found, not written
    [done] = run(store, {"unfiled-answer"}, apply=True).applied
    [cid] = [p[:-3] for p in git(store, "show", "--name-only", "--format=", "HEAD").split()]
    assert done["subject"] == f"maintain: propose: {cid}" and cid.startswith("reference/which-go")
    assert git(store, "log", "-1", "--format=%ae").strip() == "agent@cardmem.invalid"
    assert f"from receipt {rid}" in git(store, "log", "-1", "--format=%B")
    card = cardlib.load(store.root / f"{cid}.md", cid)
    assert card.meta["status"] == "proposed" and card.meta["source"] == f"receipt {rid}"
    assert card.body.strip().startswith(REPLY) and card.title == QUESTION
    assert run(store, {"unfiled-answer"}).findings == []  # a proposal says it now
    store.revert(done["commit"])  # rejected (gone): still never proposed again
    assert run(store, {"unfiled-answer"}, apply=True).findings == []


@pytest.mark.corpus
def test_a_failed_verdict_an_empty_answer_or_a_known_fact_is_not_filed(store) -> None:
    answered(store, verdict=FAIL)
    answered(store, "Memory does not say which suites run with the race detector at all.",
             rid="20261201T100001Z-abcdef", verdict=PASS)
    known = (store.root / "projects/temporal/testing.md").read_text().split("---\n", 2)[2][:600]
    answered(store, known, rid="20261201T100002Z-abcdef", verdict=PASS)
    assert run(store, {"unfiled-answer"}).findings == []


@pytest.mark.corpus
def test_unjudged_answers_are_only_noted_without_apply(store, model_env) -> None:
    answered(store)
    report = run(store, {"unfiled-answer"})
    assert report.findings == [] and "1 answer(s) not judged yet" in report.notes[0]
    assert model_env.messages_requests() == []


@pytest.mark.parametrize("grade, filed", [("supported", True),
                                          ("unsupported-but-plausible", False)])
@pytest.mark.corpus
def test_apply_has_the_judge_grade_it_first_and_files_only_a_pass(store, model_env, grade,
                                                                  filed) -> None:
    rid = answered(store)
    model_env.fallback = json.dumps({"claims": [{"claim": "suites run with -race",
                                                 "status": grade}],
                                     "grade": grade, "reason": "as read"})
    report = run(store, {"unfiled-answer"}, apply=True)
    [asked] = model_env.messages_requests()
    assert "grade a reply" in asked.body["system"] and REPLY in json.dumps(asked.body)
    assert receipts.find(store, rid)["judge"][-1]["by"] == "maintain"  # the verdict is kept
    assert bool(report.applied) is filed
