"""Settings written by the previous release keep working after hooks/ became hosts/.

tests/hosts/claude_code_settings_0.1.0.json is what `cardmem install claude-code` wrote
before the move (generated from that code, its paths left as {python}, {repo}, {store},
{rules_dir}): `python -m cardmem.hooks.claude_code …` for session start, stop and session
end, `python -S {repo}/hooks/pretool_start.py …` for PreToolUse. Every command in it is run
here, as Claude Code runs it (a shell, JSON on stdin), against today's code; then
`cardmem install claude-code` over that file moves each entry to today's paths.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from cardmem.hosts.cli import install

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("claude_code_settings_0.1.0.json")


def old_settings(store: Path, rules_dir: Path) -> dict:
    text = FIXTURE.read_text()
    for k, v in (("{python}", sys.executable), ("{repo}", str(REPO)), ("{store}", str(store)),
                 ("{rules_dir}", str(rules_dir))):
        text = text.replace(k, v)
    return json.loads(text)


def commands(settings: dict) -> dict[str, str]:
    return {event: groups[0]["hooks"][0]["command"] for event, groups in settings["hooks"].items()}


def shell(cmd: str, payload: dict, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CARDMEM_"))}
    return subprocess.run(cmd, shell=True, input=json.dumps(payload), capture_output=True,
                          text=True, timeout=60, env={**full, **env})


def test_every_command_the_previous_release_wrote_still_runs(store, tmp_path):
    (store.root / "feedback").mkdir(exist_ok=True)
    (store.root / "feedback" / "no-force-push.md").write_text(
        "---\ntitle: Never force-push\ntype: feedback\napplies_to: [\"git push --force*\"]\n"
        "enforce: deny\n---\nForce-pushing rewrites history others have pulled.\n")
    cmds = commands(old_settings(store.root, tmp_path / "rules"))
    assert "cardmem.hooks.claude_code" in cmds["SessionStart"]
    assert "/hooks/pretool_start.py" in cmds["PreToolUse"]

    start = shell(cmds["SessionStart"], {"session_id": "s1", "cwd": str(tmp_path)})
    assert start.returncode == 0, start.stderr
    out = json.loads(start.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart" and "feedback/no-force-push" in out["additionalContext"]
    assert (tmp_path / "rules" / "cardmem.md").exists()  # --rules-file honoured

    pre = shell(cmds["PreToolUse"], {"session_id": "s1", "tool_name": "Bash", "cwd": str(tmp_path),
                                     "tool_input": {"command": "git push --force origin main"}})
    assert pre.returncode == 0, pre.stderr
    decision = json.loads(pre.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "Force-pushing rewrites history" in decision["permissionDecisionReason"]

    for event in ("Stop", "SessionEnd"):  # learned in the foreground: no key, so logged
        end = shell(cmds[event], {"session_id": "s1", "transcript_path": str(tmp_path / "none")},
                    CARDMEM_HOOK_FOREGROUND="1")
        assert end.returncode == 0 and end.stdout == "", end.stderr
    log = (store.root / ".cardmem" / "hooks.log").read_text()
    assert "stop/learn" in log and "session-end/learn" in log and "no transcript" in log


def test_install_over_the_previous_release_moves_every_entry(store, tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(old_settings(store.root, settings.parent / "rules"), indent=2))
    r = CliRunner().invoke(install, ["claude-code", "--settings", str(settings), "--store",
                                     str(store.root), "--no-mcp"])
    assert r.exit_code == 0, r.output
    data = json.loads(settings.read_text())
    cmds = [h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]
    assert len(cmds) == 5  # updated in place, none added twice, UserPromptSubmit added
    assert not any("cardmem.hooks" in c or "/hooks/pretool_start.py" in c for c in cmds), cmds
    assert any("/hosts/pretool_start.py" in c for c in cmds)
