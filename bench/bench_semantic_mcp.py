"""MCP search latency, warm, with and without the semantic layer (issues 16, 27).

    python bench/bench_semantic_mcp.py [--store /tmp/cardmem-bench/10000] [--queries 200]
        [--baseline main] [--touch-every 5] [--vectors-every 10]

Three `cardmem mcp --store STORE` processes are spawned through the official SDK's stdio
client (as bench/bench_mcp.py does), kept open for the whole run: one with
CARDMEM_SEMANTIC=off (lexical), one with it on (fused), and a lexical one whose searches
each check freshness with git as before issue 27 (CardTools without follow_files: the
baseline). Each is warmed: searches until the fused one answers with its model
(loaded in the background) and 20 more each. Then the same queries go
to all three, interleaved call by call (in turn, each query starting with the next
server), and each `call_tool("search")` round trip
(JSON-RPC over the pipes, the tool, the reply) is timed; beside them, in this process,
the same query as bare FTS5 (one MATCH over the index's fts table, top 5 by rank) for
scale. Target (issue 27): p95 <= 50 ms at 10k cards. The store should already hold the
vectors of the current model (bench/bench_semantic.py embeds them), or the server embeds
50 a search until it does.

--baseline REF adds a fourth server, fused, running the code of git REF (exported to a
temporary folder, imported in place of this worktree's): the same queries, interleaved,
for a ratio in the same run. --touch-every N commits, from this process, a row of the
index's meta table before every Nth query (what a watcher's batch commits besides cards);
--vectors-every N rewrites one card's vector row as it is (what a background embedder's
step commits): neither changes any result, both tell the servers the index changed.
--saves-every N appends a line to one of 50 cards before every Nth query (a person saving
a card: the servers index it and its vector is made again; the store's files change). The
warm-up asks queries of their own; a timed query may still repeat an earlier one (the
generator's stock phrases), which is said.
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



def peak_rss_mb(pid: int) -> float:
    """A process's VmHWM (peak RSS), MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("VmHWM"))) / 1024


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


BASE_LAUNCH = """import importlib.util, sys, types
base = sys.argv.pop(1)
pkg = types.ModuleType("cardmem"); pkg.__path__ = []; sys.modules["cardmem"] = pkg
for name, folder in (("store", "store"), ("tools", "tools"), ("hosts", "hosts"), ("hooks", "hooks"),
                     ("example", "cards")):
    spec = importlib.util.spec_from_file_location(
        "cardmem." + name, f"{base}/{folder}/__init__.py", submodule_search_locations=[f"{base}/{folder}"])
    mod = importlib.util.module_from_spec(spec); sys.modules["cardmem." + name] = mod
    setattr(pkg, name, mod)
    try:
        spec.loader.exec_module(mod)
    except FileNotFoundError:  # a folder without __init__.py: a namespace
        pass
from cardmem.tools.entry import main
sys.argv[0] = "cardmem"
main()
"""


def export(ref: str, into: Path) -> Path:
    """git REF's tree of this repository, compiled, in a folder of its own."""
    import subprocess

    into.mkdir(parents=True, exist_ok=True)
    tar = subprocess.run(["git", "-C", str(HERE.parent), "archive", ref], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", "store", "tools", "hosts"],
                   cwd=into, check=True, env=env, stdout=subprocess.DEVNULL)
    (into / "launch.py").write_text(BASE_LAUNCH)
    return into


def cpu_of(pid: int) -> float:
    """A process's CPU seconds so far (user + system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def servers() -> dict[str, int]:
    """This process's `cardmem mcp` children by their BENCH_SERVER name: their pids."""
    out: dict[str, int] = {}
    for proc in Path("/proc").iterdir():
        try:
            if f"\nPPid:\t{os.getpid()}\n" not in (proc / "status").read_text():
                continue
            env = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        name = next((e.split(b"=", 1)[1].decode() for e in env
                     if e.startswith(b"BENCH_SERVER=")), None)
        if name:
            out[name] = int(proc.name)
    return out


def run(root: Path, qs: list[str], warm: list[str], baseline: Path | None = None,
        ref: str = "", touch_every: int = 0, vectors_every: int = 0,
        saves_every: int = 0) -> dict[str, list[float]]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    def params(mode: str, per_search_git: bool = False, name: str = "",
               base: Path | None = None) -> StdioServerParameters:
        env = dict(os.environ, CARDMEM_SEMANTIC=mode, BENCH_SERVER=name)
        if base is not None:
            return StdioServerParameters(command=sys.executable, args=[
                str(base / "launch.py"), str(base), "mcp", "--store", str(root)], env=env)
        if per_search_git:  # the server as it was: CardTools without follow_files
            code = ("import sys; from cardmem.tools.agents import mcp_server as m;"
                    " m.CardTools.follow_files = lambda self: None;"
                    " from cardmem.tools.entry import main; sys.argv[0] = 'cardmem'; main()")
            return StdioServerParameters(command=sys.executable, args=[
                "-c", code, "mcp", "--store", str(root)], env=env)
        return StdioServerParameters(command=CARDMEM, args=["mcp", "--store", str(root)],
                                     env=env)

    import random
    import sqlite3

    bare = bare_fts5(root)
    writer = sqlite3.connect(root / ".cardmem" / "index.sqlite", isolation_level=None,
                             timeout=30)
    vec_ns = [n for (n,) in writer.execute("SELECT n FROM vectors")]
    rng = random.Random(3)

    saved = sorted((root / "reference").glob("*.md"))[:50] or sorted(root.rglob("*.md"))[:50]

    def commit_between(i: int) -> None:
        if saves_every and i % saves_every == saves_every // 3:  # a person saves a card
            p = saved[(i // saves_every) % len(saved)]
            p.write_text(p.read_text(encoding="utf-8") + f"\nEdited during the bench ({i}).\n",
                         encoding="utf-8")
        if touch_every and i % touch_every == 0:
            writer.execute("INSERT OR REPLACE INTO meta VALUES('bench_touch', ?)", (str(i),))
        if vectors_every and vec_ns and i % vectors_every == vectors_every // 2:
            writer.execute("UPDATE vectors SET vec = vec WHERE n = ?", (rng.choice(vec_ns),))

    async def search(c: Client, q: str) -> dict:
        r = await c.call_tool("search", {"query": q, "limit": 5})
        if r.is_error:
            raise SystemExit(f"search failed: {r.content[0].text}")
        return json.loads(r.content[0].text)

    async def go() -> dict[str, list[float]]:
        with open(os.devnull, "w") as errlog:
            from contextlib import AsyncExitStack

            async with AsyncExitStack() as stack:
                named = [("lexical", params("off", name="lexical")),
                         ("fused", params("on", name="fused")),
                         ("lexical, git status per search (before)",
                          params("off", True, name="old"))]
                if baseline is not None:
                    named.append((f"fused, {ref}", params("on", name="base", base=baseline)))
                clients = [(mode, await stack.enter_async_context(
                    Client(stdio_client(p, errlog=errlog)))) for mode, p in named]
                t = time.perf_counter()
                for mode, c in clients:
                    while "fused" in mode:  # until the model is loaded and the vectors read
                        got = await search(c, OTHER[0])
                        if (got.get("semantic") or {}).get("status") == "on":  # it answered
                            break
                        if time.perf_counter() - t > 300:
                            raise SystemExit("the semantic layer never answered in 300 s")
                        await anyio.sleep(0.5)
                print(f"semantic layer ready {time.perf_counter() - t:.1f} s after the "
                      "first search", flush=True)
                for q in warm:
                    for _, c in clients:
                        await search(c, q)
                times: dict[str, list[float]] = {mode: [] for mode, _ in clients}
                times["bare FTS5, in process"] = []
                pids = servers()
                cpu0 = {name: cpu_of(pid) for name, pid in pids.items()}
                for i, q in enumerate(qs):
                    commit_between(i)
                    # each query asks the servers in another order: none always follows
                    # the same neighbour (a git status, a commit)
                    answers = {}
                    for mode, c in clients[i % len(clients):] + clients[:i % len(clients)]:
                        t = time.perf_counter()
                        got = answers[mode] = await search(c, q)
                        times[mode].append((time.perf_counter() - t) * 1000)
                        if mode == "fused" and any(r.get("match") != "lexical"
                                                   for r in got["results"]):
                            times.setdefault("semantic-used", []).append(1)
                    if baseline is not None:  # the same answer, to the last digit
                        same = answers["fused"]["results"] == answers[f"fused, {ref}"]["results"]
                        times.setdefault("same-as-baseline", []).append(float(same))
                    t = time.perf_counter()
                    bare(q)
                    times["bare FTS5, in process"].append((time.perf_counter() - t) * 1000)
                for name, pid in sorted(pids.items()):
                    print(f"server {name}: {(cpu_of(pid) - cpu0[name]) * 1000 / len(qs):.1f} ms"
                          f" of CPU a search (its whole process), peak RSS "
                          f"{peak_rss_mb(pid):.0f} MB, {len(os.listdir(f'/proc/{pid}/task'))}"
                          " threads")
                writer.close()
                return times

    return anyio.run(go)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=Path("/tmp/cardmem-bench/10000"))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--baseline", metavar="REF", help="a fourth server, fused, at git REF")
    ap.add_argument("--touch-every", type=int, default=0, metavar="N")
    ap.add_argument("--vectors-every", type=int, default=0, metavar="N")
    ap.add_argument("--saves-every", type=int, default=0, metavar="N")
    a = ap.parse_args()
    from cardmem.store.index.db import Index

    print(f"Machine: {machine()}.", flush=True)
    with Index(root=a.store, db_path=a.store / ".cardmem" / "index.sqlite") as idx:
        idx.refresh()
        n_cards = idx.conn.execute("SELECT count(*) FROM cards").fetchone()[0]
        qs = queries(idx, a.queries - len(OTHER)) + OTHER
        warm = queries(idx, 20, seed=99)
    repeats = sum(q in set(qs[:i]) | set(warm) for i, q in enumerate(qs))
    print(f"{repeats} of {len(qs)} timed queries repeat an earlier one", flush=True)
    import tempfile

    cpu = children_cpu()
    t = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-base-") as tmp:
        base = export(a.baseline, Path(tmp)) if a.baseline else None
        times = run(a.store, qs, warm, base, a.baseline or "", a.touch_every, a.vectors_every,
                    a.saves_every)
    used = len(times.pop("semantic-used", []))
    same = times.pop("same-as-baseline", [])
    if same:
        print(f"fused answers identical to the baseline's (ids, order, scores, labels,"
              f" similarities, snippets): {int(sum(same))}/{len(same)}")
    for mode, v in times.items():
        how = "" if "in process" in mode else "MCP search over stdio, warm, "
        print(f"{n_cards:,} cards, {how}{len(v)} queries, {mode}: "
              f"p50 {pct(v, 50):.1f} ms, p95 {pct(v, 95):.1f} ms, p99 {pct(v, 99):.1f} ms")
    r50 = pct(times["fused"], 50) / pct(times["lexical"], 50)
    if a.baseline:
        b = times[f"fused, {a.baseline}"]
        print(f"fused / fused at {a.baseline}: p50 {pct(times['fused'], 50) / pct(b, 50):.2f},"
              f" p95 {pct(times['fused'], 95) / pct(b, 95):.2f}")
    print(f"fused/lexical p50 ratio {r50:.2f}; fused answers with a semantic match: "
          f"{used}/{len(qs)}; servers' CPU {children_cpu() - cpu:.1f} s over "
          f"{time.time() - t:.0f} s; load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
