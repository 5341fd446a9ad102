"""Calibrate the relevance threshold of rules without `applies_to` (issue 21).

    python bench/calibrate_relevance.py [--write bench/RESULTS.md]

Compiles the labelled rules of tests/store/search/relevance_set.py into a trigger table, scores
every labelled tool call, and sweeps the threshold: a call counts as a true positive when
the one rule brought up is the labelled one, a false positive when a rule comes up for a
call labelled with another rule or with none. Precision = TP / (TP + FP); recall = TP /
calls labelled with a rule. The shipped threshold is store/rules/triggers.py THRESHOLD.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "store" / "search"))
sys.path.insert(0, str(HERE))

from relevance_set import CALLS, RULES  # noqa: E402
from results import write_section  # noqa: E402

from cardmem.store.rules.match import decide  # noqa: E402
from cardmem.store.rules.triggers import THRESHOLD, compile_rules  # noqa: E402

SECTION = "## Relevance of rules without applies_to (issue 21)"


def table() -> dict:
    root = Path(tempfile.mkdtemp(prefix="cardmem-relevance-"))
    cards = []
    for cid, title, aliases, tags in RULES:
        p = root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: {title!r}\ntype: feedback\n---\n{title}.\n")
        cards.append(SimpleNamespace(id=cid, title=title, aliases=aliases, tags=tags,
                                     project=None))
    return compile_rules(root, cards, {})


def evaluate(t: dict, threshold: float) -> dict:
    tp = fp = 0
    wrong = []
    for tool, inp, want in CALLS:
        got = [f["id"] for f in decide(t, tool, inp, "/repo", threshold=threshold)]
        if got and got[0] == want:
            tp += 1
        elif got:
            fp += 1
            wrong.append((inp, got[0], want))
    pos = sum(1 for *_, w in CALLS if w)
    return {"threshold": threshold, "tp": tp, "fp": fp,
            "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / pos, "wrong": wrong}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()
    t = table()
    rows = [evaluate(t, th / 100) for th in range(20, 105, 5)]
    lines = ["| threshold | fired | precision | recall |", "|---|---|---|---|"]
    for r in rows:
        mark = " (shipped)" if abs(r["threshold"] - THRESHOLD) < 1e-9 else ""
        lines.append(f"| {r['threshold']:.2f}{mark} | {r['tp'] + r['fp']} | "
                     f"{r['precision']:.2f} | {r['recall']:.2f} |")
    print("\n".join(lines))
    chosen = evaluate(t, THRESHOLD)
    for inp, got, want in chosen["wrong"]:
        print(f"false positive at {THRESHOLD}: {inp} -> {got} (labelled {want})")
    if args.write:
        pos = sum(1 for *_, w in CALLS if w)
        text = (f"{SECTION}\n\n{len(RULES)} rules without applies_to, {len(CALLS)} labelled tool "
                f"calls ({pos} with a rule a careful reader would bring up, "
                f"{len(CALLS) - pos} with none; tests/store/search/relevance_set.py). One reminder at "
                "most per call; a true positive is the labelled rule, anything else brought "
                "up is a false positive. `python bench/calibrate_relevance.py`.\n\n"
                + "\n".join(lines) + "\n\nAt the shipped threshold "
                f"{THRESHOLD}: precision {chosen['precision']:.2f}, recall "
                f"{chosen['recall']:.2f}; false positives: "
                + ("; ".join(f"`{i.get('command') or i.get('file_path')}` -> {g}"
                             for i, g, _ in chosen["wrong"]) or "none") + ".\n")
        write_section(args.write, SECTION, text)


if __name__ == "__main__":
    main()
