"""MCP server start-up benchmark (issue 6): process start to first search answer.

    python bench/bench_mcp.py [--dir /tmp/cardmem-bench-mcp] [--cards 10000] [--runs 7]
                              [--write bench/RESULTS.md]

A synthetic store (bench/gen_store.py, generated once and reused) is indexed once; then
each run spawns `cardmem mcp --store ...` as a whole process through the SDK's stdio
client and times, from just before the spawn: the connection being ready (the server
answered the protocol handshake) and the first `search` answer. For scale it also times
a bare `python -c pass` and `python -c "import mcp.server.mcpserver"` (the SDK's own
import, a floor no server built on the SDK goes under), and one first search against a
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
from gen_store import generate  # noqa: E402

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


def sdk_import() -> tuple[float, float]:
    """(wall, CPU) seconds from spawning Python to `import mcp.server.mcpserver` done,
    read inside the child, so its exit (tearing down the SDK's models) is not counted."""
    code = ("import time; import mcp.server.mcpserver; "
            "print(time.time(), time.process_time())")
    t = time.time()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]) - t, float(out[1])


def in_process(root: Path) -> dict[str, float]:
    """cardmem's own share, in a fresh process that has imported the SDK first: open the
    store and build the server; then one search (freshness check + query) via the tool."""
    code = f"""
import json, time
import anyio, mcp.server.mcpserver
from mcp import Client
t = time.perf_counter()
from cardmem.tools.cli import open_store
from cardmem.tools.mcp_server import build_server
server = build_server(open_store({str(root)!r}))
built = time.perf_counter() - t
async def go():
    async with Client(server) as c:
        t = time.perf_counter()
        await c.call_tool("search", {{"query": {QUERY!r}, "limit": 5}})
        first = time.perf_counter() - t
        t = time.perf_counter()
        await c.call_tool("search", {{"query": {QUERY!r}, "limit": 5}})
        return first, time.perf_counter() - t
first, second = anyio.run(go)
print(json.dumps({{"build": built, "first": first, "second": second}}))
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

    from cardmem.store.index import Index
    from cardmem.store.store import Store

    root = a.dir / str(a.cards)
    if not root.exists():
        print(f"generating {a.cards} cards in {root} ...", flush=True)
        generate(root, a.cards)
    store = Store(root)
    t = time.perf_counter()
    idx = Index(store)
    idx.refresh()
    idx.close()
    print(f"index brought up to date in {time.perf_counter() - t:.1f} s", flush=True)

    bare = proc_time([sys.executable, "-c", "pass"], a.runs)
    one_run(root)  # warm the page cache and .pyc files; not counted
    # Interleaved, so that the SDK's import and the server see the same machine.
    runs, sdk_walls, sdk_cpus = [], [], []
    for _ in range(a.runs):
        wall, cpu = sdk_import()
        sdk_walls.append(wall)
        sdk_cpus.append(cpu)
        runs.append(one_run(root))
    sdk, sdk_cpu = statistics.median(sdk_walls), statistics.median(sdk_cpus)
    own = [in_process(root) for _ in range(a.runs)]
    build = statistics.median(o["build"] for o in own)
    search1 = statistics.median(o["first"] for o in own)
    search2 = statistics.median(o["second"] for o in own)
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
        f"| `python -c \"import mcp.server.mcpserver\"`: the SDK's import done | {sdk:.2f} "
        f"| {sdk_cpu:.2f} |",
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
        f"| next `search` call (freshness check, query) | {search2 * 1000:.0f} |",
        "",
        f"Start to first answer: {first:.2f} s wall (min {first_min:.2f} s), {cpu_first:.2f} s "
        f"of the server's CPU, of which {sdk_cpu:.2f} s is Python plus the `mcp` SDK's import "
        "(pydantic models of two protocol versions), a floor for any server on this SDK. "
        f"cardmem's own start-up is {build * 1000:.0f} ms and its first search "
        f"{search1 * 1000:.0f} ms, most of it the freshness check (a stat of every card). "
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
