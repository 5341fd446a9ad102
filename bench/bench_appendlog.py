"""The one append-only log writer (store/appendlog.py: open, flock, fstat, write) beside the
hooks' writer it replaced (stat, open O_APPEND, write), side by side in one process: the
cost of a hook log line. Rounds alternate, medians are compared.

    python bench/bench_appendlog.py [--rounds 25] [--lines 1000]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from cardmem.store.appendlog import append

LINE = "2026-12-03T03:55:00Z pre-tool-use 12ms session=abcdef123456 ok: deny feedback/x (Bash)\n"
MAX_BYTES = 1_000_000


def before(path: str, data: str, max_bytes: int) -> None:
    """hosts/hooklog.py's writer before the one writer."""
    try:
        if os.stat(path).st_size >= max_bytes:
            os.replace(path, path + ".1")
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data.encode("utf-8", "replace"))
    finally:
        os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--lines", type=int, default=1000)
    a = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="cardmem-appendlog-")
    us: dict[str, list[float]] = {"before": [], "appendlog": []}
    writers = {"before": lambda p: before(p, LINE, MAX_BYTES),
               "appendlog": lambda p: append(p, LINE, max_bytes=MAX_BYTES)}
    for r in range(a.rounds):
        for name in (("before", "appendlog") if r % 2 else ("appendlog", "before")):
            path = os.path.join(folder, f"{name}.log")
            t = time.perf_counter()
            for _ in range(a.lines):
                writers[name](path)
            us[name].append((time.perf_counter() - t) / a.lines * 1e6)
    old, new = statistics.median(us["before"]), statistics.median(us["appendlog"])
    print(f"a log line: before {old:.1f} us, appendlog {new:.1f} us (median of {a.rounds} "
          f"rounds of {a.lines}), ratio {new / old:.2f}; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
