"""Autocommit: the cards edited by hand, committed as one commit after a quiet period,
never while git is busy, never over a save that lands meanwhile."""
from __future__ import annotations

import os
import time
from typing import Any

from ..cards import card as cardlib
from ..errors import CardmemError
from ..git import status as git_status
from ..git.head_file import dot_git
from ..git.writer import AS_IS, Message
from .report import Voice

COMMIT_LOCK_S = 2.0  # how long an autocommit waits for the store's write lock
# git operations during which the tree is in flux and must not be committed over.
GIT_BUSY = ("index.lock", "MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD",
            "REVERT_HEAD", "BISECT_LOG")


class Committer:
    """The Watcher's git side: which cards were edited by hand since the last commit, and
    committing them after a quiet period. Its state is guarded by the Watcher's `cv`."""

    def __init__(self, store: Any, cv: Any, voice: Voice, *, enabled: bool,
                 quiet_s: float) -> None:
        self.store = store
        self.root = str(store.root)
        self.cv = cv
        self.voice = voice
        self.enabled, self.quiet_s = enabled, quiet_s
        self.dirty: set[str] = set()  # under cv: cards changed since the last commit
        self.dirty_t = 0.0
        self.committing = False
        self.retry_at = 0.0

    def mark(self, ids: set[str], now: float) -> bool:
        """Note hand edits (under cv); True when they start a new batch to commit, so the
        worker's next deadline moved earlier."""
        if not self.enabled or not ids:
            return False
        first = not self.dirty
        self.dirty |= ids
        self.dirty_t = now
        return first

    def due(self) -> float:
        if not self.enabled or not self.dirty:
            return float("inf")
        return max(self.dirty_t + self.quiet_s, self.retry_at)

    def busy(self) -> bool:
        """Whether edits are waiting for a commit or being committed (under cv)."""
        return self.enabled and bool(self.dirty or self.committing)

    def _git_busy(self) -> str | None:
        for name in GIT_BUSY:
            if os.path.exists(dot_git(self.root, name)):
                return name
        return None

    def commit(self, final: bool = False) -> None:
        """Commit the cards edited since the last commit: one commit for the quiet batch."""
        busy = self._git_busy()
        if busy:
            if final:
                self.voice.tell(f"left {len(self.dirty)} edited card(s) uncommitted: git is"
                                f" busy (.git/{busy})", force=True)
            else:
                self.voice.tell(f"not committing while git is busy (.git/{busy}); will retry")
            self.retry_at = time.monotonic() + max(self.quiet_s, 1.0)
            return
        with self.cv:
            ids, self.dirty = self.dirty, set()
            self.committing = True
        try:
            self._commit_ids(ids)
        finally:
            with self.cv:
                self.committing = False
                self.cv.notify_all()

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
            sha = self.store.commit(changes, message, agent=False, wait_s=COMMIT_LOCK_S)
        except Exception as exc:  # noqa: BLE001
            # Busy lock, detached HEAD, stale index.lock, or a surprise: keep the edits
            # for the next try rather than forget them.
            with self.cv:
                self.dirty |= ids
            self.retry_at = time.monotonic() + max(self.quiet_s, 1.0)
            if isinstance(exc, CardmemError):
                self.voice.tell(f"not committed yet: {exc}; will retry")
            else:
                self.voice.failed("committing", exc)
            return
        finally:
            for cid, why in refused:
                self.voice.stats.not_committed += 1
                self.voice.tell(f"{cid}: not committed: {why}", force=True)
        if sha:
            self.voice.stats.commits += 1
            self.voice.tell(f"committed {sha[:10]} {message.subject}", force=self.voice.verbose)


def _status(root: Any, rels: list[str]) -> dict[str, str]:
    """For each path that differs from HEAD: 'new', 'edited' or 'deleted'."""
    if not rels:
        return {}
    return {rel: git_status.kind(code)
            for rel, code in git_status.changes(root, rels).items() if rel in rels}
