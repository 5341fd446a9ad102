"""End to end: Claude Code (the real CLI) calls cardmem's MCP server that
`cardmem install claude-code` registered, against the fake Messages API.

Claude Code starts `cardmem mcp` from ~/.claude.json in the background; the scripted
model waits for it (Claude Code's WaitForMcpServers), calls `mcp__cardmem__search`, and
Claude Code sends the result back, which must name the card.
Uses the pinned Claude Code of the `claude_code` fixture (tests/e2e/conftest.py).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hostkit import cardmem, host_env
from fakeapi import FakeAPI, reply, tool_use

TOOL = "mcp__cardmem__search"
WAITS = 5


def test_claude_code_searches_memory_through_the_registered_mcp_server(
        tmp_path: Path, claude_code: Path) -> None:
    home, store, proj = tmp_path / "home", tmp_path / "store", tmp_path / "work"
    home.mkdir()
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    # MCP tools go to the model directly, not deferred behind ToolSearch, so the scripted
    # model can call one by name.
    env = host_env(home, MCP_TIMEOUT="60000", ENABLE_TOOL_SEARCH="false")
    cardmem("init", str(store), env=env)
    cardmem("new", "entities/frobnicator", "--store", str(store), "--title", "Frobnicator",
        "--body", "The frobnicator service retries widget jobs five times.", env=env)
    cardmem("install", "claude-code", "--store", str(store), env=env)

    def answer(body: dict) -> object:
        names = {t.get("name") for t in body.get("tools") or []}
        if "Bash" not in names:
            return reply("side call")  # titles, hooks' extraction: not the main loop
        done = {b.get("tool_use_id") for m in body["messages"] if m["role"] == "user"
                and isinstance(m["content"], list) for b in m["content"]
                if b.get("type") == "tool_result"}
        if TOOL in names:
            if "toolu_mcp_1" not in done:
                return reply(tool_use(TOOL, {"query": "frobnicator retries"}, id="toolu_mcp_1"))
            return reply("Found it in memory.")
        # The server is still starting (Claude Code connects in the background): wait for it,
        # as a model would, through Claude Code's own tool; on a loaded machine one wait
        # may not be enough (a run at load 20 gave up after one), so up to WAITS of them.
        waits = sum(1 for d in done if d and d.startswith("toolu_wait"))
        if "WaitForMcpServers" in names and waits < WAITS:
            return reply(tool_use("WaitForMcpServers", {"servers": ["cardmem"]},
                                  id=f"toolu_wait_{waits}"))
        return reply("The cardmem tools never appeared.")

    with FakeAPI(handler=answer) as api:
        env = {**env, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake-e2e"}
        proc = subprocess.run([str(claude_code), "-p", "How often does the frobnicator retry?",
                               "--output-format", "json", "--allowedTools", TOOL],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert json.loads(proc.stdout)["result"] == "Found it in memory."
        sent = [b for r in api.messages_requests() for m in r.body.get("messages", [])
                if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "tool_result"
                and b.get("tool_use_id") == "toolu_mcp_1"]
    assert sent, "Claude Code never returned the MCP tool's result"
    text = json.dumps(sent[0]["content"])
    assert not sent[0].get("is_error"), text
    assert "entities/frobnicator" in text and "no_confident_results" in text
