"""Every host's hook start-up, beside `python -c pass` and Claude Code's (issue 30).

    python bench/bench_hosts.py [--dir /tmp/cardmem-bench] [--cards 2000] [--runs 21]

A synthetic store (bench/gen_store.py) is generated once into <dir>/hosts-<cards>,
committed and indexed; then for each host the commands `cardmem install HOST` writes
(hosts/install.py; Claude Code's hosts/claude_code/install.py) are run with that host's
documented payload: session start, and PreToolUse on an ungoverned shell line (the common
case), interleaved with `python -c pass`, `--runs` times after two warm-ups each.
Reported: CPU (user+sys) median and wall p50 in ms, and the ratio of CPU to `python -c
pass`'s. With --baseline, the Claude Code hooks of an earlier checkout (as it installed
them) run in the same loop first: the budget the hosts are held to. With --before TREE
(a source tree of an earlier commit, e.g. `git archive main | tar -x -C TREE`), every
host's hooks of that tree and of this one run side by side, both started the same way
(this Python, cardmem imported from the tree by path). Timings are from a shared machine
and move with its load (noted).
"""
from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_hook import machine, timed  # noqa: E402
from gen_store import commit_store, generate  # noqa: E402

from cardmem.hosts import install as others  # noqa: E402
from cardmem.hosts.claude_code import install as claude  # noqa: E402
from cardmem.store.index.db import Index  # noqa: E402
from cardmem.store.rules import triggers  # noqa: E402
from cardmem.store.store import Store  # noqa: E402

SHELL = {"claude": {"tool_name": "Bash", "tool_input": {"command": "ls -la"}},
         "codex": {"tool_name": "Bash", "tool_input": {"command": "ls -la"}},
         "gemini": {"tool_name": "run_shell_command", "tool_input": {"command": "ls -la"}},
         "cursor": {"command": "ls -la"},
         "copilot": {"toolName": "bash", "toolArgs": "{\"command\": \"ls -la\"}"}}


def commands(host: str, store: Path, rules_file: Path) -> dict[str, list[str]]:
    if host == "claude":
        return {"session-start": shlex.split(claude.command("session-start", store, rules_file=rules_file)),
                "pre-tool-use": shlex.split(claude.command("pre-tool-use", store))}
    return {k: shlex.split(others.command(host, k, store)) for k in ("session-start", "pre-tool-use")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/cardmem-bench")
    ap.add_argument("--cards", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--before", metavar="TREE",
                    help="every host's hooks of this earlier source tree beside this one's")
    ap.add_argument("--baseline", nargs=2, metavar=("PYTHON", "TREE"),
                    help="also the Claude Code hooks of an earlier checkout (TREE, with hooks/), "
                         "run by a Python that imports that checkout's cardmem")
    a = ap.parse_args()
    root = Path(a.dir) / f"hosts-{a.cards}"
    if not (root / ".git").exists():
        generate(root, a.cards)
        commit_store(root)
    store = Store.open(root)
    idx = Index(store)
    idx.refresh()
    idx.close()
    triggers.build(store)
    print(machine())
    base = [sys.executable, "-c", "pass"]
    rows = []
    hosts = (["before"] if a.baseline else []) + ["claude", "codex", "gemini", "cursor", "copilot"]
    if a.before:
        hosts = [f"{h}{t}" for h in hosts for t in ("@before", "@now")]
    for host in hosts:
        if "@" in host:
            host, tree = host.split("@")
            cmds = by_path(host, Path(a.before) if tree == "before" else HERE.parent, root,
                           Path(a.dir))
            host = f"{host}@{tree}"
        elif host == "before":
            py, tree = a.baseline
            cmds = {"session-start": [py, "-m", "cardmem.hooks.claude_code", "--store", str(root),
                                      "--rules-file", str(Path(a.dir) / "rules" / "cardmem.md"),
                                      "session-start"],
                    "pre-tool-use": [py, "-S", str(Path(tree) / "hooks" / "pretool_start.py"),
                                     "--store", str(root)]}
        else:
            cmds = commands(host, root, Path(a.dir) / "rules" / "cardmem.md")
        for kind, args in cmds.items():
            name = host.split("@")[0]
            payload = {"session_id": "bench", "cwd": str(root),
                       **(SHELL[name if name != "before" else "claude"] if kind == "pre-tool-use" else {})}
            stdin = json.dumps(payload)
            for _ in range(2):
                timed(args, stdin, root)
                timed(base, "", root)
            cpu, wall, bcpu = [], [], []
            for _ in range(a.runs):  # interleaved: the load moves both alike
                w, c, _ = timed(args, stdin, root)
                cpu.append(c)
                wall.append(w)
                bcpu.append(timed(base, "", root)[1])
            rows.append((host, kind, statistics.median(cpu) * 1000, statistics.median(wall) * 1000,
                         statistics.median(bcpu) * 1000))
    print(f"{'host':15} {'event':14} {'cpu ms':>8} {'wall ms':>8} {'pass cpu':>9} {'ratio':>6}")
    for host, kind, c, w, b in rows:
        print(f"{host:15} {kind:14} {c:8.1f} {w:8.1f} {b:9.1f} {c / b:6.2f}")


def by_path(host: str, tree: Path, store: Path, out: Path) -> dict[str, list[str]]:
    """A host's two hooks from a source tree, cardmem imported from it by path: the
    session start through runpy, the PreToolUse hook as installed (`-S`, its own folder)."""
    import hashlib

    pkg = out / f"pkg-{hashlib.sha1(str(tree.resolve()).encode()).hexdigest()[:12]}"
    pkg.mkdir(parents=True, exist_ok=True)
    if not (pkg / "cardmem").exists():
        (pkg / "cardmem").symlink_to(tree.resolve())
    start = (f"import sys, runpy; sys.path.insert(0, {str(pkg)!r}); "
             "runpy.run_module('cardmem.hosts.hook', run_name='__main__', alter_sys=True)")
    h = "claude" if host == "claude" else host
    return {"session-start": [sys.executable, "-c", start, "--host", h, "--store", str(store),
                              *(["--rules-file", str(out / "rules" / "cardmem.md")]
                                if host == "claude" else []), "session-start"],
            "pre-tool-use": [sys.executable, "-S", str(tree / "hosts" / "pretool_start.py"),
                             "--host", h, "--store", str(store)]}


if __name__ == "__main__":
    main()
