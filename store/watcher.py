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

import functools
import itertools
import logging
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from .cards import card as cardlib
from .git import runner as git
from .cards import paths
from .errors import BadId, CardmemError
from .store import Store
from .git.writer import AS_IS, Message, commit_changes

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
BURST_IDS = 1000  # more distinct cards than this in one batch: rescan (drops are likely)
HEALTH_S = 1.0  # how often the worker checks that the observer threads are alive
RESCAN_S = 300.0  # a periodic stat rescan as a safety net (0 disables)
RETRY_MAX_S = 5.0  # the longest back-off after a failed apply or commit
COMMIT_LOCK_S = 2.0  # how long an autocommit waits for the store's write lock
# wait_idle's fence: a file it creates in the store's (hidden, git-ignored) state folder.
# inotify delivers events in order, so once the fence's event is here so is every earlier
# write's. (Delivery can lag far behind the write: watchdog holds all events queued behind
# an IN_MOVED_FROM for up to 0.5 s, to pair it, and git renames .git/index.lock often.)
FENCE_RETRY_S = 1.0  # a fence unseen this long (an observer restarted): write another

# Names editors write next to a file while saving it. None is ever a card; most are
# already ruled out by not ending in .md, but the list says what we know we ignore.
VIM_SUFFIXES = (".swp", ".swo", ".swx", ".swn")
TEMP_SUFFIXES = (".tmp", ".temp", ".bak", ".orig", ".part", ".crdownload", "___jb_tmp___",
                 "___jb_old___")
VIM_PROBE = "4913"  # vim creates and deletes this to test that it may write the folder

# git operations during which the tree is in flux and must not be committed over.
GIT_BUSY = ("index.lock", "MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD",
            "REVERT_HEAD", "BISECT_LOG")


class IndexLike(Protocol):
    def refresh(self, walk: bool = False) -> Any: ...
    def refresh_ids(self, ids: Iterable[str]) -> Any: ...


def is_editor_artefact(name: str) -> bool:
    """Swap, backup, lock and temp files of editors and atomic savers."""
    return (name.startswith(".")  # vim .x.swp, emacs .#x lock, `.x.md.1234.tmp` temps
            or (name.startswith("#") and name.endswith("#"))  # emacs auto-save
            or name.endswith("~")  # vim and emacs backups
            or name == VIM_PROBE
            or name.endswith(VIM_SUFFIXES) or name.endswith(TEMP_SUFFIXES))


def _rel_parts(root: str, path: str | bytes) -> list[str] | None:
    """path's parts below root, or None if it is outside it or under a hidden folder."""
    path = os.fsdecode(path)
    if not path:
        return None
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix):  # how watchdog spells every path: no relpath syscalls
        rel = path[len(prefix):]
    else:
        rel = os.path.relpath(path, root)
        if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            return None
    parts = rel.split(os.sep)
    if any(not p or p.startswith(".") for p in parts):
        return None  # .git/, .cardmem/, any hidden folder or file; "." and ".." too
    return parts


@functools.lru_cache(maxsize=8192)  # a saved file is 3-5 events on the same path
def card_id(root: str, path: str | bytes) -> str | None:
    """The card id a watched path stands for, or None when it is not a card."""
    parts = _rel_parts(root, path)
    if parts is None:
        return None
    name = parts[-1]
    if not name.endswith(".md") or is_editor_artefact(name):
        return None
    if len(parts) == 1 and name in paths.NOT_CARDS:
        return None
    try:
        return paths.normalize_id("/".join(parts))
    except BadId:
        return None


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


class Watcher:
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

    # --- the worker ------------------------------------------------------------------------

    def _open_index(self) -> IndexLike:
        from .index.db import Index

        return Index.open(self.store)

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
                and os.path.exists(os.path.join(self.root, ".git", "index.lock"))):
            due = now + 0.05  # look again soon: git's lock going away is no event we see
        return max(due, self._retry_at)

    def _commit_due(self) -> float:
        if not self.autocommit or not self._dirty:
            return float("inf")
        return max(self._dirty_t + self.quiet_s, self._commit_retry_at)

    def _vectors(self) -> None:
        """Embed the cards the refresh changed (store/index/semantic.py), so the next search need
        not; the model is loaded once in this long-lived process. Without a model, or when
        embedding fails, searches embed what is missing themselves: said once, never retried
        as an index failure."""
        from .index import embedding, semantic

        if getattr(self, "_no_vectors", False) or not hasattr(self._index, "conn"):
            return
        model = embedding.embedder()
        if model is None:
            return
        try:
            semantic.sync(self._index, model)
        except Exception as exc:  # noqa: BLE001
            self._no_vectors = True
            self._tell(f"embedding cards failed ({exc}); searches will embed"
                       " what they need", force=True)

    def _apply(self) -> None:
        with self._cv:
            ids, reason = self._pending, self._rescan
            self._pending, self._rescan = set(), None
            self._busy = True
        try:
            if self._index is None:
                self._index = self._index_factory()
            if reason is None and len(ids) > self.burst_ids:
                reason = "burst"
            t0 = time.monotonic()
            if reason is not None:
                # Cards a rescan finds changed after lost events are hand edits too; at
                # start they may predate us and are not ours to commit.
                track = self.autocommit and reason != "start"
                before = _hashes(self._index) if track else None
                self._index.refresh(walk=True)  # a full stat walk, whatever git says
                self.stats.rescans[reason] += 1
                after = _hashes(self._index) if before is not None else None
                if before is not None and after is not None:
                    changed = {i for i in before.keys() | after.keys()
                               if before.get(i) != after.get(i)}
                    if changed:
                        with self._cv:
                            self._dirty |= changed
                            self._dirty_t = time.monotonic()
            else:
                self._index.refresh_ids(sorted(ids))
            self._vectors()
            self.stats.batches += 1
            self.stats.ids_applied += len(ids)
            self._failures = 0
            if self.verbose:
                what = f"rescan ({reason})" if reason else f"{len(ids)} card(s)"
                self._tell(f"indexed {what} in {(time.monotonic() - t0) * 1000:.0f} ms",
                           force=True)
        except Exception as exc:  # noqa: BLE001
            self._failures += 1
            self._failed("updating the index", exc)
            # Put the work back; a repeated failure becomes a rescan on a fresh index handle.
            with self._cv:
                self._pending |= ids
                if reason is not None or self._failures >= 2:
                    self._rescan = self._rescan or reason or "after errors"
                self._retry_at = time.monotonic() + min(RETRY_MAX_S, 0.1 * 2 ** self._failures)
            close = getattr(self._index, "close", None)
            self._index = None
            if callable(close):
                try:
                    close()
                except Exception:  # noqa: BLE001
                    pass
        finally:
            with self._cv:
                self._busy = False
                self._cv.notify_all()

    # --- autocommit --------------------------------------------------------------------------

    def _git_busy(self) -> str | None:
        gitdir = os.path.join(self.root, ".git")
        for name in GIT_BUSY:
            if os.path.exists(os.path.join(gitdir, name)):
                return name
        return None

    def _commit(self, final: bool = False) -> None:
        """Commit the cards edited since the last commit: one commit for the quiet batch."""
        busy = self._git_busy()
        if busy:
            if final:
                self._tell(f"left {len(self._dirty)} edited card(s) uncommitted: git is busy "
                           f"(.git/{busy})", force=True)
            else:
                self._tell(f"not committing while git is busy (.git/{busy}); will retry")
            self._commit_retry_at = time.monotonic() + max(self.quiet_s, 1.0)
            return
        with self._cv:
            ids, self._dirty = self._dirty, set()
            self._committing = True
        try:
            self._commit_ids(ids)
        finally:
            with self._cv:
                self._committing = False
                self._cv.notify_all()

    def _commit_ids(self, ids: set[str]) -> None:
        message = Message("watch: cards edited by hand", source="watch")
        refused: list[tuple[str, str]] = []

        def changes() -> dict[str, object]:
            # Runs under the store's write lock. Each file is only checked here and committed
            # AS_IS: the writer never rewrites or deletes it, so a save landing in between
            # is committed (or left for the next batch), never overwritten.
            status = _status(self.store.root, [cid + ".md" for cid in sorted(ids)])
            kept: dict[str, object] = {}
            for rel in status:
                cid = rel[:-3]
                try:
                    data = (self.store.root / rel).read_bytes()
                except FileNotFoundError:
                    kept[rel] = AS_IS
                    continue
                except OSError as exc:
                    refused.append((cid, f"unreadable: {exc.strerror}"))
                    continue
                try:
                    cardlib.parse(cardlib.decode(data), cid)
                except cardlib.CardProblem as exc:
                    refused.append((cid, str(exc)))
                    continue
                kept[rel] = AS_IS
            n = len(kept)
            message.subject = f"watch: {n} card{'s' if n != 1 else ''} edited by hand"
            width = max((len(r) - 3 for r in kept), default=0)
            message.lines = [f"{rel[:-3]:<{width}}  {status[rel]}" for rel in kept]
            return kept

        try:
            # A short lock wait: indexing pauses while we wait, and a busy store is retried.
            sha = commit_changes(self.store.root, changes, message, agent=False,
                                 lock_timeout_s=COMMIT_LOCK_S)
        except Exception as exc:  # noqa: BLE001
            # Busy lock, detached HEAD, stale index.lock, or a surprise: keep the edits
            # for the next try rather than forget them.
            with self._cv:
                self._dirty |= ids
            self._commit_retry_at = time.monotonic() + max(self.quiet_s, 1.0)
            if isinstance(exc, CardmemError):
                self._tell(f"not committed yet: {exc}; will retry")
            else:
                self._failed("committing", exc)
            return
        finally:
            for cid, why in refused:
                self.stats.not_committed += 1
                self._tell(f"{cid}: not committed: {why}", force=True)
        if sha:
            self.stats.commits += 1
            self._tell(f"committed {sha[:10]} {message.subject}", force=self.verbose)

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


def _hashes(index: Any) -> dict[str, str] | None:
    """id -> content hash of everything indexed (cards and problem files), if readable."""
    try:
        return dict(index.conn.execute(
            "SELECT id, hash FROM cards UNION ALL SELECT id, hash FROM problems"))
    except Exception:  # noqa: BLE001 - another index implementation: no change tracking
        return None


def _status(root: Any, rels: list[str]) -> dict[str, str]:
    """For each path that differs from HEAD: 'new', 'edited' or 'deleted'."""
    if not rels:
        return {}
    out = git.run(root, "status", "--porcelain=v1", "-z", "--untracked-files=all",
                  "--no-renames", "--", *rels)
    status: dict[str, str] = {}
    for entry in out.split("\0"):
        if len(entry) < 4:
            continue
        code, rel = entry[:2], entry[3:]
        if rel not in rels:
            continue
        status[rel] = ("new" if code == "??" or "A" in code else
                       "deleted" if "D" in code else "edited")
    return status
