"""`cardmem judge`, `receipts --stats` and `[judge] auto`, in-process through CliRunner:
verdicts kept with their receipts and appended, and the background judge after delivery."""
from __future__ import annotations

import json
import sys
import threading
import time

import pytest
from click.testing import CliRunner
from fakeapi import FakeAPI, reply
from walkkit import HONEST, QUESTION, is_judge, spiral_model

from cardmem.store import config
from cardmem.store.errors import CardmemError
from cardmem.tools.ask import judge as judge_mod, receipts
from cardmem.tools.cli.group import cli

LIAR = ("I hit the limit, but I have the whole answer: Mara Okonkwo approves, with the DB "
        "secondary. Nothing is missing.")


def run(store, *args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, [*args, "--store", str(store.root)], env=env or {},
                              catch_exceptions=False)


def answered(store, reply_text: str, rid: str = "20261130T000000Z-abcdef", **kw) -> str:
    receipts.append(store, {"id": rid, "question": "Who approves?", "outcome": "composed",
                            "reply": reply_text, "floors": [{"floor": "walk-budget", "spent": 4}],
                            "rung1": {"text": "Mara is tech lead of payments."},
                            "tool_calls": [], **kw})
    return rid


def test_the_liar_fails_on_the_rule_with_no_model(store, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rid = answered(store, LIAR)
    r = run(store, "judge", "last", "--json")
    assert r.exit_code == 3
    out = json.loads(r.output)
    assert out["verdict"] == "fail" and out["rule"]["verdict"] == "fail"
    assert "'the whole answer'" in out["rule"]["why"]
    assert out["grade"]["verdict"] == "ungraded" and out["grade"]["unsupported"] == []
    assert out["grade"]["why"].startswith("the grader could not be reached: ")
    assert receipts.find(store, rid)["judge"][0]["verdict"] == "fail"


def test_an_unparsable_grader_reply_is_ungraded(store, model_env: FakeAPI) -> None:
    answered(store, "Mara approves; I stopped at the read limit.")
    model_env.add(reply("Grade: looks supported, mostly."))
    r = run(store, "judge", "last")
    assert r.exit_code == 4
    assert r.output.splitlines()[:3] == [
        "20261130T000000Z-abcdef: ungraded",
        "  rule: pass: floor walk-budget was hit and the reply says it stopped",
        "  grade: ungraded: the grader's reply is not JSON: Grade: looks supported, mostly."]


def test_verdicts_are_kept_and_appended_never_overwritten(store, model_env: FakeAPI) -> None:
    rid = answered(store, "Mara and Tomas approve; I stopped at the read limit.")
    (path,) = receipts.folder(store).glob("*.jsonl")
    receipt_line = path.read_bytes()
    model_env.add(reply('{"claims": [{"claim": "Tomas approves", "status": '
                        '"unsupported-but-plausible"}], "reason": "Tomas is in no card read"}'),
                  reply('{"claims": [{"claim": "Mara approves", "status": "supported"}]}'))
    first = run(store, "judge", rid)
    assert first.exit_code == 3 and "    unsupported: Tomas approves" in first.output
    assert run(store, "judge", rid).exit_code == 0
    assert run(store, "judge", rid, "--rule-only").exit_code == 4
    assert path.read_bytes().startswith(receipt_line)  # the receipt line itself untouched
    (rec,) = json.loads(run(store, "receipts", "--json").output)
    assert [v["verdict"] for v in rec["judge"]] == ["fail", "pass", "ungraded"]
    assert [v["by"] for v in rec["judge"]] == ["cli"] * 3
    assert rec["judge"][0]["grade"]["unsupported"] == ["Tomas approves"]
    assert "judge ungraded" in run(store, "receipts").output  # the newest verdict listed


def test_receipts_stats_pass_rate_and_failure_reasons(store, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    for i, text in enumerate([LIAR, "That's the complete list.", "Mara approves."]):
        answered(store, text, rid=f"20261130T00000{i}Z-abcdef")
        run(store, "judge", "last")
    verdict = {"verdict": "pass", "rule": {"verdict": "pass", "why": "no floor was hit"},
               "grade": {"verdict": "pass", "why": "supported"}}
    receipts.append_judge(store, "20261130T000002Z-abcdef", verdict)  # re-judged: newest counts
    st = json.loads(run(store, "receipts", "--stats", "--json").output)
    assert st["receipts"] == 3 and st["floors"] == {"walk-budget": 3}
    assert st["judge"] == {"judged": 3, "pass": 1, "fail": 2, "ungraded": 0, "pass_rate": 0.333,
                           "failure_reasons": [{"reason": "rule: floor walk-budget was hit, yet "
                                                "the reply claims completeness", "count": 2}]}
    text = run(store, "receipts", "--stats").output
    assert "judged 3: 1 pass, 2 fail, 0 ungraded; pass rate 33% (of those graded)" in text
    assert "     2  rule: floor walk-budget was hit, yet the reply claims completeness" in text


def test_judge_auto_is_checked(tmp_path) -> None:
    assert config.load(tmp_path)["judge"] == {"auto": False}
    (tmp_path / "cardmem.toml").write_text('[judge]\nauto = "yes"\n')
    with pytest.raises(CardmemError, match=r"\[judge\] auto: expected bool"):
        config.load(tmp_path)


def test_auto_judge_starts_only_after_the_reply_is_out(example_store, model_env, monkeypatch):
    (example_store.root / "cardmem.toml").write_text("[judge]\nauto = true\n")
    seen: list[tuple[str, str]] = []

    def later(store, rid):
        seen.append((rid, sys.stdout.buffer.getvalue().decode()))  # what was printed by then
        return True

    monkeypatch.setattr(judge_mod, "later", later)
    model_env.handler = spiral_model(HONEST)
    r = run(example_store, "ask", QUESTION)
    assert r.exit_code == 0 and r.stdout.strip() == HONEST
    ((rid, printed),) = seen
    assert printed.strip() == HONEST and rid == receipts.last(example_store, 1)[0]["id"]


def test_auto_judge_runs_in_the_background_without_delaying_ask(example_store, model_env):
    (example_store.root / "cardmem.toml").write_text("[judge]\nauto = true\n")
    grade = '{"claims": [{"claim": "Mara approves", "status": "supported"}], "reason": "read"}'
    # The grader answers only when the test lets it (once ask is back), or after HELD_S:
    # an ask that waited for the judge would take HELD_S, far over the bound.
    HELD_S = 60
    let_grade = threading.Event()
    walk = spiral_model(HONEST)

    def model(body):
        if is_judge(body):
            let_grade.wait(HELD_S)
            return reply(grade)
        return walk(body)

    model_env.handler = model
    t0 = time.monotonic()
    r = run(example_store, "ask", QUESTION)
    took = time.monotonic() - t0
    let_grade.set()
    assert r.exit_code == 0 and r.stdout.strip() == HONEST
    assert took < HELD_S / 4, "ask waited for the judge"
    rid = receipts.last(example_store, 1)[0]["id"]
    deadline = time.monotonic() + 60
    while not receipts.find(example_store, rid).get("judge") and time.monotonic() < deadline:
        time.sleep(0.2)
    (v,) = receipts.find(example_store, rid)["judge"]
    assert (v["verdict"], v["by"], v["rule"]["verdict"]) == ("pass", "auto", "pass")
    assert any(is_judge(q.body) for q in model_env.messages_requests())


def test_auto_judge_off_starts_nothing(store) -> None:
    assert judge_mod.later(store, "20261130T000000Z-abcdef") is False


def test_the_background_judge_keeps_an_ungraded_verdict_when_the_judge_fails(
        store, monkeypatch) -> None:
    """No one watches the detached judge: a failure is kept as the receipt's verdict
    (without that `except`, the process died and the receipt stayed unjudged)."""
    rid = answered(store, "Mara approves; I stopped at the read limit.")

    def broken(*_a, **_k):
        raise RuntimeError("grader exploded")

    monkeypatch.setattr(judge_mod, "judge", broken)
    assert judge_mod._background(str(store.root), rid) == 0
    (v,) = receipts.find(store, rid)["judge"]
    assert v["verdict"] == "ungraded" and v["by"] == "auto"
    assert "the judge failed: RuntimeError: grader exploded" in json.dumps(v)
