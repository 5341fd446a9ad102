"""The learner's side of the retry queue (store/learning/retry.py): re-extract what failed before.

A Stop or SessionEnd learner run first re-extracts the queue's due sessions, oldest
first, and spools their signals (each batch with its session, day and project); the
run's own filing then picks the spool up, so the backlog and the session land in one
commit, filed exactly as a fresh extraction would have filed them.
"""
from __future__ import annotations

from typing import Any, Callable
from cardmem.tools.learning.extract import extract
from cardmem.tools.model import ModelError, ModelUnavailable
from cardmem.store.learning import retry
from cardmem.store.learning.spool import spool
from cardmem.tools.secrets.redact import redact

# Told each entry the queue gave up (a host writes it to its hook log): never silently.
GiveUp = Callable[[list[dict[str, Any]]], None]

# At most this many backlog entries per run: each is one model call, in the background.
RETRY_PER_RUN = 8


def extract_or_why(turns: list[dict[str, str]], cfg: Any) -> tuple[list[Any] | None, str, bool]:
    """(signals, "", True), or (None, why, counts) when extraction failed; counts is
    False when no model was asked (none configured), so no attempt is spent."""
    try:
        return extract(turns, cfg=cfg["model"]), "", True
    except ModelUnavailable as exc:
        return None, exc.why, False
    except ModelError as exc:
        return None, exc.why, True
    except Exception as exc:  # noqa: BLE001 - a bug too keeps the excerpt; attempts bound it
        return None, f"{type(exc).__name__}: {' '.join(str(exc).split())}", True


def merge_turns(old: list[Any], new: list[dict[str, str]], limit: int) -> list[Any]:
    """The older excerpt's turns the new one no longer holds, then the new; the newest
    `limit` of them (excerpts of one transcript overlap)."""
    seen = {(t.get("role"), t.get("text")) for t in new}
    kept = [t for t in old if isinstance(t, dict) and (t.get("role"), t.get("text")) not in seen]
    return (kept + new)[-limit:] if limit > 0 else kept + new


def retry_due(store: Any, lock_path: Callable[[str], str], given_up: GiveUp | None = None) -> str:
    """Re-extract the queue's due entries, oldest first, into the spool. Stops at the first
    failure (the model is likely down for all of them). `lock_path(session)` is the
    session's learner lock: an entry whose session is busy is left to that learner;
    `given_up` hears of each entry the queue gives up. Returns a note for the log ("" when there was nothing due)."""
    entries = retry.due(store.root)
    if not entries:
        return ""
    from filelock import FileLock, Timeout


    done, failed = 0, ""
    for entry in entries[:RETRY_PER_RUN]:
        session = str(entry.get("session") or "")
        lock = FileLock(lock_path(session), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            continue
        try:
            entry = retry.load(store.root, session)
            if not retry.is_due(entry):
                continue  # filed, given up or rescheduled since it was listed
            signals, why, counts = extract_or_why(entry["turns"], store.config)
            if signals is None:
                gone = retry.fail(store.root, session, entry["turns"], why, counts=counts)
                if given_up is not None:
                    given_up(gone)
                failed = f"; retry failed: {why}"
                break
            lines = [redact(s.line) for s in signals]
            if lines:
                spool(store, {"session": session, "day": entry.get("day"), "source": "retry",
                              "signals": lines, "project": entry.get("project")})
            retry.remove(store.root, session)  # spooled: safe, and filed with this run
            done += 1
        finally:
            lock.release()
    if not done and not failed:
        return ""
    left = retry.retry_backlog(store.root)["waiting"]
    return f"; backlog: {done} session(s) re-extracted, {left} waiting{failed}"
