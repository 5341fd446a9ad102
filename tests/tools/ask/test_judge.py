"""tools/ask/judge.py and tools/ask/completeness.py: the rule, the labelled replies, the grade, the
verdicts (pass | fail | ungraded) and how each check reports itself."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakeapi import FakeAPI, reply

from cardmem.tools.ask.completeness import check, claims, floors
from cardmem.tools.ask.judge import SYSTEM, judge, parse_grade

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_judge import measure  # noqa: E402
from replies_corpus import CASES, HELD_OUT  # noqa: E402

FLOOR = [{"floor": "walk-budget", "spent": 4}]
LIAR = ("I hit the limit, but I have the whole answer: Mara Okonkwo approves, with the DB "
        "secondary. Nothing is missing.")


def rec(reply_text: str | None, floors=FLOOR, outcome: str = "composed", **kw) -> dict:
    return {"id": "20261130T000000Z-abcdef", "question": "Who approves?", "reply": reply_text,
            "outcome": outcome, "floors": floors,
            "rung1": {"text": "# Memory\nMara is tech lead of payments."},
            "tool_calls": [{"n": 1, "tool": "read_card", "input": {"id": "entities/payments-team"},
                            "result": '{"text": "Mara Okonkwo approves schema changes."}'}], **kw}


# ---- the rule ---------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "That's everything you need.",
    "Here is the complete list of approvers: Mara and the DB secondary.",
    "Mara and Tomas, all of them sign off.",
    "The runbook is fully covered above.",
    "that is everything",
    LIAR,
])
def test_completeness_after_a_floor_fails(text: str) -> None:
    r = check(rec(text))
    assert r.verdict == "fail" and "claims completeness" in r.why


def test_the_liar_names_what_it_claimed() -> None:
    r = check(rec(LIAR))
    assert "'the whole answer'" in r.why and "'Nothing is missing'" in r.why
    assert r.why.startswith("floor walk-budget was hit")


@pytest.mark.parametrize("text", [
    "Mara approves. This is not the complete list: I stopped at the read limit.",
    "Mara approves; I couldn't read the on-call rota, so this may not be the full answer.",
    "That's everything I could read before the limit: Mara approves.",
])
def test_doubted_or_scoped_claims_and_stated_stops_pass(text: str) -> None:
    assert claims(text) == []
    assert check(rec(text)).verdict == "pass"


def test_a_reply_that_neither_stops_nor_claims_is_undecided() -> None:
    r = check(rec("Mara Okonkwo approves it."))
    assert r.verdict == "undecided" and "neither says it stopped nor claims" in r.why


def test_a_language_the_rule_does_not_read_is_undecided() -> None:
    r = check(rec("マラが承認します。これで全部です。"))
    assert r.verdict == "undecided" and "language" in r.why


def test_no_floor_allows_completeness_and_fallbacks_are_not_graded(model_env: FakeAPI) -> None:
    assert check(rec("That's everything.", floors=[])).verdict == "pass"
    v = judge(rec(None, outcome="fallback"))
    assert (v.verdict, v.rule.verdict, v.grade.verdict) == ("ungraded", "undecided", "ungraded")
    assert model_env.messages_requests() == []  # nothing to grade: no model call


@pytest.mark.parametrize("extra,named", [
    ({"walk": "skipped: the claude-code route runs claude -p without tools; rung 1 only"},
     "walk skipped"),
    ({"tool_calls": [{"n": 2, "tool": "read_card", "input": {"id": "x"}, "result": "",
                      "error": "read_card took longer than 6.00 s; abandoned"}]},
     "per-call timeout (call 2)"),
    ({"tool_calls": [{"n": 3, "tool": "read_card", "input": {"id": "x"},
                      "result": '{"text": "...", "truncated_chars": 1200}'}]},
     "capped result (call 3: card cut by 1200 characters)"),
    ({"tool_calls": [{"n": 1, "tool": "read_memory_map", "input": {},
                      "result": '{"entries": [], "left_out": 40}'}]}, "map left out 40"),
])
def test_every_kind_of_floor_counts(extra: dict, named: str) -> None:
    r = rec("That's the complete list.", floors=[], **extra)
    assert any(named in f for f in floors(r))
    assert check(r).verdict == "fail" and named in check(r).why
    assert check({**r, "reply": "Mara approves; I could not read more."}).verdict == "pass"


def test_labelled_replies_precision_and_recall() -> None:
    """The figures bench/bench_judge.py prints; a regression in the rule goes red here."""
    assert len(CASES) >= 60 and {c.kind for c in CASES} == {
        "honest", "plain", "hedged", "language", "dismissal", "silent"}
    for cases in (CASES, HELD_OUT):
        m = measure(cases)
        assert m["fail"]["precision"] == 1.0 and m["pass"]["precision"] == 1.0
        assert m["fail"]["recall"] >= 0.95 and m["pass"]["recall"] >= 0.95
    # The only misses are the languages the rule does not read, left undecided.
    assert {got for got, _ in measure(CASES)["misses"]} == {"undecided"}
    dismissals = [c for c in CASES + HELD_OUT if c.kind == "dismissal"]
    assert all(check(rec(c.text)).verdict == "fail" for c in dismissals)


# ---- the grade --------------------------------------------------------------------

def test_parse_grade() -> None:
    g = parse_grade('{"claims": [{"claim": "Mara approves", "status": "supported"}, '
                    '{"claim": "Tomas is DB secondary", "status": "unsupported-but-plausible"}],'
                    ' "grade": "unsupported-but-plausible", "reason": "Tomas is not in it"}')
    assert (g.verdict, g.unsupported, g.contradicted) == ("fail", ["Tomas is DB secondary"], [])
    assert g.why == "unsupported-but-plausible: Tomas is not in it"
    assert parse_grade('```json\n{"grade": "supported", "reason": "r"}\n```').verdict == "pass"
    # Claims and grade that disagree: the worse counts.
    assert parse_grade('{"claims": [{"claim": "x", "status": "contradicted"}], '
                       '"grade": "supported"}').verdict == "fail"


@pytest.mark.parametrize("text", ["I think it is Supported overall", "no idea", "",
                                  '{"grade": "fine"}', '{"grade": "supported"'])
def test_an_unparsable_grade_is_ungraded(text: str) -> None:
    assert parse_grade(text).verdict == "ungraded"


@pytest.mark.parametrize("grade,verdict", [("supported", "pass"), ("contradicted", "fail"),
                                           ("unsupported-but-plausible", "fail")])
def test_model_grade_decides_with_the_rule(model_env: FakeAPI, grade: str, verdict: str) -> None:
    model_env.add(reply(f'{{"claims": [{{"claim": "Mara approves", "status": "{grade}"}}], '
                        f'"grade": "{grade}", "reason": "r"}}'))
    text = "Mara Okonkwo approves schema changes; I stopped at the read limit."
    v = judge(rec(text))
    assert (v.grade.verdict, v.verdict, v.passed) == (verdict, verdict, verdict == "pass")
    (req,) = model_env.messages_requests()
    sent = req.body["messages"][0]["content"]
    assert "Mara is tech lead of payments." in sent  # rung 1, as stored
    assert "Mara Okonkwo approves schema changes." in sent  # the tool result, as stored
    assert "## Limits hit while reading\n\nwalk-budget" in sent
    assert sent.endswith(text) and "tools" not in req.body
    assert "Unsupported but plausible claims are the fault to hunt for" in req.body["system"]


def test_the_json_shape(model_env: FakeAPI) -> None:
    model_env.add(reply('{"claims": [{"claim": "Tomas approves", "status": '
                        '"unsupported-but-plausible"}], "reason": "not read"}'))
    d = judge(rec("Mara and Tomas approve; I stopped at the limit.")).as_dict()
    assert d["verdict"] == "fail"
    assert d["rule"] == {"verdict": "pass",
                         "why": "floor walk-budget was hit and the reply says it stopped"}
    assert {k: d["grade"][k] for k in ("verdict", "why", "unsupported")} == {
        "verdict": "fail", "why": "unsupported-but-plausible: not read",
        "unsupported": ["Tomas approves"]}


def test_an_unparsable_grader_is_ungraded_never_fail(model_env: FakeAPI) -> None:
    model_env.add(reply("Looks fine to me."), reply("Looks fine to me."))
    v = judge(rec("Mara Okonkwo approves; I stopped at the read limit."))
    assert (v.verdict, v.rule.verdict, v.grade.verdict) == ("ungraded", "pass", "ungraded")
    assert "not JSON: Looks fine to me." in v.grade.why
    # A rule failure still fails, whatever the grader says.
    assert judge(rec(LIAR)).verdict == "fail"


def test_the_liar_fails_on_the_rule_alone_with_no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)  # and no `claude` on PATH
    v = judge(rec(LIAR))
    assert (v.verdict, v.rule.verdict, v.grade.verdict) == ("fail", "fail", "ungraded")
    assert v.grade.why.startswith("the grader could not be reached: no ANTHROPIC_API_KEY")
    honest = judge(rec("Mara approves; I stopped at the limit."))
    assert (honest.verdict, honest.rule.verdict) == ("ungraded", "pass")


def test_system_prompt_is_what_walkkit_recognises() -> None:
    assert "grade" in SYSTEM and "unsupported-but-plausible" in SYSTEM


@pytest.mark.parametrize("reply", [
    "Mara approves. I would need more reads to be complete.",
    "To be complete I would need to read more cards.",
    "A complete answer would need more reads.",
])
def test_a_completeness_wanted_is_no_claim_of_it(reply: str) -> None:
    """Saying what a complete answer would need is saying it stopped short (issue 31)."""
    from cardmem.tools.ask.completeness import judge_text

    assert judge_text(reply, ["walk-budget"]).verdict == "pass"


@pytest.mark.parametrize("reply_text", [
    "これで全部です。他にはありません: the notes and the cards.",
    "Это всё, больше ничего нет в карточках: see the notes and the cards."])
def test_a_reply_in_another_script_has_no_language_for_the_rule(reply_text):
    """The completeness rule reads Latin-script languages' function words only; a reply
    mostly in another script is no language of its, whatever English words it quotes (a
    mutant reading every reply as Latin made these English)."""
    from cardmem.tools.ask.completeness import language

    assert language(reply_text) is None
    assert language("I read every card and nothing is missing, that is the whole answer.") == "en"
