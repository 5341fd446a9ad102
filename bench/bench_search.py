"""Index and search benchmarks (issue 3), printed side by side in one run.

    python bench/bench_search.py [--dir /tmp/cardmem-bench] [--sizes 10000,100000]
                                 [--write bench/RESULTS.md]

For each size: a synthetic store (bench/gen_store.py, generated once and reused); cold
index vs the same files loaded straight into a bare FTS5 table (same tokenizer); search
latency p50/p99 in-process; `cardmem search` as a whole process vs `rg -il`; the peak
memory (max RSS) of a search process. Timings are wall-clock medians; the machine is
noted, and on a shared machine they move with its load.
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_store import commit_store, generate  # noqa: E402

from cardmem.store.index.schema import TOKENIZE
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.index.files import walk  # noqa: E402

CARDMEM = str(Path(sys.executable).with_name("cardmem"))


def machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}, "
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
            f"load average {load:.1f} at start")


def _unlink_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def bare_fts(root: Path, db: Path) -> tuple[float, float]:
    """The floor: walk, read each file and insert its whole text into one FTS5 column."""
    _unlink_db(db)
    t, cpu = time.perf_counter(), time.process_time()
    c = sqlite3.connect(db, isolation_level=None)
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("PRAGMA synchronous = NORMAL")
    c.execute(f"CREATE VIRTUAL TABLE f USING fts5(x, tokenize='{TOKENIZE}')")
    c.execute("BEGIN")
    for _, path, _ in walk(root):
        with open(path, "rb") as fh:
            c.execute("INSERT INTO f VALUES (?)", (fh.read().decode("utf-8", "replace"),))
    c.execute("COMMIT")
    c.close()
    return time.perf_counter() - t, time.process_time() - cpu


def cold_index(root: Path, db: Path) -> tuple[float, float]:
    """(wall, CPU of all threads) of a first refresh into an empty index file."""
    _unlink_db(db)
    t, cpu = time.perf_counter(), time.process_time()
    with Index(root=root, db_path=db) as idx:
        idx.refresh()
    return time.perf_counter() - t, time.process_time() - cpu


def labelled_queries(idx: Index, n: int, seed: int = 7) -> list[tuple[str, str | None]]:
    """Realistic queries: title words, alias phrases, typos of them, and nonsense; each
    with the card it was made from (None for the stock and nonsense queries)."""
    rng = random.Random(seed)
    rows = idx.conn.execute("SELECT title, aliases, id FROM cards").fetchall()
    out: list[tuple[str, str | None]] = []
    for _ in range(n):
        title, aliases, cid = rng.choice(rows)
        words = [w for w in title.replace(":", " ").split() if len(w) > 3 and w.isalpha()]
        kind = rng.random()
        if kind < 0.4 and words:
            out.append((" ".join(rng.sample(words, min(len(words), rng.randint(1, 3)))).lower(),
                        cid))
        elif kind < 0.6 and aliases:
            out.append((rng.choice(aliases.split("\n")), cid))
        elif kind < 0.8 and words:
            w = list(rng.choice(words).lower())
            if len(w) > 4:
                i = rng.randrange(1, len(w) - 1)
                w[i], w[i + 1] = w[i + 1], w[i]
            out.append(("".join(w), cid))
        elif kind < 0.9:
            out.append(("how do I deploy to production", None))
        else:
            out.append((rng.choice(["zxqv blorf", "qwpz", "ÿ¤ nonsense-xyzzy"]), None))
    return out


def queries(idx: Index, n: int, seed: int = 7) -> list[str]:
    return [q for q, _ in labelled_queries(idx, n, seed)]


def quality(idx: Index, n: int) -> tuple[int, int, int, float, int, int]:
    """How often a labelled query finds the card it was made from: (queries, found
    first, found in the top 10, mean reciprocal rank), then (mixed queries, found in the
    top 10) for mixed_queries(). Generated titles repeat words across cards, so many
    queries fit other cards as well as their own."""
    pairs = [(q, cid) for q, cid in labelled_queries(idx, n, seed=11) if cid]
    first = top10 = 0
    rr = 0.0
    for q, cid in pairs:
        got = [r["id"] for r in search_index(idx, q).results]
        if cid in got:
            first += got[0] == cid
            top10 += 1
            rr += 1 / (got.index(cid) + 1)
    mixed = mixed_queries(idx, n // 2)
    mixed_top10 = sum(cid in [r["id"] for r in search_index(idx, q).results] for q, cid in mixed)
    return len(pairs), first, top10, rr / max(1, len(pairs)), len(mixed), mixed_top10


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def mixed_queries(idx: Index, n: int, seed: int = 5) -> list[tuple[str, str]]:
    """A rare word of a card's title (in at most 60 cards, so that the card can rank in
    the top 10 of them) and a common word (in 3% to 30% of the cards) the card lacks,
    with the card: only the any tier can find it."""
    from cardmem.store.search.terms import quote, tokens, vocabulary

    c = idx.conn
    vocabulary(idx, force=True)
    cards = c.execute("SELECT count(*) FROM cards").fetchone()[0]
    common = [t for (t,) in c.execute("SELECT term FROM terms WHERE df BETWEEN ? AND ?"
                                      " AND term GLOB '[a-z]*' AND length(term) > 4",
                                      (cards * 3 // 100, cards * 30 // 100))]
    rows = c.execute("SELECT n, id, title FROM cards").fetchall()
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for _ in range(n * 50):
        if len(out) == n or not common:
            break
        rowid, cid, title = rng.choice(rows)
        words = [w.lower() for w in title.split() if w.isalpha() and len(w) > 4]
        if not words:
            continue
        word = rng.choice(words)
        df = c.execute("SELECT df FROM terms WHERE term = ?", (tokens(c, word)[0][1],)).fetchone()
        other = rng.choice(common)
        if not df or df[0] > 60 or c.execute("SELECT 1 FROM fts WHERE rowid = ? AND fts MATCH ?",
                                             (rowid, quote(other))).fetchone():
            continue
        out.append((f"{word} {other}", cid))
    return out


def search_latency(root: Path, db: Path, n: int) -> tuple[float, ...]:
    """(p50, p99) of search_index (store/search/query.py), the CPU ms per search, and p50 of the no-change
    freshness check from git and by a full walk, in ms."""
    with Index(root=root, db_path=db) as idx:
        idx.refresh()
        qs = queries(idx, n)
        for q in qs[:20]:  # warm: page cache, vocabulary table, rapidfuzz import
            search_index(idx, q)
        times = []
        cpu = time.process_time()
        for q in qs:
            t = time.perf_counter()
            search_index(idx, q)
            times.append((time.perf_counter() - t) * 1000)
        cpu_ms = (time.process_time() - cpu) * 1000 / len(qs)
        fresh: dict[bool, list[float]] = {False: [], True: []}
        for i in range(40):
            walk = i % 2 == 1
            t = time.perf_counter()
            idx.refresh(walk=walk)
            fresh[walk].append((time.perf_counter() - t) * 1000)
    return pct(times, 50), pct(times, 99), cpu_ms, pct(fresh[False], 50), pct(fresh[True], 50)


# A child's ru_maxrss is at least its parent's peak when it was spawned: Linux carries the
# parent's high-water mark across (v)fork and exec. This process has held a whole index,
# so children are started by a small launcher (a bare interpreter, ~8 MB) that forks them
# and reports their wall time, CPU (theirs and their children's, such as git) and peak.
_LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execvp(sys.argv[1], sys.argv[1:])
_, _, ru = os.wait4(pid, 0)
print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss)
"""


def child(args: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s = user + sys, max RSS MB) of one child process, from wait4."""
    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *args], check=True,
                         capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2]) / 1024


def wheel_install(where: Path) -> str:
    """`cardmem` installed from a wheel of this checkout, as a user gets it (every process
    of the dev install loads its editable-import finder), in a venv of its own whose
    dependencies are this interpreter's. Built anew each run."""
    import sysconfig

    venv = where / "wheel-venv"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], check=True, capture_output=True,
                             text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    purelib, str(HERE.parent)], check=True, capture_output=True)
    # the dependencies: a plain path line (no .pth of that folder runs, so no editable finder)
    Path(purelib, "cardmem-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = venv / "bin" / "cardmem"
    script.write_text(f"#!{py}\nimport sys\nfrom cardmem.tools.entry import main\n"
                      "sys.exit(main())\n")
    script.chmod(0o755)
    subprocess.run([str(py), "-m", "compileall", "-q", purelib], capture_output=True)
    return str(script)


def process_search(root: Path, runs: int, scripts: dict[str, str]) -> dict[str, float]:
    """Medians of `cardmem search` (each installed script) and `rg -il` as whole
    processes on a fresh index: wall and CPU seconds (CPU counts git's too); and the
    largest max RSS of the search processes."""
    subprocess.run([CARDMEM, "index", "--store", str(root)], check=True, capture_output=True)
    terms = ["fixtures", "deploy production", "snapshot testing", "pytets fixtrues"]
    cm: dict[str, list[tuple[float, float, float]]] = {k: [] for k in scripts}
    rg = []
    for i in range(runs):
        q = terms[i % len(terms)]
        for name, script in scripts.items():
            cm[name].append(child([script, "search", "--store", str(root), q]))
        rg.append(child(["rg", "-il", "--", q.split()[0], str(root)]))
    out = {"rg_wall": statistics.median(r[0] for r in rg),
           "rg_cpu": statistics.median(r[1] for r in rg),
           "rss": max(c[2] for runs_ in cm.values() for c in runs_)}
    for name, runs_ in cm.items():
        out[f"{name}_wall"] = statistics.median(c[0] for c in runs_)
        out[f"{name}_cpu"] = statistics.median(c[1] for c in runs_)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--write", type=Path, help="Append the table to this Markdown file.")
    args = ap.parse_args()
    if not shutil.which("rg"):
        sys.exit("bench: rg (ripgrep) is not installed; apt-get install -y ripgrep")
    lines = [f"Machine: {machine()}.", "",
             "| cards | bare FTS5 load wall (CPU), quickest | cold index wall (CPU), quickest |"
             " ratio wall (CPU), median of runs side by side |"
             " search p50, median of 3 passes (range) | search p99 | search CPU/query |"
             " freshness p50: git (walk) |"
             " `cardmem search` wall (CPU): wheel install | dev install |"
             " `rg -il` wall (CPU) | search peak RSS | labelled queries: source card first,"
             " in top 10 (MRR) | rare title word + common word: card in top 10 |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    print(lines[0])
    scripts = {"wheel": wheel_install(args.dir), "dev": CARDMEM}
    for size in [int(s) for s in args.sizes.split(",")]:
        root = args.dir / f"{size}"
        if not (root / ".git").exists():
            print(f"generating {size} cards in {root} ...", flush=True)
            generate(root, size)
        commit_store(root)
        state = root / ".cardmem"
        state.mkdir(exist_ok=True)
        db = state / "index.sqlite"
        # This machine's speed drifts by a third within minutes: each cold index is set
        # against the bare load run just before it, and the median of those ratios kept.
        bare, cold = [], []
        for _ in range(5 if size <= 20000 else 1):
            bare.append(bare_fts(root, args.dir / f"bare-{size}.sqlite"))
            cold.append(cold_index(root, db))
        ratio = statistics.median(c[0] / b[0] for b, c in zip(bare, cold))
        ratio_cpu = statistics.median(c[1] / b[1] for b, c in zip(bare, cold))
        b, c = min(bare), min(cold)
        # The same drift moves a pass of searches by a third too: three passes, each in a
        # fresh Index (its caches empty), and the median of each figure.
        passes = [search_latency(root, db, args.queries) for _ in range(3)]
        p50s = sorted(r[0] for r in passes)
        p50, p99, qcpu, f_git, f_walk = (statistics.median(r[i] for r in passes)
                                         for i in range(5))
        with Index(root=root, db_path=db) as idx:
            found = quality(idx, args.queries)
        pr = process_search(root, args.runs, scripts)
        row = (f"| {size:,} | {b[0]:.2f} s ({b[1]:.2f} s) | {c[0]:.2f} s ({c[1]:.2f} s) |"
               f" {ratio:.2f}x ({ratio_cpu:.2f}x) | {p50:.2f} ms ({p50s[0]:.2f}-{p50s[-1]:.2f})"
               f" | {p99:.2f} ms |"
               f" {qcpu:.2f} ms | {f_git:.1f} ms ({f_walk:.1f} ms) |"
               f" {pr['wheel_wall'] * 1000:.0f} ms ({pr['wheel_cpu'] * 1000:.0f} ms) |"
               f" {pr['dev_wall'] * 1000:.0f} ms ({pr['dev_cpu'] * 1000:.0f} ms) |"
               f" {pr['rg_wall'] * 1000:.0f} ms ({pr['rg_cpu'] * 1000:.0f} ms) |"
               f" {pr['rss']:.0f} MB | {found[1]} and {found[2]} of {found[0]}"
               f" ({found[3]:.3f}) |"
               f" {f'{found[5]} of {found[4]}' if found[4] else 'no such words'} |")
        print(row, flush=True)
        lines.append(row)
    if args.write:
        text = "\n".join(lines) + "\n"
        with args.write.open("a", encoding="utf-8") as fh:
            fh.write("\n" + text)
        print(f"appended to {args.write}")


if __name__ == "__main__":
    main()
