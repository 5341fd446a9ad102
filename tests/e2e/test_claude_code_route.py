"""End to end: learning through the user's own Claude Code login (the claude-code route).

A temporary HOME like a subscription user's: no ANTHROPIC_API_KEY anywhere, the login in
~/.claude/settings.json (here an `apiKeyHelper`), cardmem's hooks and MCP server
installed, plus marker hooks and a marker MCP server that leave a file if they ever
start. The Stop hook runs as Claude Code would run it; with no key and the pinned
`claude` on PATH, extraction goes through headless `claude -p` to the fake Messages API.
The test shows the request carried the extraction prompt and the helper's key, that no
hook or MCP server started in that child, and that the signal was filed. Nothing
reaches the network.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeapi import FakeAPI, reply
from hostkit import cardmem, host_env, learners_done
from hostworld import SIGNAL, wait_for_commit

from cardmem.store.git import runner as git
from cardmem.tools.learning.extract import SYSTEM as EXTRACT_SYSTEM

HELPER_KEY = "sk-ant-fake-helper"
TURNS = [("user", "Set the frobnicator retry limit for widget jobs to five. " * 6),
         ("assistant", "Done: the frobnicator now retries widget jobs five times, then "
                       "dead-letters them. " * 6)]


def _system_text(body: dict) -> str:
    system = body.get("system") or ""
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return system


@pytest.fixture
def subscriber(tmp_path: Path, claude_code: Path) -> dict:
    home, store, marks = tmp_path / "home", tmp_path / "store", tmp_path / "marks"
    for d in (home, marks):
        d.mkdir()
    env = host_env(home, CARDMEM_STORE=str(store))
    cardmem("init", str(store), env=env)
    cardmem("new", "entities/frobnicator", "--title", "Frobnicator", "--body",
            "The frobnicator service pulls widget jobs from the queue and retries failures.",
            env=env)
    cardmem("install", "claude-code", env=env)  # cardmem's hooks and `cardmem mcp`, for real
    settings_path = home / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    settings["apiKeyHelper"] = f"echo {HELPER_KEY}"
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        settings["hooks"].setdefault(event, []).append(
            {"hooks": [{"type": "command", "command": f"echo ran >> {marks / event}"}]})
    settings_path.write_text(json.dumps(settings))
    claude_json = home / ".claude.json"
    user = json.loads(claude_json.read_text()) if claude_json.exists() else {}
    user.setdefault("mcpServers", {})["marker"] = {
        "type": "stdio", "command": "sh",
        "args": ["-c", f"echo $PPID >> {marks / 'mcp'}; exec cat"]}  # $PPID: who started it
    claude_json.write_text(json.dumps(user))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(
        {"type": role, "uuid": f"u{i}", "sessionId": "5e55104a-route", "isSidechain": False,
         "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"
        for i, (role, text) in enumerate(TURNS)))
    path = f"{claude_code.parent}{os.pathsep}{env['PATH']}"
    return {"env": {**env, "PATH": path}, "store": store, "marks": marks,
            "transcript": transcript, "home": home}


def test_stop_hook_learns_through_the_claude_code_login(subscriber: dict) -> None:
    store, marks = subscriber["store"], subscriber["marks"]

    def answer(body: dict) -> object:
        if EXTRACT_SYSTEM in _system_text(body):
            return reply(f"Here is what the session taught:\n{SIGNAL}\nnot a contract line")
        return None  # anything else gets the fallback, and is counted below

    with FakeAPI(handler=answer) as api:
        env = {**subscriber["env"], "ANTHROPIC_BASE_URL": api.base_url,
               "CARDMEM_HOOK_FOREGROUND": "1"}
        assert not any(k == "ANTHROPIC_API_KEY" for k in env)
        before = git.head(store)
        payload = {"session_id": "5e55104a-route", "transcript_path":
                   str(subscriber["transcript"]), "hook_event_name": "Stop"}
        proc = subprocess.run([sys.executable, "-m", "cardmem.hosts.claude_code", "stop"],
                              input=json.dumps(payload), env=env, capture_output=True,
                              text=True, timeout=120, cwd=subscriber["home"])
        assert proc.returncode == 0, proc.stderr
        log_text = (store / ".cardmem" / "hooks.log").read_text()
        requests = api.messages_requests()

    # The one model request: the extraction prompt, the login's key, no tools.
    assert len(requests) == 1, [_system_text(r.body)[:200] for r in requests]
    (req,) = requests
    assert EXTRACT_SYSTEM in _system_text(req.body)
    assert req.api_key == HELPER_KEY
    assert not req.body.get("tools")
    assert "frobnicator retry limit" in json.dumps(req.body["messages"])
    # Nothing of the user's setup ran in the child: no hook, no MCP server, no cardmem hook.
    assert sorted(p.name for p in marks.iterdir()) == []
    assert [ln for ln in log_text.splitlines() if " session-start " in ln] == []
    # The signal came back and was filed, as one commit.
    assert "stop/learn" in log_text and "filed 1 signal(s) into entities/frobnicator" in log_text
    assert git.head(store) != before
    text = (store / "entities" / "frobnicator.md").read_text()
    assert text.rstrip().endswith(SIGNAL) and "not a contract line" not in text


def test_extract_returns_signals_through_the_claude_code_route(subscriber: dict,
                                                               claude_code: Path,
                                                               monkeypatch) -> None:
    from cardmem.tools.learning.extract import Signal, extract

    with FakeAPI(handler=lambda body: reply(SIGNAL + "\nchatter")) as api:
        env = {**subscriber["env"], "ANTHROPIC_BASE_URL": api.base_url}
        for k in [k for k in os.environ if k not in env]:
            monkeypatch.delenv(k)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        signals = extract([{"role": r, "text": t} for r, t in TURNS],
                          cfg={"route": "claude-code", "claude_path": str(claude_code),
                               "claude_model": "haiku"})
        (req,) = api.messages_requests()
    assert signals == [Signal("Decision", SIGNAL.removeprefix("Decision: "))]
    assert EXTRACT_SYSTEM in _system_text(req.body) and req.api_key == HELPER_KEY
    assert "haiku" in req.body["model"]


def _project(tmp_path: Path) -> Path:
    """The project a session runs in: a git repository named widgets."""
    proj = tmp_path / "work" / "widgets"
    proj.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


def _answers(lesson: str, said: str):
    """The fake API's answers: `lesson` to the learner's extraction, `said` (long) to the
    session."""
    def answer(body: dict) -> object:
        return reply(lesson if EXTRACT_SYSTEM in _system_text(body) else said * 30)

    return answer


def test_a_real_session_is_learned_from_with_no_api_key(subscriber: dict, claude_code: Path,
                                                        tmp_path: Path) -> None:
    """The whole loop a subscriber gets: Claude Code runs a session on the helper's key,
    its Stop hook detaches, and the learner's own `claude -p` (nested in a Claude Code
    session's environment) extracts and files the signal."""
    store, marks = subscriber["store"], subscriber["marks"]
    proj = _project(tmp_path)
    answer = _answers(SIGNAL, "Done: the frobnicator retries widget jobs five times now. ")

    with FakeAPI(handler=answer) as api:
        env = {**subscriber["env"], "ANTHROPIC_BASE_URL": api.base_url}
        before = git.head(store)
        proc = subprocess.run([str(claude_code), "-p", "Set the frobnicator retry limit for "
                               "widget jobs to five. " * 20, "--output-format", "json"],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        log_text = wait_for_commit(store, before, timeout=90)
        learners_done(store)  # a second learner (Stop and SessionEnd) must not call the model
        extraction = [r for r in api.messages_requests()
                      if EXTRACT_SYSTEM in _system_text(r.body)]
        keys = {r.api_key for r in api.messages_requests()}
    assert len(extraction) == 1 and extraction[0].api_key == HELPER_KEY
    assert keys == {HELPER_KEY}
    # The outer session ran each marker hook once; the learner's child ran none of them.
    # The marker MCP server is started by one Claude Code only, the outer one (its parent
    # pid); under load that one may start it again (it speaks no MCP), which is no recursion.
    counts = {p.name: len(set(p.read_text().splitlines())) if p.name == "mcp"
              else len(p.read_text().splitlines()) for p in marks.iterdir()}
    assert counts == {"SessionStart": 1, "UserPromptSubmit": 1, "Stop": 1, "SessionEnd": 1,
                      "mcp": 1}, counts
    assert len([ln for ln in log_text.splitlines() if " session-start " in ln]) == 1
    assert (store / "entities" / "frobnicator.md").read_text().rstrip().endswith(SIGNAL)


LESSON = "Worked: the zorblat fixtures load only with ZORBLAT_SEED=7 exported first"


def test_the_next_session_of_the_project_starts_with_the_lesson(subscriber: dict,
                                                                  claude_code: Path,
                                                                  tmp_path: Path) -> None:
    """The loop closed, as a subscriber lives it: session one (no API key) teaches a lesson
    that belongs to no card; it is filed for its project; session two in the same project
    has it in its first request."""
    store = subscriber["store"]
    proj = _project(tmp_path)
    answer = _answers(LESSON, "Exported ZORBLAT_SEED=7 and the zorblat fixtures load now. ")

    def session(api: FakeAPI, prompt: str) -> None:
        env = {**subscriber["env"], "ANTHROPIC_BASE_URL": api.base_url}
        proc = subprocess.run([str(claude_code), "-p", prompt, "--output-format", "json"],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]

    with FakeAPI(handler=answer) as api:
        before = git.head(store)
        session(api, "Why do the zorblat fixtures fail to load? " * 30)
        log_text = wait_for_commit(store, before, timeout=90)
    lessons = store / "projects" / "widgets" / "signals.md"
    assert LESSON in lessons.read_text(), log_text
    learners_done(store)  # the second learner (SessionEnd) is done before the next session

    with FakeAPI(fallback=reply("Noted.")) as api:
        session(api, "Load the fixtures.")
        first = next(r for r in api.messages_requests()
                     if "Bash" in {t.get("name") for t in r.body.get("tools") or []})
    body = json.dumps(first.body)
    assert "Recent lessons from widgets" in body and LESSON in body
