"""sqlite-vec against the plain int8 blobs cardmem keeps (issue 16), side by side.

    python bench/bench_sqlite_vec.py [--store /tmp/cardmem-bench/10000] [--queries 100]

Needs `pip install sqlite-vec apsw` (bench only: Python's own sqlite3 here is built
without extension loading, so sqlite-vec is reached through apsw's SQLite). Takes the
real vectors of a store already embedded (bench/bench_semantic.py), and the same query
vectors (the model run once per query, not timed), then times the vector part of a
search, the 50 nearest cards, each way, interleaved query by query:

- blobs, warm: what a long-lived process (MCP server, watcher) does: the int8 matrix is
  read once, then one numpy product and a partial sort per query;
- blobs, cold: what one `cardmem search` process does: read every blob from SQLite, then
  the same product;
- sqlite-vec vec0 (int8[512], cosine), KNN `MATCH ... AND k = 50`;
- sqlite-vec brute force: vec_distance_cosine over the plain blob table, ORDER BY LIMIT 50.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_search import machine, pct, queries  # noqa: E402

from cardmem.store.search import embedding  # noqa: E402
from cardmem.store.index.db import Index  # noqa: E402

K = 50


def main() -> None:
    import apsw
    import numpy as np
    import sqlite_vec

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=Path("/tmp/cardmem-bench/10000"))
    ap.add_argument("--queries", type=int, default=100)
    a = ap.parse_args()
    print(f"Machine: {machine()}.", flush=True)
    print(f"python sqlite3 can load extensions: "
          f"{hasattr(sqlite3.Connection, 'enable_load_extension')}; sqlite-vec "
          f"{getattr(sqlite_vec, '__version__', '?')} via apsw {apsw.apswversion()}", flush=True)
    model = embedding.embedder()
    assert model is not None, embedding.reason()
    db = a.store / ".cardmem" / "index.sqlite"
    with Index(root=a.store, db_path=db) as idx:
        qs = queries(idx, a.queries)
        rows = idx.conn.execute("SELECT n, vec FROM vectors WHERE model = ?",
                                (model.stamp,)).fetchall()
    assert rows, f"no vectors of {model.stamp} in {db}: run bench/bench_semantic.py first"
    qv = [model.encode([q])[0].astype(np.float32) for q in qs]

    work = Path(tempfile.mkdtemp(prefix="cardmem-vec-"))
    blobs_db, vec_db = work / "blobs.sqlite", work / "vec.sqlite"
    c = apsw.Connection(str(blobs_db))
    c.execute("CREATE TABLE vectors(n INTEGER PRIMARY KEY, vec BLOB NOT NULL)")
    with c:
        c.executemany("INSERT INTO vectors VALUES (?, ?)", rows)
    v = apsw.Connection(str(vec_db))
    v.enable_load_extension(True)
    v.load_extension(sqlite_vec.loadable_path())
    t = time.perf_counter()
    v.execute("CREATE VIRTUAL TABLE vecs USING vec0(n INTEGER PRIMARY KEY, "
              "embedding int8[512] distance_metric=cosine)")
    with v:
        v.executemany("INSERT INTO vecs(n, embedding) VALUES (?, vec_int8(?))", rows)
    vec_build = time.perf_counter() - t
    c.enable_load_extension(True)
    c.load_extension(sqlite_vec.loadable_path())

    def blobs_cold(q):
        got = list(c.execute("SELECT n, vec FROM vectors"))
        ids = np.array([n for n, _ in got])
        mat = np.frombuffer(b"".join(b for _, b in got), dtype=np.int8).reshape(len(got), -1)
        return top(ids, mat, q)

    warm_got = list(c.execute("SELECT n, vec FROM vectors"))
    w_ids = np.array([n for n, _ in warm_got])
    w_mat = np.frombuffer(b"".join(b for _, b in warm_got), dtype=np.int8).reshape(
        len(warm_got), -1)

    def top(ids, mat, q):
        s = mat @ (q / 127.0).astype(np.float32)
        best = np.argpartition(-s, K)[:K]
        return [int(x) for x in ids[best[np.argsort(-s[best])]]]

    def quant(q):
        return np.clip(np.rint(q * 127), -127, 127).astype(np.int8).tobytes()

    def vec_knn(q):
        return [n for n, _ in v.execute(
            "SELECT n, distance FROM vecs WHERE embedding MATCH vec_int8(?) AND k = ?",
            (quant(q), K))]

    def vec_brute(q):
        return [n for n, _ in c.execute(
            "SELECT n, vec_distance_cosine(vec_int8(vec), vec_int8(?)) d FROM vectors "
            "ORDER BY d LIMIT ?", (quant(q), K))]

    ways = {"blobs, warm (numpy)": lambda q: top(w_ids, w_mat, q),
            "blobs, cold (read + numpy)": blobs_cold,
            "sqlite-vec vec0 KNN": vec_knn,
            "sqlite-vec brute force": vec_brute}
    for q in qv[:5]:
        for f in ways.values():
            f(q)
    times: dict[str, list[float]] = {k: [] for k in ways}
    overlap: dict[str, list[float]] = {k: [] for k in ways}
    for q in qv:
        ref = None
        for name, f in ways.items():
            t = time.perf_counter()
            got = f(q)
            times[name].append((time.perf_counter() - t) * 1000)
            ref = ref or got
            overlap[name].append(len(set(got[:10]) & set(ref[:10])) / 10)
    print(f"{len(rows):,} vectors, {len(qv)} queries, the {K} nearest; vec0 table built in "
          f"{vec_build:.2f} s; file sizes: blobs {blobs_db.stat().st_size / 1e6:.1f} MB, "
          f"vec0 {vec_db.stat().st_size / 1e6:.1f} MB")
    for name, ts in times.items():
        print(f"  {name}: p50 {pct(ts, 50):.2f} ms, p99 {pct(ts, 99):.2f} ms; top-10 same as "
              f"warm blobs {statistics.mean(overlap[name]) * 100:.0f}%")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for p in (blobs_db, vec_db):
        p.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
