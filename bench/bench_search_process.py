"""A whole `cardmem search` process beside `grep -ril`, paired (issue 27).

    python bench/bench_search_process.py [--dir /tmp/cardmem-bench] [--size 10000]
                                         [--runs 21] [--write bench/RESULTS.md] [--no-wait]

At --size cards (bench/gen_store.py, generated once and reused; embedded once with
`cardmem index --wait`), no search server running: each run times, back to back in a
shuffled order, `cardmem search` with the model on (CARDMEM_SEMANTIC unset), with it off,
and `grep -ril` of the query's first word over the same folder. Queries the words answer
well: words of one card each that the fused search's gate (hybrid.needs_vectors) answers
without the model, picked from the index in a fixed order (in a generated store: people's
handles); beside them, for scale, the model on for queries the vectors are asked for (a
title word, two body words). Printed: the medians of wall and CPU (user + sys, from
wait4) and the median of the per-run ratios to grep, which a machine whose speed drifts
shifts less than the ratio of medians. Target (issue 27): model on <= 2x grep (median),
for a query the words answer well. Run after `python -m compileall` of the code and the
venv (as `make bench` does): a search that compiles its modules measures the compiler.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_search import CARDMEM, child, machine  # noqa: E402
from bench_semantic import store  # noqa: E402

ASKS_MODEL = ["snapshot testing", "fixtures", "deploy production", "migration rollback"]


def answered(root: Path, n: int = 4) -> list[str]:
    """n words of one card each whose search the gate says the words answer alone."""
    from cardmem.store.index import hybrid
    from cardmem.store.index.db import Index
    from cardmem.store.index.search import run

    out: list[str] = []
    with Index(root=root, db_path=root / ".cardmem" / "index.sqlite") as idx:
        terms = [r[0] for r in idx.conn.execute(
            "SELECT term FROM fts_vocab WHERE doc = 1 AND length(term) >= 6 ORDER BY term")]
        random.Random(3).shuffle(terms)
        for t in terms:
            res = run(idx, t, 10, None, None)
            if res.results and not hybrid.needs_vectors(res, t):
                out.append(t)
                if len(out) == n:
                    break
    return out


def searchd_running(root: Path) -> bool:
    from cardmem.store.search.searchd import socket_path

    path = socket_path(str(root))
    return bool(path and os.path.exists(path))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--write", type=Path, help="Append the table to this Markdown file.")
    ap.add_argument("--no-wait", action="store_true",
                    help="Do not wait for every card's vector (a words-answered search needs"
                         " none); the table says how many lacked one.")
    args = ap.parse_args()
    where = machine()
    root = store(args.dir, args.size)
    env = {k: v for k, v in os.environ.items() if k != "CARDMEM_SEMANTIC"}
    t = time.perf_counter()
    subprocess.run([CARDMEM, "index", *([] if args.no_wait else ["--wait"]), "--store",
                    str(root)], check=True, capture_output=True, env=env)
    print(f"{args.size} cards indexed{'' if args.no_wait else ' and embedded'} in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    if searchd_running(root):
        sys.exit(f"bench: a search server answers for {root}; stop it first")
    queries = answered(root)
    asks = dict(zip(queries, ASKS_MODEL))
    commands = {
        "cardmem search, model on": ({}, lambda q: [CARDMEM, "search", "--store", str(root), q]),
        "cardmem search, model on, a query the model is asked for": (
            {}, lambda q: [CARDMEM, "search", "--store", str(root), asks[q]]),
        "cardmem search, CARDMEM_SEMANTIC=off": ({"CARDMEM_SEMANTIC": "off"},
                                                 lambda q: [CARDMEM, "search", "--store",
                                                            str(root), q]),
        "grep -ril": ({}, lambda q: ["grep", "-ril", "--", q.split()[0], str(root)]),
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    rng = random.Random(7)
    saved = dict(os.environ)
    try:
        for i in range(args.runs):
            q = queries[i % len(queries)]
            order = list(commands)
            rng.shuffle(order)
            for name in order:
                extra, argv = commands[name]
                os.environ.clear()
                os.environ.update(env, **extra)
                try:
                    wall, cpu, _rss = child(argv(q))
                except subprocess.CalledProcessError:
                    wall, cpu = float("nan"), float("nan")  # grep: 1 is "no match"
                got[name].append((wall, cpu))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    base = got["grep -ril"]
    lacking = subprocess.run([CARDMEM, "search", "-v", "--store", str(root), ASKS_MODEL[0]],
                             capture_output=True, text=True, env=env).stderr
    lacking = next((ln.split(": ", 2)[-1] for ln in lacking.splitlines()
                    if "no vector yet" in ln), "every card has its vector")
    lines = [f"`python bench/bench_search_process.py --size {args.size} --runs {args.runs}` "
             f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, no search server; "
             f"queries {', '.join(repr(q) for q in queries)} (the model asked for "
             f"{', '.join(repr(q) for q in ASKS_MODEL)}). Machine: {where}, load average "
             f"{os.getloadavg()[0]:.1f} at the end; vectors: {lacking}.", "",
             "| process | wall median | CPU median | wall / grep (median of pairs) |"
             " CPU / grep (median of pairs) |", "|---|---:|---:|---:|---:|"]
    for name, runs in got.items():
        w = statistics.median(r[0] for r in runs)
        c = statistics.median(r[1] for r in runs)
        rw = statistics.median(r[0] / b[0] for r, b in zip(runs, base))
        rc = statistics.median(r[1] / b[1] for r, b in zip(runs, base) if b[1] > 0)
        lines.append(f"| {name} | {w * 1000:.0f} ms | {c * 1000:.0f} ms | {rw:.2f}x |"
                     f" {rc:.2f}x |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        with args.write.open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
        print(f"appended to {args.write}")


if __name__ == "__main__":
    main()
