"""The SessionStart hook as a whole process on a large store (issue 4).

    python bench/bench_hook.py [--dir /tmp/cardmem-bench] [--cards 10000] [--runs 21]
                               [--write bench/RESULTS.md]

A synthetic store (bench/gen_store.py) is generated once into <dir>/hook-<cards>,
committed and indexed. Then the hook runs as Claude Code starts it,
`python -m cardmem.hooks.claude_code --store S session-start` with the host's JSON on
stdin and the working directory inside a project, `--runs` times after two warm-ups.
Reported: wall-clock median and p90, CPU time (user+sys) median, the interpreter's own
start-up for comparison, and the same through the `cardmem hook` CLI route.
Timings are wall-clock on a shared machine and move with its load (noted).
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

from gen_store import commit_store, generate  # noqa: E402

from cardmem.store.index import Index  # noqa: E402
from cardmem.store.store import Store  # noqa: E402

SECTION = "## Session-start hook (issue 4)"


def machine() -> str:
    """CPUs, model, Python and the load when the run started (timings move with it)."""
    import platform
    import sqlite3

    cpu = "?"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in
                   Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{os.cpu_count()} CPUs, {cpu}, Python {platform.python_version()}, "
            f"SQLite {sqlite3.sqlite_version}, load average {os.getloadavg()[0]:.1f} at start")


def prepare(root: Path, cards: int) -> tuple[Store, str]:
    """The store (generated, committed and indexed once) and one of its projects."""
    if not (root / ".git").exists() or not any(root.glob("feedback/*.md")):
        generate(root, cards)
    commit_store(root)
    store = Store.open(root)
    with Index(store) as idx:
        idx.refresh()
        project = idx.conn.execute("SELECT project, count(*) n FROM cards WHERE project != '' "
                                   "GROUP BY project ORDER BY n DESC LIMIT 1").fetchone()[0]
    return store, project


# As on a user's machine: bytecode caches are written and used. (A PYTHONDONTWRITEBYTECODE
# in the benchmark's own environment would make every run recompile stale modules.)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(args: list[str], stdin: str, cwd: Path) -> tuple[float, float, str]:
    """(wall s, cpu s, stdout) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(args, input=stdin, capture_output=True, text=True, cwd=cwd, env=ENV)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{args}: exit {proc.returncode}: {proc.stderr[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def series(args: list[str], stdin: str, cwd: Path, runs: int,
           before=lambda: None) -> dict[str, float]:
    for _ in range(2):
        before()
        timed(args, stdin, cwd)
    walls, cpus, out = [], [], ""
    for _ in range(runs):
        before()
        w, c, out = timed(args, stdin, cwd)
        walls.append(w)
        cpus.append(c)
    walls.sort()
    return {"median_ms": statistics.median(walls) * 1000,
            "p90_ms": walls[int(0.9 * (len(walls) - 1))] * 1000,
            "cpu_ms": statistics.median(cpus) * 1000, "out": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--write", type=Path, help="Put the results into this Markdown file.")
    a = ap.parse_args()
    host = machine()
    store, project = prepare(a.dir / f"hook-{a.cards}", a.cards)
    work = a.dir / "hook-work" / project
    work.mkdir(parents=True, exist_ok=True)
    if not (work / ".git").exists():
        subprocess.run(["git", "init", "-q", str(work)], check=True)
    payload = json.dumps({"session_id": "bench-0000", "cwd": str(work), "source": "startup",
                          "hook_event_name": "SessionStart", "transcript_path": "/dev/null"})
    py = sys.executable
    hook = series([py, "-m", "cardmem.hooks.claude_code", "--store", str(store.root),
                   "session-start"], payload, work, a.runs)
    ctx = json.loads(hook["out"])["hookSpecificOutput"]["additionalContext"]
    rule = sorted((store.root / "feedback").glob("*.md"))[0]

    def edit_rule() -> None:  # a rule saved since the last session: the index is re-read
        st = rule.stat()
        os.utime(rule, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    edited = series([py, "-m", "cardmem.hooks.claude_code", "--store", str(store.root),
                     "session-start"], payload, work, max(5, a.runs // 3), before=edit_rule)
    cli = series([str(Path(py).with_name("cardmem")), "hook", "claude-code", "session-start",
                  "--store", str(store.root)], payload, work, max(5, a.runs // 3))
    bare = series([py, "-c", "pass"], "", work, a.runs)
    nostore = series([py, "-m", "cardmem.hooks.claude_code", "--store", str(a.dir / "none"),
                      "session-start"], payload, work, a.runs)
    rules = ctx.count("(`feedback/")
    lines = [
        SECTION, "",
        f"`python bench/bench_hook.py --cards {a.cards} --runs {a.runs}` — {host}.", "",
        "| process | wall median | wall p90 | CPU median |", "|---|---|---|---|",
        f"| session-start hook, {a.cards:,}-card store, project `{project}` "
        f"| {hook['median_ms']:.0f} ms | {hook['p90_ms']:.0f} ms | {hook['cpu_ms']:.0f} ms |",
        f"| same, a rule edited before each run (index re-read, rule re-indexed) "
        f"| {edited['median_ms']:.0f} ms | {edited['p90_ms']:.0f} ms | {edited['cpu_ms']:.0f} ms |",
        f"| same, through `cardmem hook claude-code` (click CLI) "
        f"| {cli['median_ms']:.0f} ms | {cli['p90_ms']:.0f} ms | {cli['cpu_ms']:.0f} ms |",
        f"| hook with no store (imports + notice) "
        f"| {nostore['median_ms']:.0f} ms | {nostore['p90_ms']:.0f} ms | {nostore['cpu_ms']:.0f} ms |",
        f"| `python -c pass` (the interpreter alone) "
        f"| {bare['median_ms']:.0f} ms | {bare['p90_ms']:.0f} ms | {bare['cpu_ms']:.0f} ms |",
        "",
        f"Target: median ≤ 150 ms (first row: nothing changed since the last session, the "
        f"common case; it opens no database and starts no process). "
        f"The pile: {len(ctx):,} characters, {rules} rules listed "
        f"(the generated store has that many feedback cards; titles past the budget are the "
        f"only text allowed over it). Installed hooks run the `python -m` route. Bytecode "
        f"caches on (PYTHONDONTWRITEBYTECODE unset for the measured processes).", "",
    ]
    text = "\n".join(lines)
    print(text)
    if a.write:
        old = a.write.read_text() if a.write.exists() else ""
        if SECTION in old:
            head, _, rest = old.partition(SECTION)
            nxt = rest.find("\n## ")
            tail = rest[nxt + 1:] if nxt >= 0 else ""
            new = head + text + ("\n" + tail if tail else "")
        else:
            new = old + ("\n" if old and not old.endswith("\n\n") else "") + text
        a.write.write_text(new)


if __name__ == "__main__":
    main()
