"""`cardmem ask` in the first hour (issue 15): --json says a failure on stdout too, and
--progress says each step on stderr while the walk runs. In-process through CliRunner."""
from __future__ import annotations

import json

from fakeapi import FakeAPI
from gitremote import cli
from walkkit import HONEST, spiral_model


def test_ask_json_prints_a_json_error_when_it_fails(example_store, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    import os
    import shutil

    monkeypatch.setenv("PATH", os.path.dirname(shutil.which("git")))  # git, but no `claude`
    code, out, err = cli("ask", "Who approves a billing migration?", "--json",
                         "--store", str(example_store.root))
    assert code == 1
    doc = json.loads(out)
    assert doc["outcome"] == "unavailable" and doc["reply"] is None
    assert doc["error"].startswith("ask: needs a model")
    assert err.count("\n") == 1 and err.startswith("cardmem: ask: needs a model")
    code, out, _ = cli("ask", "  ", "--json", "--store", str(example_store.root))
    assert code == 1 and json.loads(out)["outcome"] == "error"


def test_ask_progress_names_each_step_on_stderr(example_store, fake_api: FakeAPI,
                                                monkeypatch) -> None:
    fake_api.handler = spiral_model(HONEST)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    code, out, err = cli("ask", "Who approves a production migration of billing-service?",
                         "--json", "--progress", "--store", str(example_store.root))
    assert code == 0, err
    assert json.loads(out)["outcome"] == "composed"
    steps = [ln for ln in err.splitlines() if ln.startswith("cardmem: ask: ")]
    assert steps[0] == "cardmem: ask: starting the model's client (api)"  # before the SDK loads
    assert steps[1].startswith("cardmem: ask: starting from ") and "asking the model (api)" in steps[1]
    assert any(s.startswith("cardmem: ask: walk: read_card ") and "(1 of 4," in s
               for s in steps), steps
    code, out, err = cli("ask", "Who approves a production migration of billing-service?",
                         "--json", "--store", str(example_store.root))
    assert "cardmem: ask: walk:" not in err  # not a terminal, not asked: quiet
