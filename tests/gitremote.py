"""Real git set-ups for the update, sync and base tests: a bare remote and its clones."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cardmem.store.store import Store, init

GIT_ID = {"GIT_AUTHOR_NAME": "Tess Tester", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess Tester", "GIT_COMMITTER_EMAIL": "tess@example.com"}


def git(root: Path, *args: str) -> str:
    import os

    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          env={**os.environ, **GIT_ID})
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def make_remote(tmp: Path, cards: dict[str, str] | None = None) -> tuple[Path, Store]:
    """A bare remote seeded from a first store (which becomes its first clone)."""
    bare = tmp / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    store = init(tmp / "seed")[0]
    for cid, body in (cards or {}).items():
        store.new(cid, title=cid.rsplit("/", 1)[-1], body=body)
    git(store.root, "remote", "add", "origin", str(bare))
    git(store.root, "push", "-q", "-u", "origin", "main")
    return bare, store


def clone(bare: Path, dest: Path) -> Store:
    subprocess.run(["git", "clone", "-q", str(bare), str(dest)], check=True,
                   capture_output=True)
    return Store.open(dest)


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def tree(root: Path) -> str:
    return git(root, "rev-parse", "HEAD^{tree}").strip()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the work tree outside .git and .cardmem, with its bytes."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", ".cardmem") or not p.is_file():
            continue
        out[rel] = p.read_bytes()
    return out


def state(root: Path) -> tuple[str, str, str, dict[str, bytes]]:
    """HEAD, branch, `git status`, and every file's bytes: 'exactly as before'."""
    return (head(root), git(root, "symbolic-ref", "HEAD").strip(),
            git(root, "status", "--porcelain=v1", "--untracked-files=all"), snapshot(root))


def cli_process(*args: str) -> tuple[int, str, str]:
    """Run `cardmem ARGS` as a user would, in a subprocess: (exit code, stdout, stderr)."""
    proc = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", *args],
                          capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


def cli(*args: str) -> tuple[int, str, str]:
    """`cardmem ARGS` in this process (a subprocess costs ~0.3 s): (exit code, stdout, stderr)
    as `python -m cardmem.tools.cli` gives them (tests/clikit.py)."""
    from clikit import run

    ran = run(*args)
    return ran.returncode, ran.stdout, ran.stderr
