"""`cardmem maintain --json` on the 10k store, deterministic kinds, as a whole process
(issue 17), side by side with baselines that read the same store once.

    python bench/bench_maintain.py [--dir /tmp/cardmem-bench] [--cards 10000] [--runs 5]
                                   [--checkout PATH] [--parts-only] [--write bench/RESULTS.md]

The store is bench/gen_store.py's (generated and committed once, in a folder of its own:
a maintain run records its findings in the store's .cardmem/). Runs alternate: maintain,
then `grep -rc '\\[\\[' --include=*.md` (every card read once: the floor of any pass over
the store), then `git ls-files` (what the survey asks git). Wall-clock medians and the
CPU (user + system) of each process; on a shared machine wall time moves with its load,
CPU time much less. Then, in-process, CPU seconds per part (survey, each kind).

--checkout PATH records PATH as the checkout of every project of the store, so that
`drift` has paths, commands and symbols to check (without it no project has one), and
times drift with and without its symbol check side by side (3 rounds, alternating).
--parts-only skips the whole-process runs.

--vs-index (issue 28): the synthetic store with the agents-md corpus's 395 cards added
(projects/<project>/), `cardmem maintain --json` (the model-free kinds) beside `cardmem
index --full` on that store, alternating, CPU of each process (its children included);
index with the semantic layer as configured and with CARDMEM_SEMANTIC=off. Then the
issue's two planted cases in-process: 600 cards that differ only in their numbers, and
the same 600 made real duplicates (one word changed), findings and CPU of each.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
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
KINDS = ("broken-link", "duplicate", "drift", "stale", "long-history")


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # grep: 1 is "no match"
        raise SystemExit(f"{args[:3]}: exit {proc.returncode}: {proc.stderr[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), \
        proc.stdout


def parts(root: Path) -> list[tuple[str, float]]:
    """CPU seconds of the survey and of each kind, in this process."""
    from cardmem.store.maintain import Survey
    from cardmem.store.maintain import drift, duplicates, history, links, stale
    from cardmem.store.store import Store

    out = []
    t = time.process_time()
    sv = Survey.of(Store.open(root))
    sv.changed  # noqa: B018 - the one git log, paid here
    out.append(("survey (scan cards, git log)", time.process_time() - t))
    for kind, mod in (("broken-link", links), ("duplicate", duplicates), ("drift", drift),
                      ("stale", stale), ("long-history", history)):
        t = time.process_time()
        mod.find(sv)
        out.append((kind, time.process_time() - t))
    return out


def drift_symbols(root: Path, rounds: int = 3) -> list[str]:
    """drift without and with the symbol check, alternating, in this process."""
    from cardmem.store.maintain import Survey
    from cardmem.store.maintain import drift
    from cardmem.store.store import Store

    sv = Survey.of(Store.open(root))
    sv.changed  # noqa: B018
    mentions = sum(len(drift.named_symbols(c.body)) for c in sv.active())
    real = drift.named_symbols
    got: dict[str, list[tuple[float, float, float, int]]] = {"without symbols": [],
                                                             "with symbols": []}
    try:
        for _ in range(rounds):
            for name in got:
                drift.named_symbols = real if name == "with symbols" else (lambda text: [])
                kids = resource.getrusage(resource.RUSAGE_CHILDREN)
                t, c = time.perf_counter(), time.process_time()
                n = len(drift.find(sv))
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                git_cpu = (after.ru_utime - kids.ru_utime) + (after.ru_stime - kids.ru_stime)
                got[name].append((time.perf_counter() - t, time.process_time() - c, git_cpu, n))
    finally:
        drift.named_symbols = real
    return [f"drift {name}: wall {statistics.median(x[0] for x in v):.2f} s, own CPU "
            f"{statistics.median(x[1] for x in v):.2f} s, git's CPU "
            f"{statistics.median(x[2] for x in v):.2f} s, {v[0][3]:,} findings"
            for name, v in got.items()] + [f"{mentions:,} symbol mentions in the cards"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--checkout", type=Path, help="Every project's checkout (for drift).")
    ap.add_argument("--parts-only", action="store_true", help="No whole-process runs.")
    ap.add_argument("--write", type=Path, help="Put the results into this Markdown file.")
    ap.add_argument("--vs-index", action="store_true",
                    help="maintain beside `cardmem index --full` (issue 28).")
    ap.add_argument("--before", metavar="CARDMEM",
                    help="With --vs-index: also time this cardmem executable's maintain "
                         "(another checkout's code, e.g. main's .venv/bin/cardmem).")
    a = ap.parse_args()
    host = machine()
    if a.vs_index:
        return report(vs_index(a.dir, a.cards, a.runs, host, a.before), a.write)
    root = a.dir / f"maintain-{a.cards}"
    if not (root / ".git").exists():
        generate(root, a.cards)
    commit_store(root)
    if a.checkout:
        from cardmem.store.maintain.checkouts import record
        from cardmem.store.store import Store

        store = Store.open(root)
        for project in sorted(p.name for p in (root / "projects").iterdir() if p.is_dir()):
            record(store, project, a.checkout.resolve())
    if a.parts_only:
        split = parts(root)
        lines = [f"## Maintenance by part (issue 17)", "",
                 f"{host}; load average {__import__('os').getloadavg()[0]:.1f} at the end. "
                 f"{a.cards:,} cards, checkout {a.checkout or 'none'}. "
                 f"`python bench/bench_maintain.py --parts-only"
                 f"{' --checkout PATH' if a.checkout else ''}`.", "",
                 "In-process CPU by part: " + ", ".join(f"{k} {s:.2f} s" for k, s in split) + "."]
        if a.checkout:
            lines += [""] + [f"- {x}" for x in drift_symbols(root)]
        return report(lines, a.write)
    only = [x for k in KINDS for x in ("--only", k)]
    runs = {"maintain": [CARDMEM, "maintain", "--json", *only, "--store", str(root)],
            "grep": ["grep", "-rc", "--include=*.md", r"\[\[", str(root)],
            "git ls-files": ["git", "-C", str(root), "ls-files"]}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    out = ""
    for i in range(a.runs + 1):  # the first round warms the caches and is not counted
        for name, args in runs.items():
            w, c, text = timed(args)
            if i:
                got[name].append((w, c))
            if name == "maintain":
                out = text
    found = collections.Counter(f["kind"] for f in json.loads(out)["findings"])
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in got.items()}
    split = parts(root)
    load = __import__("os").getloadavg()[0]
    lines = [f"## Maintenance: `cardmem maintain --json` (issue 17)", "",
             f"{host}; load average {load:.1f} at the end. {a.cards:,} cards "
             f"(bench/gen_store.py, one commit), kinds {', '.join(KINDS)}; "
             f"{a.runs} runs each, alternating, medians. `python bench/bench_maintain.py`.", "",
             "| process | wall | CPU (user+sys) | CPU vs grep |", "|---|---|---|---|"]
    label = {"maintain": f"`cardmem maintain --json` ({len(KINDS)} kinds)",
             "grep": "`grep -rc '\\[\\[' --include=*.md`", "git ls-files": "`git ls-files`"}
    for name, (w, c) in med.items():
        lines.append(f"| {label[name]} | {w:.2f} s | {c:.2f} s | "
                     f"{c / med['grep'][1]:.1f}x |")
    lines += ["", "Findings: " + (", ".join(f"{n:,} {k}" for k, n in found.most_common())
                                   or "none") + ".", "",
              "In-process CPU by part: " + ", ".join(f"{k} {s:.2f} s" for k, s in split) + "."]
    report(lines, a.write)


def with_corpus(root: Path, cards: int) -> None:
    """The synthetic store plus the agents-md corpus's cards, committed once."""
    import os
    import shutil

    from gen_store import CORPUS

    if (root / ".git").exists():
        return
    generate(root, cards)
    for p in sorted(CORPUS.glob("*--*.md")):
        project = re.search(r"^project: *(.+)$", p.read_text(), re.M).group(1).strip()
        d = root / "projects" / f"corpus-{project}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, d / p.name.split("--", 2)[2])
    commit_store(root)
    os.sync()


def planted(n: int = 600) -> list[str]:
    """The issue's cases in one process: findings and CPU of the duplicate pass on n
    cards that differ only in their numbers, and on n/2 topics written twice, the second
    time with one word changed (real duplicates: n/2 groups of two expected)."""
    import random
    import tempfile

    from cardmem.store.maintain import Survey
    from cardmem.store.maintain import duplicates
    from cardmem.store.store import init
    from gen_store import load_corpus

    words = load_corpus()[2]
    rng = random.Random(28)
    topics = [rng.sample(words, 14) for _ in range(n // 2)]

    def variant(i: int) -> str:
        ws = list(topics[i // 2])
        if i % 2:
            ws[5] = rng.choice(words)
        return f"The {' '.join(ws[:7])} keeps {' '.join(ws[7:])} for the release."

    out = []
    for case, body in (("differ only in their numbers",
                        lambda i: f"Service {i} listens on port {8000 + i} behind the shared "
                                  f"proxy; its health check answers on /health every "
                                  f"{i % 7 + 2} seconds."),
                       ("are 300 topics written twice, one word changed", variant)):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "s"
            store = init(root)[0]
            (root / "reference").mkdir()
            for i in range(n):
                (root / f"reference/card-{i}.md").write_text(
                    f"---\ntitle: Card {i // 2}\ntype: reference\n---\n{body(i)}\n")
            subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
            subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c",
                            "user.email=b@example.com", "commit", "-qm", "planted"], check=True)
            sv = Survey.of(store)
            sv.changed  # noqa: B018
            t = time.process_time()
            found = [f for f in duplicates.find(sv) if len(f.ids) > 1]
            cpu = time.process_time() - t
            sizes = collections.Counter(len(f.ids) for f in found)
            out.append(f"- {n} cards that {case}: {len(found)} duplicate finding(s)"
                       + (" (" + ", ".join(f"{c} of {k} cards" for k, c in sorted(sizes.items()))
                          + ")" if sizes else "") + f", duplicate pass {cpu:.2f} s CPU")
    return out


def vs_index(base: Path, cards: int, runs: int, host: str, before: str | None = None) -> list[str]:
    import os

    root = base / f"maintain-corpus-{cards}"
    with_corpus(root, cards)
    total = sum(1 for _ in root.rglob("*.md"))
    only = [x for k in KINDS for x in ("--only", k)]
    off = {**os.environ, "CARDMEM_SEMANTIC": "off"}
    maintain = [CARDMEM, "maintain", "--json", *only, "--store", str(root)]
    kept_file = root / ".cardmem" / "maintain-features"  # store/maintain/kept.py's FILE
    runs_of = {"maintain": (maintain, None),  # its first run: the kept features removed
               "maintain, features kept": (maintain, None),
               **({f"maintain, before ({before})": ([before, *maintain[1:]], None)}
                  if before else {}),
               "index --full": ([CARDMEM, "index", "--full", "--json", "--store", str(root)],
                                None),
               "index --full, semantic off": ([CARDMEM, "index", "--full", "--json", "--store",
                                               str(root)], off)}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in runs_of}
    out = before_out = ""
    for i in range(runs + 1):  # the first round warms caches and is not counted
        for name, (args, env) in runs_of.items():
            if name == "maintain":
                kept_file.unlink(missing_ok=True)
            w, c, text = timed(args, env)
            if i:
                got[name].append((w, c))
            if "before" in name:
                before_out = text
            elif name.startswith("maintain"):
                if out and text != out:
                    raise SystemExit("maintain's findings differ with kept features")
                out = text
    same = "" if not before else (
        " Findings the same as before's (JSON compared): "
        f"{'yes' if json.loads(before_out)['findings'] == json.loads(out)['findings'] else 'NO'}.")
    doc = json.loads(out)
    found = collections.Counter(f["kind"] for f in doc["findings"])
    groups = [len(f["ids"]) for f in doc["findings"] if f["kind"] == "duplicate" and len(f["ids"]) > 1]
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in got.items()}
    load = os.getloadavg()[0]
    lines = [f"## Maintain beside `cardmem index --full` (issue 28, {time.strftime('%Y-%m-%d')}, "
             f"branch {branch()})", "",
             f"{host}; load average {load:.1f} at the end. {total:,} cards: bench/gen_store.py's "
             f"{cards:,} plus the agents-md corpus's cards, one commit; kinds {', '.join(KINDS)}; "
             f"{runs} runs each, alternating, medians; CPU is user+sys of the process and its "
             f"children. `cardmem maintain` is timed twice: its first run (the features "
             f"store/maintain/kept.py keeps removed before it) and a run after it (features "
             f"kept). `python bench/bench_maintain.py --vs-index`.", "",
             "| process | wall | CPU (user+sys) | CPU / `index --full`'s | "
             "CPU / `index --full, semantic off`'s |", "|---|---|---|---|---|"]
    for name, (w, c) in med.items():
        lines.append(f"| `cardmem {name}` | {w:.2f} s | {c:.2f} s | "
                     f"{c / med['index --full'][1]:.2f}x | "
                     f"{c / med['index --full, semantic off'][1]:.2f}x |")
    lines += ["", "Findings: " + (", ".join(f"{n:,} {k}" for k, n in found.most_common())
                                   or "none")
              + (f"; duplicates in {len(groups):,} groups of {min(groups)}-{max(groups)} cards "
                 f"({sum(groups):,} cards)" if groups else "") + "." + same, "",
              "In-process CPU by part: " + ", ".join(f"{k} {s:.2f} s" for k, s in parts(root))
              + ".", "", "The issue's planted cases, in-process:"] + planted()
    return lines


def branch() -> str:
    return subprocess.run(["git", "-C", str(HERE), "rev-parse", "--abbrev-ref", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "?"


def report(lines: list[str], write: Path | None) -> None:
    """Print; with write, replace the section of the same heading there (or append it)."""
    text = "\n".join(lines) + "\n"
    print(text)
    if write:
        old = write.read_text() if write.exists() else ""
        head = lines[0]
        pat = re.compile(rf"^{re.escape(head)}\n.*?(?=^## |\Z)", re.S | re.M)
        new = pat.sub(text + "\n", old) if pat.search(old) else old.rstrip("\n") + "\n\n" + text
        write.write_text(new)


if __name__ == "__main__":
    main()
