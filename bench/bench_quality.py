"""Search quality on a labelled question set (issue 16): hit@1, hit@5, confident-and-right,
negatives flagged, per kind of question.

    python bench/bench_quality.py [--split all|calib|test] [--mode lexical|fused] [--json]

The set is bench/questions/agents-md.jsonl: questions over the agents-md corpus (395 real
cards, /work/shared/corpus/agents-md), each labelled with the card(s) that answer it, or
none. Kinds: keyword, paraphrase, typo, ru/de/es/fr (another language about an English
card) and negative (the corpus cannot answer). The store is laid out as
tests/store/test_corpus.py does (projects/<owner>-<repo>/<slug>.md).

Measures, over the questions of a kind:
- hit@1 / hit@5: a labelled card is first / among the first five;
- confident-and-right: a labelled card is among the first five with confidence
  medium or high (what an agent following our instructions keeps);
- negatives flagged: a question with no answer comes back with no_confident_results.

Every question belongs to one of two fixed halves, `calib` and `test` (by a CRC of the
card it asks about, or of its text for a negative: the halves share no card and a
translation stays with its original): constants are fitted on calib only
(bench/fusion_lab.py, --fit here) and judged on test. The store is embedded before
anything is measured.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import zlib
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions" / "agents-md.jsonl"
CORPUS = next((p for p in (HERE.parent.parent / "shared" / "corpus" / "agents-md",
                           Path("/work/shared/corpus/agents-md")) if p.is_dir()),
              Path("/work/shared/corpus/agents-md"))
KINDS = ("keyword", "paraphrase", "typo", "ru", "de", "es", "fr", "negative")
OTHER = ("ru", "de", "es", "fr")


def card_id(stem: str) -> str:
    owner, repo, slug = stem.split("--", 2)
    return f"projects/{owner}-{repo}/{slug}"


def split_of(d: dict) -> str:
    """The question's half: by the card it asks about (so that the halves share no card,
    and a translation goes where its original goes), by its text when it asks about none
    (issue 32). `want` holds the corpus file stems, as in the JSON lines."""
    key = d["want"][0] if d["want"] else d["q"]
    return "calib" if zlib.crc32(key.encode()) % 2 == 0 else "test"


def questions(split: str = "all") -> list[dict]:
    out = []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            d["split"] = split_of(d)
            d["want"] = [card_id(s) for s in d["want"]]
            if split in ("all", d["split"]):
                out.append(d)
    return out


def build_store(where: Path) -> Path:
    """The corpus as a store under `where` (made once; reused when already there)."""
    from cardmem.store.store import init

    root = where / "store"
    if not (root / "cardmem.toml").exists():
        for src in sorted(CORPUS.glob("*--*.md")):
            owner, repo, slug = src.stem.split("--", 2)
            dest = root / "projects" / f"{owner}-{repo}" / f"{slug}.md"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        init(root)
    return root


def judge(qs: list[dict], results: list[dict]) -> dict[str, dict[str, float]]:
    """Per kind (and 'all', 'positive', 'other-language'): the four measures."""
    acc: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for q, res in zip(qs, results):
        got = res["results"][:5]
        ids = [r["id"] for r in got]
        groups = [q["kind"], "all"] + (["other-language"] if q["kind"] in OTHER else [])
        if q["want"]:
            groups.append("positive")
        for g in groups:
            a = acc[g]
            a["n"] += 1
            if not q["want"]:
                a["neg"] += 1
                a["flagged"] += bool(res["no_confident_results"])
                continue
            a["pos"] += 1
            a["hit1"] += bool(ids) and ids[0] in q["want"]
            a["hit5"] += any(i in q["want"] for i in ids)
            a["conf_right"] += any(r["id"] in q["want"] and r["confidence"] != "low" for r in got)
    out = {}
    for g, a in acc.items():
        row = {"n": a["n"]}
        if a["pos"]:
            row.update(hit1=a["hit1"] / a["pos"], hit5=a["hit5"] / a["pos"],
                       conf_right=a["conf_right"] / a["pos"])
        if a["neg"]:
            row["flagged"] = a["flagged"] / a["neg"]
        out[g] = row
    return out


def run(root: Path, qs: list[dict], semantic: bool = False) -> list[dict]:
    from cardmem.store.index.db import Index
    from cardmem.store.search.query import search_index
    from cardmem.store.root import StoreRoot

    out = []
    with Index(StoreRoot.open(root)) as idx:
        idx.refresh()
        if semantic:
            from cardmem.store.search import embedding, semantic as vectors

            model = embedding.embedder()
            if model is not None:
                vectors.sync(idx, model)  # every card embedded before anything is measured
        for q in qs:
            out.append(search_index(idx, q["q"], limit=5, semantic=semantic).as_dict())
    return out


def fit(root: Path) -> None:
    """Grid of (medium, high) coverage thresholds on the calib half: the best
    confident-and-right with at least 90% of negatives flagged."""
    from cardmem.store.search import confidence

    qs = questions("calib")
    rows = []
    for med in [x / 100 for x in range(40, 91, 4)]:
        confidence.COVER_MEDIUM, confidence.COVER_HIGH = med, max(med, 0.85)
        a = judge(qs, run(root, qs))["all"]
        rows.append((a["flagged"] >= 0.9, a["conf_right"], a["flagged"], a["hit1"], med))
        print(f"medium >= {med:.2f}: confident & right {a['conf_right']:.2f}, "
              f"negatives flagged {a['flagged']:.2f}, hit@1 {a['hit1']:.2f}")
    best = max(rows)
    print(f"chosen: COVER_MEDIUM = {best[-1]:.2f}")


def table(scores: dict[str, dict[str, float]], title: str = "") -> str:
    def pct(row: dict, key: str) -> str:
        return f"{100 * row[key]:.0f}%" if key in row else "–"

    lines = [f"| {title or 'kind'} | n | hit@1 | hit@5 | confident & right | negatives flagged |",
             "|---|---|---|---|---|---|"]
    for g in (*KINDS, "other-language", "positive", "all"):
        if g in scores:
            r = scores[g]
            lines.append(f"| {g} | {r['n']} | {pct(r, 'hit1')} | {pct(r, 'hit5')} | "
                         f"{pct(r, 'conf_right')} | {pct(r, 'flagged')} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("all", "calib", "test"), default="all")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "cardmem-quality")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mode", choices=("lexical", "fused"), default="fused",
                    help="FTS5 alone, or fused with the semantic layer (the default search)")
    ap.add_argument("--fit", action="store_true",
                    help="sweep store/search/confidence.py's lexical thresholds on the calib half")
    ap.add_argument("--misses", action="store_true", help="list the questions missed")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    root = build_store(args.dir)
    if args.fit:
        fit(root)
        return
    qs = questions(args.split)
    results = run(root, qs, semantic=args.mode == "fused")
    scores = judge(qs, results)
    if args.json:
        print(json.dumps(scores, indent=1))
    else:
        print(f"{len(qs)} questions ({args.split}, {args.mode}), corpus {CORPUS}")
        print(table(scores))
    if args.misses:
        for q, res in zip(qs, results):
            top = [(r["id"].split("/", 1)[1], r["confidence"]) for r in res["results"][:5]]
            ok = any(r["id"] in q["want"] for r in res["results"][:5])
            bad = (q["want"] and not ok) or (not q["want"] and not res["no_confident_results"])
            if bad or (q["want"] and ok and not any(
                    r["id"] in q["want"] and r["confidence"] != "low" for r in res["results"][:5])):
                print(f"[{q['kind']}] {q['q']!r} want={[w.split('/', 1)[1] for w in q['want']]}"
                      f" got={top[:3]}", file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
