"""`cardmem doctor`: says what is wrong, one line each, and exits non-zero for it."""
from __future__ import annotations

import subprocess
import sys

from clikit import Ran, run

from cardmem.store.store import Store


def doctor(store: Store) -> Ran:
    """`cardmem doctor` in-process (tests/clikit.py)."""
    return run("doctor", "--store", str(store.root))


def test_a_healthy_store_passes_with_its_index_checked(example_store: Store) -> None:
    proc = doctor(example_store)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PROBLEM" not in proc.stdout
    assert "index: up to date" in proc.stdout


def test_broken_card_detached_head_and_stale_lock_are_each_named(store: Store) -> None:
    store.new("feedback/ok", body="fine")
    subprocess.run(["git", "-C", str(store.root), "switch", "-q", "--detach"], check=True)
    bad = store.root / "feedback" / "bad.md"
    bad.write_bytes(b"---\ntitle: [unclosed\n---\nbody\n")
    before = bad.read_bytes()
    (store.root / ".git" / "index.lock").write_text("")
    proc = doctor(store)
    assert proc.returncode == 1
    problems = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBLEM")]
    assert any(str(bad) in ln and "bad YAML" in ln for ln in problems), problems
    assert any("index.lock" in ln and "remove the file" in ln for ln in problems), problems
    assert any("HEAD is detached" in ln for ln in problems), problems
    assert bad.read_bytes() == before  # reported, never touched
    assert (store.root / ".git" / "index.lock").exists()  # reported, never deleted


def test_the_retry_backlog_fails_doctor_when_old_or_given_up(example_store: Store,
                                                             monkeypatch) -> None:
    import time

    from cardmem.store.learning import retry

    turns = [{"role": "user", "text": "hello"}]
    retry.fail(example_store.root, "young", turns, "HTTP 529: overloaded")
    proc = doctor(example_store)
    assert proc.returncode == 0, proc.stdout
    assert "ok       1 session(s) waiting to be learned, oldest failed 0 min ago" in proc.stdout
    # Waiting for two days: retries alone will not mend it.
    retry.fail(example_store.root, "old", turns, "no ANTHROPIC_API_KEY set", counts=False,
               now=time.time() - 2 * 86400)
    proc = doctor(example_store)
    assert proc.returncode == 1
    problem = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBLEM")]
    assert problem == ["PROBLEM  2 session(s) waiting to be learned, oldest failed 2 d ago "
                       "(last error: HTTP 529: overloaded); check the model "
                       "(ANTHROPIC_API_KEY, [model] in cardmem.toml) and .cardmem/hooks.log"]
    # Given up: said until a person deals with it.
    retry.remove(example_store.root, "old")
    with monkeypatch.context() as m:  # the learner's limit, not the doctor's (run in-process)
        m.setattr(retry, "MAX_ATTEMPTS", 1)
        retry.fail(example_store.root, "young", turns, "HTTP 400: prompt is too long")
    proc = doctor(example_store)
    assert proc.returncode == 1
    assert "PROBLEM  1 session(s) given up after failed extraction (last error: HTTP 400: " \
           "prompt is too long); their excerpts are in .cardmem/retry/given-up/" in proc.stdout


def test_model_route_is_named_and_a_broken_one_is_a_problem(store: Store, tmp_path,
                                                            monkeypatch) -> None:
    import os

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    proc = doctor(store)  # auto with neither route: a warning, not a problem
    assert proc.returncode == 0, proc.stdout
    assert ("warning  model route: none: no ANTHROPIC_API_KEY set, and `claude` (Claude Code) "
            "is not on PATH") in proc.stdout
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "claude").write_text("#!/bin/sh\nexit 99\n")  # never run: doctor calls no model
    (bindir / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert f"ok       model route: claude-code ({bindir / 'claude'})" in doctor(store).stdout
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert "ok       model route: api (ANTHROPIC_API_KEY set)" in doctor(store).stdout
    (store.root / "cardmem.toml").write_text('[model]\nroute = "claude-code"\n'
                                             'claude_path = "/nowhere/claude"\n')
    proc = doctor(store)
    assert proc.returncode == 1
    assert ("PROBLEM  model route: none: route claude-code: [model] claude_path "
            "'/nowhere/claude' is not an executable file") in proc.stdout


def test_an_old_spool_fails_doctor(example_store: Store) -> None:
    import os
    import time

    spool = example_store.root / ".cardmem" / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    batch = spool / "b1.json"
    batch.write_text('{"session": "s", "day": "2026-11-30", "signals": ["Worked: x"]}')
    proc = doctor(example_store)
    assert "ok       1 batch(es) of signals spooled" in proc.stdout
    old = time.time() - 3 * 86400
    os.utime(batch, (old, old))
    proc = doctor(example_store)
    assert proc.returncode == 1
    assert "PROBLEM  1 batch(es) of signals spooled (the store was busy), oldest 3 d old" \
        in proc.stdout
