"""Search on LoCoMo (issue 27): bare FTS5, cardmem lexical and cardmem default side by side,
on conversations nobody here wrote; the agents-md question set beside them.

    python bench/bench_locomo.py [--convs design|check|halves|all|conv-26,conv-30]
                                 [--shapes session,turn]
                                 [--agents-md calib|test|halves|all|none] [--misses FILE]

The final table of bench/RESULTS.md is one run of `--convs halves --agents-md halves`
(every half its own table); fit nothing on what it prints for check and test.

Reads ../shared/locomo-dev/ (its README says how cards are made and questions scored):
one store per conversation and card shape (session: one card a session; turn: one card a
turn), embedded with the model before anything is measured. Every question of categories
1-4 whose evidence is in the conversation is asked as written through the product's
ordinary search (store.search.query.search, what the MCP `search` tool calls; limit 10).
A question is recall_any@k when a card holding any of its evidence is among the first k,
recall_all@k when every evidence card is. Times are CPU (user+sys) per search, this
process.

Data split (bench/RESULTS.md): conv-26, conv-30, conv-41 are the design set; conv-42 and
conv-43 the check set, evaluated only at the end; the other five conversations of the
release are the unseen half.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
DATA = next((p for p in (HERE.parent.parent / "shared" / "locomo-dev",
                         Path("/work/shared/locomo-dev")) if p.is_dir()),
            Path("/work/shared/locomo-dev"))
DESIGN = ("conv-26", "conv-30", "conv-41")
CHECK = ("conv-42", "conv-43")
SHAPES = ("session", "turn")
METHODS = ("fts5", "lexical", "default")
KS = ((1, "any"), (5, "any"), (10, "any"), (5, "all"), (10, "all"))
LIMIT = 10

# Common English stop words (the baseline's; NLTK's list, abridged to what questions use).
STOP = frozenset("""a about above after again against all am an and any are as at be because
been before being below between both but by can could did do does doing down during each few
for from further had has have having he her here hers herself him himself his how i if in
into is it its itself just me more most my myself no nor not now of off on once only or other
our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
""".split())


# --- cards ---------------------------------------------------------------------------------

def load(conv: str) -> dict:
    return json.loads((DATA / f"{conv}.json").read_text(encoding="utf-8"))


def sessions(d: dict) -> list[tuple[int, str, list[dict]]]:
    out = []
    for k, turns in d.items():
        m = re.fullmatch(r"session_(\d+)", k)
        if m and isinstance(turns, list) and turns:
            out.append((int(m.group(1)), d.get(f"{k}_date_time", ""), turns))
    return sorted(out)


def turn_text(t: dict) -> str:
    text = f"{t['speaker']}: {t['text']}"
    if t.get("blip_caption"):
        text += f" [shares a photo: {t['blip_caption']}]"
    return text


def turn_id(dia: str) -> str:
    m = re.fullmatch(r"D(\d+):(\d+)", dia.strip())
    return f"turns/d{m.group(1)}-{m.group(2)}" if m else ""


def cards(d: dict, shape: str) -> dict[str, tuple[str, str]]:
    """card id -> (title, body), as the data's README says."""
    out = {}
    for n, when, turns in sessions(d):
        if shape == "session":
            body = "\n\n".join([f"Conversation of {when}."] + [turn_text(t) for t in turns])
            out[f"sessions/session-{n:02d}"] = (f"Session {n}, {when}", body)
        else:
            for t in turns:
                cid = turn_id(t["dia_id"])
                if cid:
                    out[cid] = (f"{t['speaker']}, {when} ({t['dia_id']})",
                                f"On {when}, {turn_text(t)}")
    return out


def card_of(dia: str, shape: str) -> str:
    m = re.fullmatch(r"D(\d+):(\d+)", dia.strip())
    if not m:
        return ""
    return f"sessions/session-{int(m.group(1)):02d}" if shape == "session" else turn_id(dia)


def questions(d: dict, shape: str, have: set[str]) -> list[tuple[str, set[str], int]]:
    """(question, evidence card ids, category) of categories 1-4 with evidence here."""
    out = []
    for q in d["qa"]:
        if q.get("category") not in (1, 2, 3, 4):
            continue
        ev = {card_of(e, shape) for e in re.split(r"[;,\s]+", " ".join(q.get("evidence", [])))}
        ev = {e for e in ev if e in have}
        if ev:
            out.append((q["question"], ev, q["category"]))
    return out


def build(where: Path, conv: str, shape: str) -> tuple[Path, dict[str, tuple[str, str]]]:
    from cardmem.store.store import init

    d = load(conv)
    made = cards(d, shape)
    root = where / f"{conv}-{shape}"
    if not (root / "cardmem.toml").exists():
        for cid, (title, body) in made.items():
            p = root / f"{cid}.md"
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f"---\ntitle: {json.dumps(title)}\ntype: reference\n---\n{body}\n",
                         encoding="utf-8")
        init(root)
    return root, made


def embed(root: Path) -> int:
    """Refresh the index and embed every card; returns how many cards wait (0)."""
    from cardmem.store.search import embedding, semantic
    from cardmem.store.index.db import Index
    from cardmem.store.root import StoreRoot

    model = embedding.embedder()
    if model is None:
        sys.exit(f"cardmem: bench_locomo: no model: {embedding.reason()}")
    with Index(StoreRoot.open(root)) as idx:
        idx.refresh()
        return semantic.sync(idx, model)["pending"]


# --- the baseline ----------------------------------------------------------------------------

class Bare:
    """Bare SQLite FTS5 BM25 over title and body: porter unicode61, the words OR-ed."""

    def __init__(self, made: dict[str, tuple[str, str]]) -> None:
        self.c = sqlite3.connect(":memory:")
        self.c.execute("CREATE VIRTUAL TABLE f USING fts5(id UNINDEXED, title, body,"
                       " tokenize='porter unicode61')")
        self.c.executemany("INSERT INTO f VALUES (?, ?, ?)",
                           [(cid, t, b) for cid, (t, b) in made.items()])

    def search(self, q: str) -> list[str]:
        words = [w for w in re.findall(r"\w+", q.lower()) if w not in STOP]
        if not words:
            return []
        expr = " OR ".join(f'"{w}"' for w in dict.fromkeys(words))
        return [r[0] for r in self.c.execute(
            "SELECT id FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT ?", (expr, LIMIT))]


# --- measuring -----------------------------------------------------------------------------

def measure(conv: str, shape: str, where: Path, misses: list | None) -> dict[str, dict]:
    from cardmem.store.search import embedding
    from cardmem.store.index.db import Index
    from cardmem.store.search.query import search
    from cardmem.store.root import StoreRoot

    root, made = build(where, conv, shape)
    embed(root)
    qs = questions(load(conv), shape, set(made))
    bare = Bare(made)
    store = StoreRoot.open(root)
    out: dict[str, dict] = {m: {"n": 0, "times": [], "hits": {k: 0 for k in KS}} for m in METHODS}
    with Index(store) as idx:
        idx.refresh()
        for q, ev, cat in qs:
            for m in METHODS:
                t0 = time.process_time()
                if m == "fts5":
                    ids = bare.search(q)
                else:
                    if m == "lexical":
                        os.environ["CARDMEM_SEMANTIC"] = "off"
                    else:
                        os.environ.pop("CARDMEM_SEMANTIC", None)
                    got = search(store, q, limit=LIMIT, index=idx).results
                    ids = [r["id"] for r in got]
                    if got:  # how often the first result is right, by its label
                        lab = out[m].setdefault("labels", {})
                        seen = lab.setdefault(got[0]["confidence"], [0, 0])
                        seen[0] += 1
                        seen[1] += got[0]["id"] in ev
                dt = time.process_time() - t0
                acc = out[m]
                acc["n"] += 1
                acc["times"].append(dt)
                for k, how in KS:
                    top = set(ids[:k])
                    acc["hits"][(k, how)] += bool(top & ev) if how == "any" else ev <= top
                if misses is not None and m == "default" and not set(ids[:5]) & ev:
                    misses.append({"conv": conv, "shape": shape, "q": q, "cat": cat,
                                   "want": sorted(ev), "got": ids[:5]})
    os.environ.pop("CARDMEM_SEMANTIC", None)
    assert embedding.embedder() is not None
    return out


def merge(parts: list[dict[str, dict]]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for part in parts:
        for m, acc in part.items():
            o = out.setdefault(m, {"n": 0, "times": [], "hits": {k: 0 for k in KS}})
            o["n"] += acc["n"]
            o["times"] += acc["times"]
            for k in KS:
                o["hits"][k] += acc["hits"][k]
            for lab, (n, right) in acc.get("labels", {}).items():
                seen = o.setdefault("labels", {}).setdefault(lab, [0, 0])
                seen[0] += n
                seen[1] += right
    return out


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else 0.0


def agents_md(split: str, where: Path) -> dict[str, dict]:
    """bench_quality.py's measures, lexical and default, the store embedded first; and
    under "labels", how often the first result is right by its label, per kind of question
    (notes: a question in English with an answer; other-language; negative: never right)."""
    import bench_quality as bq

    root = bq.build_store(where)
    embed(root)
    qs = bq.questions(split)
    out: dict[str, dict] = {}
    for m in ("lexical", "default"):
        if m == "lexical":
            os.environ["CARDMEM_SEMANTIC"] = "off"
        else:
            os.environ.pop("CARDMEM_SEMANTIC", None)
        got = bq.run(root, qs, semantic=True)
        out[m] = bq.judge(qs, got)
        labels = out[m]["labels"] = {}
        for q, res in zip(qs, got):
            if res["results"]:
                kind = ("negative" if not q["want"] else
                        "other-language" if q["kind"] in bq.OTHER else "notes")
                first = res["results"][0]
                seen = labels.setdefault(kind, {}).setdefault(first["confidence"], [0, 0])
                seen[0] += 1
                seen[1] += first["id"] in q["want"]
    os.environ.pop("CARDMEM_SEMANTIC", None)
    return out


def by_label(labels: dict) -> str:
    """'high 0.92 (12), medium ...': of n first results with that label, the share right."""
    return ", ".join(f"{lab} {labels[lab][1] / labels[lab][0]:.2f} ({labels[lab][0]})"
                     for lab in ("high", "medium", "low") if lab in labels)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--convs", default="design",
                    help="comma-separated conversation names, or design / check / halves"
                         " (design and check, each its own table, in one run)")
    ap.add_argument("--shapes", default="session,turn")
    ap.add_argument("--agents-md", default="calib",
                    choices=("calib", "test", "all", "halves", "none"))
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "cardmem-locomo")
    ap.add_argument("--misses", type=Path, help="write the default search's misses@5 (JSON lines)")
    args = ap.parse_args()
    halves = {"design": [("design", DESIGN)], "check": [("check", CHECK)],
              "halves": [("design", DESIGN), ("check", CHECK)],
              "all": [("all", DESIGN + CHECK)]}.get(args.convs) or [
        (args.convs, tuple(c.strip() for c in args.convs.split(",") if c.strip()))]
    for _, convs in halves:
        for c in convs:
            if not (DATA / f"{c}.json").exists():
                sys.exit(f"cardmem: --convs: {c}: no such conversation in {DATA}")
    args.dir.mkdir(parents=True, exist_ok=True)
    from cardmem.store.search import embedding

    embedding.embedder()  # loaded before timing starts
    misses: list | None = [] if args.misses else None
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, convs in halves:
        print(f"\n{name}: conversations {', '.join(convs)}")
        print("| cards | method | n | any@1 | any@5 | any@10 | all@5 | all@10 | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        label_rows = []
        for shape in args.shapes.split(","):
            got = merge([measure(c, shape, args.dir, misses) for c in convs])
            label_rows += [(shape, m, got[m].get("labels", {})) for m in ("lexical", "default")]
            for m in METHODS:
                a = got[m]
                cells = " | ".join(f"{a['hits'][k] / max(a['n'], 1):.3f}" for k in KS)
                print(f"| {shape} | {m} | {a['n']} | {cells} | {1000 * pct(a['times'], .5):.1f}"
                      f" | {1000 * pct(a['times'], .95):.1f} |", flush=True)
        print(f"\n{name}: the first result's label, how often it is a card holding evidence (n)")
        for shape, m, labels in label_rows:
            print(f"{shape} {m}: {by_label(labels)}")
    splits = {"halves": ("calib", "test"), "none": ()}.get(args.agents_md, (args.agents_md,))
    for split in splits:
        res = agents_md(split, args.dir / "agents-md")
        print(f"\nagents-md questions ({split} half), limit 5")
        print("| method | hit@1 | hit@5 | confident & right | negatives flagged |")
        print("|---|---|---|---|---|")
        for m, sc in res.items():
            a = sc["all"]
            print(f"| {m} | {a['hit1']:.3f} | {a['hit5']:.3f} | {a['conf_right']:.3f} |"
                  f" {a.get('flagged', 0):.3f} |")
        print(f"{split}: the first result's label, how often it is a card that answers (n)")
        for m, sc in res.items():
            for kind, labels in sorted(sc["labels"].items()):
                print(f"{m} {kind}: {by_label(labels)}")
    if misses is not None:
        args.misses.write_text("".join(json.dumps(x) + "\n" for x in misses), encoding="utf-8")


if __name__ == "__main__":
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    main()
