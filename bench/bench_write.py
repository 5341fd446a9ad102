"""Write benchmark (issue 2): a card write+commit through cardmem vs bare git, 10k cards.

    python bench/bench_write.py [--dir /tmp/cardmem-bench] [--cards 10000] [-n 30]

In one store of --cards synthetic cards (bench/gen_store.py), committed, with a git
identity configured as a person's would be, each round times, interleaved so machine load
hits all alike:
  - cardmem in-process: Store.new (a new card) and Store.update_text (a History line);
  - bare git of the same kind of file: write it, `git add PATH`, `git commit -m`;
  - whole processes: `cardmem new` against `git add && git commit` run as commands.
Medians over N rounds; the ratios are cardmem / bare git (target ≤ 1.5 in-process).
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_store import generate  # noqa: E402

from cardmem.store.cards import card as cardlib  # noqa: E402
from cardmem.store.store import Store, init  # noqa: E402

ID = {"user.name": "Bench Person", "user.email": "bench@example.com"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_store(base: Path, cards: int) -> Path:
    """A fresh committed store of `cards` cards (the generated tree is cached)."""
    cache = base / f"gen-{cards}"
    if not cache.exists():
        generate(cache, cards)
        shutil.rmtree(cache / ".git", ignore_errors=True)
    root = base / f"write-{cards}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(cache, root, ignore=shutil.ignore_patterns(".git", ".cardmem"))
    init(root)  # a new repository: it adopts the cards in its first commit
    for k, v in ID.items():
        git(root, "config", k, v)
    tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True,
                             text=True, check=True).stdout.count("\n")
    assert tracked >= cards, f"only {tracked} files committed"
    while (root / ".git" / "gc.pid").exists():  # the first commit may start an auto gc
        time.sleep(0.5)
    git(root, "gc", "-q")  # a settled repository, as a store in use for a while is
    return root


def bench(root: Path, n: int, cli: list[str]) -> dict[str, list[float]]:
    store = Store.open(root)
    bare_dir = root / "reference" / "bare"
    bare_dir.mkdir(parents=True, exist_ok=True)
    existing = sorted(p for p in (root / "reference").glob("*.md"))[:n + 3]
    body = ("Deploys go out with uv lock --frozen; the staging check runs first.\n\n"
            "- owner: platform team\n- runbook: reference/deploy\n")
    times: dict[str, list[float]] = {k: [] for k in (
        "cardmem new (in-process)", "bare git: new file",
        "cardmem update_text (in-process)", "bare git: edit file",
        "cardmem new (process)", "bare git (processes)")}

    def timed(key: str, fn, i: int) -> None:
        t0 = time.perf_counter()
        fn()
        if i >= 3:  # the first rounds warm caches
            times[key].append(time.perf_counter() - t0)

    def bare_new(i: int) -> None:
        rel = f"reference/bare/new-{i}.md"
        (root / rel).write_text(cardlib.render({"title": f"Bare {i}", "type": "reference"}, body))
        git(root, "add", "--", rel)
        git(root, "commit", "-q", "-m", f"new: {rel}")

    def bare_edit(i: int) -> None:
        path = existing[i]
        with open(path, "a") as fh:
            fh.write(f"- 2026-11-30 · bench · bare edit {i}\n")
        git(root, "add", "--", str(path.relative_to(root)))
        git(root, "commit", "-q", "-m", f"edit: {path.name}")

    def bare_processes(i: int) -> None:
        rel = f"reference/bare/proc-{i}.md"
        (root / rel).write_text(body)
        subprocess.run(f"git add -- {rel} && git commit -q -m 'new {rel}'", shell=True,
                       cwd=root, check=True, capture_output=True)

    for i in range(n + 3):
        steps = [
            ("cardmem new (in-process)",
             lambda: store.new(f"reference/cm-new-{i}", title=f"Cardmem {i}", body=body)),
            ("bare git: new file", lambda: bare_new(i)),
            ("cardmem update_text (in-process)",
             lambda: store.update_text(str(existing[i].relative_to(root))[:-3],
                                       lambda t: cardlib.append_history(t, f"2026-11-30 · bench {i}"),
                                       "history: bench")),
            ("bare git: edit file", lambda: bare_edit(i)),
            ("cardmem new (process)",
             lambda: subprocess.run([*cli, "new", f"reference/cm-proc-{i}", "--body", body,
                                     "--store", str(root)], check=True, capture_output=True)),
            ("bare git (processes)", lambda: bare_processes(i)),
        ]
        shift = i % len(steps)  # rotate the order: no measure always runs first
        for key, fn in steps[shift:] + steps[:shift]:
            timed(key, fn, i)
    return times


def machine() -> str:
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gitv = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} CPUs ({cpu or platform.machine()}), Python "
            f"{platform.python_version()}, {gitv}, load average "
            f"{os.getloadavg()[0]:.1f} at start")


def report(times: dict[str, list[float]], cards: int, n: int, where: str) -> str:
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    rows = [f"| {k} | {med[k]:.1f} ms | {min(times[k]) * 1000:.1f} ms |" for k in times]
    ratios = [
        ("new card, in-process", med["cardmem new (in-process)"] / med["bare git: new file"]),
        ("edit (History line), in-process",
         med["cardmem update_text (in-process)"] / med["bare git: edit file"]),
        ("`cardmem new` process vs git commands",
         med["cardmem new (process)"] / med["bare git (processes)"]),
    ]
    lines = [
        f"`python bench/bench_write.py` on {time.strftime('%Y-%m-%d')}: {cards} cards, "
        f"N={n} per measure (interleaved), store in {where}.",
        f"Machine: {machine()}.",
        "",
        "| measure | median | min |",
        "|---|---|---|",
        *rows,
        "",
        "| ratio cardmem / bare git | median ratio | target |",
        "|---|---|---|",
        *[f"| {name} | {r:.2f} | {'≤ 1.5' if 'in-process' in name else ''} |"
          for name, r in ratios],
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path("/tmp/cardmem-bench"))
    ap.add_argument("--cards", type=int, default=10_000)
    ap.add_argument("-n", type=int, default=30)
    args = ap.parse_args()
    script = Path(sys.executable).with_name("cardmem")
    cli = [str(script)] if script.exists() else [sys.executable, "-m", "cardmem.tools.cli"]
    t0 = time.monotonic()
    root = make_store(args.dir, args.cards)
    print(f"store of {args.cards} cards ready in {time.monotonic() - t0:.1f} s", flush=True)
    text = report(bench(root, args.n, cli), args.cards, args.n, str(args.dir))
    print(text)  # goes under '## Writes (issue 2)' in bench/RESULTS.md by hand, with a reading


if __name__ == "__main__":
    main()
