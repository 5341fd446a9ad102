"""End to end with the real host: Claude Code (npm, pinned) against the fake Messages API.

A temporary HOME gets cardmem's hooks through `cardmem install claude-code`; `claude -p`
runs headless in a temporary git project. The test shows that a feedback rule from the
store reached the model's request (the SessionStart hook's additionalContext), and that
after the session the learning hook filed the session's signal into the right card, as
one agent commit. Nothing reaches the network: every model call lands on 127.0.0.1.

Claude Code is installed once into <repo>/.cache/claude-code (gitignored). Where npm
cannot install it the test fails in CI (CI set) and is skipped elsewhere.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hostkit import cardmem, learners_done
from hostworld import RULE_MARK, SIGNAL, base_world, wait_for_commit
from fakeapi import FakeAPI, reply

from cardmem.store.git import runner as git
from cardmem.tools.learning.extract import SYSTEM as EXTRACT_SYSTEM


@pytest.fixture
def world(tmp_path):
    """A HOME with cardmem's hooks installed, a store, and a git project to work in."""
    world = base_world(tmp_path)
    env = world["env"]
    cardmem("new", "entities/frobnicator", "--title", "Frobnicator", "--body",
            "The frobnicator service pulls widget jobs from the queue and retries failures.",
            env=env)
    cardmem("new", "entities/gizmo-api", "--title", "Gizmo API", "--body",
            "The gizmo API serves widget metadata to the dashboard.", env=env)
    cardmem("new", "projects/widgets/layout", "--title", "Widgets repo layout",
            "--project", "widgets", "--body", "Code lives in src/widgets.", env=env)
    cardmem("install", "claude-code", env=env)
    return world


def test_claude_code_session_reads_and_writes_memory(world, claude_code: Path):
    exe = claude_code
    store, env = world["store"], world["env"]

    def answer(body: dict) -> object:
        if body.get("system") == EXTRACT_SYSTEM:  # cardmem's extraction call
            return reply(f"Here is what the session taught:\n{SIGNAL}\nnot a contract line")
        return reply("Done: the widget job retry limit is now five.")

    with FakeAPI(handler=answer) as api:
        env = {**env, "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"}
        before = git.head(store)
        proc = subprocess.run([str(exe), "-p", "Set the frobnicator retry limit for widget "
                               "jobs to five, then dead-letter them.", "--output-format", "json"],
                              cwd=world["proj"], env=env, capture_output=True, text=True,
                              timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        result = json.loads(proc.stdout)
        assert result["result"] == "Done: the widget job retry limit is now five."
        session = result["session_id"]

        # 1. The rule reached the model: the SessionStart hook's context is in the request.
        host_calls = [r for r in api.messages_requests()
                      if r.body.get("system") != EXTRACT_SYSTEM]
        seen = [r for r in host_calls if RULE_MARK in json.dumps(r.body)]
        assert seen, "the feedback rule never reached the model"
        body = json.dumps(seen[0].body)
        assert "Always indent widgets code with tabs" in body
        assert "## Project widgets" in body and "projects/widgets/layout" in body

        # 2. After the session, the learning hook files the signal as one commit.
        log_text = wait_for_commit(store, before, timeout=90)
        learners_done(store)  # a second learner (Stop and SessionEnd) must not add a commit
    commits = git.log(store)
    # Stop or SessionEnd, whichever learner got there first, each naming its own hook
    new = [c for c in commits if "Cardmem-Source: stop-hook" in c.message
           or "Cardmem-Source: session-end-hook" in c.message]
    assert len(new) == 1, [c.message for c in commits]
    c = new[0]
    assert c.author == "cardmem-agent <agent@cardmem.invalid>"
    assert c.paths == ["entities/frobnicator.md"]
    assert f"Cardmem-Session: {session}" in c.message.splitlines()  # the whole id
    text = (store / "entities" / "frobnicator.md").read_text()
    assert text.rstrip().endswith(f"· session {session[:7]} · {SIGNAL}")
    assert "not a contract line" not in text
    extraction = [r for r in api.messages_requests() if r.body.get("system") == EXTRACT_SYSTEM]
    assert len(extraction) == 1
    assert "frobnicator retry limit" in extraction[0].body["messages"][0]["content"]
    assert "session-start" in log_text and f"session={session[:12]}" in log_text
