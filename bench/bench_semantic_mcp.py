"""MCP search latency, warm, with and without the semantic layer (issues 16, 27).

    python bench/bench_semantic_mcp.py [--store /tmp/cardmem-bench/10000] [--queries 200]

Three `cardmem mcp --store STORE` processes are spawned through the official SDK's stdio
client (as bench/bench_mcp.py does), kept open for the whole run: one with
CARDMEM_SEMANTIC=off (lexical), one with it on (fused), and a lexical one whose searches
each check freshness with git as before issue 27 (CardTools without follow_files: the
baseline). Each is warmed: searches until the fused one answers with its model
(loaded in the background) and 20 more each. Then the same queries go
to all three, interleaved call by call, and each `call_tool("search")` round trip
(JSON-RPC over the pipes, the tool, the reply) is timed; beside them, in this process,
the same query as bare FTS5 (one MATCH over the index's fts table, top 5 by rank) for
scale. Target (issue 27): p95 <= 50 ms at 10k cards. The store should already hold the
vectors of the current model (bench/bench_semantic.py embeds them), or the server embeds
50 a search until it does.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_mcp import children_cpu  # noqa: E402
from bench_search import CARDMEM, machine, pct, queries  # noqa: E402

OTHER = ["Как выкатить в прод?", "¿Cómo se despliega a producción?", "pytets fixtrues",
         "Wie rolle ich ein Deployment zurück?", "comment lancer les tests"]



def servers_peak_rss() -> dict[str, float]:
    """VmHWM (peak RSS) MB of this process's `cardmem mcp` children, by CARDMEM_SEMANTIC."""
    out: dict[str, float] = {}
    for proc in Path("/proc").iterdir():
        try:
            status = (proc / "status").read_text()
            if f"\nPPid:\t{os.getpid()}\n" not in status:
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        mode = next((e.split(b"=", 1)[1].decode() for e in env
                     if e.startswith(b"CARDMEM_SEMANTIC=")), "?")
        hwm = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
        out[mode] = int(hwm) / 1024
    return out


def bare_fts5(root: Path):
    """A query as twenty lines of SQLite would run it: the words OR-ed, top 5 by rank."""
    import re
    import sqlite3

    conn = sqlite3.connect(root / ".cardmem" / "index.sqlite")

    def search(q: str) -> list[str]:
        words = re.findall(r"\w+", q)
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        return [r[0] for r in conn.execute(
            "SELECT cards.id FROM fts JOIN cards ON cards.n = fts.rowid WHERE fts MATCH ?"
            " ORDER BY fts.rank LIMIT 5", (match,))]

    return search


def run(root: Path, qs: list[str]) -> dict[str, list[float]]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def params(mode: str, per_search_git: bool = False) -> StdioServerParameters:
        env = dict(os.environ, CARDMEM_SEMANTIC=mode)
        if per_search_git:  # the server as it was: CardTools without follow_files
            code = ("import sys; from cardmem.tools import mcp_server as m;"
                    " m.CardTools.follow_files = lambda self: None;"
                    " from cardmem.tools.entry import main; sys.argv[0] = 'cardmem'; main()")
            return StdioServerParameters(command=sys.executable, args=[
                "-c", code, "mcp", "--store", str(root)], env=env)
        return StdioServerParameters(command=CARDMEM, args=["mcp", "--store", str(root)],
                                     env=env)

    bare = bare_fts5(root)

    async def search(c: Client, q: str) -> dict:
        r = await c.call_tool("search", {"query": q, "limit": 5})
        if r.is_error:
            raise SystemExit(f"search failed: {r.content[0].text}")
        return json.loads(r.content[0].text)

    async def go() -> dict[str, list[float]]:
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params("off"), errlog=errlog)) as lex, \
                    Client(stdio_client(params("on"), errlog=errlog)) as fused, \
                    Client(stdio_client(params("off", True), errlog=errlog)) as old:
                t = time.perf_counter()
                while True:  # until the model is loaded and the vectors are read
                    got = await search(fused, OTHER[0])
                    if (got.get("semantic") or {}).get("status") == "on":  # the model answered
                        break
                    if time.perf_counter() - t > 300:
                        raise SystemExit("the semantic layer never answered in 300 s")
                    await anyio.sleep(0.5)
                print(f"semantic layer ready {time.perf_counter() - t:.1f} s after the "
                      "first search", flush=True)
                for q in qs[:20]:
                    await search(lex, q)
                    await search(fused, q)
                    await search(old, q)
                times: dict[str, list[float]] = {
                    "lexical": [], "fused": [], "lexical, git status per search (before)": [],
                    "bare FTS5, in process": []}
                for q in qs:
                    for mode, c in (("lexical", lex), ("fused", fused),
                                    ("lexical, git status per search (before)", old)):
                        t = time.perf_counter()
                        got = await search(c, q)
                        times[mode].append((time.perf_counter() - t) * 1000)
                        if mode == "fused" and any(r.get("match") != "lexical"
                                                   for r in got["results"]):
                            times.setdefault("semantic-used", []).append(1)
                    t = time.perf_counter()
                    bare(q)
                    times["bare FTS5, in process"].append((time.perf_counter() - t) * 1000)
                for mode, mb in sorted(servers_peak_rss().items()):
                    print(f"peak RSS of the server with CARDMEM_SEMANTIC={mode}: {mb:.0f} MB")
                return times

    return anyio.run(go)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=Path("/tmp/cardmem-bench/10000"))
    ap.add_argument("--queries", type=int, default=200)
    a = ap.parse_args()
    from cardmem.store.index.db import Index

    print(f"Machine: {machine()}.", flush=True)
    with Index(root=a.store, db_path=a.store / ".cardmem" / "index.sqlite") as idx:
        idx.refresh()
        n_cards = idx.conn.execute("SELECT count(*) FROM cards").fetchone()[0]
        qs = queries(idx, a.queries - len(OTHER)) + OTHER
    cpu = children_cpu()
    t = time.time()
    times = run(a.store, qs)
    used = len(times.pop("semantic-used", []))
    for mode, v in times.items():
        how = "" if "in process" in mode else "MCP search over stdio, warm, "
        print(f"{n_cards:,} cards, {how}{len(v)} queries, {mode}: "
              f"p50 {pct(v, 50):.1f} ms, p95 {pct(v, 95):.1f} ms, p99 {pct(v, 99):.1f} ms")
    r50 = pct(times["fused"], 50) / pct(times["lexical"], 50)
    print(f"fused/lexical p50 ratio {r50:.2f}; fused answers with a semantic match: "
          f"{used}/{len(qs)}; servers' CPU {children_cpu() - cpu:.1f} s over "
          f"{time.time() - t:.0f} s; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
