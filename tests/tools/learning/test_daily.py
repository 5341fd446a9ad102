"""The learner's daily model-free maintenance pass (hooks/daily.py)."""
from __future__ import annotations

import pytest

import json
import os
import subprocess
import sys
import time

from maintainkit import aged_store, commit_as_person, git

from cardmem.tools.learning.daily import maybe_maintain
from cardmem.store import maintain_record as record

pytestmark = pytest.mark.corpus  # every test here reads the corpus


def aged(tmp_path):
    return aged_store(tmp_path / "store")


def test_at_most_once_a_day_and_it_writes_no_card(tmp_path) -> None:
    store = aged(tmp_path)
    head = git(store, "rev-parse", "HEAD")
    out = maybe_maintain(store.root)
    assert out.startswith("; daily maintain: 1 open finding(s) in ")
    assert record.stale(store.root) == {"projects/temporal/error-handling"}
    assert git(store, "rev-parse", "HEAD") == head and git(store, "status", "--porcelain") == ""
    assert maybe_maintain(store.root) == ""  # not due
    assert maybe_maintain(store.root, now=time.time() + 2 * 86400).startswith("; daily")


def test_switched_off_and_no_store_say_nothing(tmp_path) -> None:
    store = aged(tmp_path)
    (store.root / "cardmem.toml").write_text("[maintain]\ndaily = false\n")
    assert maybe_maintain(store.root) == "" and record.load(store.root) == {}
    assert maybe_maintain(tmp_path / "nowhere") == ""


def test_the_stop_hooks_learner_runs_it_and_logs_it(tmp_path) -> None:
    store = aged(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.run([sys.executable, "-m", "cardmem.hosts.claude_code", "--store",
                           str(store.root), "stop"], input=json.dumps({"session_id": "s1"}),
                          capture_output=True, text=True, timeout=60,
                          env={**env, "CARDMEM_HOOK_FOREGROUND": "1"})
    assert proc.returncode == 0, proc.stderr
    last = (store.root / ".cardmem" / "hooks.log").read_text().splitlines()[-1]
    assert "no transcript_path" in last and "daily maintain: 1 open finding(s)" in last
    assert json.loads((store.root / ".cardmem/maintain.json").read_text())["kinds"]["stale"]


def test_the_pass_is_cut_off_cleanly_when_its_cpu_budget_runs_out(tmp_path) -> None:
    store = aged(tmp_path)
    assert maybe_maintain(store.root).startswith("; daily maintain: 1 open")
    kept = record.load(store.root)
    (store.root / "cardmem.toml").write_text("[maintain]\ndaily_cpu_s = 0\n")
    commit_as_person(store)
    head = git(store, "rev-parse", "HEAD")
    out = maybe_maintain(store.root, now=time.time() + 2 * 86400)
    assert "cut off: checking the store: out of CPU time (0 s)" in out
    assert "not checked: broken-link, duplicate, drift, stale, long-history" in out
    assert record.load(store.root) == kept  # nothing recorded over the last whole pass
    assert git(store, "rev-parse", "HEAD") == head and git(store, "status", "--porcelain") == ""
