"""Vectors after words: the Watcher's embedding, on a thread of its own.

The indexer pokes it after each batch; it then embeds what the index holds without a
vector (store/index/vectors.py, a few cards a step), pausing whenever the index has work
waiting, so a save or a checkout is never applied behind the model. The model is loaded
on the first poke, here, never in the indexer's thread. While it catches up, searches
find the cards it has not reached by their words.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from .report import Voice

LOCKED_RETRY_S = 5.0  # another process embeds this store: look again after this long


class Backfill:
    """Embeds what the index holds without a vector, after the index, in a thread.

    `index_quiet()` blocks while the index has work waiting and returns False when the
    watcher is stopping; `index_factory()` opens a connection of the backfill's own.
    """

    def __init__(self, store: Any, voice: Voice, *, index_quiet: Callable[[], bool],
                 index_factory: Callable[[], Any] | None = None) -> None:
        self.store = store
        self.voice = voice
        self.index_quiet = index_quiet
        self.index_factory = index_factory
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._working = False
        self.off: str | None = None  # why this watcher makes no vectors

    def poke(self) -> None:
        """The index changed: embed what it now lacks (the thread starts on first use)."""
        if self.off is not None or self._stop.is_set():
            return
        self._wake.set()
        if self._thread is None or not self._thread.is_alive():
            from ..index import embedding

            if embedding.turned_off():
                self.off = "turned off by CARDMEM_SEMANTIC"
                return
            embedding.BACKFILL = True  # this process's searches leave embedding to us
            self._thread = threading.Thread(target=self._run, name="cardmem-vectors",
                                            daemon=True)
            self._thread.start()

    def idle(self) -> bool:
        """Nothing asked of it is left undone (or it makes no vectors)."""
        return self.off is not None or not (self._wake.is_set() or self._working)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            from ..index import embedding

            embedding.BACKFILL = False  # nobody embeds for this process's searches now
            if self._thread is not threading.current_thread():
                self._thread.join(timeout_s)

    def _proceed(self) -> bool:
        return not self._stop.is_set() and self.index_quiet() and not self._stop.is_set()

    def _run(self) -> None:
        from ..index import embedding, vectors

        idx = None
        lock = None
        try:
            while not self._stop.is_set():
                self._wake.wait()
                if self._stop.is_set():
                    break
                self._working = True
                self._wake.clear()
                try:
                    model = embedding.embedder()
                    if model is None:
                        self.off = embedding.reason() or "no model"
                        self.voice.tell(f"no vectors ({self.off}); searches use words only",
                                        force=True)
                        return
                    if idx is None:
                        idx = self._open()
                        lock = vectors.Lock(idx.db_path.parent)
                    if not lock.acquire():  # a `cardmem index` embeds: let it, look later
                        self._stop.wait(LOCKED_RETRY_S)
                        self._wake.set()
                        continue
                    try:
                        t0 = time.monotonic()
                        got = vectors.catch_up(idx, model, proceed=self._proceed)
                    finally:
                        lock.release()
                    self.voice.stats.embedded += got["embedded"]
                    if got["embedded"] and self.voice.verbose:
                        self.voice.tell(f"embedded {got['embedded']} card(s) in"
                                        f" {time.monotonic() - t0:.1f} s", force=True)
                    if got["pending"]:
                        self._wake.set()  # stopped early for the index: go on after it
                except Exception as exc:  # noqa: BLE001 - vectors never take the index down
                    self.off = f"{type(exc).__name__}: {exc}"
                    embedding.BACKFILL = False  # searches embed what they need again
                    self.voice.tell(f"embedding cards failed ({self.off}); searches find"
                                    " cards without vectors by their words", force=True)
                    return
                finally:
                    self._working = False
        finally:
            self._working = False
            if idx is not None:
                try:
                    idx.close()
                except Exception:  # noqa: BLE001
                    pass

    def _open(self) -> Any:
        if self.index_factory is not None:
            return self.index_factory()
        from ..index.db import Index

        return Index.open(self.store)
