"""`cardmem search` as a whole process, answered by a running `cardmem watch` (issue 16).

    python bench/bench_searchd.py [--dir /tmp/searchd-bench] [--source /tmp/cardmem-bench/10000]
                                  [--runs 10]

Two copies of one store (bench/gen_store.py's, 10k cards, every card embedded: copied
from --source, which bench/bench_semantic.py builds): a `cardmem watch` serves searches
of copy A (store/search/searchd.py); copy B has no server. Interleaved run by run, the
same query each round: semantic off (copy B, the lexical baseline), semantic on searching
in its own process (copy B), semantic on answered by the watcher (copy A). Each figure
is the median of the child's wall time and CPU (its own and its children's, git's too)
from wait4; for the served searches also the watcher's CPU over them, a search's share
(read from /proc), since the work moved there rather than vanished.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_search import CARDMEM, child, machine  # noqa: E402

from cardmem.store.search import searchd  # noqa: E402

TERMS = ["fixtures", "deploy production", "Как выкатить в прод?", "pytets fixtrues"]


def copy(source: Path, dest: Path) -> Path:
    if not (dest / ".git").exists():
        if not (source / ".cardmem" / "index.sqlite").exists():
            sys.exit(f"{source}: no embedded store; run bench/bench_semantic.py first")
        print(f"copying {source} to {dest} ...", flush=True)
        shutil.copytree(source, dest, symlinks=True)
    return dest


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far: its threads, and its children that
    it has waited for (the git its freshness checks run)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def served(root: Path, query: str) -> bool:
    r = subprocess.run([CARDMEM, "search", "-v", "--store", str(root), query],
                       capture_output=True, text=True, check=True)
    return "answered by the search server" in r.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/searchd-bench"))
    ap.add_argument("--source", type=Path, default=Path("/tmp/cardmem-bench/10000"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--idle", type=float, default=10.0,
                    help="seconds the idle watcher's own CPU is measured over")
    args = ap.parse_args()
    os.environ.pop("CARDMEM_SEMANTIC", None)
    print(f"Machine: {machine()}.", flush=True)
    args.dir.mkdir(parents=True, exist_ok=True)
    a = copy(args.source, args.dir / "served")
    b = copy(args.source, args.dir / "alone")
    for root in (a, b):  # refresh each index after the copy, embed what is missing
        subprocess.run([CARDMEM, "index", "--store", str(root)], check=True,
                       capture_output=True)
    watch = subprocess.Popen([CARDMEM, "watch", "--no-autocommit", "--store", str(a)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while searchd.ask(str(a), "warm up") is None:
            if watch.poll() is not None or time.monotonic() > deadline:
                sys.exit("the watcher never served a search")
            time.sleep(0.5)
        for q in TERMS:  # warm both sides: page cache, the server's first searches
            assert served(a, q)
            child([CARDMEM, "search", "--store", str(b), q])
        before = cpu_s(watch.pid)
        time.sleep(args.idle)
        idle = (cpu_s(watch.pid) - before) / args.idle
        runs: dict[str, list[tuple[float, float, float]]] = {
            "off": [], "on, in its own process": [], "on, answered by `cardmem watch`": []}
        server_cpu = 0.0
        for i in range(args.runs):
            q = TERMS[i % len(TERMS)]
            os.environ["CARDMEM_SEMANTIC"] = "off"
            runs["off"].append(child([CARDMEM, "search", "--store", str(b), q]))
            os.environ.pop("CARDMEM_SEMANTIC")
            runs["on, in its own process"].append(child([CARDMEM, "search", "--store",
                                                         str(b), q]))
            before = cpu_s(watch.pid)
            runs["on, answered by `cardmem watch`"].append(
                child([CARDMEM, "search", "--store", str(a), q]))
            server_cpu += cpu_s(watch.pid) - before
        assert served(a, TERMS[0]), "the last searches were not served"
        hwm = next(line.split()[1] for line in
                   Path(f"/proc/{watch.pid}/status").read_text().splitlines()
                   if line.startswith("VmHWM"))
    finally:
        watch.terminate()
        watch.wait(30)
    load = os.getloadavg()[0]
    print(f"`cardmem search`, 9,990 cards, median of {args.runs} interleaved; load average"
          f" {load:.1f} at the end")
    base = statistics.median(r[1] for r in runs["off"])
    for mode, rs in runs.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        rss = max(r[2] for r in rs)
        print(f"  semantic {mode}: wall {wall * 1000:.0f} ms, CPU {cpu * 1000:.0f} ms"
              f" ({cpu / base:.2f}x of off), peak RSS {rss:.0f} MB")
    print(f"  the watcher's CPU over the served searches: {server_cpu / args.runs * 1000:.0f} ms"
          f" a search (mean; its git included; /proc ticks of 10 ms); idle, it spends"
          f" {idle * 1000:.0f} ms a second")
    print(f"  the watcher's peak RSS (model and vectors held): {int(hwm) / 1024:.0f} MB")


if __name__ == "__main__":
    main()
