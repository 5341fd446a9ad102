"""What `.git` says without starting git: whether a folder is a repository's top
(is_repo) and a store (require_store), the nearest one at or above a folder
(enclosing_repo), HEAD's commit.

Speed trick: HEAD's commit read from files here, not by `git rev-parse HEAD`, a process
on every search (bench/bench_tricks.py; bench/RESULTS.md, "Speed tricks, each against its
plain alternative").
Only os (and the one-line error type) is imported: the search command reads HEAD before it loads anything else
(store/index/freshness.py), and a write reads the new HEAD right after its commit
(store/git/runner.py). store/where.py and the PreToolUse hook's match.py inline the
`.git` test rather than import this: each loads as few modules as it can (the lean
search entry, and the hook run on every tool call).
"""
from __future__ import annotations

import os

from ..errors import CardmemError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

DOT_GIT = ".git"


def dot_git(root: str | os.PathLike[str], *names: str) -> str:
    """A path under the repository's `.git` folder (`dot_git(root, "index.lock")`)."""
    return os.path.join(root, DOT_GIT, *names)


def is_repo(root: str | os.PathLike[str]) -> bool:
    """A folder at the top of a git work tree: a `.git` folder, or a worktree's `.git` file."""
    return os.path.exists(dot_git(root))


def enclosing_repo(folder: str | os.PathLike[str]) -> str | None:
    """The nearest folder at or above this one (symlinks resolved) holding `.git`: what
    `git rev-parse --show-toplevel` finds, without starting git; None outside any."""
    try:
        d = os.path.realpath(folder)
    except (OSError, ValueError):
        return None
    while True:
        if is_repo(d):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def repos_inside(root: str | os.PathLike[str], skip: tuple[str, ...] = ("node_modules",)
                 ) -> list[str]:
    """Folders below root (as `a/b/`, relative) that are repositories of their own, not
    looked into; hidden folders and `skip` are passed by, as an adopted store ignores them."""
    found: list[str] = []
    for dirpath, dirnames, _ in os.walk(root):
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in skip:
                continue
            path = os.path.join(dirpath, d)
            if is_repo(path):
                found.append(os.path.relpath(path, root).replace(os.sep, "/") + "/")
            else:
                keep.append(d)
        dirnames[:] = keep
    return found


def read_head(root: str) -> str | None:
    """What .git/HEAD says (`ref: refs/heads/x` or a commit), or None if it cannot be
    read (a worktree's .git is a file: ask git)."""
    try:
        with open(dot_git(root, "HEAD")) as fh:
            return fh.read().strip()
    except OSError:
        return None


def head(root: str) -> str | None:
    """HEAD's commit, or None when only git can say (a worktree, an unborn branch, an
    unusual ref): callers then ask git or do without."""
    git = dot_git(root)
    ref = read_head(root)
    if ref is None:
        return None
    try:
        if not ref.startswith("ref: refs/"):
            return ref if _is_oid(ref) else None  # detached
        try:
            with open(os.path.join(git, ref[5:])) as fh:
                sha = fh.read().strip()
            return sha if _is_oid(sha) else None
        except FileNotFoundError:
            return _packed(git, ref[5:])
    except OSError:
        return None


def _packed(git: str, ref: str) -> str | None:
    try:
        with open(os.path.join(git, "packed-refs")) as fh:
            for line in fh:
                sha, _, name = line.rstrip("\n").partition(" ")
                if name == ref and _is_oid(sha):
                    return sha
    except OSError:
        pass
    return None


def _is_oid(s: str) -> bool:
    return len(s) in (40, 64) and all(c in "0123456789abcdef" for c in s)


def require_store(root: Path) -> Path:
    """Refuse, with what to do, a folder that is not a store (no git call: cheap)."""
    if not root.is_dir():
        raise CardmemError(f"store {root}", f"does not exist; run `cardmem init {root}`")
    if not is_repo(root):
        raise CardmemError(f"store {root}", f"is not a git repository; run `cardmem init {root}`")
    return root


def require_card_store(root: Path) -> Path:
    """require_store, and a cardmem.toml: before a card is written. Writing cards into an
    empty clone (and `sync` pushing a new unrelated branch) is never what was meant;
    `init` adopts the repository's notes and makes it a store. (A base need not be one.)"""
    require_store(root)
    if not (root / "cardmem.toml").is_file():
        raise CardmemError(f"store {root}", "is a git repository but no cardmem store (no "
                                            f"cardmem.toml); run `cardmem init {root}`")
    return root
