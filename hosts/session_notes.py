"""What a hook notes per session in .cardmem/: the cards the prompt hook has shown a
session, the last rule the PreToolUse hook brought up by relevance. One small JSON file
each, session -> note, the newest MAX_SESSIONS kept, replaced whole; best effort (a lost
note only shows a card or a reminder again). os and hookjson only: the PreToolUse hook
reads and writes one.
"""
from __future__ import annotations

import os

from . import hookjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

MAX_SESSIONS = 200


def load(path: str) -> dict:
    """Every session's note ({} when there is none, or it cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = hookjson.loads(f.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save(path: str, data: dict, when: Callable[[Any], float]) -> None:
    """Write the notes, the newest MAX_SESSIONS by `when(note)` (never raises)."""
    if len(data) > MAX_SESSIONS:
        def at(note: Any) -> float:
            try:
                return float(when(note))
            except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                return 0.0

        data = dict(sorted(data.items(), key=lambda kv: at(kv[1]))[-MAX_SESSIONS:])
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(hookjson.dumps(data))
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
