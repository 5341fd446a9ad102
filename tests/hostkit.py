"""Running a real host (Claude Code) against the fake API: its environment and our CLI."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CARDMEM = Path(sys.executable).with_name("cardmem")


def host_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a headless Claude Code in a temporary HOME: nothing of ours or
    of the user's leaks in, and it reaches for nothing but the fake API."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE", "CARDMEM_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CACHE_HOME=str(home / ".cache"),
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               DISABLE_BUG_COMMAND="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               CLAUDE_CODE_DISABLE_TERMINAL_TITLE="1", **extra)
    return env


def cardmem(*args: str, env: dict[str, str]) -> str:
    """Run the installed cardmem as the user would; it must succeed."""
    proc = subprocess.run([str(CARDMEM), *args], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
