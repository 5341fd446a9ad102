"""Learning at the end of a session, any host's (DESIGN §6), in the detached process.

hosts/hook.py answers stop and session-end at once and starts
`python -m cardmem.hosts.hook _learn EVENT PAYLOAD` in the background; that
process runs hosts/learn.py, which runs `learn` here: the transcript is read and
redacted, signals are extracted (one model call) and filed (one commit), or spooled if
the store is busy. A failed extraction keeps the redacted excerpt in .cardmem/retry/;
each later run re-extracts the due ones first, into the same commit (backlog.py).
Nothing here knows a host: the host's side finds the store, a transcript its payload
does not name, and logs.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from . import backlog
from cardmem.store.learning.retry import session_file_name
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store
from cardmem.tools.learning.transcript import read_excerpt, should_skip, talk_since
from cardmem.store.context import project_for
from cardmem.store.maintain.checkouts import record
from cardmem.store.git.writer import atomic_write
from cardmem.store.learning.spool import spool_dir
from cardmem.store.learning.compound import file_signals
from cardmem.store.learning import retry
from cardmem.tools.secrets.redact import redact


# A Stop hook fires after every reply; learn again only once the transcript grew this much.
STOP_MIN_GROWTH = 4_000


def _mark_path(store: Any, session: str) -> Path:
    d = store.state_dir / "sessions"
    d.mkdir(exist_ok=True)
    return d / session_file_name(session)


def learn(event: str, payload: dict[str, Any], root: Path | str, *,
          transcript_of: Callable[[str], str] | None = None,
          given_up: backlog.GiveUp | None = None) -> str:
    """Transcript -> redacted excerpt -> signals -> one commit. Returns the log outcome.

    The retry backlog's due sessions go first, into the same commit. A failed
    extraction keeps the excerpt in the retry queue (store/learning/retry.py): nothing is lost.
    `transcript_of(session)`: where the host keeps a transcript its payload does not name;
    `given_up`: told of each retry entry given up.
    """
    try:
        store = Store.open(Path(root))
    except CardmemError as exc:
        return f"no store: {exc.why}"
    session = str(payload.get("session_id") or "")
    source = f"{event}-hook"  # the commit's Cardmem-Source: stop-hook, session-end-hook
    transcript = payload.get("transcript_path")
    retried = backlog.retry_due(store, lambda s: str(_mark_path(store, s)) + ".lock", given_up)
    if not transcript:  # a host whose end-of-session payload names none may keep it where known
        transcript = transcript_of(session) if transcript_of is not None else ""
    if not transcript:
        return _file_pending(store, session, source, "skipped: no transcript_path", retried)

    if should_skip(transcript):
        return _file_pending(store, session, source, "skipped: no transcript or under 1,000 bytes",
                             retried)
    from filelock import FileLock

    mark = _mark_path(store, session)
    # One learner per session at a time: Stop and SessionEnd often fire together.
    with FileLock(str(mark) + ".lock", timeout=300):
        size = os.stat(transcript).st_size
        try:
            done = int(json.loads(mark.read_text()).get("size", 0))
        except (OSError, ValueError, AttributeError):
            done = 0
        growth = size - done
        if growth <= 0 or (event == "stop" and done and growth < STOP_MIN_GROWTH):
            return _file_pending(store, session, source, "skipped: nothing new since the last run",
                                 retried)

        if done and not talk_since(transcript, done):  # grown, but not by conversation
            _write_mark(mark, size)
            return _file_pending(store, session, source,
                                 "skipped: nothing new said since the last run", retried)
        cfg = store.config

        # redact, then cut: half a token is no longer recognised
        turns = read_excerpt(transcript, max_turns=int(cfg["extract"]["max_turns"]),
                             turn_chars=int(cfg["extract"]["turn_chars"]), redact=redact)
        turns = [{"role": t.role, "text": t.text} for t in turns]
        project = _project(store, payload)
        waiting = retry.load(store.root, session)
        if waiting:  # this session failed before: one call for the old excerpt and the new
            turns = backlog.merge_turns(waiting["turns"], turns,
                                        2 * int(cfg["extract"]["max_turns"]))
        signals, why, counts = backlog.extract_or_why(turns, cfg)
        if signals is None:
            gone = retry.fail(store.root, session, turns, why, counts=counts, project=project,
                              cwd=payload.get("cwd"), size=size)
            _write_mark(mark, size)  # queued: the backlog retries it, the next run does not
            if given_up is not None:
                given_up(gone)
            what = "extraction failed" if counts else "no model"
            return _file_pending(store, session, source, f"{what}: {why}; kept for retry", retried)
        lines = [redact(s.line) for s in signals]
        outcome = _file(store, lines, session, project, source)
        if waiting:
            retry.remove(store.root, session)  # filed or spooled with this run's signals
        _write_mark(mark, size)  # filed or spooled, they are safe: never extract them twice
        return outcome + retried


def _project(store: Any, payload: dict[str, Any]) -> str | None:
    """The session's project, from the payload's cwd (as session start finds it)."""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None

    try:
        project = project_for(store, cwd)
    except Exception:  # noqa: BLE001 - no project is no reason to lose the signals
        return None

    record(store, project, cwd)  # where `cardmem maintain` looks for drift
    return project


def _write_mark(mark: Path, size: int) -> None:
    atomic_write(mark, json.dumps({"size": size, "at": time.time()}).encode())


def _file_pending(store: Any, session: str, source: str, skipped: str, retried: str) -> str:
    """File what waits in the spool (a busy store's signals, the backlog's), if anything."""
    if any(spool_dir(store).glob("*.json")):
        return f"{skipped}; spool: {_file(store, [], session, source=source)}{retried}"
    return skipped + retried


def _file(store: Any, lines: list[str], session: str, project: str | None = None,
          source: str = "stop-hook") -> str:
    r = file_signals(store, lines, session, source=source, project=project)
    if r.spooled:
        return f"spooled {len(lines)} signal(s): {r.error}"
    if not r.filed and not r.duplicates and not lines and not r.from_spool:
        return "ok: EMPTY (nothing worth remembering)"
    cards = sorted({f.card for f in r.filed if f.card})
    return (f"ok: filed {len(r.filed)} signal(s) into {', '.join(cards) or 'no card'}"
            f"{f', {len(r.duplicates)} duplicate(s) skipped' if r.duplicates else ''}"
            f"{f', {r.from_spool} from the spool' if r.from_spool else ''}"
            f"{f', commit {r.commit[:10]}' if r.commit else ''}")
