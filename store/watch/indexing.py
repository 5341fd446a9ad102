"""Indexing: the worker applies a debounced batch to the index (`refresh_ids`), or a
full stat rescan when events may have been lost, then embeds what changed."""
from __future__ import annotations

import time
from typing import Any, Iterable, Protocol

BURST_IDS = 1000  # more distinct cards than this in one batch: rescan (drops are likely)
RETRY_MAX_S = 5.0  # the longest back-off after a failed apply or commit


class IndexLike(Protocol):
    def refresh(self, walk: bool = False) -> Any: ...
    def refresh_ids(self, ids: Iterable[str]) -> Any: ...


class Indexing:
    """The Watcher's index side."""

    def _open_index(self) -> IndexLike:
        from ..index.db import Index

        return Index.open(self.store)

    def _vectors(self) -> None:
        """Embed the cards the refresh changed (store/index/semantic.py), so the next search need
        not; the model is loaded once in this long-lived process. Without a model, or when
        embedding fails, searches embed what is missing themselves: said once, never retried
        as an index failure."""
        from ..index import embedding, semantic

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


def _hashes(index: Any) -> dict[str, str] | None:
    """id -> content hash of everything indexed (cards and problem files), if readable."""
    try:
        return index.hashes()
    except Exception:  # noqa: BLE001 - another index implementation: no change tracking
        return None
