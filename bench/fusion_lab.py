"""Fit the fusion's constants (store/search/hybrid.py) on design data only (issue 27).

    python bench/fusion_lab.py [--convs design] [--split calib]

Asks every design question once, keeping what the fusion sees (the lexical pool and the
similarity of every card in it or near the query), then replays hybrid.fuse() over a grid
of constants and prints the measures for each: LoCoMo session and turn recall, agents-md
calib hit@1/hit@5/confident/negatives. The check conversations and the agents-md test
half are never read here.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_locomo as bl  # noqa: E402


def collect(idx, model, q: str) -> tuple:
    from cardmem.store.search import hybrid, semantic
    from cardmem.store.search.search import run as lexical

    lex = lexical(idx, q, hybrid.POOL)
    sims = semantic.similarities(idx, model, q)
    return lex, Lazy(sims)


class Lazy:
    """Similarities recomputed from the kept rows when semantic's constants change."""

    def __init__(self, sims) -> None:
        self.rows, self.row_sims = sims._rows, sims._row_sims
        self.key, self.s = None, None

    def __getattr__(self, name):
        from cardmem.store.search import semantic
        key = (semantic.SECOND,)
        if self.key != key:
            self.s, self.key = semantic.Similarities(self.rows, self.row_sims), key
        return getattr(self.s, name)


def gather(convs, split: str, where: Path) -> dict[str, list]:
    from cardmem.store.search import embedding
    from cardmem.store.index.db import Index
    from cardmem.store.root import StoreRoot
    import bench_quality as bq

    model = embedding.embedder()
    out: dict[str, list] = {"session": [], "turn": [], "agents": []}
    for shape in ("session", "turn"):
        for conv in convs:
            root, made = bl.build(where, conv, shape)
            bl.embed(root)
            with Index(StoreRoot.open(root)) as idx:
                idx.refresh()
                for q, ev, _ in bl.questions(bl.load(conv), shape, set(made)):
                    out[shape].append((idx, q, ev, collect(idx, model, q)))
    if split == "none":  # LoCoMo alone
        return out
    root = bq.build_store(where / "agents-md")
    bl.embed(root)
    idx = Index(StoreRoot.open(root))
    idx.refresh()
    for d in bq.questions(split):
        out["agents"].append((idx, d, collect(idx, model, d["q"])))
    return out


GATE = 1


def cut(res, limit: int) -> None:
    res.results = res.results[:limit]


def score(data: dict[str, list]) -> dict[str, float]:
    import copy

    from cardmem.store.search import hybrid

    got: dict[str, float] = {}
    skip = sum(not hybrid.needs_vectors(x[-1][0], x[1] if len(x) == 4 else x[1]["q"])
               for k in data for x in data[k])
    got["skipped"] = skip / sum(len(v) for v in data.values())
    for shape in ("session", "turn"):
        n = a1 = a5 = l5 = l10 = 0
        for idx, q, ev, (lex, sims) in data[shape]:
            res = copy.deepcopy(lex)
            hybrid.fuse(idx, res, sims, bl.LIMIT, None, None) if not GATE or hybrid.needs_vectors(res, q) else cut(res, bl.LIMIT)
            ids = [r["id"] for r in res.results]
            n += 1
            a1 += bool(set(ids[:1]) & ev)
            a5 += bool(set(ids[:5]) & ev)
            l5 += ev <= set(ids[:5])
            l10 += ev <= set(ids[:10])
        got[f"{shape} any@1"], got[f"{shape} any@5"], got[f"{shape} all@5"] = (
            a1 / n, a5 / n, l5 / n)
        got[f"{shape} all@10"] = l10 / n
    import bench_quality as bq

    qs, results = [], []
    for idx, d, (lex, sims) in data["agents"]:
        res = copy.deepcopy(lex)
        hybrid.fuse(idx, res, sims, 5, None, None) if not GATE or hybrid.needs_vectors(res, d["q"]) else cut(res, 5)
        qs.append(d)
        results.append(res.as_dict())
    if not qs:
        return got
    judged = bq.judge(qs, results)
    a, o = judged["all"], judged.get("other-language", {})
    got.update({"md hit@1": a["hit1"], "md hit@5": a["hit5"], "md conf": a["conf_right"],
                "md neg": a["flagged"], "md other hit@1": o.get("hit1", 0.0),
                "md other hit@5": o.get("hit5", 0.0)})
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convs", default="design")
    ap.add_argument("--split", default="calib", choices=("calib",))
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "cardmem-locomo")
    ap.add_argument("--grid", default="", help="NAME=v1,v2;NAME2=... over hybrid's constants")
    args = ap.parse_args()
    convs = bl.DESIGN if args.convs == "design" else tuple(args.convs.split(","))
    assert not set(convs) & set(bl.CHECK), "the check conversations are not for fitting"
    from cardmem.store.search import hybrid

    data = gather(convs, args.split, args.dir)
    diagnose(data)
    grid = [(k, [float(v) for v in vs.split(",")]) for k, vs in
            (part.split("=") for part in args.grid.split(";") if part)]
    names = [k for k, _ in grid]
    for values in itertools.product(*[vs for _, vs in grid]) if grid else [()]:
        for k, v in zip(names, values):
            if k == "GATE":
                globals()["GATE"] = v
            elif k.startswith("semantic."):
                from cardmem.store.search import semantic
                setattr(semantic, k.split(".", 1)[1], v)
            elif k.startswith("confidence."):
                from cardmem.store.search import confidence
                setattr(confidence, k.split(".", 1)[1], v)
            else:
                setattr(hybrid, k, v)
        got = score(data)
        print(" ".join(f"{k}={v:g}" for k, v in zip(names, values)), "|",
              " ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)


def diagnose(data: dict[str, list]) -> dict[str, float]:
    """Recall of the vectors alone (card-level best row) and of the lexical pool alone
    (printed, and returned by name)."""
    out: dict[str, float] = {}
    for shape in ("session", "turn"):
        n = s1 = s5 = l1 = l5 = 0
        for idx, q, ev, (lex, sims) in data[shape]:
            by_n = {v: k for k, v in lex.rowids.items()}
            ids = [r["id"] for r in lex.results]
            near = sims.top(10)
            names = dict(idx.conn.execute("SELECT n, id FROM cards"))
            sem = [names[k] for k, _ in near]
            n += 1
            s1 += bool(set(sem[:1]) & ev)
            s5 += bool(set(sem[:5]) & ev)
            l1 += bool(set(ids[:1]) & ev)
            l5 += bool(set(ids[:5]) & ev)
        print(f"{shape}: vectors any@1 {s1/n:.3f} any@5 {s5/n:.3f}; lexical pool any@1 {l1/n:.3f} any@5 {l5/n:.3f}")
        out.update({f"{shape} vec any@1": s1 / n, f"{shape} vec any@5": s5 / n,
                    f"{shape} lex any@1": l1 / n, f"{shape} lex any@5": l5 / n})
    return out


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
