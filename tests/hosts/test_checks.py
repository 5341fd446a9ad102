"""doctor's checks of the Claude Code installation fail when the loop would."""
from __future__ import annotations

import json
import time
from pathlib import Path

from cardmem.hosts.claude_code import checks
from cardmem.hosts.claude_code.install import install, rules_path
from cardmem.store.rules.host_file import deliver
from cardmem.store.store import init


def setup(tmp_path: Path):
    store, _ = init(tmp_path / "store")
    settings = tmp_path / "home" / ".claude" / "settings.json"
    install(settings, store.root)
    (store.root / "feedback").mkdir()
    (store.root / "feedback" / "a.md").write_text("---\ntitle: A\ntype: feedback\n---\nalpha\n")
    deliver(store, rules_path(settings))
    return store, settings


def failing(results) -> list[str]:
    return [line for ok, line in results if not ok]


def test_a_good_install_passes(tmp_path):
    store, settings = setup(tmp_path)
    assert failing(checks.check_hooks(store, settings)) == []
    assert any("rules file current (1 rule," in line for _, line in
               checks.check_hooks(store, settings))


def test_a_dead_interpreter_fails(tmp_path):
    store, settings = setup(tmp_path)
    data = json.loads(settings.read_text())
    for groups in data["hooks"].values():
        for g in groups:
            for h in g["hooks"]:
                h["command"] = h["command"].replace(h["command"].split()[0], "/gone/bin/python")
    settings.write_text(json.dumps(data))
    bad = failing(checks.check_hooks(store, settings))
    assert len(bad) == 5 and all("/gone/bin/python does not exist" in b for b in bad)


def test_a_missing_store_fails(tmp_path):
    store, settings = setup(tmp_path)
    install(settings, tmp_path / "elsewhere")
    assert any("does not exist" in b for b in failing(checks.check_hooks(store, settings)))


def test_no_rules_file_and_a_missing_one_fail(tmp_path):
    store, settings = setup(tmp_path)
    rules_path(settings).unlink()
    assert any("rules file" in b and "missing" in b
               for b in failing(checks.check_hooks(store, settings)))
    data = json.loads(settings.read_text())
    h = data["hooks"]["SessionStart"][0]["hooks"][0]
    h["command"] = h["command"].replace(f" --rules-file {rules_path(settings)}", "")
    settings.write_text(json.dumps(data))
    assert any("keeps no rules file" in b for b in failing(checks.check_hooks(store, settings)))


def test_hook_log_failures_are_reported(tmp_path):
    store, _ = setup(tmp_path)
    log = store.root / ".cardmem" / "hooks.log"
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    log.write_text(f"2000-01-01T00:00:00Z stop/learn 10ms session=x no model: old\n"
                   f"{now} session-start 50ms session=abc ok: 3 cards\n")
    assert failing(checks.check_hook_log(store)) == []  # the old failure is past the window
    with log.open("a") as f:
        f.write(f"{now} stop/learn 900ms session=abc extraction failed: model: timed out\n")
    bad = failing(checks.check_hook_log(store))
    assert len(bad) == 1 and "1 failure(s)" in bad[0] and "timed out" in bad[0]


def test_mcp_with_a_dead_interpreter_fails(tmp_path):
    store, _ = setup(tmp_path)
    cfg = tmp_path / "home" / ".claude.json"
    cfg.write_text(json.dumps({"mcpServers": {"cardmem": {
        "type": "stdio", "command": "/gone/python", "args": ["-m", "cardmem.tools.cli", "mcp"]}}}))
    assert any("/gone/python does not exist" in b for b in failing(checks.check_mcp(store, cfg)))


def test_hooks_that_use_another_store_are_a_warning_naming_the_fix(tmp_path):
    store, settings = setup(tmp_path)
    other = init(tmp_path / "notes")[0]  # a store made after install, $CARDMEM_STORE now
    got = checks.check_hooks(other, settings)
    warned = [msg for ok, msg in got if ok is None]
    assert len(warned) == 1 and f"use another store, {store.root}" in warned[0]
    assert f"`cardmem install claude-code --store {other.root}`" in warned[0]
    assert [m for ok, m in got if ok is False] == []
