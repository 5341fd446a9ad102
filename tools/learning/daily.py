"""The end-of-session learner's cheap maintenance pass: M1 without a model (broken
links, duplicates, drift, stale cards, long Histories), at most once a day per store.

It runs in the detached learner process the Stop / SessionEnd hook starts, after the
learning, so the hook itself stays as lean as before. It writes no card: it records its
findings (store/maintain_record.py) for doctor, search and the session-start context.
Off with `[maintain] daily = false`; at most `[maintain] daily_cpu_s` seconds of CPU
(then it stops cleanly, recording the kinds it finished).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

STAMP = "maintain-daily"  # in .cardmem/: its mtime is when the last daily pass started
EVERY_S = 86400.0


def maybe_maintain(root: Path, now: float | None = None) -> str:
    """Run the pass if a day has gone by since the last one; what to add to the log line
    ("" when not due, taken by another process, or switched off). Never raises."""
    now = time.time() if now is None else now
    stamp = root / ".cardmem" / STAMP
    try:
        if now - stamp.stat().st_mtime < EVERY_S:
            return ""
    except OSError:
        pass
    try:
        from filelock import FileLock, Timeout

        from cardmem.store.errors import CardmemError
        from cardmem.store.store import Store

        try:
            store = Store.open(root)
        except CardmemError:
            return ""  # no store here: the learner's line says so already
        cfg = store.config.get("maintain", {})
        if not cfg.get("daily", True):
            return ""
        try:
            with FileLock(str(stamp) + ".lock", timeout=0):
                if stamp.exists() and now - stamp.stat().st_mtime < EVERY_S:
                    return ""  # another learner ran it while we waited
                stamp.touch()
                os.utime(stamp, (now, now))
                from cardmem.store.maintain import MODEL_FREE
                from cardmem.tools.maintain import run

                started = time.monotonic()
                report = run(store, set(MODEL_FREE), cpu_s=float(cfg.get("daily_cpu_s", 10.0)))
        except Timeout:
            return ""
    except Exception as exc:  # noqa: BLE001 - the learner's log line says it, nothing more
        return f"; daily maintain: error: {type(exc).__name__}: {' '.join(str(exc).split())}"
    cut = "".join(f" ({n})" for n in report.notes if n.startswith("cut off"))
    return (f"; daily maintain: {len(report.findings)} open finding(s) in "
            f"{time.monotonic() - started:.1f} s{cut}")
