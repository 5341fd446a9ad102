"""How far can issue 27's targets be reached with a second model beside USE? (design data only)

    python bench/reach_lab.py [--dir D] [--grid "LAM=0,0.5,1;SEMANTIC_WEIGHT=2.5,4"]
                              [--convs design] [--agents-md calib|none]
    python bench/reach_lab.py --cost [--store /tmp/mcpfast/10000]

Asks every design question (LoCoMo conv-26/30/41, session and turn cards; the agents-md
calib half) twice, once against a store embedded by USE (DIR/use) and once against the
same cards embedded by multilingual-e5-small (DIR/e5, bench_models.E5), then:

- the oracle reach of each set of signals (words = the lexical pool's order, use, e5, and
  the product's fused search `fused`): any@1 when one signal's first card holds evidence,
  any@5 when one signal's first five do, all@5 when each evidence card is in some
  signal's first five (bench/RESULTS.md, "Session cards toward issue 27's targets"), and
  "one signal's five" when one signal alone has them all in its first five (what a
  perfect switch between the signals would reach); then where the fused search's all@5
  misses have their evidence, and rank fusion of the signals (RRF);
- the product's fused search (fusion_lab.score, hybrid.fuse) with the similarity
  (1 - LAM) x USE's + LAM x e5's (e5's cosines mapped linearly onto USE's scale, the map
  fitted here on these design questions as bench_models.fit_affine does): LAM 0 is the
  product as it is, 1 is e5 instead of USE; over a grid of LAM and hybrid / confidence
  constants (NAME=v1,v2;... as fusion_lab's --grid, LAM included).

The check conversations and the agents-md test half are never read here: run
bench_locomo.py on them once, with constants fixed, for a change that wins.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_locomo as bl  # noqa: E402
import bench_models as bm  # noqa: E402
import fusion_lab as fl  # noqa: E402


class Mix:
    """Card similarities for hybrid.fuse: (1 - lam) x one model's + lam x another's (the
    second already keyed by the first store's rowids: rekey())."""

    def __init__(self, first, second, lam: float) -> None:
        import numpy as np

        self.a, self.ids = first, first.ids
        other = dict(zip(second.ids.tolist(), second.sims.tolist()))
        other_best = dict(zip(second.ids.tolist(), second.best.tolist()))
        b = np.array([other.get(int(n), 0.0) for n in self.ids], dtype=np.float32)
        bb = np.array([other_best.get(int(n), 0.0) for n in self.ids], dtype=np.float32)
        self.sims = (1 - lam) * first.sims + lam * b
        self.best = (1 - lam) * first.best + lam * bb

    def __len__(self) -> int:
        return len(self.ids)

    def passage(self, n: int) -> int:
        return self.a.passage(n)

    def top(self, k: int) -> list[tuple[int, float]]:
        import numpy as np

        v = self.sims
        if k <= 0 or not len(v):
            return []
        pos = np.lexsort((np.arange(len(v)), -v))[:k]
        return list(zip(self.ids[pos].tolist(), v[pos].tolist()))

    def get(self, n: int, default: float = 0.0, best: bool = False) -> float:
        import numpy as np

        at = int(np.searchsorted(self.ids, n))
        v = self.best if best else self.sims
        return float(v[at]) if at < len(self.ids) and self.ids[at] == n else default


def gather(convs, split: str, where: Path) -> tuple[dict, dict]:
    """(USE's gathered data, e5's), each as fusion_lab.gather returns it, same order."""
    from cardmem.store.search import embedding

    embedding.reset()
    embedding.LOADER = None
    use = fl.gather(convs, split, where / "use")
    embedding.reset()
    embedding.LOADER = bm.E5
    e5 = fl.gather(convs, split, where / "e5")
    embedding.LOADER = None
    embedding.reset()
    return use, e5


def rekey(sims, src, dest) -> SimpleNamespace:
    """`sims` (ids, sims, best by rowid of the store `src`) by the rowids of the store
    `dest` holding the same cards (by id), ascending."""
    import numpy as np

    name = dict(src.conn.execute("SELECT n, id FROM cards"))
    rowid = {cid: n for n, cid in dest.conn.execute("SELECT n, id FROM cards")}
    pairs = sorted((rowid[name[int(n)]], s, b) for n, s, b in zip(sims.ids, sims.sims, sims.best)
                   if name[int(n)] in rowid)
    return SimpleNamespace(ids=np.array([p[0] for p in pairs], dtype=np.int64),
                           sims=np.array([p[1] for p in pairs], dtype=np.float32),
                           best=np.array([p[2] for p in pairs], dtype=np.float32))


def pair(use: dict, e5: dict) -> dict[str, list]:
    """Per question: (use idx, q, ev, lexical pool, USE's similarities, e5's rekeyed)."""
    out: dict[str, list] = {}
    for shape in use:
        rows = []
        for a, b in zip(use[shape], e5[shape]):
            assert (a[1] if shape != "agents" else a[1]["q"]) == (
                b[1] if shape != "agents" else b[1]["q"])
            sims_e5 = rekey(b[-1][1], b[0], a[0])
            rows.append((a, sims_e5))
        out[shape] = rows
    return out


# E5_WHEN (grid): which questions the second model is mixed into: 0 every one, 1 those
# whose lexical first result is not labelled high, 2 those whose is low (or no result).
E5_WHEN = 0


def weak(lex) -> bool:
    top = lex.results[0]["confidence"] if lex.results else "low"
    return E5_WHEN == 0 or top != "high" and (E5_WHEN == 1 or top == "low")


def as_fusion_lab(paired: dict[str, list], lam: float) -> dict[str, list]:
    """fusion_lab's data shape with Mix similarities at this LAM (E5_WHEN's questions)."""
    out: dict[str, list] = {}
    for shape, rows in paired.items():
        got = []
        for a, sims_e5 in rows:
            lex, sims_use = a[-1]
            mix = sims_use if lam == 0 or not weak(lex) else Mix(sims_use, sims_e5, lam)
            got.append((*a[:-1], (lex, mix)))
        out[shape] = got
    return out


# --- oracle ----------------------------------------------------------------------------------

SIGNALS = ("words", "use", "e5", "fused")
RRF = ({"words": 1, "use": 1}, {"words": 1, "e5": 1}, {"words": 1, "use": 1, "e5": 1},
       {"words": 2, "use": 1, "e5": 1}, {"fused": 2, "e5": 1}, {"fused": 3, "e5": 1},
       {"fused": 4, "e5": 1}, {"fused": 1})
DEPTH = 20  # each signal's first cards kept (the fusion's pool)
SETS = (("words",), ("use",), ("e5",), ("fused",), ("words", "use"), ("words", "e5"),
        ("use", "e5"), ("words", "use", "e5"), ("words", "use", "e5", "fused"))


def rankings(paired: dict[str, list]) -> dict[str, list]:
    """Per LoCoMo question: (evidence, {signal: its first 10 card ids})."""
    import copy

    import numpy as np

    from cardmem.store.search import hybrid

    out: dict[str, list] = {}
    for shape in ("session", "turn"):
        rows = []
        for a, sims_e5 in paired[shape]:
            idx, q, ev, (lex, sims_use) = a
            names = dict(idx.conn.execute("SELECT n, id FROM cards"))
            res = copy.deepcopy(lex)
            if hybrid.needs_vectors(res, q):
                hybrid.fuse(idx, res, sims_use, DEPTH, None, None)
            rows.append((ev, {
                "words": [r["id"] for r in lex.results][:DEPTH],
                "use": [names[n] for n, _ in sims_use.top(DEPTH)],
                "e5": [names[int(n)] for n in sims_e5.ids[
                    np.lexsort((sims_e5.ids, -sims_e5.sims))[:DEPTH]]],
                "fused": [r["id"] for r in res.results][:DEPTH]}))
        out[shape] = rows
    return out


def oracle(rows: list, signals: tuple[str, ...]) -> dict[str, float]:
    n = len(rows)
    a1 = sum(any(set(r[s][:1]) & ev for s in signals) for ev, r in rows)
    a5 = sum(any(set(r[s][:5]) & ev for s in signals) for ev, r in rows)
    l5 = sum(ev <= set().union(*(r[s][:5] for s in signals)) for ev, r in rows)
    one = sum(any(ev <= set(r[s][:5]) for s in signals) for ev, r in rows)
    return {"any@1": a1 / n, "any@5": a5 / n, "all@5": l5 / n, "all@5 one": one / n}


def rrf(rows: list, weights: dict[str, float], k: float) -> dict[str, float]:
    """Reciprocal rank fusion of the signals' rankings (weight / (k + rank)), measured."""
    n = a1 = a5 = l5 = 0
    for ev, r in rows:
        score: dict[str, float] = {}
        for s, w in weights.items():
            for rank, cid in enumerate(r[s], 1):
                score[cid] = score.get(cid, 0.0) + w / (k + rank)
        top = sorted(score, key=lambda c: -score[c])[:5]
        n += 1
        a1 += bool(set(top[:1]) & ev)
        a5 += bool(set(top) & ev)
        l5 += ev <= set(top)
    return {"any@1": a1 / n, "any@5": a5 / n, "all@5": l5 / n}


def misses(rows: list, signal: str = "fused") -> None:
    """Questions whose evidence is not all in the signal's first five: by how many
    evidence cards they have, and where the missing ones are in each signal."""
    by: dict[int, list[int]] = {}
    where: dict[str, list[int]] = {s: [0, 0, 0] for s in SIGNALS}
    for ev, r in rows:
        k = min(len(ev), 3)
        b = by.setdefault(k, [0, 0])
        b[0] += 1
        if ev <= set(r[signal][:5]):
            continue
        b[1] += 1
        for cid in ev - set(r[signal][:5]):
            for s in SIGNALS:
                rank = r[s].index(cid) if cid in r[s] else 99
                where[s][0 if rank < 5 else 1 if rank < 10 else 2] += 1
    print(f"not all@5 by the {signal} search, by evidence cards (questions, missed): " +
          ", ".join(f"{'3+' if k == 3 else k}: {v[0]}, {v[1]}" for k, v in sorted(by.items())))
    for k in (10, 20):  # a perfect reader reordering the signal's first k
        ok = sum(len(ev) <= 5 and ev <= set(r[signal][:k]) for ev, r in rows) / len(rows)
        print(f"all@5 if its first {k} were put in the best order: {ok:.3f}")
    print("the evidence cards missing from its first five, rank in each signal"
          " (first 5 / 6-10 / past 10 or absent): " +
          "; ".join(f"{s} {v[0]}/{v[1]}/{v[2]}" for s, v in where.items()))


def report_oracle(ranks: dict[str, list]) -> None:
    for shape, rows in ranks.items():
        print(f"\noracle reach, {shape} cards ({len(rows)} questions)")
        print("| signals | any@1 | any@5 | all@5 | all@5, one signal's five |")
        print("|---|---|---|---|---|")
        for s in SETS:
            o = oracle(rows, s)
            print(f"| {'+'.join(s)} | {o['any@1']:.3f} | {o['any@5']:.3f} | {o['all@5']:.3f}"
                  f" | {o['all@5 one']:.3f} |")
        many = [(ev, r) for ev, r in rows if len(ev) >= 3]
        if many:
            full = oracle(many, SIGNALS)
            print(f"{len(many)} questions with 3+ evidence cards: all@5 fused "
                  f"{oracle(many, ('fused',))['all@5']:.3f}, any signal {full['all@5']:.3f}")
        misses(rows)
        for w in RRF:
            for k in (5, 20, 60):
                o = rrf(rows, w, k)
                print(f"rank fusion {w} k={k}: any@1 {o['any@1']:.3f} any@5 {o['any@5']:.3f}"
                      f" all@5 {o['all@5']:.3f}")
        sizes: dict[int, int] = {}
        for ev, _ in rows:
            sizes[len(ev)] = sizes.get(len(ev), 0) + 1
        print("evidence cards per question: " + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items())))


# --- cost ----------------------------------------------------------------------------------

def cost(rounds: int = 3, store: Path | None = None) -> None:
    """CPU per embedded card and per query, USE and e5 in this one process, paired: each
    round embeds the same LoCoMo session cards and asks the same questions with one model
    then the other. With `store` (a USE-embedded index, e.g. the 10k MCP bench store), the
    product of a query with a matrix of that many rows at each model's dimension too."""
    import sqlite3
    import time

    import numpy as np

    from cardmem.store.search import embedding
    from cardmem.store.search.semantic import card_texts

    d = bl.load("conv-26")
    cards = list(bl.cards(d, "session").values())[:6]
    texts = [card_texts(t, None, "", b) for t, b in cards]
    qs = [q for q, _, _ in bl.questions(d, "session", set(bl.cards(d, "session")))][:40]
    embedding.reset()
    models = {"use": embedding.Embedder(), "e5": bm.E5()}
    for m in models.values():
        m.query("warm")
    spent = {(n, w): [] for n in models for w in ("card", "query", "matmul")}
    rows = 0
    if store:
        c = sqlite3.connect(f"file:{store}/.cardmem/index.sqlite?mode=ro", uri=True)
        rows = c.execute("SELECT sum(length(vec)) / 512 FROM vectors").fetchone()[0]
    rng = np.random.default_rng(1)
    mats = {n: rng.standard_normal((rows, m.dim)).astype(np.float32) for n, m in models.items()}
    print(f"load average {os.getloadavg()[0]:.1f}; {len(cards)} cards, "
          f"{sum(map(len, texts))} texts, {len(qs)} queries, {rounds} rounds; "
          f"matrix rows {rows}", flush=True)
    for _ in range(rounds):
        for n, m in models.items():
            t = time.process_time()
            for one in texts:
                m.encode(one)
            spent[n, "card"].append((time.process_time() - t) / len(texts))
            t = time.process_time()
            vs = [m.query(q) for q in qs]
            spent[n, "query"].append((time.process_time() - t) / len(qs))
            if rows:
                t = time.process_time()
                for v in vs:
                    mats[n] @ v
                spent[n, "matmul"].append((time.process_time() - t) / len(qs))
    med = {k: 1000 * float(np.median(v)) for k, v in spent.items() if v}
    for w in ("card", "query", "matmul"):
        if (("use", w)) in med:
            print(f"{w}: use {med['use', w]:.1f} ms CPU, e5 {med['e5', w]:.1f} ms"
                  f" ({med['e5', w] / med['use', w]:.1f}x)")
    print(f"texts per card {sum(map(len, texts)) / len(texts):.1f}; "
          f"load average {os.getloadavg()[0]:.1f}")


# --- main ------------------------------------------------------------------------------------

def fit_map(e5: dict, use: dict) -> tuple[float, float]:
    a, b = bm.fit_affine(bm.top_sims(e5), bm.top_sims(use))
    bm.apply_affine(e5, a, b)
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "reach")
    ap.add_argument("--convs", default="design")
    ap.add_argument("--agents-md", choices=("calib", "none"), default="calib")
    ap.add_argument("--grid", default="LAM=0,1")
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--cost", action="store_true",
                    help="CPU per card and per query of each model, paired (no quality run)")
    ap.add_argument("--store", type=Path, help="with --cost: a store whose row count to use")
    args = ap.parse_args()
    if args.cost:
        cost(store=args.store)
        return
    convs = bl.DESIGN if args.convs == "design" else tuple(args.convs.split(","))
    assert not set(convs) & set(bl.CHECK), "the check conversations are not for fitting"
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    use, e5 = gather(convs, "none" if args.agents_md == "none" else "calib", args.dir)
    print("e5 onto USE's scale: a=%.3f b=%.3f" % fit_map(e5, use), flush=True)
    paired = pair(use, e5)
    if not args.no_oracle:
        report_oracle(rankings(paired))
    from cardmem.store.search import hybrid

    grid = [(k, [float(v) for v in vs.split(",")]) for k, vs in
            (part.split("=") for part in args.grid.split(";") if part)]
    names = [k for k, _ in grid]
    cache: dict[float, dict] = {}
    for values in itertools.product(*[vs for _, vs in grid]):
        lam = 0.0
        for k, v in zip(names, values):
            if k == "LAM":
                lam = v
            elif k == "E5_WHEN":
                if v != E5_WHEN:
                    cache = {}
                globals()["E5_WHEN"] = int(v)
            elif "." in k:
                import importlib
                mod, name = k.split(".", 1)
                setattr(importlib.import_module(f"cardmem.store.search.{mod}"), name, v)
            else:
                setattr(hybrid, k, int(v) if k == "POOL" else v)
        if lam not in cache:
            cache = {lam: as_fusion_lab(paired, lam)}
        got = fl.score(cache[lam])
        lab = got.pop("labels")
        print(" ".join(f"{k}={v:g}" for k, v in zip(names, values)), "|",
              " ".join(f"{k} {v:.3f}" for k, v in got.items()), flush=True)
        print("    first result right, by label:", lab, flush=True)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    from cardmem.store.search.embedding import BLAS_THREADS

    for v in BLAS_THREADS:  # one BLAS thread, as the product's processes load numpy
        os.environ.setdefault(v, "1")
    main()
