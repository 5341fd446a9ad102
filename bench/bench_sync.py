"""Sync benchmark: what settling a clash costs a `cardmem sync`, beside a clean replay and
beside bare git doing the clean replay (`git pull --rebase && git push`).

    python bench/bench_sync.py [--dir /tmp/cardmem-bench-sync] [-n 9]

Two clones of one bare remote (three cards of twelve lines). Each round, interleaved so
machine load hits all alike: the other clone pushes one edit, then this clone
  - clean: edits another card and runs Store-level sync (fetch, replay, push, move);
  - clash: edits the same line and runs the same sync (a conflict card is made);
  - git: edits another card, then `git pull -q --rebase` and `git push -q`.
Medians over N rounds, and the ratios clash/clean and clean/git.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cardmem.store.sharing.sync import sync
from cardmem.store.store import Store, init

ID = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
      "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
LINES = "".join(f"Line {i}: text {i}.\n" for i in range(1, 13))


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def edit(store: Store, cid: str, line: int, text: str) -> None:
    store.update_text(cid, lambda t: "".join(
        f"Line {line}: {text}\n" if ln.startswith(f"Line {line}:") else ln
        for ln in t.splitlines(keepends=True)), f"edit: {cid}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench-sync"))
    ap.add_argument("-n", type=int, default=9)
    args = ap.parse_args()
    os.environ.update(ID)
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    bare = args.dir / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    seed = init(args.dir / "seed")[0]
    for cid in ("reference/a", "reference/b", "reference/c"):
        seed.new(cid, body=LINES)
    git(seed.root, "remote", "add", "origin", str(bare))
    git(seed.root, "push", "-q", "-u", "origin", "main")
    other = seed
    subprocess.run(["git", "clone", "-q", str(bare), str(args.dir / "me")], check=True)
    me = Store.open(args.dir / "me")
    times: dict[str, list[float]] = {"clean": [], "clash": [], "git": []}
    for r in range(args.n):
        for kind in times:
            edit(other, "reference/a", 1 + r % 12, f"other {r} {kind}")
            git(other.root, "push", "-q", "origin", "main")
            if kind == "git":
                path = me.root / "reference/c.md"
                path.write_text(path.read_text() + f"git {r}\n")
                git(me.root, "commit", "-q", "-am", f"git {r}")
                t = time.perf_counter()
                git(me.root, "pull", "-q", "--rebase", "origin", "main")
                git(me.root, "push", "-q", "origin", "main")
            else:
                cid = "reference/a" if kind == "clash" else "reference/b"
                edit(me, cid, 1 + r % 12, f"me {r} {kind}")
                t = time.perf_counter()
                moved = sync(me)
                assert bool(moved.conflicts) == (kind == "clash"), moved
            times[kind].append(time.perf_counter() - t)
            git(other.root, "pull", "-q", "--rebase", "origin", "main")
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"load average {os.getloadavg()[0]:.1f}, {args.n} rounds, medians:")
    for k, v in med.items():
        print(f"  {k:6s} {v:7.0f} ms")
    print(f"  clash/clean {med['clash'] / med['clean']:.2f}x, clean/git "
          f"{med['clean'] / med['git']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
