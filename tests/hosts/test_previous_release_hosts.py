"""Settings the release before issue 29's moves (061df25) wrote for every host keep working.

tests/hosts/previous_release_061df25/ is a HOME as `cardmem install claude-code|codex|gemini|
cursor|copilot` left it at 061df25, over a person's own Claude Code, Gemini CLI and Cursor
files: the hooks' files, the MCP servers' files, the install records and backups, copied
from that code's output with its paths turned into {python}, {package} (the installed
`cardmem` package folder: an upgrade in place puts today's code there), {home}. They were
made so, in a fresh HOME holding those three files of the person's:

    git archive 061df25 | tar -x -C old; mkdir x; ln -s $PWD/old x/cardmem
    PYTHONPATH=x python -m cardmem.tools.cli --store ~/store install HOST   # each host

Every hook command is run here as its host runs it (a shell, the host's JSON on stdin)
against today's code, the MCP server's command answers, and `install` with today's code
over those files keeps one entry per event, the backups and the person's own file (given
back by `uninstall`).
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cardmem.hosts.adapters import load
from cardmem.hosts.claude_code.install import PRETOOL_START
from cardmem.hosts.cli import install, uninstall

OLD = Path(__file__).with_name("previous_release_061df25")
PACKAGE = Path(PRETOOL_START).parents[1]  # the folder holding hosts/, store/, tools/
MCP_FILES = {"claude": ".claude.json", "codex": ".codex/config.toml",
             "gemini": ".gemini/settings.json", "cursor": ".cursor/mcp.json",
             "copilot": ".copilot/mcp-config.json"}
HOOK_FILES = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json",
              "gemini": ".gemini/settings.json", "cursor": ".cursor/hooks.json",
              "copilot": ".copilot/hooks/cardmem.json"}
INSTALL_NAME = {"claude": "claude-code"}
PUSH = "git push --force origin main"


def old_home(home: Path, store: Path) -> None:
    """The HOME 061df25's installs left, its paths pointing at this interpreter and package."""
    for src in OLD.rglob("*"):
        if src.is_file():
            dst = home / src.relative_to(OLD)
            dst.parent.mkdir(parents=True, exist_ok=True)
            text = src.read_text()
            for k, v in (("{python}", sys.executable), ("{package}", str(PACKAGE)),
                         ("{home}/store", str(store)), ("{home}", str(home))):
                text = text.replace(k, v)
            dst.write_text(text)
            if ".json.cardmem" in dst.name or ".toml.cardmem" in dst.name:  # install records,
                claude = dst.parent.name == ".claude" or dst.name.startswith(".claude.json")
                dst.chmod(0o644 if claude else 0o600)  # with the modes 061df25 gave them


def hook_commands(settings: dict) -> list[tuple[str, str]]:
    """(event, command) of every hook in a host's file (grouped or flat, `command` or `bash`)."""
    out = []
    for event, groups in settings["hooks"].items():
        for g in groups:
            for h in g.get("hooks", [g]):
                cmd = h.get("command") or h.get("bash")
                if "--store" in cmd:  # ours: the person's own hooks name no store
                    out.append((event, cmd))
    return out


def payload(host: str, event: str, cwd: Path) -> dict:
    """What each host sends on this event (tests/hosts/test_hook_hosts.py names the sources)."""
    if host == "copilot":
        p = {"sessionId": "s1", "timestamp": 1796231000000, "cwd": str(cwd)}
        if event == "preToolUse":
            p.update(toolName="bash", toolArgs=json.dumps({"command": PUSH, "description": "push"}))
        return p
    if host == "cursor":
        p = {"hook_event_name": event, "conversation_id": "c1", "generation_id": "g1",
             "workspace_roots": [str(cwd)], "cwd": str(cwd)}
        if event == "beforeShellExecution":
            p["command"] = PUSH
        if event == "preToolUse":  # the shell is beforeShellExecution's: an edit here
            p.update(tool_name="Write", tool_input={"file_path": f"{cwd}/db/migrations/1.py"})
        return p
    p = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": event,
         "transcript_path": str(cwd / "no-transcript.jsonl")}
    if event in ("PreToolUse", "BeforeTool"):
        p.update(tool_name="run_shell_command" if host == "gemini" else "Bash",
                 tool_input={"command": PUSH})
    if event in ("UserPromptSubmit", "BeforeAgent"):
        p["prompt"] = "how do we deploy?"
    return p


def shell(cmd: str, data: dict, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CARDMEM_"))}
    return subprocess.run(cmd, shell=True, input=json.dumps(data), capture_output=True,
                          text=True, timeout=60, cwd=cwd, env={**full, **env})


@pytest.fixture
def rules(store):
    (store.root / "feedback").mkdir(exist_ok=True)
    (store.root / "feedback" / "no-force-push.md").write_text(
        "---\ntitle: Never force-push\ntype: feedback\napplies_to: [\"git push --force*\"]\n"
        "enforce: deny\n---\nForce-pushing rewrites history others have pulled.\n")
    (store.root / "feedback" / "migrations.md").write_text(
        "---\ntitle: Ask before touching migrations\ntype: feedback\n"
        "applies_to: [\"path: migrations/**\"]\nenforce: ask\n---\nMigrations run on deploy.\n")
    return store


@pytest.mark.parametrize("host", HOOK_FILES)
def test_every_hook_061df25_installed_still_runs(host, rules, tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    old_home(home, rules.root)
    cmds = hook_commands(json.loads((home / HOOK_FILES[host]).read_text()))
    kinds = load(host).EVENTS
    assert {kinds[e] for e, _ in cmds} >= {"pre-tool-use", "stop"}, cmds
    for event, cmd in cmds:
        r = shell(cmd, payload(host, event, work), work, HOME=str(home),
                  CARDMEM_HOOK_FOREGROUND="1")
        assert r.returncode == 0, (event, cmd, r.stderr)
        out = r.stdout.strip()
        answer = json.loads(out) if out else None  # JSON or nothing, never a traceback
        kind = kinds[event]
        if kind == "pre-tool-use":
            assert "deny" in out or "ask" in out, (event, out)
            assert "feedback/" in out, (event, out)
        elif kind == "session-start":
            assert "Never force-push" in out, (event, out)
        elif kind in ("stop", "session-end"):
            assert answer in (None, {}), (event, out)
    log = (rules.root / ".cardmem" / "hooks.log").read_text()
    assert "Traceback" not in log


def test_the_mcp_server_061df25_registered_still_answers(store, tmp_path):
    home = tmp_path / "home"
    old_home(home, store.root)
    entries = {json.dumps(json.loads((home / f).read_text())["mcpServers"]["cardmem"]
                          ["args"]) for f in (".claude.json", ".cursor/mcp.json",
                                              ".gemini/settings.json", ".copilot/mcp-config.json")}
    assert len(entries) == 1  # one command for every host (Codex's TOML holds the same)
    args = json.loads(entries.pop())
    assert f'args = {json.dumps(args)}' in (home / ".codex/config.toml").read_text()
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    proc = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=tmp_path, env={**os.environ, "HOME": str(home)})
    try:  # one request at a time, as a host asks: the server may stop at end of input
        for message in (init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}):
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                reply = json.loads(proc.stdout.readline())
                assert reply["id"] == message["id"] and "result" in reply, reply
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert "read_card" in json.dumps(reply["result"])


@pytest.mark.parametrize("host", HOOK_FILES)
def test_install_over_061df25_keeps_one_entry_per_event_the_backups_and_the_persons_file(
        host, store, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    old_home(home, store.root)
    path = home / HOOK_FILES[host]
    backups = {p: p.read_bytes() for p in home.rglob("*.bak-cardmem")}
    r = CliRunner().invoke(install, [INSTALL_NAME.get(host, host), "--store", str(store.root)])
    assert r.exit_code == 0, r.output
    per_event: dict[str, int] = {}
    for event, _ in hook_commands(json.loads(path.read_text())):
        per_event[event] = per_event.get(event, 0) + 1
    assert per_event and set(per_event.values()) == {1}, per_event  # none added twice
    assert {p: p.read_bytes() for p in home.rglob("*.bak-cardmem")} == backups
    records = [p for f in (path, home / MCP_FILES[host])
               for p in f.parent.glob(f.name + ".cardmem*.json")]
    assert records
    for rec in records:  # a record may keep the file as it was, keys and all
        assert stat.S_IMODE(rec.stat().st_mode) == 0o600, rec
    r = CliRunner().invoke(uninstall, [INSTALL_NAME.get(host, host)])
    assert r.exit_code == 0, r.output
    theirs = {"claude": {"env": {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key"}, "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}},
        "gemini": {"theme": "Dracula"},
        "cursor": {"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}}
    if host in theirs:  # the person's own file, as it was before 061df25's install
        assert json.loads(path.read_text()) == theirs[host]
    else:  # cardmem made the file: uninstall takes it away
        assert not path.exists()
