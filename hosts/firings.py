"""The rules that fired at tool calls: `.cardmem/rule-events.jsonl`, one line per firing.

The PreToolUse hook appends `{"t", "session", "rule", "action", "kind", "tool"}` for every
reminder, question and refusal (O_APPEND: concurrent hooks add whole lines; rotated to
`.1` at MAX_BYTES). `counts` reads them back for `cardmem rules stats` and `doctor`, so a
person sees which rules earn their place. Writing never raises.
"""
from __future__ import annotations

import os
import time

from cardmem.store.appendlog import append

from .hookjson import dumps, loads  # not json: the PreToolUse hook writes these

NAME = "rule-events.jsonl"
MAX_BYTES = 4_000_000


def record(root: str, session: str | None, tool: str, fired: list[dict]) -> None:
    if not fired:
        return
    try:
        now = round(time.time(), 3)
        lines = "".join(dumps({"t": now, "session": (session or "")[:12], "rule": f["id"],
                               "action": f["action"], "kind": f["kind"], "tool": tool})
                        + "\n" for f in fired)
        append(os.path.join(root, ".cardmem", NAME), lines, max_bytes=MAX_BYTES)
    except OSError:
        pass


def events(root: str, since: float = 0.0) -> list[dict]:
    """Every recorded firing at or after `since` (epoch seconds), oldest first."""
    out = []
    base = os.path.join(root, ".cardmem", NAME)
    for path in (base + ".1", base):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    try:
                        e = loads(line)
                    except ValueError:
                        continue
                    if isinstance(e, dict) and e.get("t", 0) >= since:
                        out.append(e)
        except OSError:
            continue
    return out


def counts(root: str, since: float = 0.0) -> dict[str, dict[str, int]]:
    """rule id -> {"deny": n, "ask": n, "remind": n, "relevance": n}, since a time."""
    out: dict[str, dict[str, int]] = {}
    for e in events(root, since):
        c = out.setdefault(str(e.get("rule")), {"deny": 0, "ask": 0, "remind": 0, "relevance": 0})
        key = "relevance" if e.get("kind") == "relevance" else str(e.get("action"))
        if key in c:
            c[key] += 1
    return out
