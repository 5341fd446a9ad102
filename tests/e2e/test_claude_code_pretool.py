"""End to end: rules at the point of action, with the real Claude Code CLI (issue 21).

`cardmem install claude-code` registers the PreToolUse hook; a scripted model (the fake
Messages API) calls Bash once per session, with Bash allowed (`--allowedTools Bash`, as a
user who lets the agent run commands). What Claude Code 2.1.332 does with each answer,
as observed here:

- deny: the tool does not run (no part of a compound line), and the next request carries
  a tool_result with is_error and the hook's reason (`PreToolUse:Bash hook error: ...`);
- remind: the tool runs, and the next request carries a system message
  `PreToolUse:Bash hook additional context: ...` with the rule's text;
- ask: in `claude -p` nobody can answer a permission prompt, so the call is refused: the
  tool does not run, the reason is the tool_result the model reads, and the session's JSON
  result lists the call under `permission_denials` (interactively the person is asked);
- no rule: the tool runs and nothing of cardmem's is added.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeapi import FakeAPI, reply, tool_use
from hostkit import cardmem, host_env

PERSON = {"GIT_AUTHOR_NAME": "Tess", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess", "GIT_COMMITTER_EMAIL": "tess@example.com"}
RULES = {
    "feedback/no-force-push": ("Never force-push", "deny",
                               '["git push --force*", "git push -f*"]',
                               "Force-pushing rewrites history others pulled (WOMBAT-DENY-5150)."),
    "feedback/hard-reset": ("Ask before a hard reset", "ask", '["git reset --hard*"]',
                            "A hard reset drops uncommitted work (PLATYPUS-ASK-6262)."),
    "feedback/tags": ("Release tags are signed", "remind", '["git tag*"]',
                      "Make release tags with `git tag -s` (ECHIDNA-REMIND-7373)."),
}


@pytest.fixture
def world(tmp_path: Path) -> dict:
    home, store, proj = tmp_path / "home", tmp_path / "store", tmp_path / "work" / "widgets"
    home.mkdir()
    proj.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    env = host_env(home, CARDMEM_STORE=str(store), **PERSON)
    cardmem("init", str(store), env=env)
    for cid, (title, enforce, applies, body) in RULES.items():
        p = store / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: {title}\ntype: feedback\napplies_to: {applies}\n"
                     f"enforce: {enforce}\n---\n{body}\n")
    subprocess.run(["git", "-C", str(store), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(store), "commit", "-qm", "rules"], check=True, env=env)
    out = cardmem("install", "claude-code", "--no-mcp", env=env)
    assert "3 rules naming the tool calls they govern" in out
    return {"home": home, "store": store, "proj": proj, "env": env}


def session(claude: Path, world: dict, command: str) -> tuple[dict, list[dict]]:
    """One `claude -p` session whose model runs `command` with Bash, then stops. Returns
    the JSON result and the main-loop requests (those offering the Bash tool)."""
    turns = {"n": 0}

    def answer(body: dict) -> object:
        if "Bash" not in {t.get("name") for t in body.get("tools") or []}:
            return reply("EMPTY")  # title, extraction and other side calls
        turns["n"] += 1
        if turns["n"] == 1:
            return reply(tool_use("Bash", {"command": command, "description": "the step"}))
        return reply("Done.")

    with FakeAPI(handler=answer) as api:
        env = {**world["env"], "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"}
        proc = subprocess.run([str(claude), "-p", "Do the step.", "--output-format", "json",
                               "--allowedTools", "Bash"], cwd=world["proj"], env=env,
                              capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-2000:]
        main = [r.body for r in api.messages_requests()
                if "Bash" in {t.get("name") for t in r.body.get("tools") or []}]
    assert len(main) >= 2, "the model's tool call never got an answer"
    return json.loads(proc.stdout), main


def after_call(requests: list[dict]) -> tuple[dict, str]:
    """The tool_result of the scripted call, and everything the next request added."""
    msgs = requests[1]["messages"]
    at = max(i for i, m in enumerate(msgs) if m["role"] == "assistant"
             and any(b.get("type") == "tool_use" for b in m["content"]))
    added = msgs[at + 1:]
    result = next(b for m in added if isinstance(m["content"], list) for b in m["content"]
                  if b.get("type") == "tool_result")
    return result, json.dumps(added, ensure_ascii=False)


def tool_text(result: dict) -> str:
    c = result["content"]
    return c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)


def test_deny_stops_a_compound_command_and_names_the_rule(world, claude_code):
    _, reqs = session(claude_code, world, "touch DENIED && git push --force origin main")
    assert not (world["proj"] / "DENIED").exists()  # not even the part before the push
    result, _ = after_call(reqs)
    text = tool_text(result)
    assert result.get("is_error") is True
    assert "refused by the user's rule `feedback/no-force-push`" in text
    assert "`git push --force*` matched `git push --force origin main`" in text
    assert "WOMBAT-DENY-5150" in text
    events = (world["store"] / ".cardmem" / "rule-events.jsonl").read_text().splitlines()
    assert [(e["rule"], e["action"]) for e in map(json.loads, events)] == \
        [("feedback/no-force-push", "deny")]


def test_remind_lets_the_call_run_and_the_rule_reaches_the_model(world, claude_code):
    _, reqs = session(claude_code, world, "touch REMINDED && git tag -l")
    assert (world["proj"] / "REMINDED").exists()
    result, added = after_call(reqs)
    assert result.get("is_error") is not True
    assert "PreToolUse:Bash hook additional context" in added
    assert "ECHIDNA-REMIND-7373" in added and "feedback/tags" in added


def test_ask_asks_and_in_print_mode_the_call_is_refused(world, claude_code):
    out, reqs = session(claude_code, world, "touch ASKED && git reset --hard")
    assert not (world["proj"] / "ASKED").exists()
    result, _ = after_call(reqs)
    text = tool_text(result)
    assert result.get("is_error") is True
    assert "asks for confirmation" in text and "PLATYPUS-ASK-6262" in text
    assert [d["tool_input"]["command"] for d in out["permission_denials"]] == \
        ["touch ASKED && git reset --hard"]


def test_an_ungoverned_command_runs_untouched(world, claude_code):
    out, reqs = session(claude_code, world, "touch PLAIN && ls")
    assert (world["proj"] / "PLAIN").exists()
    result, added = after_call(reqs)
    assert result.get("is_error") is not True
    assert "PreToolUse" not in added and "cardmem" not in added
    assert not out.get("permission_denials")
    # The table built at install was current: the hook read it, said nothing, logged nothing.
    log = (world["store"] / ".cardmem" / "hooks.log").read_text()
    assert "session-start" in log and "pre-tool-use" not in log
