"""One hook program, every host: each host's documented payload read, and answered in the
host's own fields; a payload the hook cannot read never breaks the session.

The payloads are the hosts' documented ones:
- Codex: https://developers.openai.com/codex/hooks (and codex-rs/hooks/schema/generated/
  pre-tool-use.command.input.schema.json: tool_name "Bash", tool_input.command);
- Gemini CLI: https://geminicli.com/docs/hooks/reference (BeforeTool: tool_name,
  tool_input; decision/reason; BeforeAgent: prompt; stdout JSON only);
- Cursor: https://cursor.com/docs/agent/hooks, as summarised at
  https://cupcake.eqtylab.io/reference/harnesses/cursor (conversation_id,
  workspace_roots, beforeShellExecution: command, cwd; answers permission,
  user_message, agent_message; sessionStart: additional_context);
- Copilot CLI: https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
  (camelCase preToolUse: sessionId, timestamp, cwd, toolName, toolArgs; answers
  permissionDecision allow/deny/ask, permissionDecisionReason).
"""
from __future__ import annotations

import io
import json

import pytest

from cardmem.hosts.adapters import HOSTS, load
from cardmem.hosts.hook import run

DENY = ("feedback/no-force-push", "Never force-push", "deny", '["git push --force*"]',
        "Force-pushing rewrites history others have pulled.")
ASK = ("feedback/migrations", "Ask before touching migrations", "ask", '["path: migrations/**"]',
       "Migrations run against production on deploy.")


def rule(store, cid, title, enforce, applies, body):
    p = store.root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\ntitle: {title}\ntype: feedback\napplies_to: {applies}\n"
                 f"enforce: {enforce}\n---\n{body}\n")


def hook(host, event, payload, store, capsys):
    out = io.StringIO()
    data = payload if isinstance(payload, str) else json.dumps(payload)
    assert run(event, str(store.root), io.StringIO(data), out, host=host) == 0
    return out.getvalue(), capsys.readouterr().err


def answer(host, event, payload, store, capsys):
    out, err = hook(host, event, payload, store, capsys)
    return json.loads(out) if out.strip() else None


SHELL = {  # each host's documented call of `git push --force origin main`
    "claude": ("PreToolUse", {"session_id": "s", "cwd": "/w", "tool_name": "Bash",
                              "tool_input": {"command": "git push --force origin main"}}),
    "codex": ("PreToolUse", {"session_id": "s", "turn_id": "t", "transcript_path": None, "cwd": "/w",
                             "hook_event_name": "PreToolUse", "model": "gpt-5",
                             "permission_mode": "default", "tool_name": "Bash", "tool_use_id": "c1",
                             "tool_input": {"command": "git push --force origin main"}}),
    "gemini": ("BeforeTool", {"session_id": "s", "transcript_path": "/t.json", "cwd": "/w",
                              "hook_event_name": "BeforeTool", "timestamp": "2026-12-02T10:00:00Z",
                              "tool_name": "run_shell_command",
                              "tool_input": {"command": "git push --force origin main"}}),
    "cursor": ("beforeShellExecution", {"hook_event_name": "beforeShellExecution",
                                        "conversation_id": "conv-1", "generation_id": "gen-1",
                                        "workspace_roots": ["/w"], "cwd": "/w",
                                        "command": "git push --force origin main"}),
    "copilot": ("preToolUse", {"sessionId": "s", "timestamp": 1796231000000, "cwd": "/w",
                               "toolName": "bash",
                               "toolArgs": json.dumps({"command": "git push --force origin main",
                                                       "description": "push"})}),
}


def refusal(host, out):
    """(decision, the reason the model reads) from a host's answer."""
    if host in ("claude", "codex"):
        h = out["hookSpecificOutput"]
        return h["permissionDecision"], h["permissionDecisionReason"]
    if host == "gemini":
        return out["decision"], out["reason"]
    if host == "cursor":
        return out["permission"], out["agent_message"]
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.mark.parametrize("host", HOSTS)
def test_a_deny_rule_refuses_in_the_hosts_own_fields(host, store, capsys):
    rule(store, *DENY)
    event, payload = SHELL[host]
    decision, reason = refusal(host, answer(host, event, payload, store, capsys))
    assert decision == "deny"
    assert "feedback/no-force-push" in reason and "Force-pushing rewrites history" in reason


@pytest.mark.parametrize("host", HOSTS)
def test_an_ungoverned_call_gets_no_answer(host, store, capsys):
    rule(store, *DENY)
    event, payload = SHELL[host]
    plain = json.loads(json.dumps(payload).replace("git push --force origin main", "ls -la"))
    out, err = hook(host, event, plain, store, capsys)
    # nothing to say, in the host's way: nothing, or `{}` where stdout must be JSON (Gemini)
    assert out.strip() == load(host).EMPTY and err == ""


def test_codex_shell_as_an_argv_list_is_the_command_a_rule_matches(store, capsys):
    """Codex's `shell` tool sends its command as argv (`bash -lc SCRIPT`): the deny must see
    the script, not the list's Python text, or the push runs."""
    rule(store, *DENY)
    for argv in (["bash", "-lc", "git push --force origin main"],
                 ["git", "push", "--force", "origin", "main"]):
        payload = {"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse",
                   "tool_name": "shell", "tool_input": {"command": argv}}
        decision, reason = refusal("codex", answer("codex", "PreToolUse", payload, store, capsys))
        assert decision == "deny" and "feedback/no-force-push" in reason, argv


EDIT = {  # an edit of a governed path: ask where the host can, refuse with the reason where not
    "claude": ("PreToolUse", {"tool_name": "Edit", "tool_input": {"file_path": "/w/db/migrations/1.py"}}, "ask"),
    "codex": ("PreToolUse", {"tool_name": "apply_patch", "tool_input": {
        "command": "*** Begin Patch\n*** Update File: /w/db/migrations/1.py\n@@\n-a\n+b\n*** End Patch"}}, "deny"),
    "gemini": ("BeforeTool", {"tool_name": "replace", "tool_input": {"file_path": "/w/db/migrations/1.py",
                                                                     "old_string": "a", "new_string": "b"}}, "deny"),
    "cursor": ("preToolUse", {"conversation_id": "c", "tool_name": "Write",
                              "tool_input": {"file_path": "/w/db/migrations/1.py"}}, "ask"),
    "copilot": ("preToolUse", {"sessionId": "s", "cwd": "/w", "toolName": "edit",
                               "toolArgs": {"path": "/w/db/migrations/1.py"}}, "ask"),
}


@pytest.mark.parametrize("host", HOSTS)
def test_an_ask_rule_asks_or_refuses_saying_why(host, store, capsys):
    rule(store, *ASK)
    event, payload, expected = EDIT[host]
    decision, reason = refusal(host, answer(host, event, payload, store, capsys))
    assert decision == expected and "Migrations run against production" in reason
    if expected == "deny":
        assert "ask the user" in reason


BAD = ["not json {", "[1, 2]", '"a string"', '{"session_id": {"no": "string"}}',
       '{"tool_name": "Bash", "tool_input": ["git", "push"]}']


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("bad", BAD)
def test_a_bad_payload_never_breaks_the_session(host, bad, store, capsys):
    rule(store, *DENY)
    adapter = load(host)
    for event in [e for e, kind in adapter.EVENTS.items() if kind != "session-start"]:
        out, err = hook(host, event, bad, store, capsys)
        assert out.strip() in ("", adapter.EMPTY), (event, out)
        assert err.count("\n") <= 1 and (err == "" or err.startswith("cardmem: hook ")), err


@pytest.mark.parametrize("host", HOSTS)
def test_a_newer_hosts_payload_and_an_unknown_event_are_not_failures(host, store, capsys):
    rule(store, *DENY)
    event, payload = SHELL[host]
    newer = {**payload, "schema_version": 9, "new_field": {"nested": [1, 2]}}
    decision, _ = refusal(host, answer(host, event, newer, store, capsys))
    assert decision == "deny"
    out, err = hook(host, "SomeEventFromTheFuture", {}, store, capsys)
    assert out.strip() in ("", load(host).EMPTY) and "unknown event" in err and err.count("\n") == 1


START = {"claude": "SessionStart", "codex": "SessionStart", "gemini": "SessionStart",
         "cursor": "sessionStart", "copilot": "sessionStart"}


def start_context(host, out):
    if out is None:
        return None
    if host == "cursor":
        return out["additional_context"]
    return out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("host", HOSTS)
def test_session_start_within_the_hosts_cap_at_150_rules(host, store, capsys):
    for n in range(150):
        rule(store, f"feedback/rule-{n:03}", f"Rule number {n} about widget {n}", "remind",
             f'["widget-{n} *"]', f"Widget {n} is configured with care: " + "detail " * 30)
    out = answer(host, START[host], {"session_id": "s", "cwd": str(store.root)}, store, capsys)
    text = start_context(host, out)
    if host == "copilot":  # Copilot CLI does not read sessionStart's output: nothing to send
        assert text is None
        return
    cap = load(host).CAP
    assert 0 < len(text) <= cap
    named = sum(f"feedback/rule-{n:03}" in text for n in range(150))
    assert named > 20, named  # whole, or by title: never a rule cut in the middle
    assert "Widget 149 is configured" not in text or "feedback/rule-149" in text


@pytest.mark.parametrize("host", ["claude", "codex", "gemini"])
def test_per_prompt_cards_once_a_session(host, store, capsys):
    (store.root / "entities").mkdir(exist_ok=True)
    (store.root / "entities" / "frobnicator.md").write_text(
        "---\ntitle: Frobnicator\ntype: entity\n---\nThe frobnicator retries widget jobs.\n")
    event = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}[host]
    payload = {"session_id": "s9", "cwd": "/w", "prompt": "Why does the frobnicator retry?"}
    out = answer(host, event, payload, store, capsys)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert "entities/frobnicator" in text and len(text) <= 1_500
    assert answer(host, event, payload, store, capsys) in (None, {})  # not shown twice


def test_the_cli_route_with_host(store):
    """`cardmem hook EVENT --host HOST` (and the host's own event name) as a process."""
    import subprocess
    import sys
    from pathlib import Path

    rule(store, *DENY)
    exe = Path(sys.executable).with_name("cardmem")
    event, payload = SHELL["gemini"]
    for args in (["hook", "pre-tool-use", "--host", "gemini"], ["hook", event, "--host", "gemini"]):
        proc = subprocess.run([str(exe), *args, "--store", str(store.root)], input=json.dumps(payload),
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["decision"] == "deny"
    proc = subprocess.run([str(exe), "hook", "prompt", "--host", "gemini", "--store", str(store.root)],
                          input="][", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "{}"
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("cardmem: hook gemini prompt: ")


def test_cursor_answers_a_shell_call_once_though_both_its_hooks_fire(store, capsys):
    """Cursor fires preToolUse (tool_name "Shell") and beforeShellExecution for one shell
    command: the rule answers at beforeShellExecution only, so it is counted once and an
    `ask` is shown once; preToolUse still answers for the file tools."""
    from cardmem.hosts import firings

    rule(store, *DENY)
    rule(store, *ASK)
    pre = {"hook_event_name": "preToolUse", "conversation_id": "conv-1",
           "workspace_roots": ["/w"], "tool_name": "Shell", "tool_use_id": "t1",
           "tool_input": {"command": "git push --force origin main", "cwd": "/w"}}
    out, err = hook("cursor", "preToolUse", pre, store, capsys)
    assert out == "" and err == ""
    decision, _ = refusal("cursor", answer("cursor", *SHELL["cursor"], store, capsys))
    assert decision == "deny"
    log = (store.root / ".cardmem" / "hooks.log").read_text()
    assert log.count("deny feedback/no-force-push") == 1
    assert len(firings.events(str(store.root))) == 1
    edit = {**pre, "tool_name": "Write", "tool_input": {"file_path": "/w/migrations/001.sql"}}
    decision, _ = refusal("cursor", answer("cursor", "preToolUse", edit, store, capsys))
    assert decision == "ask"


def test_copilot_on_windows_runs_its_shell_as_powershell_and_the_rule_still_holds(store, capsys):
    """Copilot CLI's reference names two shell tools, `bash` and (Windows) `powershell`."""
    rule(store, *DENY)
    event, payload = SHELL["copilot"]
    decision, reason = refusal("copilot", answer("copilot", event,
                                                 {**payload, "toolName": "powershell"}, store,
                                                 capsys))
    assert decision == "deny" and "feedback/no-force-push" in reason


# Each host's own limit, counted its own way (not our CAP constants): Claude Code shows
# 10,000 characters (UTF-16 units) of a hook's context whole; Codex spills context past
# 2,500 tokens, a token being four UTF-8 bytes (codex-utils-string approx_token_count);
# Gemini CLI and Cursor document none, and get Claude Code's.
LIMITS = {"claude": (lambda t: len(t.encode("utf-16-le")) // 2, 10_000),
          "codex": (lambda t: -(-len(t.encode("utf-8")) // 4), 2_500),
          "gemini": (lambda t: len(t.encode("utf-16-le")) // 2, 10_000),
          "cursor": (lambda t: len(t.encode("utf-16-le")) // 2, 10_000)}


@pytest.mark.parametrize("host", sorted(LIMITS))
def test_session_start_in_wide_characters_within_the_hosts_own_limit_at_150_rules(
        host, store, capsys):
    """150 rules written in Cyrillic, with an emoji each: what the hook hands the host
    stays within the host's own limit as the host counts it, rules whole or by title."""
    for n in range(150):
        rule(store, f"feedback/rule-{n:03}", f"Правило {n} о виджете {n} 🔧", "remind",
             f'["widget-{n} *"]', f"Виджет {n} настраивают аккуратно: " + "подробность " * 30)
    out = answer(host, START[host], {"session_id": "s", "cwd": str(store.root)}, store, capsys)
    text = start_context(host, out)
    measure, limit = LIMITS[host]
    assert 0 < measure(text) <= limit, (host, measure(text))
    assert sum(f"feedback/rule-{n:03}" in text for n in range(150)) > 20


def test_agents_md_at_150_rules_in_wide_characters_keeps_codexs_32_kib(store, tmp_path):
    from cardmem.store.rules.exports import export

    for n in range(150):
        rule(store, f"feedback/rule-{n:03}", f"Правило {n} 🔧", "remind", f'["widget-{n} *"]',
             "подробность " * 40)
    export(store, "agents-md", tmp_path)
    data = (tmp_path / "AGENTS.md").read_bytes()
    assert 16 * 1024 < len(data) <= 32 * 1024 and b"rules are left out" in data


@pytest.mark.parametrize("damaged", ['{"ids": 7, "at": 1}', '{"ids": [["x"]], "at": 1}',
                                     '{"ids": [7], "at": 1}', '{"ids": null}'])
def test_a_damaged_note_of_what_a_session_was_shown_is_replaced(damaged, store, capsys):
    """The prompt hook's note for this session, of another shape (a hand edit, a torn
    write): the hook still adds the cards, and its note replaces the damaged one, so the
    next prompt is told only what is new (found by review: a TypeError each prompt)."""
    (store.root / "entities").mkdir(exist_ok=True)
    (store.root / "entities" / "frobnicator.md").write_text(
        "---\ntitle: Frobnicator\ntype: entity\n---\nThe frobnicator retries widget jobs.\n")
    (store.root / ".cardmem" / "shown-sessions.json").write_text(f'{{"s9": {damaged}}}')
    payload = {"session_id": "s9", "cwd": "/w", "prompt": "Why does the frobnicator retry?"}
    out, err = hook("claude", "UserPromptSubmit", payload, store, capsys)
    assert out.strip() and err == "", err  # the old code: no context, a TypeError said
    assert "entities/frobnicator" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert answer("claude", "UserPromptSubmit", payload, store, capsys) in (None, {})
