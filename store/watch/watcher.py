"""The live watcher: keeps the index (and, with autocommit, git) in step with the tree.

Three kinds of threads cooperate:
- watchdog's observer threads turn kernel events into calls of `_Handler.dispatch`, which
  only maps a path to a card id and notes it (cheap, guarded: it can never raise);
- one worker thread debounces those notes into batches and applies them to the index
  (`refresh_ids`), falls back to a full stat rescan (`refresh`) when events may have been
  lost (queue overflow, a burst, a folder moved, the observer restarted), holds a big
  batch until git lets go of .git/index.lock (a checkout is applied once, when done),
  checks the observer's health, and commits hand edits after a quiet period;
- the caller's thread starts and stops it (`cardmem watch` runs a small loop on top).

Nothing here trusts events to be complete: any doubt becomes a rescan, and a rescan is
stat-based, so it costs a walk of the tree, not a re-read of every card.
"""
from __future__ import annotations

import itertools
import logging
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from ..store import Store
from .autocommit import Autocommit
from .indexing import BURST_IDS, IndexLike, Indexing
from .intake import DEBOUNCE_S, MAX_DELAY_S, WATCHDOG_LOGGERS, Intake, _OverflowLog

HEALTH_S = 1.0  # how often the worker checks that the observer threads are alive
RESCAN_S = 300.0  # a periodic stat rescan as a safety net (0 disables)
# wait_idle's fence: a file it creates in the store's (hidden, git-ignored) state folder.
# inotify delivers events in order, so once the fence's event is here so is every earlier
# write's. (Delivery can lag far behind the write: watchdog holds all events queued behind
# an IN_MOVED_FROM for up to 0.5 s, to pair it, and git renames .git/index.lock often.)
FENCE_RETRY_S = 1.0  # a fence unseen this long (an observer restarted): write another



def _default_say(line: str) -> None:
    print(f"cardmem: watch: {line}", file=sys.stderr, flush=True)


@dataclass
class Stats:
    """What the watcher did, for tests, `--verbose` and the benchmark."""

    batches: int = 0
    ids_applied: int = 0
    errors: int = 0
    restarts: int = 0
    commits: int = 0
    not_committed: int = 0

    def __post_init__(self) -> None:
        self.rescans: Counter[str] = Counter()


class Watcher(Intake, Indexing, Autocommit):
    """Keep a store's index live; optionally commit hand edits after a quiet period.

    start() / stop() from any thread; wait_idle() lets tests and scripts wait until
    everything seen so far is applied (and, with commits=True, committed).
    """

    def __init__(self, store: Store, *, index_factory: Callable[[], IndexLike] | None = None,
                 autocommit: bool | None = None, quiet_s: float | None = None,
                 debounce_s: float = DEBOUNCE_S, max_delay_s: float = MAX_DELAY_S,
                 burst_ids: int = BURST_IDS, health_s: float = HEALTH_S,
                 rescan_s: float = RESCAN_S, say: Callable[[str], None] | None = None,
                 verbose: bool = False, observer_factory: Callable[[], Any] | None = None) -> None:
        self.store = store
        self.root = str(store.root)
        cfg = store.config["watch"]
        self.autocommit = bool(cfg["autocommit"] if autocommit is None else autocommit)
        self.quiet_s = float(cfg["quiet_s"] if quiet_s is None else quiet_s)
        self.debounce_s, self.max_delay_s = debounce_s, max_delay_s
        self.burst_ids, self.health_s, self.rescan_s = burst_ids, health_s, rescan_s
        self.say = say if say is not None else _default_say
        self.verbose = verbose
        self.stats = Stats()
        self._index_factory = index_factory or self._open_index
        self._observer_factory = observer_factory
        self._index: IndexLike | None = None
        self._observer: Any = None
        self._handler: Any = None
        self._log_handler = _OverflowLog(self)
        self._cv = threading.Condition()
        self._stopping = threading.Event()
        self._worker: threading.Thread | None = None
        # Under _cv: what events asked for and the worker has not yet done.
        self._pending: set[str] = set()
        self._rescan: str | None = None
        self._first_t = self._last_t = 0.0  # first and last event of the pending batch
        self._dirty: set[str] = set()  # cards changed since the last autocommit
        self._dirty_t = 0.0
        self._busy = False
        self._committing = False
        self._retry_at = 0.0
        self._commit_retry_at = 0.0
        self._failures = 0
        self._last_said = ""
        self._flush_on_stop = True
        self._closing = False  # set by stop(): no more observer restarts
        self._ordered_events = False  # the observer reports events promptly and in order
        self._fences: dict[str, bool] = {}  # under _cv: wait_idle's fence path -> seen
        self._fence_no = itertools.count()

    # --- life cycle --------------------------------------------------------------------

    def start(self) -> "Watcher":
        """Start observing, then bring the index up to date with one rescan.

        The observer starts first, so nothing changed during the rescan is missed.
        """
        for name in WATCHDOG_LOGGERS:
            lg = logging.getLogger(name)
            lg.addHandler(self._log_handler)
            if lg.getEffectiveLevel() > logging.WARNING:
                lg.setLevel(logging.WARNING)
        self._start_observer()
        self.request_rescan("start")
        self._worker = threading.Thread(target=self._run, name="cardmem-watch", daemon=True)
        self._worker.start()
        return self

    def stop(self, *, flush: bool = True, timeout_s: float = 10.0) -> None:
        """Stop observing; with flush, apply and commit what is pending first. Idempotent."""
        self._closing = True
        self._ordered_events = False  # no observer to see wait_idle's fences
        obs, self._observer = self._observer, None
        if obs is not None:
            self._stop_observer(obs)
        with self._cv:
            self._flush_on_stop = flush
            self._stopping.set()
            self._cv.notify_all()
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout_s)
        for name in WATCHDOG_LOGGERS:
            logging.getLogger(name).removeHandler(self._log_handler)

    def alive(self) -> bool:
        return self._worker is not None and self._worker.is_alive() and self._observer_ok()

    def ensure_alive(self) -> None:
        """Restart a dead worker (the worker itself restarts a dead observer)."""
        if self._closing or self._stopping.is_set():
            return
        if self._worker is None or not self._worker.is_alive():
            self._tell("the watcher's worker thread died; restarting it and rescanning",
                       force=True)
            self.stats.restarts += 1
            self.request_rescan("worker restarted")
            self._worker = threading.Thread(target=self._run, name="cardmem-watch", daemon=True)
            self._worker.start()

    def wait_idle(self, timeout_s: float = 10.0, *, settle_s: float = 0.1,
                  commits: bool = False) -> bool:
        """Wait until every write made before the call has reached us as an event, no
        event came for settle_s, and everything noted is applied (and committed, if
        commits). False on timeout."""
        called = time.monotonic()
        deadline = called + timeout_s
        fences: list[str] = []
        fence_t = float("-inf")
        try:
            while True:
                now = time.monotonic()
                if self._ordered_events and now - fence_t >= FENCE_RETRY_S:
                    fence_t = now
                    if (fence := self._write_fence()) is not None:
                        fences.append(fence)
                with self._cv:
                    now = time.monotonic()
                    # Without a fence (polling, or .cardmem/ unwritable) settle_s counting
                    # from the call is the best guess that earlier writes have reached us.
                    fenced = any(self._fences.get(f) for f in fences) if fences else (
                        now - called >= settle_s)
                    idle = (fenced and not self._pending and self._rescan is None
                            and not self._busy and now - self._last_t >= settle_s
                            and not (commits and self.autocommit
                                     and (self._dirty or self._committing)))
                    if idle:
                        return True
                    if now >= deadline:
                        return False
                    self._cv.wait(min(0.02, deadline - now))
        finally:
            with self._cv:
                for f in fences:
                    self._fences.pop(f, None)
            for f in fences:
                try:
                    os.unlink(f)
                except OSError:
                    pass

    def _write_fence(self) -> str | None:
        """Create a fence file for wait_idle; None if the store cannot be written."""
        try:
            path = str(self.store.state_dir / f"watch-fence-{os.getpid()}-{next(self._fence_no)}")
        except OSError:
            return None
        with self._cv:
            self._fences[path] = False  # known before its event can arrive
        try:
            with open(path, "wb"):
                pass
        except OSError:
            with self._cv:
                self._fences.pop(path, None)
            return None
        return path

    # --- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        next_health = time.monotonic() + self.health_s
        next_rescan = time.monotonic() + self.rescan_s if self.rescan_s else float("inf")
        while True:
            try:
                with self._cv:
                    while not self._stopping.is_set():
                        now = time.monotonic()
                        due = min(self._apply_due(), self._commit_due(), next_health, next_rescan)
                        if due <= now:
                            break
                        self._cv.wait(min(due - now, 1.0))
                    if self._stopping.is_set():
                        break
                now = time.monotonic()
                if now >= next_health:
                    next_health = now + self.health_s
                    self._check_observer()
                if now >= next_rescan:
                    next_rescan = now + self.rescan_s
                    self.request_rescan("periodic")
                if self._apply_due() <= now:
                    self._apply()
                if self._commit_due() <= time.monotonic():
                    self._commit()
            except Exception as exc:  # noqa: BLE001 - the worker outlives any one failure
                self._failed("watching", exc)
                self._stopping.wait(0.5)
        self._finish()

    def _finish(self) -> None:
        """On stop: apply what is pending, and commit it if asked to flush."""
        try:
            if self._pending or self._rescan:
                self._apply()
            if self._flush_on_stop and self.autocommit and self._dirty:
                self._commit(final=True)
        except Exception as exc:  # noqa: BLE001
            self._failed("stopping", exc)
        finally:
            close = getattr(self._index, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001
                    pass
            self._index = None
            with self._cv:
                self._cv.notify_all()

    # --- reporting ---------------------------------------------------------------------------

    def _failed(self, doing: str, exc: BaseException) -> None:
        self.stats.errors += 1
        self._tell(f"error while {doing}: {type(exc).__name__}: {exc}", force=True)

    def _tell(self, line: str, *, force: bool = False) -> None:
        """Say a line on stderr; a line repeated back to back is said once unless forced."""
        if not force and line == self._last_said:
            return
        self._last_said = line
        try:
            self.say(line)
        except Exception:  # noqa: BLE001 - a closed stderr must not kill the watcher
            pass


