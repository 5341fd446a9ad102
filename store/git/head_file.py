"""HEAD's commit read from the files under .git, without starting git.

Only os is imported: the search command reads HEAD before it loads anything else
(store/index/freshness.py), and a write reads the new HEAD right after its commit
(store/git/runner.py).
"""
from __future__ import annotations

import os


def read_head(root: str) -> str | None:
    """What .git/HEAD says (`ref: refs/heads/x` or a commit), or None if it cannot be
    read (a worktree's .git is a file: ask git)."""
    try:
        with open(os.path.join(root, ".git", "HEAD")) as fh:
            return fh.read().strip()
    except OSError:
        return None


def head(root: str) -> str | None:
    """HEAD's commit, or None when only git can say (a worktree, an unborn branch, an
    unusual ref): callers then ask git or do without."""
    git = os.path.join(root, ".git")
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
