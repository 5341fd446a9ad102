"""Watcher benchmark (issues 3, 27): edit-to-searchable latency, and a 1,000-file checkout,
with the embedding model off and on, side by side in one run.

    python bench/bench_watch.py [--dir /tmp/cardmem-bench] [--cards 10000] [--edits 60]
                                [--checkout 1000] [--semantic off,on] [--write bench/RESULTS.md]

A synthetic store (bench/gen_store.py) is committed in one packfile (git fast-import: loose
objects for 10k files take minutes on a slow disk), indexed, and watched by `cardmem watch`
as its own process, as a user runs it. This process edits cards (half plain writes, half
editor-style write-temp-then-rename) and polls the index (an FTS5 match of the card and a
word only the edit added) until the card holds it: that wall time is the edit-to-
searchable latency; a search then finds the card (untimed: a whole search polled added
its own cost to the watcher's, one poll in ten ~190 ms at load 20, bench/RESULTS.md).
Then `git checkout` switches to a branch rewriting 2,000 cards, and back; the time runs
from the start of the checkout until every rewritten card is found by its new word, and
the index is then compared, row for row, with one built from scratch.

The whole sequence runs once per --semantic mode, off first (the baseline: the watcher as it
was before the vectors), then on: the store is indexed without vectors, so with the model on
the watcher embeds all of it in the background while the edits and checkouts are timed
("while vectors catch up"; the table says how many cards had no vector at each point).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_store import generate  # noqa: E402
from results import write_section  # noqa: E402

from cardmem.store.index.db import Index  # noqa: E402
from cardmem.store.search.query import search_index

CARDMEM = str(Path(sys.executable).with_name("cardmem"))
SECTION = "## Watcher with the model on: vectors after words (issue 27)"
ID = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
      "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def git(root: Path, *args: str, input: str | None = None) -> str:
    return subprocess.run(["git", "-C", str(root), *args], input=input, text=True,
                          capture_output=True, check=True, env={**os.environ, **ID}).stdout


def commit_tree(root: Path, branch: str, files: dict[str, bytes], parent: str | None,
                message: str) -> None:
    """Commit `files` (path -> bytes, changes on top of parent) as one pack."""
    out = [f"commit refs/heads/{branch}\ncommitter bench <bench@example.com> "
           f"{int(time.time())} +0000\ndata {len(message)}\n{message}\n".encode()]
    if parent:
        out.append(f"from {parent}\n".encode())
    for path, data in sorted(files.items()):
        out.append(f"M 100644 inline {path}\ndata {len(data)}\n".encode() + data + b"\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet", "--force"],
                   input=b"".join(out), check=True)


def make_store(root: Path, cards: int) -> None:
    if root.exists():
        shutil.rmtree(root)
    generate(root, cards)
    (root / "cardmem.toml").write_text("[watch]\nautocommit = false\n")
    files = {p.relative_to(root).as_posix(): p.read_bytes()
             for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}
    commit_tree(root, "main", files, None, "bench store")
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    git(root, "reset", "-q")  # the index file from HEAD; the tree already matches


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs)) - 1))]


class WatchProcess:
    """`cardmem watch` as a child process; its stderr is drained by a thread."""

    def __init__(self, root: Path, semantic: str) -> None:
        env = {**os.environ, "CARDMEM_SEMANTIC": semantic}
        self.proc = subprocess.Popen([CARDMEM, "watch", "--store", str(root), "-v"],
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self.times: list[float] = []
        self.started = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.lines.append(line.rstrip())
            self.times.append(time.perf_counter())
            if "rescan (start)" in line:
                self.started.set()

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=30)


def found(idx: Index, word: str, cid: str) -> bool:
    res = search_index(idx, word, limit=5)
    return not res.corrected and any(r["id"] == cid for r in res.results)


def indexed(idx: Index, word: str, cid: str) -> bool:
    """The card's row holds the word: the poll of edit_latency. Not a whole search, whose
    own cost would be counted as the watcher's (one poll in ten took ~190 ms at load 20)."""
    return idx.conn.execute("SELECT 1 FROM fts JOIN cards ON cards.n = fts.rowid WHERE"
                            " fts MATCH ? AND cards.id = ?", (f'"{word}"', cid)).fetchone() is not None


def count_matching(idx: Index, word: str) -> int:
    return idx.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH ?",
                            (f'"{word}"',)).fetchone()[0]


def edit_latency(root: Path, idx: Index, n: int, rng: random.Random) -> list[float]:
    ids = sorted(idx.ids())
    out = []
    indexed(idx, "editmarkwarmupq", "")  # this process's first read of the index: not timed
    for k in range(n):
        cid = rng.choice(ids)
        path = root / f"{cid}.md"
        word = f"editmark{k:04d}q"
        text = path.read_text() + f"\nEdited by the benchmark: {word}.\n"
        t0 = time.perf_counter()
        if k % 2:
            tmp = path.with_name(f".{path.name}.swp-tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
        else:
            path.write_text(text)
        while not indexed(idx, word, cid):
            if time.perf_counter() - t0 > 10:
                raise SystemExit(f"edit {k} ({cid}) not searchable after 10 s")
            time.sleep(0.002)  # poll, but leave the CPU to the watcher (2 CPUs here)
        out.append(time.perf_counter() - t0)
        if not found(idx, word, cid):  # and the search finds it (untimed: see indexed())
            raise SystemExit(f"edit {k} ({cid}) indexed but not found by a search")
        time.sleep(0.2)  # separate edits, as a person makes them
    return out


def checkout_time(root: Path, idx: Index, branch: str, word: str, expect: int) -> tuple[float, float]:
    """(git checkout wall time, checkout start -> every rewritten card indexed)."""
    t0 = time.perf_counter()
    git(root, "checkout", "-q", branch)
    t_git = time.perf_counter() - t0
    while count_matching(idx, word) != expect:
        if time.perf_counter() - t0 > 60:
            raise SystemExit(f"checkout of {branch}: index not right after 60 s")
        time.sleep(0.005)
    return t_git, time.perf_counter() - t0


def exact(root: Path, idx: Index) -> bool:
    fresh_db = root.parent / f"fresh-{os.getpid()}.sqlite"
    fresh = Index(root=root, db_path=fresh_db)
    try:
        fresh.refresh()
        return fresh.rows() == idx.rows() and fresh.problems() == idx.problems()
    finally:
        fresh.close()
        for s in ("", "-wal", "-shm"):
            Path(f"{fresh_db}{s}").unlink(missing_ok=True)


def machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    fs = subprocess.run(["df", "-T", "/tmp"], capture_output=True, text=True).stdout.split()
    return (f"{len(os.sched_getaffinity(0))} CPUs, {cpu}, Python {sys.version.split()[0]}, "
            f"load average {os.getloadavg()[0]:.1f} at start, /tmp on "
            f"{fs[-6] if len(fs) > 6 else '?'}")


def no_vector(idx: Index) -> int:
    """Cards without a vector of the installed model (all of them: none was ever made)."""
    from cardmem.store.search import embedding, semantic

    return len(semantic.stale(idx, embedding.stamp())[0])


def run_mode(root: Path, idx: Index, mode: str, word: str, chosen: list[str], edits: int,
             rng: random.Random) -> dict[str, object]:
    """One pass: `cardmem watch` with CARDMEM_SEMANTIC=mode, the edits, the checkout there
    and back; what was measured."""
    w = WatchProcess(root, mode)
    if not w.started.wait(60):
        raise SystemExit("cardmem watch did not start:\n" + "\n".join(w.lines))
    out: dict[str, object] = {"lacking_at_edits": no_vector(idx)}
    out["lat"] = edit_latency(root, idx, edits, rng)
    # the watcher's own time per save (its -v line), apart from debounce and polling
    out["apply"] = [float(m.group(1)) for line in w.lines
                    if (m := re.search(r"indexed [12] card\(s\) in (\d+) ms", line))]
    git(root, "checkout", "-q", "--", ".")  # drop the edits before switching branches
    time.sleep(0.5)
    out["lacking_at_checkout"] = no_vector(idx)
    out["to"] = checkout_time(root, idx, "rewrite", word, len(chosen))
    time.sleep(0.5)
    out["ok_to"] = exact(root, idx)
    mark = time.perf_counter()
    out["back"] = checkout_time(root, idx, "main", word, 0)
    if os.environ.get("BENCH_DEBUG"):
        for at, line in zip(w.times, w.lines):
            if at >= mark:
                print(f"  +{at - mark:5.2f} s  {line}")
    time.sleep(0.5)
    out["ok_back"] = exact(root, idx)
    out["lacking_at_end"] = no_vector(idx)
    out["rss"] = w.peak_rss_mb()
    out["rc"] = w.stop()
    out["rescans"] = sum(1 for line in w.lines if "rescan (" in line)
    out["embedded_lines"] = sum(1 for line in w.lines if "embedded " in line)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=60)
    ap.add_argument("--checkout", type=int, default=1000)
    ap.add_argument("--semantic", default="off,on", help="modes to run, in order")
    ap.add_argument("--write", type=Path, help="Put the results under '" + SECTION + "'.")
    args = ap.parse_args()
    modes = args.semantic.split(",")
    root = args.dir / f"watch-{args.cards}"
    where = machine()
    t = time.perf_counter()
    make_store(root, args.cards)
    print(f"store: {args.cards} cards in {root} ({time.perf_counter() - t:.1f} s)", flush=True)
    runs: dict[str, dict[str, object]] = {}
    with Index.open(root=root) as idx:
        t = time.perf_counter()
        idx.refresh()
        print(f"index built in {time.perf_counter() - t:.1f} s (words only)", flush=True)
        rng = random.Random(3)
        # The branch: `--checkout` cards rewritten, each with a word no other card has.
        word = "checkoutmarkzq"
        chosen = rng.sample(sorted(idx.ids()), args.checkout)
        head = git(root, "rev-parse", "HEAD").strip()
        files = {f"{cid}.md": ((root / f"{cid}.md").read_text() + f"\nOn the branch: {word}.\n")
                 .encode() for cid in chosen}
        commit_tree(root, "rewrite", files, head, f"rewrite {args.checkout} cards")
        broken = len(idx.problems())
        for mode in modes:
            print(f"--- CARDMEM_SEMANTIC={mode}", flush=True)
            runs[mode] = run_mode(root, idx, mode, word, chosen, args.edits, rng)
        # The index's own cost for the same checkout, with no watcher: what it waits on.
        git(root, "checkout", "-q", "rewrite")
        t = time.perf_counter()
        idx.refresh()
        t_alone = time.perf_counter() - t
        git(root, "checkout", "-q", "main")
        idx.refresh()

    def cells(key: str) -> list[str]:
        return [str(runs[m][key]) for m in modes]

    def ms(m: str) -> list[float]:
        return [x * 1000 for x in runs[m]["lat"]]  # type: ignore[attr-defined]

    def after_git(m: str, key: str) -> float:
        t_git, t_all = runs[m][key]  # type: ignore[misc]
        return t_all - t_git

    last = modes[-1]
    rows = [
        ("edit-to-searchable p50", [f"{statistics.median(ms(m)):.0f} ms" for m in modes], ""),
        ("edit-to-searchable p95", [f"{pct(ms(m), 95):.0f} ms" for m in modes],
         f"≤ 250 ms: {'yes' if pct(ms(last), 95) <= 250 else 'NO'}"),
        ("edit-to-searchable max", [f"{max(ms(m)):.0f} ms" for m in modes], ""),
        ("the watcher applying one save: p50 / p95 / max (its -v lines)",
         [f"{statistics.median(a):.0f} / {pct(a, 95):.0f} / {max(a):.0f} ms"
          if (a := runs[m]["apply"]) else "?" for m in modes], ""),  # type: ignore[index]
        ("the 3 slowest edits: their place in the sequence (1 is the first)",
         [", ".join(f"#{i + 1} ({v:.0f} ms)" for i, v in sorted(
             enumerate(ms(m)), key=lambda t: -t[1])[:3]) for m in modes], ""),
        (f"checkout rewriting {len(chosen)} files: index right after git finished",
         [f"{after_git(m, 'to'):.2f} s (git {runs[m]['to'][0]:.2f} s); exact: {runs[m]['ok_to']}"  # type: ignore[index]
          for m in modes],
         f"≤ 1 s: {'yes' if after_git(last, 'to') <= 1 and runs[last]['ok_to'] else 'NO'}"),
        ("checkout back: index right after git finished",
         [f"{after_git(m, 'back'):.2f} s (git {runs[m]['back'][0]:.2f} s); exact: {runs[m]['ok_back']}"  # type: ignore[index]
          for m in modes],
         f"≤ 1 s: {'yes' if after_git(last, 'back') <= 1 and runs[last]['ok_back'] else 'NO'}"),
        ("cards without a vector: at the first edit, at the checkout, at the end",
         [f"{runs[m]['lacking_at_edits']}, {runs[m]['lacking_at_checkout']}, "
          f"{runs[m]['lacking_at_end']}" for m in modes], ""),
        ("peak RSS of `cardmem watch`", [f"{runs[m]['rss']:.0f} MB" for m in modes], ""),
        ("full rescans; exit status on SIGINT", [f"{runs[m]['rescans']}; {runs[m]['rc']}"
                                                 for m in modes], ""),
    ]
    text = "\n".join([
        SECTION, "",
        f"`python bench/bench_watch.py --checkout {args.checkout}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {args.cards} cards ({broken} broken on purpose), "
        f"`cardmem watch` as its own process, {args.edits} edits a mode (half plain writes, half "
        f"write-temp-then-rename) polled by an in-process FTS5 match of its new word (each then found by a search, untimed); the modes one after "
        f"the other on the same store, indexed without vectors at the start.",
        f"Machine: {where}.", "",
        "| measure | " + " | ".join(f"CARDMEM_SEMANTIC={m}" for m in modes) + " | target (last mode) |",
        "|---|" + "---|" * len(modes) + "---|",
        *[f"| {a} | " + " | ".join(b) + f" | {c} |" for a, b, c in rows],
        f"| reference: Index.refresh() after the same checkout, no watcher | {t_alone:.2f} s |"
        + " |" * len(modes), ""])
    print(text)
    if args.write:
        write_section(args.write, SECTION, text)
        print(f"written to {args.write}")


if __name__ == "__main__":
    main()
