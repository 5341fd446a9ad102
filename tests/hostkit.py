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
    """Wait until every learner that one of `events` detached is over, and at least one
    has logged its end (`EVENT/learn` in hooks.log). Returns the log. A learner is over
    when its line is there, or when no process of it is left: one killed before it could
    log (a streak run at load ~28 saw a Stop learner never log while its SessionEnd twin
    filed) commits nothing more either. A check that something happened only once waits
    on this, not on a sleep: a second learner slower than the sleep would pass unseen. Not
    every event must detach one: `claude -p` exits without waiting for its async Stop hook,
    which may never start."""
    import re
    import time

    log = store / ".cardmem" / "hooks.log"
    deadline = time.monotonic() + timeout
    while True:
        text = log.read_text() if log.exists() else ""
        kinds = "|".join(map(re.escape, events))
        detached = {m[1]: m[2] for m in re.finditer(
            rf"^\S+ ({kinds}) \S+ (?:session=(\S*) )?.*detached$", text, re.M)}
        logged = {e for e in detached if f" {e}/learn " in text}
        if logged and all(e in logged or not learner_running(e, s) for e, s in detached.items()):
            return text
        assert time.monotonic() < deadline, (
            f"learners of {events} not done in {timeout} s (still running: "
            f"{[e for e, s in detached.items() if learner_running(e, s)]}):\n{text}")
        time.sleep(0.1)


def learner_running(event: str, session: str | None) -> bool:
    """A detached learner of `event` for the session (hooks.log's short id) is alive: its
    argv is `... _learn EVENT PAYLOAD` (hosts/hook.py detach; Popen returns after the
    exec, so once `detached` is logged the argv is the learner's). Zombies count as gone."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (b"_learn" in argv and argv[argv.index(b"_learn") + 1:][:1] == [event.encode()]
                and (session or "").encode() in b" ".join(argv) and state != "Z"):
            return True
    return False
