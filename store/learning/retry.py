"""The retry queue: session excerpts whose extraction failed, kept until it succeeds (DESIGN §6).

A failed extraction (the API erred or timed out, or no model is configured) leaves the
session's redacted excerpt, exactly as the model would have seen it, in
`.cardmem/retry/<session>.json`:

    {"session", "project", "cwd", "day", "size", "first_failed", "attempts",
     "last_error", "last_failed", "next_try", "turns": [{"role", "text"}]}

Times are Unix seconds; `day` is the local date of the first failure (the History lines
are dated by it, as the fresh run would have dated them); `size` is how much of the
transcript the excerpt covers. Later hook runs retry due entries, oldest first, with
backoff. An entry is given up after MAX_ATTEMPTS failures, or when the queue outgrows
MAX_ENTRIES or MAX_BYTES: it then moves to `.cardmem/retry/given-up/` with the reason,
for a person (and `cardmem doctor`) to see. Nothing is deleted unread.

This module knows files and times only: what an excerpt means, and who retries it, is
the learner's business. `retry_backlog` is cheap enough for the SessionStart hook: stdlib
only, and without `detail` just a directory listing.
"""
from __future__ import annotations

import json
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

QUEUE = "retry"
GIVEN_UP = "given-up"
# Wait after the 1st, 2nd, ... failure; past the last step the entry is given up.
BACKOFF_S = (60, 300, 1800, 7200, 43200)  # 1 min, 5 min, 30 min, 2 h, 12 h
MAX_ATTEMPTS = len(BACKOFF_S) + 1  # the first try and one retry per step
MAX_ENTRIES = 50
MAX_BYTES = 4_000_000  # an entry is ~30-60 kB (20 turns of 1,500 characters, JSON)


def queue_dir(root: Path | str) -> Path:
    return Path(root) / ".cardmem" / QUEUE


def session_file_name(session: str | None, limit: int = 64) -> str:
    """A session id as a safe file name (the queue, the spool, the session marks)."""
    return re.sub(r"[^A-Za-z0-9_-]", "", session or "")[:limit] or "nosession"


def _name(session: str) -> str:
    return session_file_name(session) + ".json"


def entry_path(root: Path | str, session: str) -> Path:
    return queue_dir(root) / _name(session)


def load(root: Path | str, session: str) -> dict[str, Any] | None:
    """The session's waiting entry, or None (absent or unreadable)."""
    return _read(entry_path(root, session))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("turns"), list) else None


@contextmanager
def _locked(root: Path | str) -> Iterator[Path]:
    """The queue folder, held against other processes changing the queue at once."""
    from filelock import FileLock

    d = queue_dir(root)
    d.mkdir(parents=True, exist_ok=True)
    with FileLock(str(d / ".lock"), timeout=30):
        yield d


def _write(path: Path, entry: dict[str, Any]) -> None:
    from ..git.writer import atomic_write

    atomic_write(path, json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8"))


def fail(root: Path | str, session: str, turns: list[dict[str, str]], error: str, *,
         counts: bool = True, project: str | None = None, cwd: str | None = None,
         size: int | None = None, now: float | None = None) -> list[dict[str, Any]]:
    """Record a failed extraction of session's excerpt (turns): create its entry or update
    it (turns replaced, attempts counted, next try pushed back). `counts=False` for a
    failure that did not try the model at all (no model configured): the entry waits,
    due at every run, without spending its attempts. Returns the entries given up on the
    way (this one, after too many attempts, or the oldest, pushed out by the bounds)."""
    now = time.time() if now is None else now
    with _locked(root) as d:
        path = d / _name(session)
        old = _read(path) or {}
        attempts = int(old.get("attempts", 0)) + (1 if counts else 0)
        entry = {
            "session": session,
            "project": project if project is not None else old.get("project"),
            "cwd": cwd if cwd is not None else old.get("cwd"),
            "day": old.get("day") or time.strftime("%Y-%m-%d", time.localtime(now)),
            "size": size if size is not None else old.get("size"),
            "first_failed": old.get("first_failed", now),
            "attempts": attempts,
            "last_error": " ".join(str(error).split()) or "unknown error",
            "last_failed": now,
            # no model: due again at every run, which costs no call until a model appears
            "next_try": now + BACKOFF_S[min(attempts, len(BACKOFF_S)) - 1]
            if counts else now,
            "turns": turns,
        }
        _write(path, entry)
        gone = []
        if counts and attempts >= MAX_ATTEMPTS:
            gone.append(_give_up(d, path, entry, f"{attempts} failed attempts", now))
        return gone + _bound(d, now)


def _bound(d: Path, now: float) -> list[dict[str, Any]]:
    """Give up entries until the queue fits MAX_ENTRIES and MAX_BYTES.

    The oldest go first (by first failure): they have had the most tries, a person
    remembers their sessions least, and later sessions have often taught the same again;
    the newest session is closest to the work at hand. Refusing the newcomer instead
    would let one long outage freeze the queue on its stalest excerpts.
    """
    sizes: dict[Path, int] = {}
    entries: list[tuple[float, Path, dict[str, Any] | None]] = []
    for p in d.glob("*.json"):
        e = _read(p)
        sizes[p] = p.stat().st_size
        # an unreadable entry can never be retried: it counts as the oldest
        entries.append((float(e.get("first_failed", 0)) if e else 0.0, p, e))
    entries.sort(key=lambda t: (t[0], t[1].name))
    count, total = len(entries), sum(sizes.values())
    gone = []
    for _, p, e in entries:
        if count <= MAX_ENTRIES and total <= MAX_BYTES:
            break
        why = (f"queue full ({count} > {MAX_ENTRIES} entries)" if count > MAX_ENTRIES
               else f"queue full ({total:,} > {MAX_BYTES:,} bytes)")
        gone.append(_give_up(d, p, e, why + "; the oldest goes first", now))
        count, total = count - 1, total - sizes[p]
    return gone


def _give_up(d: Path, path: Path, entry: dict[str, Any] | None, why: str,
             now: float) -> dict[str, Any]:
    """Move an entry to given-up/, with why and when: kept for a person, never retried."""
    dest = d / GIVEN_UP / path.name
    if dest.exists():  # the same session given up before: keep both
        dest = dest.with_name(f"{path.stem}-{int(now)}.json")
    if entry is None:  # unreadable: moved as it is
        dest.parent.mkdir(exist_ok=True)
        os.replace(path, dest)
        return {"session": path.stem, "given_up": now, "given_up_why": "unreadable; " + why}
    entry = {**entry, "given_up": now, "given_up_why": why}
    _write(dest, entry)
    path.unlink(missing_ok=True)
    return entry


def due(root: Path | str, now: float | None = None) -> list[dict[str, Any]]:
    """Waiting entries whose next try has come, oldest first."""
    now = time.time() if now is None else now
    out = []
    for p in sorted(queue_dir(root).glob("*.json")):
        e = _read(p)
        if e is not None and float(e.get("next_try", 0)) <= now:
            out.append(e)
    return sorted(out, key=lambda e: float(e.get("first_failed", 0)))


def is_due(entry: dict[str, Any] | None, now: float | None = None) -> bool:
    return entry is not None and float(entry.get("next_try", 0)) <= (
        time.time() if now is None else now)


def remove(root: Path | str, session: str) -> None:
    """The session's excerpt was extracted and its signals filed or spooled."""
    with _locked(root) as d:
        (d / _name(session)).unlink(missing_ok=True)


def retry_backlog(store_root: Path | str, detail: bool = False) -> dict[str, Any]:
    """The backlog at a glance: {"waiting", "given_up", "oldest_age_s", "last_error"}.

    Without detail this is one directory listing (two once something was given up) and
    the age and error are None: cheap enough for every SessionStart. With detail (doctor)
    every entry is read. Creates nothing; a store without a queue has an empty backlog.
    """
    d = queue_dir(store_root)
    try:
        names = os.listdir(d)
    except OSError:
        names = []
    waiting = [n for n in names if n.endswith(".json")]
    given: list[str] = []
    if GIVEN_UP in names:
        try:
            given = [n for n in os.listdir(d / GIVEN_UP) if n.endswith(".json")]
        except OSError:
            pass
    out: dict[str, Any] = {"waiting": len(waiting), "given_up": len(given),
                           "oldest_age_s": None, "last_error": None}
    if not detail:
        return out
    now, latest = time.time(), -1.0
    for folder, files in ((d, waiting), (d / GIVEN_UP, given)):
        for n in files:
            e = _read(folder / n)
            if e is None:
                continue
            if folder == d:
                age = now - float(e.get("first_failed", now))
                out["oldest_age_s"] = max(out["oldest_age_s"] or 0.0, age)
            if float(e.get("last_failed", 0)) > latest:
                latest, out["last_error"] = float(e.get("last_failed", 0)), e.get("last_error")
    return out
