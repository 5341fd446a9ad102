"""The semantic layer's cost beside plain FTS5 (issue 16), measured side by side.

    python bench/bench_semantic.py [--dir /tmp/cardmem-bench] [--size 10000] [--big 100000]
                                   [--reuse]

At --size cards (bench/gen_store.py, generated once and reused): the cold lexical index,
then the embeddings of every card (semantic.sync); in-process search p50/p99, lexical and
fused interleaved query by query, over one kept-open Index (what the MCP server does,
model loaded once); `cardmem search` as a whole process with CARDMEM_SEMANTIC=off and on
(model cache warm), and the very first one (empty model cache); peak RSS of each.
At --big cards the in-process search is timed with random unit vectors stamped with the
model in place of real embeddings (embedding 100k cards takes hours here): the vector
part of a search costs the same whatever the vectors hold.
With --reuse the stores' index files are taken as they are (vectors and all, as a run
without it left them) and only the in-process search is timed: before and after a change
to the search, without rebuilding 100k cards each time.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_search import CARDMEM, child, cold_index, machine, pct, queries  # noqa: E402
from gen_store import commit_store, generate  # noqa: E402

from cardmem.store.search import embedding, semantic  # noqa: E402
from cardmem.store.index.db import Index  # noqa: E402
from cardmem.store.search.query import search_index


def store(where: Path, size: int) -> Path:
    root = where / f"{size}"
    if not (root / ".git").exists():
        print(f"generating {size} cards in {root} ...", flush=True)
        generate(root, size)
    commit_store(root)
    (root / ".cardmem").mkdir(exist_ok=True)
    return root


def build(root: Path, model: embedding.Embedder
          ) -> tuple[tuple[float, float], float, float, int]:
    """((cold lexical index s wall, CPU), embedding every card s wall, its CPU s (this
    process), cards embedded)."""
    db = root / ".cardmem" / "index.sqlite"
    lex = cold_index(root, db)
    with Index(root=root, db_path=db) as idx:
        t, cpu = time.perf_counter(), time.process_time()
        got = semantic.sync(idx, model)
        return lex, time.perf_counter() - t, time.process_time() - cpu, got["embedded"]


def fake_vectors(root: Path, model: embedding.Embedder) -> None:
    import numpy as np

    db = root / ".cardmem" / "index.sqlite"
    with Index(root=root, db_path=db) as idx:
        idx.refresh()
        semantic.stale(idx, model.stamp)  # the table
        rng = np.random.default_rng(1)
        c = idx.conn
        c.execute("BEGIN IMMEDIATE")
        c.execute("DELETE FROM vectors")
        rows = c.execute("SELECT n, hash FROM cards").fetchall()
        v = rng.standard_normal((len(rows), semantic.DIM)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        q = np.clip(np.rint(v * semantic.SCALE), -127, 127).astype(np.int8)
        c.executemany("INSERT INTO vectors VALUES (?,?,?,?,?)",
                      [(n, h, f"fake{n}", model.stamp, q[i].tobytes())
                       for i, (n, h) in enumerate(rows)])
        c.execute("COMMIT")


def latency(root: Path, n: int) -> dict[str, tuple[float, float]]:
    """p50, p99 ms of lexical and fused searches, interleaved, over one open Index
    ("first": ms of the first fused search, which reads the vectors; "<mode> cpu": p50,
    p99 ms of the process's CPU time, all threads, which a loaded machine inflates less)."""
    db = root / ".cardmem" / "index.sqlite"
    with Index(root=root, db_path=db) as idx:
        idx.refresh()
        qs = queries(idx, n)
        t = time.perf_counter()
        search_index(idx, qs[0], semantic=True)
        first = (time.perf_counter() - t) * 1000
        for q in qs[:20]:
            search_index(idx, q)
            search_index(idx, q, semantic=True)
        times: dict[str, list[float]] = {"lexical": [], "fused": [], "lexical cpu": [],
                                         "fused cpu": []}
        for q in qs:
            for mode in ("lexical", "fused"):
                t, cpu = time.perf_counter(), time.process_time()
                search_index(idx, q, semantic=mode == "fused")
                times[mode].append((time.perf_counter() - t) * 1000)
                times[f"{mode} cpu"].append((time.process_time() - cpu) * 1000)
    return {"first": (first, first), **{k: (pct(v, 50), pct(v, 99)) for k, v in times.items()}}


def cpu(lat: dict[str, tuple[float, float]], mode: str) -> str:
    return f"{lat[mode + ' cpu'][0]:.1f}/{lat[mode + ' cpu'][1]:.1f} ms"


def has_vectors(root: Path, stamp: str) -> bool:
    """Whether the store's index has a vector of this model for every card (--reuse)."""
    db = root / ".cardmem" / "index.sqlite"
    if not db.exists():
        return False
    with Index(root=root, db_path=db) as idx:
        c = idx.conn
        if not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'vectors'").fetchone():
            return False
        return c.execute("SELECT (SELECT count(*) FROM cards) = (SELECT count(*) FROM vectors"
                         " WHERE model = ?)", (stamp,)).fetchone()[0] == 1


def processes(root: Path, runs: int) -> dict[str, tuple[float, float, float]]:
    """Medians of wall s, CPU s and the max RSS MB of `cardmem search`, off and on."""
    terms = ["fixtures", "deploy production", "Как выкатить в прод?", "pytets fixtrues"]
    out: dict[str, list[tuple[float, float, float]]] = {"off": [], "on": []}
    env = dict(os.environ)
    for i in range(runs):
        q = terms[i % len(terms)]
        for mode in ("off", "on"):
            os.environ["CARDMEM_SEMANTIC"] = mode
            out[mode].append(child([CARDMEM, "search", "--store", str(root), q]))
    os.environ.clear()
    os.environ.update(env)
    return {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v),
                max(r[2] for r in v)) for k, v in out.items()}


def first_process(root: Path) -> tuple[float, float, float]:
    """One `cardmem search` with an empty model cache (the first after installing)."""
    cache = Path(tempfile.mkdtemp(prefix="cardmem-cache-"))
    env = dict(os.environ)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    os.environ["CARDMEM_SEMANTIC"] = "on"
    try:
        return child([CARDMEM, "search", "--store", str(root), "deploy production"])
    finally:
        os.environ.clear()
        os.environ.update(env)
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--size", type=int, default=10000, help="0: skip (only --big)")
    ap.add_argument("--big", type=int, default=100000, help="0: skip")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--reuse", action="store_true",
                    help="keep the stores' index files and vectors; time in-process search only")
    args = ap.parse_args()
    os.environ.pop("CARDMEM_SEMANTIC", None)
    print(f"Machine: {machine()}.", flush=True)
    t = time.perf_counter()
    model = embedding.embedder()
    assert model is not None, embedding.reason()
    print(f"model {model.stamp} loaded in {time.perf_counter() - t:.2f} s (cache warm)")
    if args.size:
        small(args, model)
    if args.big:
        big = store(args.dir, args.big)
        if not (args.reuse and has_vectors(big, model.stamp)):
            t = time.perf_counter()
            fake_vectors(big, model)
            print(f"{args.big:,} cards: lexical index and random vectors in "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        lat = latency(big, args.queries)
        print(f"{args.big:,} in-process search p50/p99 (random vectors): lexical "
              f"{lat['lexical'][0]:.1f}/{lat['lexical'][1]:.1f} ms, fused "
              f"{lat['fused'][0]:.1f}/{lat['fused'][1]:.1f} ms, first fused "
              f"{lat['first'][0]:.0f} ms; CPU p50/p99: lexical {cpu(lat, 'lexical')}, fused "
              f"{cpu(lat, 'fused')}; this process's peak RSS "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB", flush=True)


def small(args: argparse.Namespace, model: embedding.Embedder) -> None:
    root = store(args.dir, args.size)
    if args.reuse and has_vectors(root, model.stamp):
        lat = latency(root, args.queries)
        print(f"{args.size:,} in-process search p50/p99 (index reused): lexical "
              f"{lat['lexical'][0]:.1f}/{lat['lexical'][1]:.1f} ms, fused "
              f"{lat['fused'][0]:.1f}/{lat['fused'][1]:.1f} ms, first fused "
              f"{lat['first'][0]:.0f} ms; CPU p50/p99: lexical {cpu(lat, 'lexical')}, fused "
              f"{cpu(lat, 'fused')}", flush=True)
        return
    lex, emb, emb_cpu, n = build(root, model)
    print(f"{args.size:,} cards: cold FTS5 index {lex[0]:.1f} s wall, {lex[1]:.1f} s CPU; "
          f"embeddings {emb:.1f} s wall, {emb_cpu:.1f} s CPU ({n} cards, {emb / max(n, 1) * 1000:.1f} ms wall, "
          f"{emb_cpu / max(n, 1) * 1000:.1f} ms CPU a card)", flush=True)
    lat = latency(root, args.queries)
    print(f"{args.size:,} in-process search p50/p99: lexical {lat['lexical'][0]:.1f}/"
          f"{lat['lexical'][1]:.1f} ms, fused {lat['fused'][0]:.1f}/{lat['fused'][1]:.1f} ms",
          flush=True)
    pr = processes(root, args.runs)
    first = first_process(root)
    for k, (w, c, rss) in pr.items():
        print(f"{args.size:,} `cardmem search` semantic {k}: wall {w * 1000:.0f} ms, "
              f"CPU {c * 1000:.0f} ms, peak RSS {rss:.0f} MB")
    print(f"{args.size:,} first `cardmem search` (empty model cache): wall {first[0]:.2f} s, "
          f"CPU {first[1]:.2f} s, peak RSS {first[2]:.0f} MB", flush=True)


if __name__ == "__main__":
    main()
