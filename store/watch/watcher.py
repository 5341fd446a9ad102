"""The live watcher: keeps the index (and, with autocommit, git) in step with the tree.

A Watcher is made of parts, each with its own state, sharing one Condition:
- the intake (intake.py): watchdog's observer threads turn kernel events into card ids
  noted for the worker (cheap, guarded: it can never raise), or a rescan when events may
  have been lost (queue overflow, a burst, a folder moved, the observer restarted), and
  it says when the noted batch is due (a big one waits for git to let go of
  .git/index.lock: a checkout is applied once, when done);
- the indexer (indexing.py): applies a batch to the index (`refresh_ids`) or rescans;
- the committer (autocommit.py): commits hand edits after a quiet period;
- the backfill (backfill.py): has what the index changed embedded after it, in a process
  of its own, so the index never waits on the model.
One worker thread (here) runs the intake's batches through the indexer, checks the
observer's health and calls the committer; the caller's thread starts and stops it
(`cardmem watch` runs a small loop on top).

Nothing here trusts events to be complete: any doubt becomes a rescan, and a rescan is
stat-based, so it costs a walk of the tree, not a re-read of every card.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..index.db import Index
from ..store import Store
from .autocommit import Committer
from .backfill import Backfill
from .indexing import BURST_IDS, IndexLike, Indexer
from .intake import DEBOUNCE_S, MAX_DELAY_S, Intake
from .report import Voice

HEALTH_S = 1.0  # how often the worker checks that the observer threads are alive
RESCAN_S = 300.0  # a periodic stat rescan as a safety net (0 disables)
# wait_idle's fence: a file it creates in the store's (hidden, git-ignored) state folder.
# inotify delivers events in order, so once the fence's event is here so is every earlier
# write's. (Delivery can lag far behind the write: watchdog holds all events queued behind
# an IN_MOVED_FROM for up to 0.5 s, to pair it, and git renames .git/index.lock often.)
FENCE_RETRY_S = 1.0  # a fence unseen this long (an observer restarted): write another



class Watcher:
    """Keep a store's index live; optionally commit hand edits after a quiet period.

    start() / stop() from any thread; wait_idle() lets tests and scripts wait until
    everything seen so far is applied (and, with commits=True, committed; with
    vectors=True, embedded).
    """

    def __init__(self, store: Store, *, index_factory: Callable[[], IndexLike] | None = None,
                 autocommit: bool | None = None, quiet_s: float | None = None,
                 debounce_s: float = DEBOUNCE_S, max_delay_s: float = MAX_DELAY_S,
                 burst_ids: int = BURST_IDS, health_s: float = HEALTH_S,
                 rescan_s: float = RESCAN_S, say: Callable[[str], None] | None = None,
                 verbose: bool = False, observer_factory: Callable[[], Any] | None = None,
                 vectors: bool = True) -> None:
        self.store = store
        self.root = str(store.root)
        cfg = store.config["watch"]
        self.health_s, self.rescan_s = health_s, rescan_s
        self.voice = Voice(say, verbose)
        self.stats = self.voice.stats
        self._cv = threading.Condition()
        self._stopping = threading.Event()
        self._worker: threading.Thread | None = None
        self._busy = False  # under _cv: the worker is applying a batch
        self._flush_on_stop = True
        self.committer = Committer(
            store, self._cv, self.voice,
            enabled=bool(cfg["autocommit"] if autocommit is None else autocommit),
            quiet_s=float(cfg["quiet_s"] if quiet_s is None else quiet_s))
        self.intake = Intake(self.root, self._cv, self.voice, on_ids=self.committer.mark,
                             debounce_s=debounce_s, max_delay_s=max_delay_s,
                             observer_factory=observer_factory)
        self.backfill = Backfill(store, self.voice) if (
            vectors and index_factory is None) else None
        self.indexer = Indexer(
            index_factory or (lambda: _open_index(store)), self.voice, burst_ids=burst_ids,
            on_edits=self._hand_edits if self.committer.enabled else None,
            on_indexed=self.backfill.poke if self.backfill is not None else None)

    @property
    def autocommit(self) -> bool:
        return self.committer.enabled

    @property
    def quiet_s(self) -> float:
        return self.committer.quiet_s

    @property
    def verbose(self) -> bool:
        return self.voice.verbose

    @property
    def say(self) -> Callable[[str], None]:
        return self.voice.say

    # --- life cycle --------------------------------------------------------------------

    def start(self) -> "Watcher":
        """Start observing, then bring the index up to date with one rescan.

        The observer starts first, so nothing changed during the rescan is missed.
        """
        self.intake.start()
        self.intake.request_rescan("start")
        self._worker = threading.Thread(target=self._run, name="cardmem-watch", daemon=True)
        self._worker.start()
        return self

    def stop(self, *, flush: bool = True, timeout_s: float = 10.0) -> None:
        """Stop observing; with flush, apply and commit what is pending first. Idempotent."""
        self.intake.stop()
        with self._cv:
            self._flush_on_stop = flush
            self._stopping.set()
            self._cv.notify_all()
        if self.backfill is not None:
            self.backfill.stop(timeout_s)
        if self._worker is not None and self._worker is not threading.current_thread():
            self._worker.join(timeout_s)

    def alive(self) -> bool:
        return (self._worker is not None and self._worker.is_alive()
                and self.intake.observer_ok())

    def ensure_alive(self) -> None:
        """Restart a dead worker (the worker itself restarts a dead observer)."""
        if self.intake.closing or self._stopping.is_set():
            return
        if self._worker is None or not self._worker.is_alive():
            self.voice.tell("the watcher's worker thread died; restarting it and rescanning",
                            force=True)
            self.stats.restarts += 1
            self.intake.request_rescan("worker restarted")
            self._worker = threading.Thread(target=self._run, name="cardmem-watch", daemon=True)
            self._worker.start()

    # --- the parts' meeting points -------------------------------------------------------

    def request_rescan(self, reason: str) -> None:
        """Ask the worker for a full stat rescan (events may have been lost)."""
        self.intake.request_rescan(reason)

    def note(self, ids: Any, rescan: str | None = None) -> None:
        """Record changed card ids (from events, or from a caller that knows better)."""
        self.intake.note(ids, rescan)

    def _hand_edits(self, ids: set[str]) -> None:
        with self._cv:
            self.committer.mark(ids, time.monotonic())

    def wait_idle(self, timeout_s: float = 10.0, *, settle_s: float = 0.1,
                  commits: bool = False, vectors: bool = False) -> bool:
        """Wait until every write made before the call has reached us as an event, no
        event came for settle_s, and everything noted is applied (and committed, if
        commits; and embedded, if vectors). False on timeout."""
        called = time.monotonic()
        deadline = called + timeout_s
        fences: list[str] = []
        fence_t = float("-inf")
        intake = self.intake
        try:
            while True:
                now = time.monotonic()
                if intake.ordered_events and now - fence_t >= FENCE_RETRY_S:
                    fence_t = now
                    try:
                        fence = intake.write_fence(self.store.state_dir)
                    except OSError:
                        fence = None
                    if fence is not None:
                        fences.append(fence)
                with self._cv:
                    now = time.monotonic()
                    # Without a fence (polling, or .cardmem/ unwritable) settle_s counting
                    # from the call is the best guess that earlier writes have reached us.
                    fenced = any(intake.fences.get(f) for f in fences) if fences else (
                        now - called >= settle_s)
                    idle = (fenced and not intake.waiting() and not self._busy
                            and now - intake.last_t >= settle_s
                            and not (commits and self.committer.busy())
                            and not (vectors and self.backfill is not None
                                     and not self.backfill.idle()))
                    if idle:
                        return True
                    if now >= deadline:
                        return False
                    self._cv.wait(min(0.02, deadline - now))
        finally:
            intake.drop_fences(fences)

    # --- the worker ------------------------------------------------------------------------

    def _run(self) -> None:
        next_health = time.monotonic() + self.health_s
        next_rescan = time.monotonic() + self.rescan_s if self.rescan_s else float("inf")
        while True:
            try:
                with self._cv:
                    while not self._stopping.is_set():
                        now = time.monotonic()
                        due = min(self.intake.due(), self.committer.due(), next_health,
                                  next_rescan)
                        if due <= now:
                            break
                        self._cv.wait(min(due - now, 1.0))
                    if self._stopping.is_set():
                        break
                now = time.monotonic()
                if now >= next_health:
                    next_health = now + self.health_s
                    self.intake.check_observer()
                if now >= next_rescan:
                    next_rescan = now + self.rescan_s
                    self.intake.request_rescan("periodic")
                if self.intake.due() <= now:
                    self._apply()
                if self.committer.due() <= time.monotonic():
                    self.committer.commit()
            except Exception as exc:  # noqa: BLE001 - the worker outlives any one failure
                self.voice.failed("watching", exc)
                self._stopping.wait(0.5)
        self._finish()

    def _apply(self) -> None:
        with self._cv:
            ids, reason = self.intake.take()
            self._busy = True
        try:
            failed = self.indexer.apply(ids, reason)
            if failed is not None:
                self.intake.put_back(ids, *failed)
        finally:
            with self._cv:
                self._busy = False
                self._cv.notify_all()

    def _finish(self) -> None:
        """On stop: apply what is pending, and commit it if asked to flush."""
        try:
            if self.intake.waiting():
                self._apply()
            if self._flush_on_stop and self.committer.enabled and self.committer.dirty:
                self.committer.commit(final=True)
        except Exception as exc:  # noqa: BLE001
            self.voice.failed("stopping", exc)
        finally:
            self.indexer.close()
            with self._cv:
                self._cv.notify_all()


def _open_index(store: Store) -> IndexLike:
    return Index.open(store)
