"""`cardmem sync`: share a store several people write, through any git remote.

Fetch; replay the local commits on top of the remote's (a rebase: cards are separate files,
so most replays are clean); push; then move the store to the result. The replay runs in a
throwaway worktree, never in the store. A card both sides changed is settled there so
that no side loses a line (conflicts.py: the remote's lines where they clash, the local
version in a conflict card); a clash it does not settle (a file that is no card) is
aborted, the store keeps exactly its HEAD, its tree and its uncommitted files, and the
error names the files. The store moves only after the push succeeded, by the same checked,
recorded move as `cardmem update` (so `cardmem rollback` undoes a sync too).
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..git import runner as git
from ..cards.paths import id_of_path
from ..errors import CardmemError
from .conflicts import Settled, marked_cards, settle, stages, unsettled
from .updates import (BEFORE_UPDATE, NET_ENV, Moved, UncommittedEdits, _locked,
                      blocking_edits, counts, dirty_paths, fetch, is_ancestor, recorded_move,
                      refresh_index, refreshed, rev, short, upstream)

if TYPE_CHECKING:
    from ..store import Store

# The last sync that replayed and pushed: the local head it replayed, and what it pushed.
PUSHED_FROM, PUSHED_AS = "refs/cardmem/sync/pushed-from", "refs/cardmem/sync/pushed-as"
ATTEMPTS = 3  # the remote moved between our fetch and our push: fetch and replay again


class SyncConflict(CardmemError):
    """Local and remote commits change the same lines of a card; nothing was changed."""

    exit_code = 3

    def __init__(self, what: str, why: str, files: list[str]) -> None:
        super().__init__(what, why)
        self.files = files


def card_names(files: list[str]) -> list[str]:
    """Card ids for card files (path without .md), other paths as they are."""
    return [id_of_path(f) or f for f in files]


def _committer_env(root: Path) -> dict[str, str]:
    # Replayed commits keep their authors (agent or person); only the committer is us.
    return {k: v for k, v in git.identity_env(root).items() if "COMMITTER" in k}


def replay(root: Path, local: str, onto: str, what: str, since: str | None = None
           ) -> tuple[str, list[Settled]]:
    """Rebase local's own commits (those after `since`, else those `onto` lacks) onto
    `onto` in a side worktree: the new head's sha and the clashes settled on the way
    (conflicts.py: no side loses a line).

    Raises SyncConflict naming the files it does not settle (not cards); the store itself
    is never touched.
    """
    tmp = Path(tempfile.mkdtemp(prefix="cardmem-sync-"))
    wt = tmp / "wt"
    git.run(root, "worktree", "prune", check=False)  # one a killed sync left behind
    git.run(root, "worktree", "add", "-q", "--detach", str(wt), local)
    env = {**_committer_env(root), "GIT_EDITOR": "true"}
    settled: list[Settled] = []
    seen: set[str] = set()
    try:
        proc = git.call(wt, ["-c", "rebase.autoStash=false", "-c", "rebase.updateRefs=false",
                             "rebase", "-q", "--no-verify",
                             *(["--onto", onto, since] if since else [onto])], env=env)
        while proc.returncode != 0:
            conflicted = stages(wt)
            stopped = unsettled(conflicted)
            commit = git.run(wt, "rev-parse", "--verify", "-q", "REBASE_HEAD",
                             check=False).strip()
            if commit in seen:  # git stopped on it again after settling: do not loop
                stopped = sorted(conflicted) or [commit]
            seen.add(commit)
            if conflicted and not stopped and commit:
                try:
                    now = settle(wt, commit, onto)
                except (UnicodeDecodeError, ValueError):
                    stopped = sorted(conflicted)
                else:
                    _say_in_message(wt, now)
                    settled += now
            if not conflicted or stopped:
                git.run(wt, "rebase", "--abort", check=False)
                _refuse(root, local, onto, what, proc, stopped)
            # A commit the settling left empty (its card deleted, the remote's edit kept)
            # is skipped, as git skips one the remote already holds.
            empty = git.call(wt, ["diff", "--cached", "--quiet", "HEAD"]).returncode == 0
            proc = git.call(wt, ["-c", "core.hooksPath=/dev/null", "rebase",
                                 "--skip" if empty else "--continue"], env=env)
        new = git.head(wt)
        assert new is not None
        return new, settled
    finally:
        git.run(root, "worktree", "remove", "--force", str(wt), check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        git.run(root, "worktree", "prune", check=False)


def _say_in_message(wt: Path, settled: list[Settled]) -> None:
    """Add a trailer per settled card to the message the replayed commit will carry, so
    `git log` tells how the commit changed on the way."""
    if not settled:
        return
    msg = Path(git.run(wt, "rev-parse", "--path-format=absolute", "--git-path",
                       "rebase-merge/message").strip())
    text = msg.read_text(encoding="utf-8").rstrip("\n")
    lines = [f"Cardmem-Conflict: {s.card} kept both sides; this commit's version in "
             f"{s.conflict_card}" if s.conflict_card else
             f"Cardmem-Conflict: {s.card} kept, edited on one side, deleted on the other"
             for s in settled]
    msg.write_text(text + "\n" + "\n".join(lines) + "\n", encoding="utf-8")


def _refuse(root: Path, local: str, onto: str, what: str, proc, files: list[str]) -> None:
    """Raise why the replay stopped: the unsettled files by name, else git's own line."""
    if not files:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        raise CardmemError(what, f"replaying local commits failed: "
                                 f"{msg[0] if msg else f'exit {proc.returncode}'}")
    names = card_names(files)
    mine, theirs = counts(root, local, onto)
    raise SyncConflict(
        what, f"conflict in {', '.join(names)}: local and remote both changed the "
        f"same lines ({mine} local commit(s), {theirs} remote); nothing changed, "
        f"HEAD is still {short(local)}. Merge by hand (`git -C {root} pull --rebase`) "
        "or revert one side, then sync again", files)


def _refuse_marked(root: Path, incoming: str | None, new: str, what: str) -> None:
    """Stop before sharing a card someone committed mid-merge, markers and all."""
    marked = marked_cards(root, incoming, new)
    if marked:
        raise SyncConflict(what, f"{', '.join(card_names(marked))} hold(s) git conflict "
                                 "markers (<<<<<<< … >>>>>>>) a commit here left in; nothing "
                                 "changed or pushed: resolve them, commit, then sync again",
                           marked)


def push(root: Path, remote: str, commit: str, branch: str, expected: str | None) -> bool:
    """Push commit to remote's branch if the branch is still at `expected`; False if not."""
    lease = f"--force-with-lease=refs/heads/{branch}:{expected or ''}"
    proc = git.call(root, ["push", "-q", "--no-verify", lease, remote,
                           f"{commit}:refs/heads/{branch}"], env=NET_ENV)
    if proc.returncode == 0:
        return True
    listed = git.run(root, "ls-remote", "--heads", remote, f"refs/heads/{branch}",
                     env=NET_ENV).split()
    now = listed[0] if listed else None
    if now != expected:
        return False  # someone pushed in between: fetch and replay again
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()] or [
        f"exit {proc.returncode}"]
    # "! [remote rejected] … (reason)" says why; else git's fatal/error line.
    why = next((ln for ln in lines if "rejected]" in ln), None) or next(
        (ln for ln in lines if ln.startswith(("fatal: ", "error: "))), lines[0])
    raise CardmemError(f"git push {remote}",
                       why.removeprefix("error: ").removeprefix("fatal: ").lstrip("! "))


def sync_repo(store: "Store", remote: str | None = None) -> Moved:
    """Fetch, replay, push, move; the caller holds the store's write lock."""
    root, state = store.root, store.state_dir
    what = f"sync {root}"
    remote, branch = upstream(root, remote)
    for _ in range(ATTEMPTS):
        old = git.head(root)
        if old is None:
            raise CardmemError(what, "the store has no commits yet")
        incoming = fetch(root, remote, branch)
        base = dict(remote=remote, branch=branch, incoming=incoming, old=old)
        if incoming == old:
            return Moved("sync", "up-to-date", new=old, **base)
        if incoming is None or is_ancestor(root, incoming, old):
            # Only local commits: share them as they are.
            ahead = counts(root, old, incoming)[0] if incoming else int(
                git.run(root, "rev-list", "--count", old).strip())
            _refuse_marked(root, incoming, old, what)
            if push(root, remote, old, branch, incoming):
                return Moved("sync", "pushed", new=old, pushed=ahead, **base)
            continue
        settled: list[Settled] = []
        shared = _shared_before(root, old, incoming)
        if is_ancestor(root, old, incoming) or shared == old:
            new = incoming  # only remote commits (or ours, pushed already): nothing to push
        else:
            new, settled = replay(root, old, incoming, what, since=shared)
        blocked = blocking_edits(root, old, new)
        if blocked:
            raise UncommittedEdits(what, blocked)
        _refuse_marked(root, incoming, new, what)
        if new != incoming:
            if not push(root, remote, new, branch, incoming):
                continue
            # What was pushed for which local head: should this store not move there (a
            # file saved during the push) or be rolled back, the next sync replays only
            # the commits made since, not these again (_shared_before).
            git.run(root, "update-ref", PUSHED_FROM, old)
            git.run(root, "update-ref", PUSHED_AS, new)
        taken = counts(root, old, incoming)[1]
        pushed = counts(root, incoming, new)[1]
        # A fast-forward when only the remote moved; else (replayed, or local commits the
        # remote already had and the replay dropped) the branch is reset to the result.
        try:
            recorded_move(root, state, "sync", old, new, ref=BEFORE_UPDATE,
                          ff=is_ancestor(root, old, new), remote=remote)
        except CardmemError as exc:
            if new == incoming:
                raise
            raise CardmemError(what, f"pushed to {remote} {branch} ({short(new)}), but this "
                                     f"store could not move there: {exc.why}; it is still at "
                                     f"{short(old)}, nothing here changed; `cardmem sync` "
                                     "again finishes the move") from None
        return Moved("sync", "synced" if pushed else "updated", new=new, commits=taken,
                     pushed=pushed, conflicts=[c.as_dict() for c in settled],
                     index_error=refreshed(lambda: refresh_index(store)), **base)
    raise CardmemError(what, f"{remote} {branch} kept moving during {ATTEMPTS} attempts; "
                             "nothing changed here; try again")


def _shared_before(root: Path, old: str, incoming: str) -> str | None:
    """The local head the last replaying sync pushed for, if the remote still holds what it
    pushed and HEAD is that head or grew from it (the store did not move, or was rolled
    back): only the commits after it are left to replay. None otherwise (the record, if
    any, is stale and dropped)."""
    since, pushed = rev(root, PUSHED_FROM), rev(root, PUSHED_AS)
    if since is None or pushed is None:
        return None
    if is_ancestor(root, pushed, incoming) and is_ancestor(root, since, old):
        return since
    _forget_pushed(root)
    return None


def _forget_pushed(root: Path) -> None:
    for ref in (PUSHED_FROM, PUSHED_AS):
        git.run(root, "update-ref", "-d", ref, check=False)


def sync(store: "Store", remote: str | None = None) -> Moved:
    """`cardmem sync`: the store's write lock held for the whole fetch-replay-push-move."""
    with _locked(store):
        moved = sync_repo(store, remote)
        # Edits not yet committed stay here: say so, lest a person think them shared.
        moved.unshared = card_names([p for p in dirty_paths(store.root) if id_of_path(p)])
        return moved
