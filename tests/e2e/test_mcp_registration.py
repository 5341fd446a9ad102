"""The real Codex and Gemini CLIs read the MCP server `cardmem install` registered:
`codex mcp list` from ~/.codex/config.toml, `gemini mcp list` from ~/.gemini/settings.json,
each with the Python and store install named. After uninstall neither lists it."""
from __future__ import annotations

import subprocess
import sys

from hostkit import cardmem, host_env


def listed(cli, home, env) -> str:
    r = subprocess.run([str(cli), "mcp", "list"], capture_output=True, text=True, env=env,
                       cwd=home, timeout=120)
    return r.stdout + r.stderr


def test_codex_and_gemini_list_the_registered_server(tmp_path, codex, gemini_cli):
    home, store = tmp_path / "home", tmp_path / "store"
    home.mkdir()
    env = host_env(home, CARDMEM_STORE=str(store))
    cardmem("init", str(store), env=env)
    for host, cli in (("codex", codex), ("gemini", gemini_cli)):
        cardmem("install", host, env=env)
        out = listed(cli, home, env)
        assert "cardmem" in out and sys.executable in out and str(store) in out, out
        cardmem("uninstall", host, env=env)
        assert "cardmem.tools.cli" not in listed(cli, home, env)
