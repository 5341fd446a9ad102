"""Vectors after words: embedding what the index holds, never in the way of the index.

The lexical index is brought up to date first and is correct on its own; a card without
a vector is found by its words until its vector comes. Embedding is slow (seconds to
minutes; the model is store/search/embedding.py's, the vectors store/search/semantic.py's),
so it runs after the index and apart from it, in a process of its own (`python -m
cardmem.store.search.embedder ROOT DB_PATH`, store/search/embedder.py) that `cardmem watch`
starts when the index changed and `cardmem index` leaves running in the background.

`catch_up()` embeds in small steps, each committed on its own: a search, a watcher's
batch or a Ctrl-C in between loses nothing and waits on at most one step. One embedder
per store at a time (`embedding.lock` beside the index): a second one waits its turn.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

    from ..progress import Progress

# Cards embedded (and committed) per step: at most what an interrupt loses; larger steps
# mean fewer write transactions for the indexer to meet and fewer rereads of the vectors.
STEP = 128
POLL_S = 0.5  # how often a lingering embedder looks at the index's generation
LOCK_NAME = "embedding.lock"
LOG_NAME = "embedding.log"


def catch_up(idx: Any, model: Any, *, progress: "Progress | None" = None,
             step: int = STEP, wanted: Callable[[], bool] = lambda: True) -> dict[str, int]:
    """Embed the index's cards that have no vector of `model`, `step` cards at a time,
    each step committed (an interrupt keeps what is done), while `wanted()` holds. Returns
    the counts summed over the steps (semantic.sync's: embedded, reused, dropped, pending).
    """
    from . import semantic

    totals = {"embedded": 0, "reused": 0, "dropped": 0, "pending": 0}
    done, total = 0, None
    if progress is not None:
        progress("embedding", 0, None)
    while True:
        got = semantic.sync(idx, model, limit=step)
        for k in ("embedded", "reused", "dropped"):
            totals[k] += got[k]
        moved = got["embedded"] + got["reused"]
        done += moved
        total = done + got["pending"]  # cards changed meanwhile move the end
        totals["pending"] = got["pending"]
        if progress is not None:
            progress("embedding", done, total)
        if not got["pending"] or not moved or not wanted():
            break
    return totals


def follow(idx: Any, model: Any, linger_s: float, poll_s: float = POLL_S,
           wanted: Callable[[], bool] = lambda: True) -> None:
    """catch_up(), then again whenever the index changes (its generation moves: a refresh
    committed), until it has not changed for linger_s: a watcher's embedder keeps its
    model loaded between saves instead of starting anew for each one. It stops between
    steps once `wanted()` fails (the watcher that asked is gone, or the index)."""
    import time

    if not wanted():  # gone while this embedder waited for the lock or the model
        return
    seen = idx.generation()  # read first: a change during the catch-up is seen after it
    catch_up(idx, model, wanted=wanted)
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < linger_s and wanted():
        time.sleep(poll_s)
        now = idx.generation()
        if now != seen and wanted():
            seen = now
            catch_up(idx, model, wanted=wanted)
            quiet_since = time.monotonic()


def wanted_by(parent: int | None, db_path: str | os.PathLike[str]) -> Callable[[], bool]:
    """Whether an embedder's work is still wanted: the index file is there and, for one a
    watcher started (parent: its pid), the watcher still is (a killed parent leaves its
    child to another: the parent pid it sees changes)."""
    def wanted() -> bool:
        return os.path.exists(db_path) and (parent is None or os.getppid() == parent)

    return wanted


class Lock:
    """The store's embedding lock (an flock: released when its holder exits or dies)."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = os.path.join(os.fspath(state_dir), LOCK_NAME)
        self._fd: int | None = None

    def acquire(self, wait: bool = False) -> bool:
        """Take it (with wait, once the holder lets go); False when another embedder holds
        it and wait is False, or it cannot be made."""
        import fcntl

        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def busy(state_dir: str | os.PathLike[str]) -> bool:
    """Whether a process is embedding this index now (the lock held; nothing created)."""
    import fcntl

    try:
        fd = os.open(os.path.join(os.fspath(state_dir), LOCK_NAME), os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False  # no lock file: no embedder ever ran here
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing lets go of the lock if we took it
    return False


def pending(idx: Any) -> int | None:
    """How many cards have no vector of the installed model (None: no model installed,
    or the semantic layer is off). Reads the index only: the model is not loaded."""
    from . import embedding, semantic

    if embedding.turned_off():
        return None
    try:
        stamp = embedding.stamp()
    except embedding.Unavailable:
        return None
    return len(semantic.stale(idx, stamp)[0])


# A background embedder yields the CPU to whatever else runs (the watcher's indexing, git,
# the user's work): it is never waited on. A process of its own, not a thread of the
# watcher, so its pure-Python tokenizer never holds the GIL the indexer needs.
NICE = 10
NO_MODEL = 3  # the embedder process's exit status when the model cannot be loaded
# Tests name a model stand-in here ("module:attribute", importable by the child), as they
# set embedding.LOADER in their own process.
TEST_LOADER_ENV = "CARDMEM_TEST_EMBEDDER"


def spawn(root: str | os.PathLike[str], db_path: str | os.PathLike[str],
          linger_s: float = 0.0, tied: bool = False) -> Any:
    """Start a process embedding what the index at db_path lacks (embedder.py), detached
    from the terminal's signals, following the index's changes for linger_s after; its
    Popen, or None when it could not be started. `tied`: it stops when this process is
    gone (a watcher's; `cardmem index` leaves its embedder to finish alone). Its errors
    go to `embedding.log` beside the index."""
    import subprocess
    import sys

    log_path = os.path.join(os.path.dirname(os.fspath(db_path)), LOG_NAME)
    try:
        log: Any = open(log_path, "ab")
    except OSError:
        log = subprocess.DEVNULL
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "cardmem.store.search.embedder", os.fspath(root),
             os.fspath(db_path), f"{linger_s:g}", *([str(os.getpid())] if tied else [])],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
            start_new_session=True, close_fds=True)
    except OSError:
        return None
    finally:
        if log is not subprocess.DEVNULL:
            log.close()
