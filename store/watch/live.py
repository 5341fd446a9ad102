"""An index kept fresh by file events, for a long-running reader (the MCP server).

Every read of the index first brings it up to date with the tree (DESIGN §4). A process
that searches again and again need not ask git each time (store/index/freshness.py: a
`git status` over every card): it watches the store's files (the watcher's Intake) and,
before each search, writes a fence file and waits for its event. inotify delivers a
watch's events in order, so once the fence's event is here, every change made before the
search began has been noted; only those cards are re-read. Whatever the events cannot
vouch for (no inotify, lost events, the observer down, a fence that never came) is
checked the ordinary way (Index.refresh), as are the first search and one search every
freshness.MAX_AGE_S (what no event shows: a filter or autocrlf change).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from ..index.freshness import MAX_AGE_S
from .intake import Intake
from .report import Voice

FENCE_WAIT_S = 1.0  # a fence's event later than this: check the ordinary way instead


class LiveIndex:
    """Freshness for one Index from file events; fresh() before each read. Not shared
    between threads: its caller serialises reads (the MCP server's search lock)."""

    def __init__(self, root: str, index: Any, state_dir: Any,
                 say: Callable[[str], None] | None = None) -> None:
        self.index = index
        self.state_dir = state_dir
        self.cv = threading.Condition()
        self.intake = Intake(root, self.cv, Voice(say or (lambda line: None), verbose=False),
                             on_ids=lambda ids, now: False)
        self._started = False
        self._checked_at = 0.0  # monotonic time of the last ordinary check

    def fresh(self) -> dict[str, int] | None:
        """Bring the index up to date with the tree; the refresh's counts (None when the
        events said nothing changed)."""
        if not self._started:
            self._started = True
            self.intake.start()  # events from here on; the check below covers before
            if not self.intake.ordered_events:  # polling: seconds late, and costly
                self.intake.stop()
        if (not self.intake.ordered_events or not self.intake.observer_ok()
                or time.monotonic() - self._checked_at > MAX_AGE_S):
            return self._check()
        fence = self.intake.write_fence(self.state_dir)
        if fence is None:
            return self._check()
        try:
            with self.cv:
                seen = self.cv.wait_for(lambda: self.intake.fences.get(fence), FENCE_WAIT_S)
                ids, rescan = self.intake.take()
        finally:
            self.intake.drop_fences([fence])
        if not seen or rescan is not None:
            return self._check()
        if not ids:
            return None
        try:
            return self.index.refresh_ids(ids)
        except BaseException:
            self.intake.put_back(ids, None, 0.0)
            raise

    def _check(self) -> dict[str, int]:
        with self.cv:
            self.intake.take()  # the check sees all of it
        started = time.monotonic()
        counts = self.index.refresh()
        self._checked_at = started
        return counts

    def close(self) -> None:
        if self._started:
            self.intake.stop()
