"""Fit the fusion's constants (store/search/hybrid.py) on design data only (issue 27).

    python bench/fusion_lab.py [--convs design] [--split calib] [--dir D] [--grid ...]
                               [--context-vectors base|mean|3-mean|row] [--misses-at-1]

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


CONTENT_QUERY = False  # --content-query: the model sees the question without function words


def content_words(q: str) -> str:
    from cardmem.store.search.terms import STOPWORDS

    kept = [w for w in q.split() if w.lower().strip("?.,!\"'") not in STOPWORDS]
    return " ".join(kept) or q


def collect(idx, model, q: str) -> tuple:
    from cardmem.store.search import hybrid, semantic
    from cardmem.store.search.search import run as lexical

    lex = lexical(idx, q, hybrid.POOL)
    sims = semantic.similarities(idx, model, content_words(q) if CONTENT_QUERY else q)
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


CONTEXT_VECTORS = ("base", "mean", "3-mean", "row")


def context_vectors(data: dict[str, list], how: str) -> None:
    """Turn questions' similarities replaced by vectors made in this process (float, not
    the index's int8 rows) where a short card of a sequence is embedded with the body of
    the card before it (neighbours.steps): `base` the recipe as it is (card_text's two
    texts, their mean), `mean` the name and (previous body, own body) averaged, `3-mean`
    the name, own and context texts averaged, `row` the context text as a second row."""
    import time

    import numpy as np

    from cardmem.store.index.schema import COLUMNS
    from cardmem.store.search import embedding, neighbours, semantic

    model = embedding.embedder()
    stores: dict[int, tuple] = {}
    spent = 0.0
    for idx, *_ in data["turn"]:
        if id(idx) in stores:
            continue
        rows = list(idx.conn.execute(
            "SELECT c.n, c.id, c.title, c.project, c.description, f.c{}, c.size FROM cards c"
            " JOIN fts_content f ON f.id = c.n ORDER BY c.n".format(COLUMNS.index("body"))))
        body_of = {r[1]: r[5] for r in rows}
        head_t, own_t, ctx_t = [], [], []
        for n, cid, title, proj, desc, body, size in rows:
            head, whole = semantic.card_text(title, proj, desc, body)
            prev = next((nb for nb, off in neighbours.steps(cid) if off == -1), None)
            before = body_of.get(prev) if prev and size <= neighbours.SHORT else None
            head_t.append(head)
            own_t.append(whole)
            ctx_t.append(f"{head}. {' '.join(before.split())} {' '.join(body.split())}"
                         if before else whole)
        t0 = time.process_time()
        k = len(rows)
        e = model.encode(head_t + own_t + (ctx_t if how != "base" else []))
        spent += time.process_time() - t0
        unit = lambda m: m / np.linalg.norm(m, axis=1, keepdims=True)  # noqa: E731
        h, o, c = e[:k], e[k:2 * k], e[2 * k:]
        ids = np.array([r[0] for r in rows])
        mats = {"base": lambda: [unit((h + o) / 2)], "mean": lambda: [unit((h + c) / 2)],
                "3-mean": lambda: [unit((h + o + c) / 3)],
                "row": lambda: [unit((h + o) / 2), c]}[how]()
        stores[id(idx)] = (np.repeat(ids, len(mats)),
                           np.stack(mats, axis=1).reshape(-1, e.shape[1]))
    print(f"context vectors ({how}): embedded in {spent:.1f} s CPU", flush=True)
    out = []
    for idx, q, ev, (lex, _) in data["turn"]:
        ids, m = stores[id(idx)]
        sims = (m @ model.query(q)).astype(np.float32)
        out.append((idx, q, ev, (lex, semantic.Similarities(ids, sims))))
    data["turn"] = out


GATE = 1
RELEX = False  # --relex: the words searched again at each grid point (lexical constants)


def lexical_pool(idx, q: str, kept):
    """The lexical pool: the one gathered, or (--relex) a new search with the constants
    of this grid point."""
    if not RELEX:
        return kept
    from cardmem.store.search import hybrid
    from cardmem.store.search.search import run as lexical

    return lexical(idx, q, hybrid.POOL)


# Stop-word lists tried on questions (STOP=n): the index's own, and it with the common
# English function words of bench_locomo's baseline (NLTK's list, abridged).
_STOPS: list = []


def set_lexical(name: str, v: float) -> None:
    from cardmem.store.index import schema
    from cardmem.store.search import candidates, terms

    if name == "STOP":
        if not _STOPS:
            _STOPS.append(terms.STOPWORDS)
        terms.STOPWORDS = _STOPS[0] | (bl.STOP if v else frozenset())
    elif name.startswith("W_"):  # a bm25 column weight: W_title=5
        col = name[2:]
        w = list(schema.WEIGHTS)
        w[schema.COLUMNS.index(col)] = v
        schema.WEIGHTS = tuple(w)
        candidates._BM25["fts"] = "bm25(fts, {})".format(", ".join(str(x) for x in w))
        candidates._BM25["names"] = f"bm25(names, {w[0]}, {w[1]})"
    else:
        raise SystemExit(f"fusion_lab: --grid: {name}: not a lexical constant")


DUMP: list = []  # --dump: each question's results, what the confidence sees


def dump(kind: str, q: str, res, right: list[bool]) -> None:
    if DUMP and DUMP[0] is not None:
        import json

        DUMP[0].write(json.dumps({"kind": kind, "q": q, "right": right, "results": [
            {k: r.get(k) for k in ("id", "confidence", "score", "similarity", "match", "matched")}
            | {"cover": res.cover.get(r["id"], 0.0), "unique": r["id"] in res.unique}
            for r in res.results]}) + "\n")


def labels(rows: list, label_of) -> str:
    """How often the first result is right, by its label: 'high .92 (12), ...'."""
    acc: dict = {}
    for lab, right in rows:
        a = acc.setdefault(lab, [0, 0])
        a[0] += 1
        a[1] += right
    return ", ".join(f"{k} {r / n:.2f} ({n})" for k in ("high", "medium", "low")
                     if k in acc for n, r in [acc[k]])


def cut(res, limit: int) -> None:
    res.results = res.results[:limit]


def score(data: dict[str, list]) -> dict[str, float]:
    import copy

    from cardmem.store.search import hybrid

    got: dict[str, float] = {}
    skip = sum(not hybrid.needs_vectors(x[-1][0], x[1] if len(x) == 4 else x[1]["q"])
               for k in data for x in data[k])
    got["skipped"] = skip / sum(len(v) for v in data.values())
    firsts: dict[str, list] = {}
    for shape in ("session", "turn"):
        n = a1 = a5 = l5 = l10 = 0
        for idx, q, ev, (lex, sims) in data[shape]:
            res = copy.deepcopy(lexical_pool(idx, q, lex))
            hybrid.fuse(idx, res, sims, bl.LIMIT, None, None) if not GATE or hybrid.needs_vectors(res, q) else cut(res, bl.LIMIT)
            ids = [r["id"] for r in res.results]
            if ids:
                firsts.setdefault(shape, []).append((res.results[0]["confidence"], ids[0] in ev))
                dump(shape, q, res, [i in ev for i in ids])
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
        res = copy.deepcopy(lexical_pool(idx, d["q"], lex))
        hybrid.fuse(idx, res, sims, 5, None, None) if not GATE or hybrid.needs_vectors(res, d["q"]) else cut(res, 5)
        qs.append(d)
        results.append(res.as_dict())
        dump("md-neg" if not d["want"] else "md-other" if d["kind"] in bq.OTHER else "md",
             d["q"], res, [r["id"] in d["want"] for r in res.results])
        if res.results:
            kind = "md-other" if d["kind"] in bq.OTHER else "md"
            firsts.setdefault(kind, []).append((res.results[0]["confidence"],
                                                res.results[0]["id"] in d["want"]))
    got["labels"] = "; ".join(f"{k}: {labels(v, None)}" for k, v in firsts.items())
    if not qs:
        return got
    judged = bq.judge(qs, results)
    a, o = judged["all"], judged.get("other-language", {})
    got.update({"md hit@1": a["hit1"], "md hit@5": a["hit5"], "md conf": a["conf_right"],
                "md neg": a["flagged"], "md other hit@1": o.get("hit1", 0.0),
                "md other hit@5": o.get("hit5", 0.0)})
    return got


def misses_at_1(data: dict[str, list]) -> None:
    """Where the evidence is when the fused first result is not it (design, both shapes):
    its fused rank, whether the words' or the vectors' own first had it, and what the card
    that beat it is (how it came, lifted by a neighbour or a dialog's best turn, longer)."""
    import collections
    import copy

    from cardmem.store.search import dialog, hybrid

    seen: dict[str, dict] = {}
    lend, spread = dialog.lend, hybrid._lend

    def lend_seen(idx, q, fused):
        seen["pre"] = {r["id"]: r["score"] for r in fused.values()}
        lend(idx, q, fused)

    def spread_seen(idx, fused, *args):
        seen["lent"] = {r["id"]: r["score"] for r in fused.values()}
        spread(idx, fused, *args)

    dialog.lend, hybrid._lend = lend_seen, spread_seen
    try:
        for shape in ("session", "turn"):
            c: collections.Counter = collections.Counter()
            for idx, q, ev, (lex, sims) in data[shape]:
                seen.clear()
                res = copy.deepcopy(lex)
                hybrid.fuse(idx, res, sims, bl.LIMIT, None, None)
                ids = [r["id"] for r in res.results]
                c["questions"] += 1
                if not ids or ids[0] in ev:
                    continue
                names = dict(idx.conn.execute("SELECT n, id FROM cards"))
                size = dict(idx.conn.execute("SELECT id, size FROM cards"))
                at = next((i for i, x in enumerate(ids) if x in ev), None)
                w = res.results[0]
                pre, lent = seen.get("pre", {}), seen.get("lent", {})
                c["missed"] += 1
                c["evidence " + ("2nd" if at == 1 else "3rd-5th" if at is not None and at < 5
                                 else "6th-10th" if at is not None else "not in 10")] += 1
                c["the words' first had it"] += bool(lex.results) and lex.results[0]["id"] in ev
                near = sims.top(1)
                c["the vectors' first had it"] += bool(near) and names[near[0][0]] in ev
                c[f"the winner came as {w['match']}"] += 1
                c["the winner lifted by a neighbour"] += w["score"] > lent.get(w["id"], w["score"])
                c["the winner lifted by its best turn"] += lent.get(w["id"], 0) > pre.get(w["id"], 1e9)
                c["the winner longer than the evidence"] += at is not None and (
                    size[w["id"]] > size[ids[at]])
            print(f"misses at 1, {shape}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    finally:
        dialog.lend, hybrid._lend = lend, spread


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convs", default="design")
    ap.add_argument("--split", default="calib", choices=("calib",))
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "cardmem-locomo")
    ap.add_argument("--grid", default="", help="NAME=v1,v2;NAME2=... over hybrid's constants")
    ap.add_argument("--content-query", action="store_true",
                    help="embed the question without its function words (terms.STOPWORDS)")
    ap.add_argument("--context-vectors", choices=CONTEXT_VECTORS,
                    help="turn cards' vectors made here, with the previous card's text")
    ap.add_argument("--dump", type=Path, help="write each question's fused results (JSON lines)")
    ap.add_argument("--misses-at-1", action="store_true",
                    help="where the evidence is when the first result is not it")
    ap.add_argument("--relex", action="store_true",
                    help="search the words again at each grid point (lexical constants:"
                         " STOP=0,1 the stop words, W_title=... a bm25 column weight)")
    args = ap.parse_args()
    globals()["RELEX"] = args.relex
    globals()["CONTENT_QUERY"] = args.content_query
    DUMP.append(args.dump.open("w", encoding="utf-8") if args.dump else None)
    convs = bl.DESIGN if args.convs == "design" else tuple(args.convs.split(","))
    assert not set(convs) & set(bl.CHECK), "the check conversations are not for fitting"
    from cardmem.store.search import hybrid

    data = gather(convs, args.split, args.dir)
    if args.context_vectors:
        context_vectors(data, args.context_vectors)
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
            elif k == "STOP" or k.startswith("W_"):
                set_lexical(k, v)
            elif "." in k:  # module.NAME of store/search
                import importlib
                mod, name = k.split(".", 1)
                setattr(importlib.import_module(f"cardmem.store.search.{mod}"), name, v)
            else:
                setattr(hybrid, k, int(v) if k == "POOL" else v)
        if args.misses_at_1:
            misses_at_1(data)
        got = score(data)
        lab = got.pop("labels")
        print(" ".join(f"{k}={v:g}" for k, v in zip(names, values)), "|",
              " ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)
        print("    first result right, by label:", lab, flush=True)


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
