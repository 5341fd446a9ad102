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


def learners_done(store: Path, events: tuple[str, ...] = ("stop", "session-end"),
                  timeout: float = 120) -> str:
    """Wait until the learner each of `events` detached has logged its end (one
    `EVENT/learn` line in hooks.log each; the host has exited, so every hook has run).
    Returns the log. A check that something happened only once waits on this, not on a
    sleep: a second learner slower than the sleep would pass unseen."""
    import time

    log = store / ".cardmem" / "hooks.log"
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text() if log.exists() else ""
        if all(f" {e}/learn " in text for e in events):
            return text
        assert time.monotonic() < deadline, f"learners of {events} not done in {timeout} s:\n{text}"
        time.sleep(0.1)
