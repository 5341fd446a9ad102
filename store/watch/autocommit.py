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
from ..git.writer import AS_IS, Message, commit_changes

COMMIT_LOCK_S = 2.0  # how long an autocommit waits for the store's write lock
# git operations during which the tree is in flux and must not be committed over.
GIT_BUSY = ("index.lock", "MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD",
            "REVERT_HEAD", "BISECT_LOG")


class Autocommit:
    """The Watcher's git side."""

    def _commit_due(self) -> float:
        if not self.autocommit or not self._dirty:
            return float("inf")
        return max(self._dirty_t + self.quiet_s, self._commit_retry_at)

    def _git_busy(self) -> str | None:
        for name in GIT_BUSY:
            if os.path.exists(dot_git(self.root, name)):
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


def _status(root: Any, rels: list[str]) -> dict[str, str]:
    """For each path that differs from HEAD: 'new', 'edited' or 'deleted'."""
    if not rels:
        return {}
    return {rel: git_status.kind(code)
            for rel, code in git_status.changes(root, rels).items() if rel in rels}
