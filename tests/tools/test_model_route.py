"""tools/model.py's routes: which one a call takes, and the claude-code route against a
fake `claude` (a small script on PATH that records what it was given)."""
from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakeapi import FakeAPI, claude_on_path

from cardmem.store import config
from cardmem.store.errors import CardmemError
from cardmem.tools import model
from cardmem.tools.ask import receipts
from cardmem.tools.ask.answer import NO_WALK, RUNG1_SYSTEM, ask
from cardmem.tools.ask.judge import judge
from cardmem.tools.ask.walk_record import Limits

FAKE_CLAUDE = textwrap.dedent("""\
    #!{python}
    import json, os, subprocess, sys, time
    log = os.environ["FAKE_CLAUDE_LOG"]
    mode = os.environ.get("FAKE_CLAUDE_MODE", "ok")
    text = sys.stdin.read()
    with open(log, "w") as f:
        json.dump({{"argv": sys.argv[1:], "stdin": text,
                   "child_env": os.environ.get("CARDMEM_HOOK_CHILD")}}, f)
    def result(res, is_error=False, **kw):
        print(json.dumps({{"type": "result", "subtype": "success", "is_error": is_error,
                          "result": res, "stop_reason": "end_turn", **kw}}))
    if mode == "ok":
        result(os.environ.get("FAKE_CLAUDE_REPLY") or "Decision: " + text.upper()[:20],
               usage={{"input_tokens": 41, "output_tokens": 7, "cache_read_input_tokens": 3}},
               modelUsage={{"claude-haiku-fake": {{"inputTokens": 41}}}})
    elif mode == "is_error":
        result("API Error: 529 Overloaded", is_error=True); sys.exit(1)
    elif mode == "not_logged_in":
        result("Not logged in · Please run /login", is_error=True); sys.exit(1)
    elif mode == "bad_json":
        print("Welcome to Claude Code! {{not json")
    elif mode == "crash":
        sys.stderr.write("error: unknown option '--safe-mode'\\n"); sys.exit(2)
    elif mode == "hang":
        kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(log + ".pids", "w") as f:
            json.dump([os.getpid(), kid.pid], f)
        time.sleep(60)
    """)


@pytest.fixture
def fake_claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake `claude` first on PATH, and no API key: auto picks the claude-code route."""
    exe = claude_on_path(FAKE_CLAUDE, tmp_path / "bin", monkeypatch, tmp_path / "call.json")
    monkeypatch.delenv(model.CHILD_ENV, raising=False)
    return exe


def call(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "call.json").read_text())


# ---- choosing the route --------------------------------------------------------------

def test_auto_prefers_the_key_then_claude_then_says_both(fake_claude, monkeypatch) -> None:
    assert model.resolve() == ("claude-code", str(fake_claude))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert model.resolve() == ("api", "ANTHROPIC_API_KEY set")
    assert model.resolve({"route": "claude-code"}) == ("claude-code", str(fake_claude))
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(model.ModelUnavailable, match=r"^model: no ANTHROPIC_API_KEY set$"):
        model.resolve({"route": "api"})
    monkeypatch.setenv("PATH", str(fake_claude.parent.parent / "empty"))
    with pytest.raises(model.ModelUnavailable) as exc:
        model.complete("sys", "hello")
    assert str(exc.value) == ("model: no ANTHROPIC_API_KEY set, and `claude` (Claude Code) is "
                              "not on PATH: set the key, or install Claude Code and log in")


def test_claude_path_setting_wins_over_path(fake_claude, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert model.resolve({"claude_path": str(fake_claude)}) == ("claude-code", str(fake_claude))
    with pytest.raises(model.ModelUnavailable, match=r"claude_path '/nowhere/claude' is not"):
        model.resolve({"route": "claude-code", "claude_path": "/nowhere/claude"})


def test_route_status_needs_no_model_call(fake_claude, monkeypatch) -> None:
    assert model.route_status() == (True, f"model route: claude-code ({fake_claude})")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert model.route_status() == (True, "model route: api (ANTHROPIC_API_KEY set)")
    assert model.route_status({"route": "api"})[0]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    ok, line = model.route_status({"route": "api"})
    assert not ok and line == "model route: none: no ANTHROPIC_API_KEY set"
    ok, line = model.route_status({"route": "sideways"})
    assert not ok and "route must be one of auto, api, claude-code" in line
    assert not (fake_claude.parent.parent / "call.json").exists()  # nothing was run


def test_route_is_checked_in_cardmem_toml(tmp_path) -> None:
    assert config.load(tmp_path)["model"]["route"] == "auto"
    (tmp_path / config.FILE).write_text(config.default_text())
    assert config.load(tmp_path) == config.DEFAULTS  # the written file says the defaults
    (tmp_path / config.FILE).write_text('[model]\nroute = "subscription"\n')
    with pytest.raises(CardmemError, match=r"\[model\] route: must be one of"):
        config.load(tmp_path)


# ---- the claude-code route -------------------------------------------------------------

def test_argv_is_headless_without_tools_hooks_or_mcp(fake_claude, tmp_path) -> None:
    out = model.complete("Extract signals.", "the session text", cfg={"claude_model": "haiku"})
    assert out == model.Completion("Decision: THE SESSION TEXT", "claude-haiku-fake",
                                   "end_turn", {"input_tokens": 41, "output_tokens": 7})
    c = call(tmp_path)
    argv = c["argv"]
    assert argv[0] == "-p"
    for flag in ("--safe-mode", "--strict-mcp-config", "--no-session-persistence"):
        assert flag in argv
    assert argv[argv.index("--tools") + 1] == ""
    assert argv[argv.index("--system-prompt") + 1] == "Extract signals."
    assert argv[argv.index("--model") + 1] == "haiku"
    assert argv[argv.index("--output-format") + 1] == "json"
    assert "--bare" not in argv and "--setting-sources" not in argv
    assert "the session text" not in json.dumps(argv)  # the text goes on stdin, only there
    assert c["stdin"] == "the session text"
    assert c["child_env"] == "1"


def test_timeout_kills_the_whole_process_group(fake_claude, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "hang")
    start = time.monotonic()
    with pytest.raises(model.ModelError, match=r"^model: claude -p gave no answer within 1 s$"):
        model.complete("sys", "hello", cfg={"timeout_s": 1})
    assert time.monotonic() - start < 6
    pids = json.loads((tmp_path / "call.json.pids").read_text())
    for pid in pids:  # the child and the grandchild it started are both gone
        deadline = time.monotonic() + 3
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0); it has exited
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("mode, exc, line", [
    ("is_error", model.ModelError, "model: claude -p: API Error: 529 Overloaded"),
    ("not_logged_in", model.ModelUnavailable,
     "model: Claude Code is not logged in (Not logged in · Please run /login): run `claude` "
     "and log in, or set ANTHROPIC_API_KEY"),
    ("bad_json", model.ModelError,
     "model: claude -p printed no JSON result: Welcome to Claude Code! {not json"),
    ("crash", model.ModelError, "model: claude -p exited with 2: error: unknown option "
                                "'--safe-mode'"),
])
def test_failures_are_one_clear_line(fake_claude, monkeypatch, mode, exc, line) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", mode)
    with pytest.raises(model.ModelError) as got:
        model.complete("sys", "hello")
    assert type(got.value) is exc
    assert str(got.value) == line and "\n" not in line


def test_a_binary_that_cannot_run_is_unavailable(fake_claude) -> None:
    fake_claude.chmod(0o644)
    with pytest.raises(model.ModelUnavailable, match=r"^model: cannot run .*claude: "):
        model.claude_complete("sys", "hello", exe=str(fake_claude))


def test_api_route_when_a_key_is_set(fake_claude, fake_api: FakeAPI, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    fake_api.add("from the api")
    assert model.complete("sys", "hello").text == "from the api"
    assert not (fake_claude.parent.parent / "call.json").exists()
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "ok")
    assert model.complete("sys", "hi", cfg={"route": "claude-code"}).text == "Decision: HI"
    assert len(fake_api.messages_requests()) == 1


# ---- ask and judge on the claude-code route ---------------------------------------------

def test_ask_answers_from_rung_1_and_its_receipt_says_so(fake_claude, tmp_path, example_store,
                                                         monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_REPLY", "Mara Okonkwo approves it; I read only rung 1.")
    a = ask(example_store, "Who approves a billing migration?", asker="@priya")
    assert (a.outcome, a.reply) == ("composed", "Mara Okonkwo approves it; I read only rung 1.")
    assert a.tool_calls == 0
    c = call(tmp_path)
    assert c["argv"][c["argv"].index("--system-prompt") + 1] == RUNG1_SYSTEM
    assert c["stdin"].endswith("@priya asks:\nWho approves a billing migration?")
    (rec,) = list(receipts.iter_all(example_store))[-1:]
    assert rec["id"] == a.receipt_id and rec["route"] == "claude-code" and rec["walk"] == NO_WALK
    assert rec["model"] == "claude-haiku-fake" and rec["composed_in"] == "rung1"
    assert rec["tokens"] == {"input": 41, "output": 7}
    assert c["stdin"].startswith(rec["rung1"]["text"].rstrip())  # what the judge grades against
    assert [r["phase"] for r in rec["requests"]] == ["compose"]


def test_ask_failures_on_the_claude_code_route(fake_claude, example_store, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "is_error")
    a = ask(example_store, "Who approves a billing migration?", limits=Limits(on_deadline="receipt"))
    assert a.outcome == "fallback" and a.reason == "claude -p: API Error: 529 Overloaded"
    assert a.reply.startswith("[cardmem: no composed answer (claude -p: API Error")
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "not_logged_in")
    with pytest.raises(model.ModelUnavailable, match="not logged in"):
        ask(example_store, "Who approves a billing migration?")
    rec = list(receipts.iter_all(example_store))[-1]
    assert rec["outcome"] == "unavailable" and "not logged in" in rec["reason"]


def test_cardmem_ask_says_rung_1_only(fake_claude, example_store, monkeypatch) -> None:
    import subprocess

    monkeypatch.setenv("FAKE_CLAUDE_REPLY", "Mara approves.")
    p = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "ask", "Who approves?",
                        "--store", str(example_store.root)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "Mara approves.\n"
    assert p.stderr.endswith(f"no walk ({NO_WALK})\n")


def test_judge_grades_through_claude_code(fake_claude, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_REPLY", '{"grade": "supported", "reason": "in rung 1"}')
    rec = {"id": "r1", "question": "Who approves?", "reply": "Mara approves; I stopped at a "
           "limit.", "outcome": "composed", "floors": [{"floor": "walk-budget"}],
           "rung1": {"text": "Mara approves billing migrations."}, "tool_calls": []}
    v = judge(rec, cfg={})
    assert (v.verdict, v.grade.verdict, v.grade.why) == ("pass", "pass", "supported: in rung 1")
    assert v.grade.tokens == {"input_tokens": 41, "output_tokens": 7}
    assert "Mara approves billing migrations." in call(tmp_path)["stdin"]
