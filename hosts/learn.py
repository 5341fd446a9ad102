"""The learner's host side, in the detached process `python -m cardmem.hosts.hook _learn
EVENT PAYLOAD` (hosts/hook.py starts it): which store, where the host keeps a transcript
its payload does not name, and the hook log. The learning itself is host-free
(tools/learning/session_end.py).
"""
from __future__ import annotations

import time
from typing import Any, Callable

from . import hooklog
from .which_store import store_root
from cardmem.tools.learning.session_end import learn as learn_session
from .adapters import MODULES, load
from cardmem.tools.learning.daily import maybe_maintain


def learn(event: str, payload: dict[str, Any], store_path: str | None = None) -> str:
    """tools/learning/session_end.learn for this host's payload; returns the log outcome."""
    root = store_root(store_path)
    return learn_session(event, payload, root, transcript_of=_transcript_finder(payload),
                         given_up=lambda gone: log_given_up(root, gone))


def _transcript_finder(payload: dict[str, Any]) -> Callable[[str], str] | None:
    """The host's transcript_of(session), if its adapter has one."""
    host = str(payload.get("host") or "claude")
    return getattr(load(host), "transcript_of", None) if host in MODULES else None


def log_given_up(root: Any, gone: list[dict[str, Any]]) -> None:
    """One hooks.log line for each entry the queue gave up: never silently."""
    for e in gone:
        hooklog.write(root, "retry/give-up", time.monotonic(),
                      f"gave up on session {e.get('session')}: {e.get('given_up_why')}; "
                      f"last error: {e.get('last_error')}; excerpt kept in "
                      ".cardmem/retry/given-up/", e.get("session"))


def learn_logged(event: str, payload: dict[str, Any], store_path: str | None) -> int:
    """learn(), then the daily maintenance; the outcome goes to the hook log, never raised."""
    started = time.monotonic()
    try:
        outcome = learn(event, payload, store_path)
    except Exception as exc:  # noqa: BLE001 - logged, never raised into the host
        outcome = f"error: {type(exc).__name__}: {' '.join(str(exc).split())}"

    outcome += maybe_maintain(store_root(store_path))
    hooklog.write(store_root(store_path), f"{event}/learn", started, outcome,
                  payload.get("session_id"))
    return 0
