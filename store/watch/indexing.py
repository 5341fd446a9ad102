"""Indexing: the worker's batches and rescans applied to the index (`refresh_ids`, or a
full stat rescan when events may have been lost). Nothing here waits on the model: what
the index changed is handed on (`on_indexed`) for vectors to follow, elsewhere."""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Protocol

from .report import Voice

BURST_IDS = 1000  # more distinct cards than this in one batch: rescan (drops are likely)
RETRY_MAX_S = 5.0  # the longest back-off after a failed apply or commit


class IndexLike(Protocol):
    def refresh(self, walk: bool = False) -> Any: ...
    def refresh_ids(self, ids: Iterable[str]) -> Any: ...


class Indexer:
    """The Watcher's index side: one index handle, kept open, and what applying a batch
    to it takes (a rescan's hand edits found, failures counted, the handle renewed)."""

    def __init__(self, index_factory: Callable[[], IndexLike], voice: Voice, *,
                 burst_ids: int = BURST_IDS,
                 on_edits: Callable[[set[str]], None] | None = None,
                 on_indexed: Callable[[], None] | None = None) -> None:
        self.index_factory = index_factory
        self.voice = voice
        self.burst_ids = burst_ids
        self.on_edits = on_edits  # hand edits a rescan found (None: nobody commits them)
        self.on_indexed = on_indexed
        self.index: IndexLike | None = None
        self.failures = 0

    def apply(self, ids: set[str], reason: str | None) -> tuple[str | None, float] | None:
        """Apply one batch (reason: a rescan's, or None). None when done; on failure the
        rescan reason to retry with (None: the ids alone) and when to retry."""
        stats = self.voice.stats
        try:
            if self.index is None:
                self.index = self.index_factory()
            if reason is None and len(ids) > self.burst_ids:
                reason = "burst"
            t0 = time.monotonic()
            if reason is not None:
                # Cards a rescan finds changed after lost events are hand edits too; at
                # start they may predate us and are not ours to commit.
                track = self.on_edits is not None and reason != "start"
                before = _hashes(self.index) if track else None
                self.index.refresh(walk=True)  # a full stat walk, whatever git says
                stats.rescans[reason] += 1
                after = _hashes(self.index) if before is not None else None
                if before is not None and after is not None and self.on_edits is not None:
                    changed = {i for i in before.keys() | after.keys()
                               if before.get(i) != after.get(i)}
                    if changed:
                        self.on_edits(changed)
            else:
                self.index.refresh_ids(sorted(ids))
            stats.batches += 1
            stats.ids_applied += len(ids)
            self.failures = 0
            if self.voice.verbose:
                what = f"rescan ({reason})" if reason else f"{len(ids)} card(s)"
                self.voice.tell(f"indexed {what} in {(time.monotonic() - t0) * 1000:.0f} ms",
                                force=True)
        except Exception as exc:  # noqa: BLE001
            self.failures += 1
            self.voice.failed("updating the index", exc)
            self.close()  # a repeated failure becomes a rescan on a fresh index handle
            again = reason if reason is not None else (
                "after errors" if self.failures >= 2 else None)
            return again, time.monotonic() + min(RETRY_MAX_S, 0.1 * 2 ** self.failures)
        if self.on_indexed is not None:
            self.on_indexed()
        return None

    def close(self) -> None:
        close = getattr(self.index, "close", None)
        self.index = None
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001
                pass


def _hashes(index: Any) -> dict[str, str] | None:
    """id -> content hash of everything indexed (cards and problem files), if readable."""
    try:
        return index.hashes()
    except Exception:  # noqa: BLE001 - another index implementation: no change tracking
        return None
