"""Speed tricks against their plain alternative, side by side in one process (interleaved
rounds, medians), so each keeps a measured reason (README, "Speed tricks").

    python bench/bench_tricks.py STORE [ROUNDS]     # STORE: e.g. bench/gen_store.py's 10k

- porter.py (FTS5's porter in Python) against FTS5's own tokenizers in scratch tables,
  the path non-ASCII queries take (store/search/terms.py), on the labelled questions,
  each new to the token cache (a CLI search's case);
- the session pile's summary (.cardmem/context-summary.json) against recomputing the
  index's aggregates (store/index/pile_view.py);
- recent changes kept per HEAD and day against asking git (store/context/recent.py);
- HEAD read from .git's files against `git rev-parse HEAD` (store/git/head_file.py);
- the query-token cache of a long-lived process (MCP) against tokenizing a repeated
  non-ASCII query anew (store/search/terms.py);
- the hook's glob matcher against fnmatch with its pattern cache cold, as in each new
  hook process (store/rules/match.py).
"""
from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cardmem.store.context import recent
from cardmem.store.git import head_file
from cardmem.store.index import pile_view
from cardmem.store.search import terms
from cardmem.store.root import StoreRoot

QUESTIONS = Path(__file__).parent / "questions" / "agents-md.jsonl"


def side_by_side(rounds: int, **variants) -> dict[str, float]:
    """Median wall time (us) of each variant, run in turn each round."""
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1e6)
    return {k: statistics.median(v) for k, v in times.items()}


def show(title: str, result: dict[str, float], per: int = 1) -> None:
    first = next(iter(result.values()))
    print(title)
    for name, us in result.items():
        print(f"  {name:34s} {us / per:10.1f} us   {us / first:6.2f}x")


def main() -> None:
    store = StoreRoot(Path(sys.argv[1]).resolve())
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    print(f"store {store.root}, {rounds} interleaved rounds, load {os.getloadavg()[0]:.1f}")

    queries = [json.loads(line)["q"] for line in QUESTIONS.read_text().splitlines() if line]
    queries = [q.split() for q in queries if q.isascii()]
    conn = sqlite3.connect(":memory:")
    for q in queries:  # the two agree, so the comparison is of equals
        assert terms._tokenize(conn, q) == terms._fts5_tokens(conn, q), q
    show(f"query terms, per query ({len(queries)} ASCII questions)", side_by_side(
        rounds, porter_py=lambda: [terms._tokenize(conn, q) for q in queries],
        fts5_scratch_tables=lambda: [terms._fts5_tokens(conn, q) for q in queries]),
        per=len(queries))

    summary = store.root / ".cardmem" / pile_view.SUMMARY
    project = next(iter(sorted(os.listdir(store.root / "projects"))))

    def without_summary() -> None:
        summary.unlink(missing_ok=True)
        pile_view.holdings(store, project)

    pile_view.holdings(store, project)
    show(f"session pile's holdings (project {project})", side_by_side(
        rounds, summary_cache=lambda: pile_view.holdings(store, project),
        recomputed=without_summary))

    cache = store.root / ".cardmem" / recent.RECENT_CACHE

    def without_recent_cache() -> None:
        cache.unlink(missing_ok=True)
        recent._recent(store)

    recent._recent(store)
    show("recent changes", side_by_side(
        rounds, per_head_and_day=lambda: recent._recent(store), from_git=without_recent_cache))

    root = str(store.root)
    show("HEAD's commit", side_by_side(
        rounds, from_head_file=lambda: head_file.head(root),
        git_rev_parse=lambda: subprocess.run(["git", "-C", root, "rev-parse", "HEAD"],
                                             capture_output=True, check=True)))

    question = "как выпустить новую версию zod"
    terms.tokens(conn, question)

    def uncached() -> None:
        terms._TOKENS.clear()
        terms.tokens(conn, question)

    show(f"a repeated non-ASCII query's terms ({question!r})", side_by_side(
        rounds, token_cache=lambda: terms.tokens(conn, question), tokenized_anew=uncached))

    import fnmatch

    from cardmem.store.rules import match

    patterns = ["git push --force*", "git push -f*", "rm -rf *", "terraform apply*",
                "kubectl delete *", "npm publish*", "git reset --hard*", "docker push *",
                "make deploy*", "psql * -c *drop*"]
    lines = ["ls -la src", "git status", "git push --force origin main", "make test"]

    def with_fnmatch() -> None:
        fnmatch._compile_pattern.cache_clear()  # a new hook process starts with none
        [fnmatch.fnmatchcase(t, p) for t in lines for p in patterns]

    assert [match.fnmatchcase(t, p) for t in lines for p in patterns] == \
        [fnmatch.fnmatchcase(t, p) for t in lines for p in patterns]
    show(f"{len(lines)} commands against {len(patterns)} rule globs", side_by_side(
        rounds, hook_matcher=lambda: [match.fnmatchcase(t, p) for t in lines for p in patterns],
        fnmatch_cold=with_fnmatch))


if __name__ == "__main__":
    main()
