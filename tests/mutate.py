"""`make mutate`: mutation testing (cosmic-ray) of the modules where a silent break costs
most, each mutant run against only the test files that guard its module.

    python tests/mutate.py [GROUP ...]    # all groups, or those named (see TARGETS)
    python tests/mutate.py --report       # what earlier runs found; runs nothing
    python tests/mutate.py --survivors [GROUP ...]   # rerun the survivors (tests added?)

Not part of `make test`. A mutant is one small change to one module (a comparison turned,
a `not` added, a number changed, a loop made to run zero times...). It is "killed" when its
tests fail and "survives" when they all pass: a survivor is a break nobody would notice.

Mutants are applied to the files in place (cosmic-ray writes the mutant, runs the tests,
writes the original back), so that hooks and the CLI started as child processes run the
mutant too. Keep your own edits out of these modules while it runs; every file is checked
against the bytes it had at the start after each mutant, and put back if it differs.

Bounded time: each group gets MUTATE_BUDGET_S seconds (default 300), its mutants in an
order drawn from MUTATE_SEED (printed), so a partial run samples the whole module. The
sessions are kept in .mutate/: a second run goes on with the mutants not yet run (delete
.mutate/GROUP.sqlite to start a group over). Survivors are printed with their diff and
written to .mutate/survivors.txt; the ones that stay are listed with a reason in
tests/README.md.
"""
from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATE = REPO / ".mutate"

# The one list: group -> (modules mutated, the test files each mutant runs against).
# Paths are the repository's; when a module moves, change it here.
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "redact": (["tools/secrets/redact.py", "tools/secrets/catalogue.py", "tools/secrets/context.py"],
               ["tests/tools/secrets/test_redact.py", "tests/tools/secrets/test_redact_corpus.py",
                "tests/tools/cli/test_cli_secrets.py"]),
    "memory": (["tools/agents/memory_folder.py", "tools/agents/memory_tool.py"],
               ["tests/tools/agents/test_memory_tool.py", "tests/tools/agents/test_memory_tool_api.py",
                "tests/tools/agents/test_memory_tool_proposals.py",
                "tests/tools/test_hostile_input.py"]),
    "pretool": (["hosts/pretool.py", "hosts/pretool_start.py", "store/rules/match.py"],
                ["tests/hosts/test_pretool.py", "tests/store/rules/test_rule_match.py",
                 "tests/store/search/test_relevance.py"]),
    "paths": (["store/cards/paths.py", "store/git/runner.py"],
              ["tests/store/cards/test_paths.py", "tests/store/cards/test_card_names.py",
               "tests/store/git/test_writer.py", "tests/tools/test_hostile_input.py"]),
    "updates": (["store/sharing/updates.py"],
                ["tests/store/sharing/test_updates.py", "tests/store/sharing/test_sync.py"]),
    "judge": (["tools/ask/judge.py", "tools/ask/completeness.py"],
              ["tests/tools/ask/test_judge.py", "tests/tools/cli/test_cli_judge.py"]),
    "learning": (["tools/learning/session_end.py", "tools/learning/backlog.py"],
                 ["tests/tools/learning/test_backlog.py"]),
    "rank": (["store/search/hybrid.py", "store/search/dialog.py", "store/search/neighbours.py",
              "store/search/confidence.py", "store/search/speakers.py"],
             ["tests/store/search/test_fusion.py", "tests/store/search/test_dialog.py",
              "tests/store/search/test_speakers.py",
              "tests/store/search/test_ranking.py", "tests/store/search/test_semantic.py"]),
    "merge": (["tools/maintain/consolidate.py", "tools/maintain/fold.py"],
              ["tests/tools/maintain/test_merge_properties.py",
               "tests/tools/maintain/test_maintain_apply.py",
               "tests/tools/maintain/test_maintain_reject.py",
               "tests/tools/maintain/test_maintain_properties.py",
               "tests/tools/maintain/test_maintain_contradictions.py"]),
    "import": (["tools/importers/plan.py", "tools/importers/identity.py",
                "tools/importers/claude_md.py"],
               ["tests/tools/importers/test_claude_md_properties.py",
                "tests/tools/importers/test_import.py",
                "tests/tools/importers/test_import_updates.py",
                "tests/tools/importers/test_import_identity.py",
                "tests/tools/importers/test_import_properties.py"]),
}

# cosmic-ray's core operators, less the ones that only repeat another: of the eleven ways
# to replace a binary operator, the one to `-` (and `-` to `+`), and none of `|` (nearly
# every `|` here is an annotation, which `from __future__ import annotations` never
# evaluates: a first run's `|` mutants all survived as such); of the comparisons, the
# negation and the boundary (== to !=, < to >= and <=, ...).
KEEP = re.compile(r"core/(?!ReplaceBinaryOperator_|ReplaceComparisonOperator_)"
                  r"|core/ReplaceBinaryOperator_(?!BitOr_)\w+_Sub$|core/ReplaceBinaryOperator_Sub_Add$"
                  r"|core/ReplaceComparisonOperator_(Eq_NotEq|NotEq_Eq|Is_IsNot|IsNot_Is|In_NotIn"
                  r"|NotIn_In|Lt_GtE|Lt_LtE|Gt_LtE|Gt_GtE|LtE_Gt|LtE_Lt|GtE_Lt|GtE_Gt)$")


def test_command(tests: list[str]) -> str:
    # -x: the first failure kills the mutant; no cache: runs must not steer one another
    return shlex.join([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                       "-m", "not storm", *tests])


def init(group: str, modules: list[str], tests: list[str]) -> Path:
    """The group's session (.mutate/GROUP.sqlite), made by `cosmic-ray init` if missing."""
    STATE.mkdir(exist_ok=True)
    (STATE / ".gitignore").write_text("*\n")
    db = STATE / f"{group}.sqlite"
    config = STATE / f"{group}.toml"
    config.write_text(
        "[cosmic-ray]\n"
        f"module-path = {modules!r}\n".replace("'", '"')
        + f"timeout = 600.0\nexcluded-modules = []\ntest-command = {test_command(tests)!r}\n"
        '[cosmic-ray.distributor]\nname = "local"\n')
    if not db.exists():
        subprocess.run([str(Path(sys.executable).parent / "cosmic-ray"), "init", str(config),
                        str(db)], cwd=REPO, check=True)
    return db


def run_group(group: str, budget: float, seed: int, again: bool = False) -> None:
    from cosmic_ray.mutating import mutate_and_test
    from cosmic_ray.testing import run_tests
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

    modules, tests = TARGETS[group]
    gone = [p for p in modules + tests if not (REPO / p).is_file()]
    if gone:
        sys.exit(f"mutate: {group}: no file {', '.join(gone)} (moved? TARGETS in tests/mutate.py)")
    db_path = init(group, modules, tests)
    command = test_command(tests)
    started = time.monotonic()
    outcome, output = run_tests(command, 1800)
    baseline = time.monotonic() - started
    if outcome != TestOutcome.SURVIVED:
        sys.exit(f"mutate: {group}: the tests fail without a mutant; fix them first:\n"
                 + output[-3000:])
    # A mutant that makes the tests hang is killed at this bound (a hang is a failure).
    timeout = max(30.0, 4 * baseline)
    kept = {m: (REPO / m).read_bytes() for m in modules}
    with use_db(str(db_path), WorkDB.Mode.open) as db:
        if again:  # the survivors only, once more: after tests were added for them
            survived = {j for j, r in db.results if r.test_outcome == TestOutcome.SURVIVED}
            pending = [w for w in db.work_items if w.job_id in survived]
        else:
            pending = [w for w in db.pending_work_items]
        for w in pending:
            if not all(KEEP.match(m.operator_name) for m in w.mutations):
                db.set_result(w.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
        pending = [w for w in pending if all(KEEP.match(m.operator_name) for m in w.mutations)]
        random.Random(f"{seed}:{group}").shuffle(pending)
        print(f"mutate: {group}: baseline {baseline:.1f} s; {len(pending)} mutant(s) to run, "
              f"budget {budget:.0f} s", flush=True)
        done = 0
        deadline = time.monotonic() + budget
        for w in pending:
            if time.monotonic() + baseline > deadline:
                break
            result = mutate_and_test(w.mutations, command, timeout)
            _put_back(kept)
            db.set_result(w.job_id, result)
            done += 1
        print(f"mutate: {group}: ran {done}, {len(pending) - done} left for the next run",
              flush=True)


def _put_back(kept: dict[str, bytes]) -> None:
    """cosmic-ray writes the original back; if it did not, do it and say so."""
    for m, data in kept.items():
        p = REPO / m
        if p.read_bytes() != data:
            p.write_bytes(data)
            print(f"mutate: {m} differed after a mutant; put back", file=sys.stderr)


def report() -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    lines, survivors = [], 0
    for group in TARGETS:
        db_path = STATE / f"{group}.sqlite"
        if not db_path.exists():
            lines.append(f"{group}: not run")
            continue
        counts: dict[str, int] = {}
        found = []
        with use_db(str(db_path), WorkDB.Mode.open) as db:
            results = dict(db.results)
            for item in db.work_items:
                r = results.get(item.job_id)
                kept = all(KEEP.match(m.operator_name) for m in item.mutations)
                what = ("skipped" if not kept else "pending" if r is None else
                        "skipped" if r.worker_outcome == WorkerOutcome.SKIPPED else
                        (r.test_outcome or r.worker_outcome).value)
                counts[what] = counts.get(what, 0) + 1
                if kept and r is not None and r.test_outcome == TestOutcome.SURVIVED:
                    m = item.mutations[0]
                    found.append((str(m.module_path), m.start_pos[0], m.operator_name,
                                  _changed(r.diff or "")))
        ran = counts.get("killed", 0) + counts.get("survived", 0)
        lines.append(f"{group}: {ran} run: {counts.get('killed', 0)} killed, "
                     f"{counts.get('survived', 0)} survived, {counts.get('pending', 0)} not yet "
                     f"run, {counts.get('skipped', 0)} left out (repeating operators)"
                     + "".join(f", {counts[k]} {k}" for k in counts
                               if k not in ("killed", "survived", "pending", "skipped")))
        for path, line, op, change in sorted(found):
            lines.append(f"  SURVIVED {path}:{line} {op.removeprefix('core/')}: {change}")
        survivors += len(found)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if STATE.exists():
        (STATE / "survivors.txt").write_text(text)
    return 0


def _changed(diff: str) -> str:
    """The diff's changed lines, '-old' -> '+new', on one line."""
    out = [ln[1:].strip() for ln in diff.splitlines()
           if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return " => ".join(out)[:200]


def main(argv: list[str]) -> int:
    if argv == ["--report"]:
        return report()
    again = argv[:1] == ["--survivors"]
    argv = argv[again:]
    unknown = [g for g in argv if g not in TARGETS]
    if unknown:
        sys.exit(f"mutate: no group {', '.join(unknown)}; groups: {', '.join(TARGETS)}")
    budget = float(os.environ.get("MUTATE_BUDGET_S", "300"))
    seed = int(os.environ.get("MUTATE_SEED") or random.SystemRandom().randrange(10**6))
    print(f"mutate: MUTATE_SEED={seed} MUTATE_BUDGET_S={budget:.0f} (per group)", flush=True)
    for group in argv or list(TARGETS):
        run_group(group, budget, seed, again)
    return report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
