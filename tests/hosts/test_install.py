"""The installer: merges idempotently, keeps everything else, uninstalls exactly."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cardmem.hosts.claude_code.install import (MATCHERS, MODULE, MODULES, PRETOOL_START, command, install,
                                   uninstall)
from cardmem.store.errors import CardmemError

USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit.sh"}]}],
        "SessionStart": [{"matcher": "startup",
                          "hooks": [{"type": "command", "command": "echo hello"}]}],
    },
    "env": {"FOO": "bar"},
}


def ours(data: dict) -> list[tuple[str, dict]]:
    return [(ev, h) for ev, groups in data.get("hooks", {}).items() for g in groups
            for h in g.get("hooks", []) if any(m in h.get("command", "") for m in MODULES)]


def test_install_merges_and_keeps_everything_else(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS, indent=4))
    r = install(path)
    assert r["changed"] and Path(r["backup"]).read_text() == json.dumps(USER_SETTINGS, indent=4)
    data = json.loads(path.read_text())
    assert {k: v for k, v in data.items() if k != "hooks"} == \
        {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    for ev, groups in USER_SETTINGS["hooks"].items():
        assert data["hooks"][ev][: len(groups)] == groups  # the user's hooks, first and intact
    added = dict(ours(data))
    assert set(added) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", "PreToolUse"}
    assert added["Stop"]["async"] is True and added["SessionEnd"]["async"] is True
    assert "async" not in added["SessionStart"]
    assert added["SessionStart"]["command"].startswith(sys.executable)
    assert added["SessionStart"]["command"].endswith(" session-start")
    assert added["PreToolUse"]["command"].startswith(f"{sys.executable} -S {PRETOOL_START}")
    # ours in a group of its own, with the acting tools' matcher; the user's Bash audit intact
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert pre[1]["matcher"] == MATCHERS["PreToolUse"] and len(pre) == 2


def test_the_record_of_their_settings_is_theirs_alone(tmp_path):
    """The record beside settings.json keeps the file as it was (its `env` keys and all):
    owner only, as every host's record is (hosts/settings.write_record)."""
    from cardmem.hosts.settings import record_path

    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    install(path)
    assert "FOO" in record_path(path).read_text()
    assert record_path(path).stat().st_mode & 0o077 == 0


def test_install_is_idempotent(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    install(path)
    first = path.read_text()
    backups = sorted(tmp_path.glob("settings.json.bak-*"))
    r = install(path)
    assert not r["changed"] and path.read_text() == first
    assert sorted(tmp_path.glob("settings.json.bak-*")) == backups
    assert len(ours(json.loads(first))) == 5


def test_reinstall_with_another_store_updates_in_place(tmp_path):
    path = tmp_path / "settings.json"
    install(path)
    install(path, store=tmp_path / "team-store")
    data = json.loads(path.read_text())
    cmds = [h["command"] for _, h in ours(data)]
    assert len(cmds) == 5 and all("team-store" in c for c in cmds)


def test_uninstall_restores_exactly(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    install(path)
    install(path)
    assert uninstall(path)["changed"]
    assert json.loads(path.read_text()) == USER_SETTINGS
    assert not uninstall(path)["changed"]


def test_uninstall_on_a_file_install_created(tmp_path):
    path = tmp_path / "deep" / "settings.json"
    install(path)
    assert path.exists()
    uninstall(path)
    assert not path.exists()  # install made it, uninstall takes it away


def test_uninstall_keeps_hooks_the_user_added_next_to_ours(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text("{}")
    install(path)
    data = json.loads(path.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "mine.sh"}]})
    path.write_text(json.dumps(data))
    uninstall(path)
    assert json.loads(path.read_text()) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine.sh"}]}]}}


@pytest.mark.parametrize("text", ["{not json", "[1]", '{"hooks": []}'])
def test_bad_settings_are_refused_untouched(tmp_path, text):
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(CardmemError):
        install(path)
    assert path.read_text() == text
    assert list(tmp_path.iterdir()) == [path]


def test_command_quotes_paths_with_spaces(tmp_path):
    c = command("stop", tmp_path / "my store", python="/opt/py env/bin/python")
    assert c == f"'/opt/py env/bin/python' -m {MODULE} --store '{tmp_path}/my store' stop"


def test_cli_install_and_uninstall(tmp_path):
    exe = str(Path(sys.executable).with_name("cardmem"))
    env = {**os.environ, "HOME": str(tmp_path)}
    settings = tmp_path / ".claude" / "settings.json"
    out = subprocess.run([exe, "install", "claude-code"], env=env, capture_output=True, text=True)
    store = tmp_path / ".local" / "share" / "cardmem"
    assert out.returncode == 1 and out.stderr.startswith(f"cardmem: store {store}: does not exist")
    assert "--init" in out.stderr and not settings.exists() and not store.exists()
    out = subprocess.run([exe, "install", "claude-code", "--init"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0 and "installed" in out.stdout and f"(store {store})" in out.stdout
    assert len(ours(json.loads(settings.read_text()))) == 5
    out = subprocess.run([exe, "uninstall", "claude-code"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and not settings.exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    out = subprocess.run([exe, "install", "claude-code", "--settings", str(bad)], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr.startswith(f"cardmem: {bad}: not valid JSON")


def test_the_pretool_matcher_names_the_acting_tools():
    import re

    rx = re.compile(MATCHERS["PreToolUse"])
    for name in ("Bash", "Edit", "Write", "MultiEdit", "NotebookEdit",
                 "mcp__github__create_pull_request", "mcp__github__merge_pull_request",
                 "mcp__fs__write_file"):
        assert rx.search(name), name
    for name in ("Read", "Grep", "Glob", "WebFetch", "BashOutput", "mcp__github__get_issue",
                 "mcp__fs__read_file", "TodoWrite"):
        assert not rx.search(name), name


def test_an_old_install_gains_the_pretool_hook_and_loses_it_on_uninstall(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    install(path)
    data = json.loads(path.read_text())
    data["hooks"]["PreToolUse"] = data["hooks"]["PreToolUse"][:1]  # as installed before
    path.write_text(json.dumps(data))
    install(path)
    assert "PreToolUse" in dict(ours(json.loads(path.read_text())))
    uninstall(path)
    assert json.loads(path.read_text()) == USER_SETTINGS


def test_reinstalls_keep_one_backup_and_claude_json_is_backed_up_too(tmp_path):
    from gitremote import cli

    settings, claude = tmp_path / "settings.json", tmp_path / ".claude.json"
    settings.write_text(json.dumps(USER_SETTINGS))
    claude.write_text(json.dumps({"numStartups": 3, "mcpServers": {}}))
    os.chmod(claude, 0o600)
    before = claude.read_text()
    for name in ("one", "two", "three"):  # each a change: each rewrites both files
        store = tmp_path / name
        code, out, err = cli("install", "claude-code", "--settings", str(settings),
                             "--mcp-config", str(claude), "--store", str(store), "--init")
        assert code == 0, err
        if name == "one":
            assert json.loads(claude.with_name(".claude.json.bak-cardmem").read_text()) == \
                json.loads(before)
            assert f"backup: {claude}.bak-cardmem" in out
    assert [p.name for p in tmp_path.glob("settings.json.bak-*")] == ["settings.json.bak-cardmem"]
    assert [p.name for p in tmp_path.glob(".claude.json.bak*")] == [".claude.json.bak-cardmem"]
    kept = claude.with_name(".claude.json.bak-cardmem")
    assert "two" in kept.read_text() and oct(kept.stat().st_mode & 0o777) == "0o600"
    code, out, _ = cli("uninstall", "claude-code", "--settings", str(settings),
                       "--mcp-config", str(claude))
    assert json.loads(claude.read_text()) == {"numStartups": 3, "mcpServers": {}}
    assert len(list(tmp_path.glob("*.bak*"))) == 2

def test_an_install_of_the_pretool_hook_by_module_is_updated_in_place(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    install(path)
    data = json.loads(path.read_text())
    ours_now = data["hooks"]["PreToolUse"][1]["hooks"][0]
    ours_now["command"] = f"{sys.executable} -m cardmem.hosts.pretool"  # as installed before
    path.write_text(json.dumps(data))
    install(path)
    pre = json.loads(path.read_text())["hooks"]["PreToolUse"]
    assert len(pre) == 2 and pre[1]["hooks"][0]["command"] == command("pre-tool-use")
    uninstall(path)
    assert json.loads(path.read_text()) == USER_SETTINGS


def test_uninstall_gives_the_file_back_byte_for_byte(tmp_path):
    path = tmp_path / "settings.json"
    theirs = '{\n\t"model": "opus",   "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}'
    path.write_text(theirs)
    install(path)
    install(path, store=tmp_path / "team-store")  # a second install keeps the first original
    uninstall(path)
    assert path.read_text() == theirs
