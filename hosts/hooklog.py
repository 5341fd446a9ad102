"""The hook log, `.cardmem/hooks.log` in the store: one line per hook run.

Hooks run where nobody watches their output, so each run leaves a line saying what
happened (event, duration, outcome). The file is rotated at ~1 MB to `hooks.log.1`.
Logging never raises: a hook must not fail because its log could not be written.
"""
from __future__ import annotations

import os
import time

from cardmem.store.appendlog import append

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

MAX_BYTES = 1_000_000
NAME = "hooks.log"


def write(store_root: Path | str | None, event: str, started: float, outcome: str,
          session: str | None = None) -> None:
    """Append `<UTC time> <event> <ms> ms session=<id> <outcome>` to the store's hook log."""
    if store_root is None:
        return
    try:
        # os.path, not pathlib: the PreToolUse hook logs and runs before every tool call.
        state = os.path.join(os.fspath(store_root), ".cardmem")
        if not os.path.isdir(state):
            from cardmem.store.git.head_file import is_repo  # os only

            if not is_repo(store_root):
                return  # not a store: leave no trace in a random folder
            os.makedirs(state, exist_ok=True)
        ms = (time.monotonic() - started) * 1000
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        sess = f" session={session[:12]}" if session else ""
        append(os.path.join(state, NAME),
               f"{stamp} {event} {ms:.0f}ms{sess} {' '.join(outcome.split())}\n",
               max_bytes=MAX_BYTES)
    except OSError:
        pass
