"""Vectors after words: the Watcher's embedding, in a process of its own.

The indexer pokes it after each batch; it then runs the store's background embedder
(store/search/vectors.py: what the index holds without a vector, a few cards a step, each
committed, at a low CPU priority, then whatever the index gains until it has been quiet
for LINGER_S) and waits for it on a thread that only waits. A process,
not a thread of the watcher: the model's tokenizer is pure Python, and sharing the GIL
with it made each of the indexer's SQLite calls wait its turn (a save's p95 half as long
again: bench/RESULTS.md, "`cardmem watch`: a save and a 1,000-file checkout while the
vectors catch up"). So a save or a checkout is never
applied behind the model, and while vectors catch up searches find the cards they have
not reached by their words.
"""
from __future__ import annotations

import threading
from typing import Any

from ..index import db
from .report import Voice

STOP_WAIT_S = 5.0  # on stop: how long the embedder has to end its step after SIGTERM
# How long the embedder stays, model loaded, after the index last changed: saves a while
# apart reuse it rather than each starting a process and loading the model anew.
LINGER_S = 300.0


GIVE_UP_AFTER = 3  # failed embedder runs in a row before this watcher stops asking


class Backfill:
    """Runs the background embedder whenever the index changed, one at a time."""

    def __init__(self, store: Any, voice: Voice) -> None:
        self.store = store
        self.voice = voice
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: Any = None
        self._working = False
        self._index: Any = None  # idle()'s own look at the index
        self.runs = 0  # embedder processes run to their end
        self.failed = 0  # embedder runs failed in a row (a locked index passes; a bug does not)
        self.off: str | None = None  # why this watcher makes no vectors

    def poke(self) -> None:
        """The index changed: embed what it now lacks (the thread starts on first use)."""
        if self.off is not None or self._stop.is_set():
            return
        self._wake.set()
        if self._thread is None or not self._thread.is_alive():
            from ..search import embedding  # here: the model's modules load only when on

            if embedding.turned_off():
                self.off = "turned off by CARDMEM_SEMANTIC"
                return
            embedding.BACKFILL = True  # this process's searches leave embedding to us
            self._thread = threading.Thread(target=self._run, name="cardmem-vectors",
                                            daemon=True)
            self._thread.start()

    def idle(self) -> bool:
        """Every card the index holds has its vector (or this watcher makes none)."""
        if self.off is not None:
            return True
        if self._wake.is_set() and not self._working:
            return False  # asked, not started yet
        from ..search import vectors  # here: the model's modules load only when on
        if self._index is None:
            self._index = db.Index.open(self.store)
        return vectors.pending(self._index) == 0

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the embedder (what it committed stays) and the thread. Idempotent."""
        self._stop.set()
        self._wake.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
        if self._thread is not None:
            from ..search import embedding  # here: the model's modules load only when on

            embedding.BACKFILL = False  # nobody embeds for this process's searches now
            if self._thread is not threading.current_thread():
                self._thread.join(timeout_s)
        if self._index is not None:
            self._index.close()
            self._index = None

    def _run(self) -> None:
        from ..search import vectors  # here: the model's modules load only when on

        db_path = self.store.root / ".cardmem" / db.DB_NAME
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                break
            self._working = True
            self._wake.clear()  # what changes from here on needs another run
            try:
                self._proc = proc = vectors.spawn(self.store.root, db_path, LINGER_S,
                                                     tied=True)
                if proc is None:
                    self._give_up("the embedding process could not be started")
                    return
                while proc.poll() is None:
                    if self._stop.wait(0.2):
                        _end(proc)
                        return
                self.runs += 1
                if proc.returncode == vectors.NO_MODEL:
                    self._give_up("no embedding model here")
                    return
                if proc.returncode != 0:
                    self.failed += 1
                    why = (f"the embedding process failed (exit {proc.returncode};"
                           f" {db_path.parent / vectors.LOG_NAME} says why)")
                    if self.failed >= GIVE_UP_AFTER:
                        self._give_up(f"{why}, {self.failed} times in a row")
                        return
                    self.voice.tell(f"{why}; tried again at the next change", force=True)
                    continue
                self.failed = 0
                if self.voice.verbose:
                    self.voice.tell("the embedder ended (nothing new for a while)", force=True)
            finally:
                self._working = False

    def _give_up(self, why: str) -> None:
        from ..search import embedding  # here: the model's modules load only when on

        self.off = why
        embedding.BACKFILL = False  # searches embed what they need again
        self.voice.tell(f"no vectors ({why}); searches find cards by their words",
                        force=True)


def _end(proc: Any) -> None:
    proc.terminate()
    try:
        proc.wait(STOP_WAIT_S)
    except Exception:  # noqa: BLE001 - still running: kill it
        proc.kill()
        proc.wait()
