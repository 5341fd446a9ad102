"""`cardmem update` and `cardmem rollback`: move a store (or an attached base) by git only.

An update takes upstream commits only by fast-forward: the local head must be an ancestor
of the incoming one, else it refuses (exit 3) unless forced. Before the head moves, the old
head is recorded twice: the ref `refs/cardmem/before-update` (which also keeps commits a
forced update drops reachable, so `git gc` never prunes them) and one JSON line in
`updates.jsonl`. Uncommitted edits are never overwritten: a file the move would change that
has uncommitted edits stops it, by name, before anything moves. After the move the index is
refreshed; if that fails the move stands and `index_error` says why (the CLI exits 2).

The functions here work on any git work tree (`root`) with a folder for their records
(`state`), so attached bases that are git clones get the same update and rollback.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ..appendlog import append
from ..git import runner as git
from ..git import status as git_status
from ..errors import CardmemError
from ..git.head_file import require_store
from ..git.writer import check_writable, write_lock

if TYPE_CHECKING:
    from ..store import Store

BEFORE_UPDATE = "refs/cardmem/before-update"
BEFORE_ROLLBACK = "refs/cardmem/before-rollback"
LOG_FILE = "updates.jsonl"
# A remote that wants a password fails at once instead of waiting on a prompt no one sees.
NET_ENV = {"GIT_TERMINAL_PROMPT": "0"}


class Diverged(CardmemError):
    """The local and incoming histories do not fast-forward; nothing was changed."""

    exit_code = 3


class UncommittedEdits(CardmemError):
    """Files the move would rewrite hold uncommitted edits; nothing was changed."""

    def __init__(self, what: str, files: list[str]) -> None:
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
        super().__init__(what, f"uncommitted edits in {shown}; commit or move them first "
                               "(nothing was changed)")
        self.files = files


@dataclass
class Moved:
    """What an update, rollback or sync did; `as_dict` is its --json form."""

    kind: str  # update | rollback | sync
    status: str  # updated | forced | up-to-date | ahead | rolled-back | synced | …
    old: str
    new: str
    remote: str | None = None
    branch: str | None = None
    incoming: str | None = None
    commits: int = 0  # commits taken from the remote
    pushed: int = 0  # commits sent to it (sync)
    index_error: str | None = None
    # Clashes a sync settled (store/sharing/conflicts.py Settled.as_dict): card, kind,
    # commit, conflict_card.
    conflicts: list[dict] = field(default_factory=list)
    unshared: list[str] = field(default_factory=list)  # cards with uncommitted edits (sync)

    def as_dict(self) -> dict:
        return asdict(self)


# --- git facts -------------------------------------------------------------------------

def short(sha: str | None) -> str:
    return (sha or "none")[:10]


def rev(root: Path, ref: str) -> str | None:
    """The commit a ref or sha names, or None."""
    out = git.run(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).strip()
    return out or None


def dirty_paths(root: Path) -> list[str]:
    """Every path with uncommitted changes: staged, unstaged, untracked (ignored excluded)."""
    return sorted(git_status.changes(root))


def changed_paths(root: Path, old: str, new: str) -> list[str]:
    out = git.run(root, "diff", "--name-only", "-z", "--no-renames", old, new, "--")
    return [p for p in out.split("\0") if p]


def blocking_edits(root: Path, old: str, new: str) -> list[str]:
    """Uncommitted files that moving old -> new would overwrite (or delete)."""
    changed = set(changed_paths(root, old, new))
    if not changed:
        return []

    def blocks(d: str) -> bool:
        # The path itself, or a file/folder clash: d under a changed path, or above one.
        return d in changed or any(d.startswith(c + "/") or c.startswith(d + "/")
                                   for c in changed)

    return [d for d in dirty_paths(root) if blocks(d)]


def counts(root: Path, a: str, b: str) -> tuple[int, int]:
    """(commits only in a, commits only in b)."""
    left, right = git.run(root, "rev-list", "--left-right", "--count", f"{a}...{b}").split()
    return int(left), int(right)


def is_ancestor(root: Path, a: str, b: str) -> bool:
    """git merge-base --is-ancestor: exit 0 yes, 1 no, anything else an error."""
    proc = git.call(root, ["merge-base", "--is-ancestor", a, b])
    if proc.returncode not in (0, 1):
        raise CardmemError("git merge-base", proc.stderr.strip() or f"exit {proc.returncode}")
    return proc.returncode == 0


def upstream(root: Path, remote: str | None) -> tuple[str, str]:
    """(remote, branch on the remote) to take from: the branch's upstream by default.

    REMOTE may be a configured remote's name or any git URL; the branch is the one the local
    branch tracks when that is the remote given, else the local branch's own name.
    """
    local = git.branch(root)
    if local is None:
        raise CardmemError(f"repository {root}", "HEAD is detached; switch to a branch first")
    if remote is not None and (not remote.strip() or remote.startswith("-")):
        # git would read "-…" as an option (--upload-pack runs a command).
        raise CardmemError(f"remote {remote!r}", "is not a remote name or a git URL")
    tracked_remote = git.run(root, "config", f"branch.{local}.remote", check=False).strip()
    merge = git.run(root, "config", f"branch.{local}.merge", check=False).strip()
    if remote is None:
        remote = tracked_remote or "origin"
        if not git.run(root, "config", f"remote.{remote}.url", check=False).strip():
            raise CardmemError(f"repository {root}",
                               f"has no remote {remote!r}; pass one (any git URL) or run "
                               f"`git -C {root} remote add origin URL`")
    name = merge.removeprefix("refs/heads/") if merge and remote == tracked_remote else local
    return remote, name


def fetch(root: Path, remote: str, branch: str) -> str | None:
    """Fetch one branch of remote; its commit, or None when the remote has no such branch."""
    listed = git.run(root, "ls-remote", "--heads", remote, f"refs/heads/{branch}", env=NET_ENV)
    if not listed.strip():
        return None
    git.run(root, "fetch", "-q", "--no-tags", remote, f"refs/heads/{branch}", env=NET_ENV)
    return rev(root, "FETCH_HEAD")


def record(root: Path, state: Path, kind: str, old: str, new: str, *, ref: str,
           remote: str | None = None, forced: bool = False) -> None:
    """Remember the head before a move: a ref in the repository and a line in the log."""
    git.run(root, "update-ref", "--create-reflog", "-m", f"cardmem {kind}", ref, old)
    if forced:
        # A forced move drops local commits from the branch; a ref of their own keeps them.
        git.run(root, "update-ref", f"refs/cardmem/forced/{old}", old)
    state.mkdir(parents=True, exist_ok=True)
    line = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "kind": kind,
            "branch": git.branch(root), "old": old, "new": new, "remote": remote,
            "forced": forced}
    append(state / LOG_FILE, json.dumps(line) + "\n")


def history(state: Path) -> list[dict]:
    """The recorded moves, oldest first (unreadable lines skipped)."""
    try:
        lines = (state / LOG_FILE).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for ln in lines:
        try:
            out.append(json.loads(ln))
        except ValueError:
            continue
    return out


def move_to(root: Path, new: str, *, ff: bool) -> None:
    """Move the checked-out branch and work tree from old to new, keeping unrelated edits.

    The caller has checked `blocking_edits`; git checks again and refuses rather than
    overwrite, should a file change in between.
    """
    if ff:
        git.run(root, "merge", "-q", "--ff-only", new)
    else:
        # --keep: like --hard for files that differ, but refuses to touch local changes.
        # It keeps their files, not what was staged of them: that is put back after.
        staged = staged_entries(root)
        git.run(root, "reset", "-q", "--keep", new)
        if staged:
            git.run(root, "update-index", "-z", "--index-info", input=staged)


def staged_entries(root: Path) -> str:
    """`git update-index -z --index-info` input that puts back every staged change (a
    path whose index entry differs from HEAD's: added, modified or removed)."""
    paths = [p for p in git.run(root, "diff", "--cached", "--name-only", "--no-renames",
                                "-z").split("\0") if p]
    if not paths:
        return ""
    present = {}
    for entry in git.run(root, "ls-files", "-s", "-z", "--", *paths).split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            mode, blob, _ = meta.split()
            present[path] = f"{mode} {blob}\t{path}"
    gone = "0 " + "0" * len(git.head(root) or "") + "\t"  # mode 0: drop the entry
    return "".join(present.get(p, gone + p) + "\0" for p in paths)


def recorded_move(root: Path, state: Path, kind: str, old: str, new: str, *, ref: str,
                  ff: bool, remote: str | None = None, forced: bool = False) -> None:
    """Record the old head, then move; a move git refused is logged as failed too."""
    record(root, state, kind, old, new, ref=ref, remote=remote, forced=forced)
    try:
        move_to(root, new, ff=ff)
    except CardmemError as exc:
        append(state / LOG_FILE, json.dumps({"kind": kind, "old": old, "new": new,
                                              "failed": exc.why}) + "\n")
        raise


def refreshed(refresh: Callable[[], None] | None) -> str | None:
    """Run the index refresh; the reason it failed, or None."""
    if refresh is None:
        return None
    try:
        refresh()
    except Exception as exc:  # the move stands whatever the index does; say why
        why = exc.why if isinstance(exc, CardmemError) else f"{type(exc).__name__}: {exc}"
        return why
    return None


# --- the moves -------------------------------------------------------------------------

def update_repo(root: Path, state: Path, remote: str | None = None, *, force: bool = False,
                refresh: Callable[[], None] | None = None, what: str | None = None) -> Moved:
    """Fast-forward root's branch to its upstream's head (the caller holds the write lock)."""
    what = what or f"update {root}"
    remote, branch = upstream(root, remote)
    old = git.head(root)
    if old is None:
        raise CardmemError(what, "the repository has no commits yet")
    incoming = fetch(root, remote, branch)
    if incoming is None:
        raise CardmemError(what, f"{remote} has no branch {branch!r}")
    base = dict(remote=remote, branch=branch, incoming=incoming, old=old)
    if incoming == old:
        return Moved("update", "up-to-date", new=old, **base)
    if is_ancestor(root, incoming, old):
        # Nothing new upstream; local commits are for `cardmem sync` to share.
        return Moved("update", "ahead", new=old, commits=0, **base)
    forced = False
    if not is_ancestor(root, old, incoming):
        mine, theirs = counts(root, old, incoming)
        if not force:
            raise Diverged(
                what, f"local head {short(old)} is not an ancestor of {remote} {branch} head "
                f"{short(incoming)}: {mine} local commit(s) upstream lacks, {theirs} upstream "
                f"commit(s) here lacks; nothing changed (`cardmem sync` replays local commits; "
                f"--force takes upstream and `cardmem rollback` undoes it)")
        forced = True
    blocked = blocking_edits(root, old, incoming)
    if blocked:
        raise UncommittedEdits(what, blocked)
    recorded_move(root, state, "update", old, incoming, ref=BEFORE_UPDATE, ff=not forced,
                  remote=remote, forced=forced)
    taken = counts(root, old, incoming)[1]
    return Moved("update", "forced" if forced else "updated", new=incoming, commits=taken,
                 index_error=refreshed(refresh), **base)


def rollback_repo(root: Path, state: Path, to: str | None = None, *,
                  refresh: Callable[[], None] | None = None, what: str | None = None) -> Moved:
    """Return root's branch to the head before the last update, or to `to` (with the lock)."""
    what = what or f"rollback {root}"
    if git.branch(root) is None:
        raise CardmemError(what, "HEAD is detached; switch to a branch first")
    old = git.head(root)
    if to is not None and (not to.strip() or to.startswith("-")):
        raise CardmemError(what, f"{to!r} is not a commit or ref")
    last = None
    if to is None:
        last = next((h for h in reversed(history(state))
                     if h.get("kind") != "rollback" and "failed" not in h), None)
        if last and last.get("branch") and last["branch"] != git.branch(root):
            raise CardmemError(what, f"the last update moved branch {last['branch']!r}, not "
                                     f"{git.branch(root)!r}; switch back or pass --to")
    target = rev(root, to or BEFORE_UPDATE)
    if target is None:
        why = (f"no commit {to!r} in this repository" if to else
               "no update recorded here; nothing to roll back to")
        raise CardmemError(what, why)
    if old is None:
        raise CardmemError(what, "the repository has no commits yet")
    if target == old:
        return Moved("rollback", "up-to-date", old=old, new=old)
    if to is None and last and last.get("new") and rev(root, last["new"]):
        # Commits made since the update (a card written, the watcher's commit) are no part
        # of what the update brought: going back would drop them from the branch unseen.
        since = [ln for ln in git.run(root, "log", "--format=%h %s",
                                      f"{last['new']}..{old}").splitlines() if ln]
        if since:
            raise Diverged(what, f"{len(since)} commit(s) made since the last update would be "
                                 f"dropped ({'; '.join(since[:3])}"
                                 f"{'; …' if len(since) > 3 else ''}); nothing changed: "
                                 "`cardmem revert` what the update brought instead, or name "
                                 "the commit to return to with --to")
    blocked = blocking_edits(root, old, target)
    if blocked:
        raise UncommittedEdits(what, blocked)
    recorded_move(root, state, "rollback", old, target, ref=BEFORE_ROLLBACK, ff=False)
    return Moved("rollback", "rolled-back", old=old, new=target,
                 index_error=refreshed(refresh))


# --- on a store ------------------------------------------------------------------------

def refresh_index(store: "Store") -> None:
    """Bring the store's index, and what is derived from its rules (the trigger table, the
    rules files hosts load), up to date with the work tree the move left."""
    store.after_move()


@contextmanager
def _locked(store: "Store") -> Iterator[None]:
    """The store's write lock; git's own state is checked under it, as every writer does."""
    require_store(store.root)
    with write_lock(store.root, store.lock_timeout()):
        check_writable(store.root)
        yield


def update(store: "Store", remote: str | None = None, *, force: bool = False) -> Moved:
    """`cardmem update`: fast-forward the store from upstream, under its write lock."""
    with _locked(store):
        return update_repo(store.root, store.state_dir, remote, force=force,
                           refresh=lambda: refresh_index(store), what=f"update {store.root}")


def rollback(store: "Store", to: str | None = None) -> Moved:
    """`cardmem rollback`: back to the head before the last update (or to `to`)."""
    with _locked(store):
        return rollback_repo(store.root, store.state_dir, to,
                             refresh=lambda: refresh_index(store), what=f"rollback {store.root}")
