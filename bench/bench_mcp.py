"""MCP server start-up benchmark (issue 6): process start to first search answer.

    python bench/bench_mcp.py [--dir /tmp/cardmem-bench-mcp] [--cards 10000] [--runs 7]
                              [--write bench/RESULTS.md]

A synthetic store (bench/gen_store.py, generated once and reused) is indexed once; then
each run spawns `cardmem mcp --store ...` as a whole process through the SDK's stdio
client and times, from just before the spawn: the connection being ready (the server
answered the protocol handshake) and the first `search` answer. For scale it also times
a bare `python -c pass`; `python -c "import mcp.server.mcpserver"` (the SDK's own
import, a floor no server built on the SDK goes under), also with the cyclic GC paused
as `cardmem mcp` loads it, and the protocol-model packages alone (`mcp_types`,
`mcp_types.methods`); cardmem's own share in-process; and one first search against a
store whose index is missing (the lazy refresh doing all the work). Wall-clock medians.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_search import machine  # noqa: E402
from gen_store import commit_store, generate  # noqa: E402

CARDMEM = str(Path(sys.executable).with_name("cardmem"))
QUERY = "deploy rollback"
HEADING = "## MCP server (issue 6)"


def proc_time(args: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# What each import row loads; "gc" is the SDK as `cardmem mcp` loads it (GC paused).
IMPORTS = {
    "sdk": "import mcp.server.mcpserver",
    "gc": "import gc; gc.disable(); import mcp.server.mcpserver; gc.freeze(); gc.enable()",
    "types": "import mcp_types",
    "methods": "import mcp_types.methods",
}


def sdk_import(what: str) -> tuple[float, float]:
    """(wall, CPU) seconds from spawning Python to the import IMPORTS[what] done, read
    inside the child, so its exit (tearing down the SDK's models) is not counted."""
    code = f"import time; {IMPORTS[what]}; print(time.time(), time.process_time())"
    t = time.time()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]) - t, float(out[1])


def in_process(root: Path, warm: bool) -> dict[str, float]:
    """cardmem's own share, in a fresh process that has imported the SDK first: open the
    store and build the server; with `warm`, let its warm-up thread (which `cardmem mcp`
    starts) finish; then two searches (freshness check + query) via the tool."""
    code = f"""
import json, threading, time
import anyio, mcp.server.mcpserver
from mcp import Client
import jsonschema  # the client checks results with it, loaded on its first call: not the server's cost
t = time.perf_counter()
from cardmem.tools.cli.options import open_store
from cardmem.tools.agents.mcp_server import build_server
server = build_server(open_store({str(root)!r}), warm={warm!r})
built = time.perf_counter() - t
for th in threading.enumerate():
    if th.name == "cardmem-mcp-warm":
        th.join()
async def go():
    async with Client(server) as c:
        t = time.perf_counter()
        await c.call_tool("search", {{"query": {QUERY!r}, "limit": 5}})
        first = time.perf_counter() - t
        t = time.perf_counter()
        await c.call_tool("search", {{"query": {QUERY!r}, "limit": 5}})
        return first, time.perf_counter() - t
first, second = anyio.run(go)
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
idx = Index(open_store({str(root)!r}))
search_index(idx, {QUERY!r}, limit=5)
t = time.perf_counter()
search_index(idx, {QUERY!r}, limit=5)
query = time.perf_counter() - t
print(json.dumps({{"build": built, "first": first, "second": second, "query": query}}))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(root: Path) -> tuple[float, float, int, float]:
    """(seconds to a ready connection, to the first search answer, results, server CPU s).

    The server's CPU time (user + system, read once the client has reaped it) moves far
    less with the machine's load than wall time does."""
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=CARDMEM, args=["mcp", "--store", str(root)],
                                   env=dict(os.environ))

    async def go() -> tuple[float, float, int]:
        with open(os.devnull, "w") as errlog:
            t0 = time.perf_counter()
            async with Client(stdio_client(params, errlog=errlog)) as client:
                ready = time.perf_counter() - t0
                result = await client.call_tool("search", {"query": QUERY, "limit": 5})
                answered = time.perf_counter() - t0
                if result.is_error:
                    raise SystemExit(f"search failed: {result.content[0].text}")
                n = len(json.loads(result.content[0].text)["results"])
        return ready, answered, n

    cpu = children_cpu()
    ready, answered, n = anyio.run(go)
    return ready, answered, n, children_cpu() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench-mcp"))
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write", type=Path, help="Replace this benchmark's section of a RESULTS.md.")
    a = ap.parse_args()

    from cardmem.store.index.db import Index
    from cardmem.store.store import Store

    root = a.dir / str(a.cards)
    if not root.exists():
        print(f"generating {a.cards} cards in {root} ...", flush=True)
        generate(root, a.cards)
    commit_store(root)  # a real store: committed, so freshness comes from git
    store = Store(root)
    t = time.perf_counter()
    idx = Index(store)
    idx.refresh(walk=True)  # as `cardmem index` does: a full walk anchors git's check
    idx.close()
    print(f"index brought up to date in {time.perf_counter() - t:.1f} s", flush=True)

    bare = proc_time([sys.executable, "-c", "pass"], a.runs)
    one_run(root)  # warm the page cache and .pyc files; not counted
    # Interleaved, so that the SDK's import and the server see the same machine.
    runs: list[tuple[float, float, int, float]] = []
    imports: dict[str, list[tuple[float, float]]] = {k: [] for k in IMPORTS}
    for _ in range(a.runs):
        for what in IMPORTS:
            imports[what].append(sdk_import(what))
        runs.append(one_run(root))
    imp = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in imports.items()}
    sdk, sdk_cpu = imp["sdk"]
    gc_wall, gc_cpu = imp["gc"]
    own = [in_process(root, warm=False) for _ in range(a.runs)]
    warmed = [in_process(root, warm=True) for _ in range(a.runs)]
    build = statistics.median(o["build"] for o in own)
    search1 = statistics.median(o["first"] for o in own)
    search2 = statistics.median(o["second"] for o in own)
    query = statistics.median(o["query"] for o in own)
    search_w = statistics.median(o["first"] for o in warmed)
    ready = statistics.median(r[0] for r in runs)
    first = statistics.median(r[1] for r in runs)
    first_min = min(r[1] for r in runs)
    cpu_first = statistics.median(r[3] for r in runs)
    n = runs[0][2]

    # The first search against a missing index: the lazy refresh builds it in full.
    db = root / ".cardmem" / "index.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    cold_ready, cold_first, _, _ = one_run(root)
    load = os.getloadavg()[0]

    lines = [
        HEADING, "",
        f"`python bench/bench_mcp.py --cards {a.cards} --runs {a.runs}` on {machine()}.",
        "",
        f"`cardmem mcp` spawned through the SDK's stdio client on a {a.cards:,}-card store "
        f"with an up-to-date index; median of {a.runs} runs, timed from just before the "
        "spawn:", "",
        "| step | wall s | server CPU s |", "|---|---|---|",
        f"| `python -c pass` (interpreter start) | {bare:.2f} | |",
        f"| `python -c \"import mcp_types\"`: the version-free protocol models "
        f"| {imp['types'][0]:.2f} | {imp['types'][1]:.2f} |",
        f"| `python -c \"import mcp_types.methods\"`: those plus both protocol versions' "
        f"wire models | {imp['methods'][0]:.2f} | {imp['methods'][1]:.2f} |",
        f"| `python -c \"import mcp.server.mcpserver\"`: the SDK's import done | {sdk:.2f} "
        f"| {sdk_cpu:.2f} |",
        f"| same, cyclic GC paused during the import (as `cardmem mcp` does) | {gc_wall:.2f} "
        f"| {gc_cpu:.2f} |",
        f"| `cardmem mcp`: connection ready (handshake answered) | {ready:.2f} | |",
        f"| `cardmem mcp`: first `search` answered ({n} results) | {first:.2f} "
        f"(min {first_min:.2f}) | {cpu_first:.2f} |",
        f"| same, index file missing (first search builds it) | {cold_first:.2f} | |",
        "",
        "cardmem's own share, in one process after the SDK is imported (medians):", "",
        "| step | ms |", "|---|---|",
        f"| import cardmem's CLI and server module, open the store, build the server "
        f"| {build * 1000:.0f} |",
        f"| first `search` call (index opened, freshness check, query) | {search1 * 1000:.0f} |",
        f"| first `search` call after the warm-up thread opened the index | "
        f"{search_w * 1000:.0f} |",
        f"| next `search` call (freshness check, query) | {search2 * 1000:.0f} |",
        f"| the query alone, index open, no freshness check (`search_index`) | "
        f"{query * 1000:.0f} |",
        "",
        f"Start to first answer: {first:.2f} s wall (min {first_min:.2f} s), {cpu_first:.2f} s "
        f"of the server's CPU. Python plus the `mcp` SDK's import takes {sdk:.2f} s "
        f"({sdk_cpu:.2f} s CPU), {gc_wall:.2f} s with the GC paused: a floor for any server "
        "on this SDK, since every `mcp.*` module first runs `mcp/__init__.py`, which loads "
        "the client, the server, the HTTP stack and the protocol models of both versions "
        f"(`mcp_types.methods` alone: {imp['methods'][0]:.2f} s). "
        f"cardmem's own start-up is {build * 1000:.0f} ms and its first search "
        f"{search1 * 1000:.0f} ms ({search_w * 1000:.0f} ms once the warm-up has opened the "
        "index), most of it the freshness check every search makes. "
        "Nothing is indexed at start-up: with no index at all the first search builds it "
        f"({cold_first:.1f} s) and the server was ready at {cold_ready:.2f} s. Load average "
        f"{load:.1f} at the end; wall times on a shared machine move with its load. The "
        "server CPU column also counts the process's exit (tearing down the SDK's models), "
        "which the wall column does not.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.write:
        old = a.write.read_text() if a.write.exists() else "# Benchmark results\n"
        if HEADING in old:
            head, _, rest = old.partition(HEADING)
            nxt = rest.find("\n## ")
            old = head + (rest[nxt + 1:] if nxt >= 0 else "")
        a.write.write_text(old.rstrip("\n") + "\n\n" + text)


if __name__ == "__main__":
    main()
