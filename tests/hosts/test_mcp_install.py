"""Registering `cardmem mcp` as a user-scope MCP server in Claude Code's ~/.claude.json."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cardmem.hosts.claude_code.mcp_install import NAME, default_config, register, server_entry, unregister
from cardmem.store.errors import CardmemError

CARDMEM = str(Path(sys.executable).with_name("cardmem"))

# A ~/.claude.json as Claude Code leaves it: its own state, a login, another server.
EXISTING = {
    "numStartups": 12,
    "oauthAccount": {"emailAddress": "tess@example.com"},
    "projects": {"/home/tess/widgets": {"mcpServers": {}, "allowedTools": []}},
    "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["gh-mcp"], "env": {}}},
}


def test_register_into_a_new_file_and_take_it_out(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    r = register(path)
    assert r == {"changed": True, "path": str(path)}
    data = json.loads(path.read_text())
    assert data == {"mcpServers": {NAME: server_entry()}}
    assert data["mcpServers"][NAME]["command"] == sys.executable
    assert data["mcpServers"][NAME]["args"] == ["-m", "cardmem.tools.cli", "mcp"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # Claude Code's state file: owner only
    before = path.read_bytes()
    assert register(path)["changed"] is False and path.read_bytes() == before
    assert unregister(path)["changed"] is True
    assert not path.exists() and not path.with_name(".claude.json.cardmem.json").exists()
    assert unregister(path)["changed"] is False


def test_everything_else_in_the_file_is_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    path.write_text(json.dumps(EXISTING, indent=2))
    path.chmod(0o600)
    register(path, store=tmp_path / "team store")
    data = json.loads(path.read_text())
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        k: v for k, v in EXISTING.items() if k != "mcpServers"}
    assert data["mcpServers"]["github"] == EXISTING["mcpServers"]["github"]
    assert data["mcpServers"][NAME]["args"][-2:] == ["--store", str(tmp_path / "team store")]
    # Registering again with another store updates our entry in place.
    register(path)
    assert json.loads(path.read_text())["mcpServers"][NAME] == server_entry()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    unregister(path)
    assert json.loads(path.read_text()) == EXISTING


def test_claude_code_state_written_after_install_survives_uninstall(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    register(path)  # made the file and mcpServers
    data = json.loads(path.read_text())
    data["numStartups"] = 1  # Claude Code starts and writes its state
    data["mcpServers"]["other"] = {"type": "stdio", "command": "x", "args": [], "env": {}}
    path.write_text(json.dumps(data))
    unregister(path)
    assert json.loads(path.read_text()) == {
        "numStartups": 1, "mcpServers": {"other": {"type": "stdio", "command": "x", "args": [],
                                                   "env": {}}}}


def test_someone_elses_cardmem_entry_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    theirs = {"mcpServers": {NAME: {"type": "stdio", "command": "/opt/other/cardmem-fork",
                                    "args": ["serve"]}}}
    path.write_text(json.dumps(theirs))
    with pytest.raises(CardmemError, match="another server's entry"):
        register(path)
    assert json.loads(path.read_text()) == theirs
    assert unregister(path)["changed"] is False
    assert json.loads(path.read_text()) == theirs


@pytest.mark.parametrize("text,why", [("{", "not valid JSON"), ("[]", "not a JSON object"),
                                      ('{"mcpServers": []}', "mcpServers")])
def test_a_broken_file_is_reported_and_left_alone(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / ".claude.json"
    path.write_text(text)
    with pytest.raises(CardmemError, match=why):
        register(path)
    assert path.read_text() == text


def test_claude_config_dir_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert default_config() == tmp_path / "cfg" / ".claude.json"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_config() == tmp_path / ".claude.json"


def test_cli_install_registers_the_server_and_it_runs(tmp_path: Path, store) -> None:
    """`cardmem install claude-code` writes the entry; the entry starts a working server."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([CARDMEM, "install", "claude-code", "--store", str(store.root)],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"registered the MCP server `cardmem` (user scope) in {tmp_path / '.claude.json'}" in out.stdout
    entry = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"][NAME]
    again = subprocess.run([CARDMEM, "install", "claude-code", "--store", str(store.root)],
                           env=env, capture_output=True, text=True)
    assert "already registered" in again.stdout

    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={**env, **entry["env"]})

    async def go():
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                return {t.name for t in (await client.list_tools()).tools}

    assert anyio.run(go) == {"search", "read_card", "memory_map", "list_recent", "remember"}

    out = subprocess.run([CARDMEM, "uninstall", "claude-code"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0 and "removed the MCP server `cardmem`" in out.stdout
    assert not (tmp_path / ".claude.json").exists()


def test_cli_install_no_mcp_leaves_the_file_alone(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env["HOME"] = str(tmp_path)
    out = subprocess.run([CARDMEM, "install", "claude-code", "--no-mcp", "--init"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / ".claude.json").exists()
    assert (tmp_path / ".claude" / "settings.json").exists()


def test_a_new_private_file_and_its_record_are_never_readable_by_others(tmp_path: Path,
                                                                        monkeypatch) -> None:
    """~/.claude.json (it may hold keys) and the record keeping it as it was are 0600 from
    their first byte: the temporary file renamed into place is never widened past 0600 (found
    by review: it was made 0644, renamed, then narrowed)."""
    path = tmp_path / ".claude.json"
    modes: list[tuple[str, int]] = []
    chmod, replace = os.chmod, os.replace

    def seen_chmod(p, mode, *a, **kw):
        modes.append((f"chmod {p}", mode))
        return chmod(p, mode, *a, **kw)

    def seen_replace(src, dst, *a, **kw):
        modes.append((f"rename to {dst}", stat.S_IMODE(os.stat(src).st_mode)))
        return replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "chmod", seen_chmod)
    monkeypatch.setattr(os, "replace", seen_replace)
    register(path)
    ours = [(what, oct(m)) for what, m in modes if ".claude.json" in what]
    assert any(what == f"rename to {path}" for what, _ in ours), ours
    assert all(int(m, 8) & 0o077 == 0 for _, m in ours), ours
