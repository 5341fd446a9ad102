"""The background embedder: a process of its own that embeds what an index lacks
(store/search/vectors.py has the how and the lock; `cardmem watch` and `cardmem index`
start it through vectors.spawn).

    python -m cardmem.store.search.embedder ROOT DB_PATH [LINGER_S]
"""
from __future__ import annotations

import os
import sys

from . import embedding
from ..index.db import Index
from .vectors import NICE, NO_MODEL, TEST_LOADER_ENV, Lock, follow


def main(argv: list[str] | None = None) -> int:
    """`python -m cardmem.store.search.embedder ROOT DB_PATH [LINGER_S]`: embed what the
    index lacks (and what it gains for LINGER_S after), then exit. Waits its turn if
    another process embeds the same index."""
    args = sys.argv[1:] if argv is None else argv
    try:
        linger_s = float(args[2]) if len(args) == 3 else 0.0
    except ValueError:
        linger_s = -1.0
    if len(args) not in (2, 3) or linger_s < 0:
        print("usage: python -m cardmem.store.search.embedder ROOT DB_PATH [LINGER_S]",
              file=sys.stderr)
        return 2
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
            follow(idx, model, linger_s)
        finally:
            lock.release()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
