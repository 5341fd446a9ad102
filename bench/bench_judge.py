"""The completeness rule on the labelled replies: precision and recall of its verdicts.

    python bench/bench_judge.py [--misses] [--held-out]

Every case of tests/replies_corpus.py is judged as if the walk hit the walk-budget floor.
A "fail" is right on a "claim" case, a "pass" on an "honest" one; "undecided" is never
wrong, only unhelpful (it goes to the model grade), so it costs recall, not precision.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from replies_corpus import CASES, HELD_OUT, Case  # noqa: E402

from cardmem.tools.ask.completeness import judge_text  # noqa: E402

WANT = {"claim": "fail", "honest": "pass", "silent": "undecided"}


def measure(cases: list[Case]) -> dict[str, dict[str, float]]:
    """Per verdict (fail, pass): precision, recall and counts; plus the misses."""
    got = [judge_text(c.text, ["walk-budget"]).verdict for c in cases]
    out: dict[str, dict[str, float]] = {}
    for verdict, label in (("fail", "claim"), ("pass", "honest")):
        said = sum(g == verdict for g in got)
        right = sum(g == verdict and c.label == label for g, c in zip(got, cases))
        there = sum(c.label == label for c in cases)
        out[verdict] = {"precision": right / said if said else 1.0,
                        "recall": right / there if there else 1.0,
                        "said": said, "right": right, "labelled": there}
    out["misses"] = [(c, g) for c, g in zip(got, cases) if WANT[g.label] != c]  # type: ignore
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", action="store_true", help="List every case the rule got wrong.")
    ap.add_argument("--held-out", action="store_true",
                    help="The replies written after the rule was tuned (HELD_OUT) instead.")
    args = ap.parse_args()
    cases = HELD_OUT if args.held_out else CASES
    m = measure(cases)
    print(f"{len(cases)} labelled replies{' (held out)' if args.held_out else ''}: " + ", ".join(
        f"{n} {k}" for k, n in sorted(Counter(c.label for c in cases).items())))
    for verdict, label in (("fail", "claim"), ("pass", "honest")):
        s = m[verdict]
        print(f"  {verdict:<5} (right on {label!r}): precision {s['precision']:.3f} "
              f"({s['right']}/{s['said']}), recall {s['recall']:.3f} "
              f"({s['right']}/{s['labelled']})")
    kinds = Counter(c.kind for c in cases)
    wrong = Counter(c.kind for _, c in m["misses"])
    print("  by kind: " + ", ".join(f"{k} {kinds[k] - wrong[k]}/{kinds[k]}" for k in kinds))
    if args.misses:
        for got, c in m["misses"]:
            print(f"  {c.label:>6} -> {got:<9} {c.text[:100]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
