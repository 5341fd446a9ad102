"""What keeping the rules' derived state true costs a write (issue 28): Store.commit, which
runs store/derived.py after the commit, against the writer alone (no after-commit step).

    python bench/bench_derived.py [--dir /tmp/cardmem-bench-derived] [--cards 2000] [-n 20]

In one store of --cards synthetic cards (bench/gen_store.py) with its index built, the
trigger table built and a rules file delivered (the state a Claude Code user has), each
round edits one card six ways, interleaved so machine load hits all alike: a non-rule
card and a rule (a `feedback` card in a project folder), each through the bare writer,
through Store.commit, and through Store.commit with one `cardmem export agents-md` kept
current (store/rules/exports.py). Medians of CPU (this process and its git children) and
wall.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_store import generate  # noqa: E402

from cardmem.store.git.writer import Message, commit_changes  # noqa: E402
from cardmem.store.index.db import Index  # noqa: E402
from cardmem.store.rules import exports, host_file, triggers  # noqa: E402
from cardmem.store.store import init  # noqa: E402


def cpu() -> float:
    """CPU seconds of this process and its waited-for children (git), to the microsecond."""
    import resource

    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                 resource.getrusage(resource.RUSAGE_CHILDREN)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/cardmem-bench-derived")
    ap.add_argument("--cards", type=int, default=2000)
    ap.add_argument("-n", type=int, default=20)
    a = ap.parse_args()
    root = Path(a.dir)
    shutil.rmtree(root, ignore_errors=True)
    generate(root, a.cards)
    store, _ = init(root)
    rule = "projects/bench/pin-versions"
    store.new(rule, title="Pin versions", card_type="feedback", body="Always pin versions.\n")
    plain = next(cid for cid, _ in store.card_files() if cid.startswith("reference/"))
    with Index(store) as idx:
        idx.refresh()
    triggers.build(store)
    host_file.deliver(store, root.parent / "bench-derived-rules" / "cardmem.md")
    kept = root.parent / "bench-derived-export"
    kept.mkdir(exist_ok=True)
    exports.export(store, "agents-md", kept)
    exports.remember(store, "agents-md", kept, None)
    registry = root / ".cardmem" / exports.TARGETS
    listed = registry.read_bytes()
    timeout = store.lock_timeout()
    times: dict[str, list[tuple[float, float]]] = {}
    for n in range(a.n):
        for cid in (plain, rule):
            for how in ("writer alone", "Store.commit", "Store.commit, 1 export"):
                if how.endswith("export"):
                    registry.write_bytes(listed)
                else:
                    registry.unlink(missing_ok=True)
                rel = store.rel(cid)
                data = (root / rel).read_bytes() + f"\nround {n} {how}\n".encode()
                msg = Message(f"bench: {cid}", [])
                c0, w0 = cpu(), time.perf_counter()
                if how.startswith("Store.commit"):
                    store.commit({rel: data}, msg, agent=False)
                else:
                    commit_changes(root, {rel: data}, msg, agent=False, lock_timeout_s=timeout)
                times.setdefault(f"{'rule' if cid == rule else 'non-rule'} card, {how}",
                                 []).append((cpu() - c0, time.perf_counter() - w0))
    print(f"{a.cards} cards, {a.n} rounds, load {os.getloadavg()[0]:.1f}")
    base = {}
    for name, got in times.items():
        c = statistics.median(x for x, _ in got) * 1000
        w = statistics.median(y for _, y in got) * 1000
        kind = name.split(",")[0]
        ratio = f"  ({c / base[kind]:.2f}x CPU)" if kind in base else ""
        base.setdefault(kind, c)
        print(f"{name:<40} CPU {c:6.1f} ms  wall {w:6.1f} ms{ratio}")


if __name__ == "__main__":
    main()
