"""Event intake: watchdog's observer threads turn kernel events into card ids noted
for the worker (cheap, guarded: never raising into watchdog), a lost event becomes
a rescan, and the noted ids are debounced into batches (`_apply_due`).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Iterable

from ..git.head_file import dot_git
from .names import _rel_parts, card_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .watcher import Watcher

DEBOUNCE_S = 0.05  # a save is several events within a few ms; wait this long for quiet
MAX_DELAY_S = 0.2  # ... but never hold a batch longer than this while events keep coming
# A big batch (a checkout, a pull, a copy) is cheaper applied once, after the writer is
# done, than in many small pieces that compete with it for the disk: wait for a longer
# quiet, up to a longer cap.
BIG_BATCH = 50
BIG_DEBOUNCE_S = 0.15
BIG_MAX_DELAY_S = 2.0
# While git holds .git/index.lock it is rewriting the tree (checkout, pull, reset): a big
# batch waits for it to finish, up to this long, and is then applied in one piece.
GIT_WAIT_MAX_S = 15.0


class _OverflowLog(logging.Handler):
    """watchdog reports a kernel queue overflow only in its log: turn that into a rescan."""

    def __init__(self, watcher: "Watcher") -> None:
        super().__init__(level=logging.WARNING)
        self.watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage().lower()
            if "overflow" in msg or "events were lost" in msg:
                self.watcher.request_rescan("overflow")
        except Exception:  # a log handler must never raise into watchdog's thread
            pass


WATCHDOG_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")


class Intake:
    """The Watcher's event side: notes from the observer, the observer's upkeep, and
    when the noted batch is due."""

    # --- events ------------------------------------------------------------------------

    def request_rescan(self, reason: str) -> None:
        """Ask the worker for a full stat rescan (events may have been lost)."""
        with self._cv:
            now = time.monotonic()
            if self._rescan is None:
                self._rescan = reason
                if not self._pending:
                    self._first_t = now
            self._last_t = now
            self._cv.notify_all()

    def note(self, ids: Iterable[str], rescan: str | None = None) -> None:
        """Record changed card ids (from events, or from a caller that knows better)."""
        ids = set(ids)
        if not ids and rescan is None:
            return
        with self._cv:
            now = time.monotonic()
            # Wake the worker only when its next deadline moves earlier: a new batch or a
            # rescan. Later events only push the batch's quiet deadline out, which the
            # worker sees when it wakes (thousands of notify_all in a checkout cost).
            wake = (not self._pending and self._rescan is None) or (
                rescan is not None and self._rescan is None) or (
                ids and self.autocommit and not self._dirty)
            if not self._pending and self._rescan is None:
                self._first_t = now
            self._pending |= ids
            if rescan and self._rescan is None:
                self._rescan = rescan
            self._last_t = now
            if ids:
                self._dirty |= ids
                self._dirty_t = now
            if wake:
                self._cv.notify_all()

    def on_event(self, event: Any) -> None:
        """One watchdog event: which cards it touches, or that a rescan is needed."""
        if self._fences and (path := os.fsdecode(event.src_path)) in self._fences:
            with self._cv:  # wait_idle's fence: every earlier event has been noted
                if path in self._fences:
                    self._fences[path] = True
                    self._cv.notify_all()
            return
        src = card_id(self.root, event.src_path)
        dest = card_id(self.root, getattr(event, "dest_path", "") or "")
        if not event.is_directory:
            self.note(i for i in (src, dest) if i)
            return
        # Folders: a new one may already hold cards (mkdir -p; mv in; checkout); a deleted or
        # moved one may take cards with it that no event names (moved out of the tree).
        etype = event.event_type
        if etype == "created":
            if _rel_parts(self.root, event.src_path) is not None:
                self.note(self._ids_under(os.fsdecode(event.src_path)))
        elif etype in ("deleted", "moved"):
            touched = [p for p in (event.src_path, getattr(event, "dest_path", "") or "")
                       if _rel_parts(self.root, p) is not None]
            if touched:
                self.note((), rescan=f"folder {etype}")

    def _ids_under(self, folder: str) -> list[str]:
        out = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            out += [i for n in filenames if (i := card_id(self.root, os.path.join(dirpath, n)))]
        return out

    # --- the observer --------------------------------------------------------------------

    def _make_handler(self) -> Any:
        from watchdog.events import FileSystemEventHandler

        watcher = self

        class _Handler(FileSystemEventHandler):
            def dispatch(self, event: Any) -> None:
                # An exception here would end watchdog's dispatch thread: never let one out.
                try:
                    watcher.on_event(event)
                except Exception as exc:  # noqa: BLE001
                    watcher._failed("handling a file event", exc)
                    watcher.request_rescan("handler error")

        return _Handler()

    def _event_filter(self, closes: bool) -> list[type]:
        from watchdog import events as ev

        # No open/access/close-nowrite: git and readers open many files, none matter. No
        # modify either (one per write() call, a third of a checkout's events): a write is
        # seen when the file is closed (where the backend reports closes).
        modified = [] if closes else [ev.FileModifiedEvent]
        return [ev.FileCreatedEvent, ev.FileDeletedEvent, ev.FileMovedEvent,
                ev.FileClosedEvent, ev.DirCreatedEvent, ev.DirDeletedEvent,
                ev.DirMovedEvent, *modified]

    def _start_observer(self) -> None:
        if self._handler is None:
            self._handler = self._make_handler()
        if self._observer_factory is not None:
            obs = self._observer_factory()
        else:
            from watchdog.observers import Observer

            obs = Observer()
        # Only inotify reports a closed-after-writing file; other backends need modify events.
        closes = type(obs).__name__ == "InotifyObserver"
        try:
            obs.schedule(self._handler, self.root, recursive=True,
                         event_filter=self._event_filter(closes=closes))
            obs.start()
            self._ordered_events = closes
        except OSError as exc:
            # inotify watch or instance limits (ENOSPC / EMFILE): poll instead of failing.
            self._stop_observer(obs)
            from watchdog.observers.polling import PollingObserver

            self._tell(f"file events unavailable ({exc.strerror or exc}); polling every second "
                       "instead (raise fs.inotify.max_user_watches to fix)", force=True)
            self._ordered_events = False
            obs = PollingObserver(timeout=1.0)
            obs.schedule(self._handler, self.root, recursive=True,
                         event_filter=self._event_filter(closes=False))
            obs.start()
        self._observer = obs

    @staticmethod
    def _stop_observer(obs: Any) -> None:
        try:
            obs.stop()
            if obs.is_alive():
                obs.join(5.0)
        except Exception:  # noqa: BLE001 - a half-dead observer must not stop us stopping
            pass

    def _observer_ok(self) -> bool:
        obs = self._observer
        if obs is None or not obs.is_alive():
            return False
        if not all(e.is_alive() for e in list(obs.emitters)) or not obs.emitters:
            return False
        fd_thread = getattr(obs, "_inotify_fd", None)  # inotify's reader thread (watchdog 7)
        return fd_thread is None or not hasattr(fd_thread, "is_alive") or fd_thread.is_alive()

    def _check_observer(self) -> None:
        if self._closing or self._stopping.is_set() or self._observer_ok():
            return
        if not os.path.isdir(self.root):
            self._tell(f"the store folder {self.root} is gone; waiting for it to return")
            return
        self._tell("the file observer stopped; restarting it and rescanning", force=True)
        self.stats.restarts += 1
        obs, self._observer = self._observer, None
        if obs is not None:
            self._stop_observer(obs)
        self._start_observer()
        self.request_rescan("observer restarted")

    def _apply_due(self) -> float:
        if not self._pending and self._rescan is None:
            return float("inf")
        if len(self._pending) > BIG_BATCH or self._rescan is not None:
            quiet, cap = max(self.debounce_s, BIG_DEBOUNCE_S), max(self.max_delay_s,
                                                                   BIG_MAX_DELAY_S)
        else:
            quiet, cap = self.debounce_s, self.max_delay_s
        now = time.monotonic()
        due = min(self._last_t + quiet, self._first_t + cap)
        if (due <= now and quiet > self.debounce_s and now < self._first_t + GIT_WAIT_MAX_S
                and os.path.exists(dot_git(self.root, "index.lock"))):
            due = now + 0.05  # look again soon: git's lock going away is no event we see
        return max(due, self._retry_at)
