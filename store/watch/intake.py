"""Event intake: watchdog's observer threads turn kernel events into card ids noted for
the worker (cheap, guarded: never raising into watchdog), a lost event becomes a rescan,
and the noted ids are debounced into batches (`due`, `take`).
"""
from __future__ import annotations

import itertools
import logging
import os
import time
from typing import Any, Callable, Iterable

from watchdog import events as ev
from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from ..git.head_file import dot_git
from .names import _rel_parts, card_id
from .report import Voice

DEBOUNCE_S = 0.05  # a save is several events within a few ms; wait this long for quiet
MAX_DELAY_S = 0.2  # ... but never hold a batch longer than this while events keep coming
# A big batch (a checkout, a pull, a copy) waits for a longer quiet, but while the writer
# goes on it is applied in pieces, one every PIECE_S: the index follows the tree on the
# other CPU, and little is left to do when the writer is done (a 1,000-file checkout must
# be searchable within 1 s of git finishing, issue 27).
BIG_BATCH = 50
BIG_DEBOUNCE_S = 0.15
PIECE_S = 0.3
# A rescan (a walk of the whole tree) waits for a longer quiet and, while git holds
# .git/index.lock (checkout, pull, reset), for git to finish, up to this long.
RESCAN_MAX_DELAY_S = 2.0
GIT_WAIT_MAX_S = 15.0
WATCHDOG_LOGGERS = ("watchdog.observers.inotify_c", "watchdog.observers.inotify")


class _OverflowLog(logging.Handler):
    """watchdog reports a kernel queue overflow only in its log: turn that into a rescan."""

    def __init__(self, rescan: Callable[[str], None]) -> None:
        super().__init__(level=logging.WARNING)
        self.rescan = rescan

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage().lower()
            if "overflow" in msg or "events were lost" in msg:
                self.rescan("overflow")
        except Exception:  # a log handler must never raise into watchdog's thread
            pass


class Intake:
    """The Watcher's event side: the observer and its upkeep, the ids it noted, and when
    the noted batch is due. Its state is guarded by the Condition it shares with the
    Watcher (`cv`); `on_ids(ids, now)` (called under it) tells the committer which cards
    changed and says whether that moved its deadline earlier."""

    def __init__(self, root: str, cv: Any, voice: Voice, *,
                 on_ids: Callable[[set[str], float], bool], debounce_s: float = DEBOUNCE_S,
                 max_delay_s: float = MAX_DELAY_S,
                 observer_factory: Callable[[], Any] | None = None) -> None:
        self.root = root
        self.cv = cv
        self.voice = voice
        self.on_ids = on_ids
        self.debounce_s, self.max_delay_s = debounce_s, max_delay_s
        self.observer_factory = observer_factory
        self.observer: Any = None
        self._handler: Any = None
        self._log_handler = _OverflowLog(self.request_rescan)
        self.closing = False  # set by stop(): no more observer restarts
        # Under cv: what events asked for and the worker has not yet taken.
        self.pending: set[str] = set()
        self.rescan: str | None = None
        self.first_t = self.last_t = 0.0  # first and last event of the pending batch
        self.retry_at = 0.0  # after a failed apply: not before this
        self.ordered_events = False  # the observer reports events promptly and in order
        self.fences: dict[str, bool] = {}  # wait_idle's fence path -> seen
        self._fence_no = itertools.count()

    # --- events ------------------------------------------------------------------------

    def request_rescan(self, reason: str) -> None:
        """Ask the worker for a full stat rescan (events may have been lost)."""
        with self.cv:
            now = time.monotonic()
            if self.rescan is None:
                self.rescan = reason
                if not self.pending:
                    self.first_t = now
            self.last_t = now
            self.cv.notify_all()

    def note(self, ids: Iterable[str], rescan: str | None = None) -> None:
        """Record changed card ids (from events, or from a caller that knows better)."""
        ids = set(ids)
        if not ids and rescan is None:
            return
        with self.cv:
            now = time.monotonic()
            # Wake the worker only when its next deadline moves earlier: a new batch, a
            # rescan or a first edit to commit. Later events only push the batch's quiet
            # deadline out, which the worker sees when it wakes (thousands of notify_all
            # in a checkout cost).
            wake = (not self.pending and self.rescan is None) or (
                rescan is not None and self.rescan is None)
            if not self.pending and self.rescan is None:
                self.first_t = now
            self.pending |= ids
            if rescan and self.rescan is None:
                self.rescan = rescan
            self.last_t = now
            if ids and self.on_ids(ids, now):
                wake = True
            if wake:
                self.cv.notify_all()

    def take(self) -> tuple[set[str], str | None]:
        """The pending batch and rescan reason, handed to the worker (under cv)."""
        ids, reason = self.pending, self.rescan
        self.pending, self.rescan = set(), None
        return ids, reason

    def put_back(self, ids: set[str], rescan: str | None, retry_at: float) -> None:
        """A batch the worker failed to apply: kept for a retry, not before retry_at."""
        with self.cv:
            self.pending |= ids
            if rescan is not None:
                self.rescan = self.rescan or rescan
            self.retry_at = retry_at

    def waiting(self) -> bool:
        """Whether anything is noted and not yet taken (under cv)."""
        return bool(self.pending) or self.rescan is not None

    def on_event(self, event: Any) -> None:
        """One watchdog event: which cards it touches, or that a rescan is needed."""
        if self.fences and (path := os.fsdecode(event.src_path)) in self.fences:
            with self.cv:  # wait_idle's fence: every earlier event has been noted
                if path in self.fences:
                    self.fences[path] = True
                    self.cv.notify_all()
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

    def start(self) -> None:
        """Hook watchdog's log (overflows) and start the observer."""
        self.closing = False
        for name in WATCHDOG_LOGGERS:
            lg = logging.getLogger(name)
            lg.addHandler(self._log_handler)
            if lg.getEffectiveLevel() > logging.WARNING:
                lg.setLevel(logging.WARNING)
        self._start_observer()

    def stop(self) -> None:
        """Stop the observer for good (no restarts) and unhook the log. Idempotent."""
        self.closing = True
        self.ordered_events = False  # no observer to see wait_idle's fences
        obs, self.observer = self.observer, None
        if obs is not None:
            _stop_observer(obs)
        for name in WATCHDOG_LOGGERS:
            logging.getLogger(name).removeHandler(self._log_handler)

    def _make_handler(self) -> Any:
        intake = self

        class _Handler(FileSystemEventHandler):
            def dispatch(self, event: Any) -> None:
                # An exception here would end watchdog's dispatch thread: never let one out.
                try:
                    intake.on_event(event)
                except Exception as exc:  # noqa: BLE001
                    intake.voice.failed("handling a file event", exc)
                    intake.request_rescan("handler error")

        return _Handler()

    @staticmethod
    def _event_filter(closes: bool) -> list[type]:
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
        if self.observer_factory is not None:
            obs = self.observer_factory()
        else:
            obs = Observer()
        # Only inotify reports a closed-after-writing file; other backends need modify events.
        closes = type(obs).__name__ == "InotifyObserver"
        try:
            obs.schedule(self._handler, self.root, recursive=True,
                         event_filter=self._event_filter(closes=closes))
            obs.start()
            self.ordered_events = closes
        except OSError as exc:
            # inotify watch or instance limits (ENOSPC / EMFILE): poll instead of failing.
            _stop_observer(obs)
            from watchdog.observers.polling import PollingObserver  # here: only past inotify's limits

            self.voice.tell(f"file events unavailable ({exc.strerror or exc}); polling every"
                            " second instead (raise fs.inotify.max_user_watches to fix)",
                            force=True)
            self.ordered_events = False
            obs = PollingObserver(timeout=1.0)
            obs.schedule(self._handler, self.root, recursive=True,
                         event_filter=self._event_filter(closes=False))
            obs.start()
        self.observer = obs

    def observer_ok(self) -> bool:
        obs = self.observer
        if obs is None or not obs.is_alive():
            return False
        if not all(e.is_alive() for e in list(obs.emitters)) or not obs.emitters:
            return False
        fd_thread = getattr(obs, "_inotify_fd", None)  # inotify's reader thread (watchdog 7)
        return fd_thread is None or not hasattr(fd_thread, "is_alive") or fd_thread.is_alive()

    def check_observer(self) -> None:
        """Restart a dead observer (and rescan: its events are lost)."""
        if self.closing or self.observer_ok():
            return
        if not os.path.isdir(self.root):
            self.voice.tell(f"the store folder {self.root} is gone; waiting for it to return")
            return
        self.voice.tell("the file observer stopped; restarting it and rescanning", force=True)
        self.voice.stats.restarts += 1
        obs, self.observer = self.observer, None
        if obs is not None:
            _stop_observer(obs)
        self._start_observer()
        self.request_rescan("observer restarted")

    # --- when a batch is due, and wait_idle's fences ------------------------------------

    def due(self) -> float:
        """When the noted batch should be applied (monotonic time; inf: nothing noted)."""
        if not self.pending and self.rescan is None:
            return float("inf")
        if self.rescan is not None:
            quiet, cap = max(self.debounce_s, BIG_DEBOUNCE_S), max(self.max_delay_s,
                                                                   RESCAN_MAX_DELAY_S)
        elif len(self.pending) > BIG_BATCH:
            quiet, cap = max(self.debounce_s, BIG_DEBOUNCE_S), max(self.max_delay_s, PIECE_S)
        else:
            quiet, cap = self.debounce_s, self.max_delay_s
        now = time.monotonic()
        due = min(self.last_t + quiet, self.first_t + cap)
        if (due <= now and self.rescan is not None and now < self.first_t + GIT_WAIT_MAX_S
                and os.path.exists(dot_git(self.root, "index.lock"))):
            due = now + 0.05  # look again soon: git's lock going away is no event we see
        return max(due, self.retry_at)

    def write_fence(self, state_dir: Any) -> str | None:
        """Create a fence file for wait_idle; None if the store cannot be written. inotify
        delivers events in order, so once the fence's event is here so is every earlier
        write's."""
        try:
            path = str(state_dir / f"watch-fence-{os.getpid()}-{next(self._fence_no)}")
        except OSError:
            return None
        with self.cv:
            self.fences[path] = False  # known before its event can arrive
        try:
            with open(path, "wb"):
                pass
        except OSError:
            with self.cv:
                self.fences.pop(path, None)
            return None
        return path

    def drop_fences(self, fences: list[str]) -> None:
        with self.cv:
            for f in fences:
                self.fences.pop(f, None)
        for f in fences:
            try:
                os.unlink(f)
            except OSError:
                pass


def _stop_observer(obs: Any) -> None:
    try:
        obs.stop()
        if obs.is_alive():
            obs.join(5.0)
    except Exception:  # noqa: BLE001 - a half-dead observer must not stop us stopping
        pass
