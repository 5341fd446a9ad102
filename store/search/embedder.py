"""The background embedder: a process of its own that embeds what an index lacks
(store/search/vectors.py has the how and the lock; `cardmem watch` and `cardmem index`
start it through vectors.spawn).

    python -m cardmem.store.search.embedder ROOT DB_PATH [LINGER_S [PARENT_PID]]
"""
from __future__ import annotations

import os
import sys

from . import embedding
from ..index.db import Index
from .vectors import NICE, NO_MODEL, TEST_LOADER_ENV, Lock, follow, wanted_by

USAGE = "usage: python -m cardmem.store.search.embedder ROOT DB_PATH [LINGER_S [PARENT_PID]]"


def main(argv: list[str] | None = None) -> int:
    """Embed what the index lacks (and what it gains for LINGER_S after), then exit; with
    PARENT_PID (a watcher's), exit as soon as that process is gone. Waits its turn if
    another process embeds the same index."""
    args = sys.argv[1:] if argv is None else argv
    try:
        linger_s = float(args[2]) if len(args) >= 3 else 0.0
        parent = int(args[3]) if len(args) == 4 else None
    except ValueError:
        linger_s, parent = -1.0, None
    if len(args) not in (2, 3, 4) or linger_s < 0:
        print(USAGE, file=sys.stderr)
        return 2
    wanted = wanted_by(parent, args[1])
    if not wanted():
        return 0
    try:
        os.nice(NICE)
    except OSError:
        pass
    if hook := os.environ.get(TEST_LOADER_ENV):
        import importlib

        module, _, attr = hook.partition(":")
        embedding.LOADER = getattr(importlib.import_module(module), attr)
    with Index(root=args[0], db_path=args[1]) as idx:
        lock = Lock(idx.db_path.parent)
        if not lock.acquire(wait=True):
            print(f"cardmem: embedding: cannot lock {lock.path}", file=sys.stderr)
            return 1
        try:
            model = embedding.embedder()
            if model is None:
                print(f"cardmem: embedding: no model ({embedding.reason()})", file=sys.stderr)
                return NO_MODEL
            follow(idx, model, linger_s, wanted=wanted)
        finally:
            lock.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
