"""`cardmem ask / receipts / judge` and the demo step, as a user runs them: `python -m
cardmem.tools.cli`'s main in-process (tests/clikit.py), with no ANTHROPIC_* of ours."""
from __future__ import annotations

import json
import os

import pytest
from clikit import Ran, run
from fakeapi import FakeAPI, reply
from walkkit import CHAIN, HONEST, spiral_model

from cardmem.tools.cli import demo


def cardmem(*args: str, env: dict[str, str] | None = None) -> Ran:
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("ANTHROPIC_")}
    return run(*args, env={**unset, **(env or {})})


def api_env(api: FakeAPI) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake"}


def test_ask_without_a_key_is_one_clear_line(example_store) -> None:
    p = cardmem("ask", "Who approves a billing migration?", "--store", str(example_store.root))
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [
        "cardmem: ask: needs a model: no ANTHROPIC_API_KEY set, and `claude` (Claude Code) is "
        "not on PATH: set the key, or install Claude Code and log in; everything else works "
        "without one"]
    r = cardmem("receipts", "--json", "--store", str(example_store.root))
    (rec,) = json.loads(r.stdout)
    assert rec["outcome"] == "unavailable"


def test_ask_receipts_and_judge_round_trip(example_store, fake_api: FakeAPI) -> None:
    fake_api.handler = spiral_model(HONEST)
    s = str(example_store.root)
    p = cardmem("ask", "Who approves a production migration of billing-service?",
                "--asker", "@priya", "--store", s, env=api_env(fake_api))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == HONEST
    assert "4 reads of 5 tool calls asked, floor hit: walk-budget" in p.stderr
    listing = cardmem("receipts", "--last", "5", "--store", s)
    (line,) = [ln for ln in listing.stdout.splitlines() if not ln.startswith(" ")]
    assert "composed" in line and "4/5 calls run" in line and "walk-budget" in line
    recs = json.loads(cardmem("receipts", "--json", "--store", s).stdout)
    assert [c["input"]["id"] for c in recs[-1]["tool_calls"][:4]] == CHAIN[:4]
    rid = recs[-1]["id"]
    rule_only = cardmem("judge", rid, "--rule-only", "--store", s)
    # The rule passes the honest reply; with no grade the verdict is ungraded (exit 4).
    assert rule_only.returncode == 4 and rule_only.stdout.startswith(f"{rid}: ungraded\n"
                                                                     "  rule: pass: ")
    fake_api.handler = None
    fake_api.add(reply('{"grade": "contradicted", "reason": "Mara is not the lead"}'))
    graded = cardmem("judge", "last", "--json", "--store", s, env=api_env(fake_api))
    assert graded.returncode == 3
    assert json.loads(graded.stdout)["verdict"] == "fail"
    recs = json.loads(cardmem("receipts", "--json", "--store", s).stdout)
    assert [v["verdict"] for v in recs[-1]["judge"]] == ["ungraded", "fail"]


def test_no_composed_reply_exits_3_with_the_receipt(example_store, fake_api: FakeAPI) -> None:
    fake_api.add(reply("no.", stop_reason="refusal"))
    p = cardmem("ask", "x?", "--json", "--store", str(example_store.root), env=api_env(fake_api))
    assert p.returncode == 3
    out = json.loads(p.stdout)
    assert out["reply"] is None and out["reason"] == "the model refused"
    assert p.stderr.strip() == (f"cardmem: ask: no composed reply (the model refused); "
                                f"on_deadline gave silence; receipt {out['receipt_id']}")


@pytest.mark.parametrize("bad,code,msg", [
    ("nonsense", 2, "cardmem: receipt 'nonsense': not a receipt id"),
    ("20261130T000000Z-abcdef", 1, "cardmem: receipt 20261130T000000Z-abcdef: no such receipt"),
    ("last", 1, "cardmem: receipts: none yet"),
])
def test_judge_bad_receipt(example_store, bad: str, code: int, msg: str) -> None:
    p = cardmem("judge", bad, "--store", str(example_store.root))
    assert p.returncode == code and p.stderr.startswith(msg) and len(p.stderr.splitlines()) == 1


def test_demo_shows_a_walk_with_a_key_and_says_how_without(fake_api: FakeAPI,
                                                          demo_without_a_key: Ran) -> None:
    assert any(step[1] == "ask" for step in demo.STEPS)
    fake_api.handler = spiral_model(HONEST)
    with_key = cardmem("demo", env=api_env(fake_api))
    assert with_key.returncode == 0, with_key.stderr
    assert HONEST in with_key.stdout
    assert "4 reads of 5 tool calls asked, floor hit: walk-budget" in with_key.stdout
    without = demo_without_a_key
    assert without.returncode == 0
    assert "cardmem: ask: needs a model: no ANTHROPIC_API_KEY set" in without.stdout
