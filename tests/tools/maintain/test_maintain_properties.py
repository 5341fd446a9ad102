"""Property tests (issue 28): whatever the store, `maintain --apply` loses no fact.

Random stores of cards made of random sentences with numbers, some cards near-copies of
others (one word changed), some differing only in their numbers, some rules; random edits
after the first commit; then the duplicate pass with --apply. Afterwards every sentence
and every number a live card said is still said by a live card or by a proposal waiting
in review, and no rule (feedback card) is superseded by a card that is not one.
"""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from maintainkit import commit_as_person

from cardmem.store.cards import card as cardlib
from cardmem.store.cards.status import is_active, status_of

WORDS = ("deploy build cache branch review release token limit server client queue worker "
         "schema index backup mirror").split()
sentence = st.builds(lambda ws, n: f"The {' '.join(ws)} uses {n} slots.",
                     st.lists(st.sampled_from(WORDS), min_size=4, max_size=7), st.integers(0, 999))


@st.composite
def stores(draw):
    """(cards: id -> (type, [paragraphs]), edits)."""
    base = draw(st.lists(st.lists(sentence, min_size=1, max_size=4), min_size=2, max_size=5))
    cards: dict[str, tuple[str, list[str]]] = {}
    for n, paras in enumerate(base):
        cards[f"reference/card-{n}"] = (draw(st.sampled_from(["reference", "feedback"])), paras)
        for k in range(draw(st.integers(0, 2))):  # near-copies and number-only variants
            how = draw(st.sampled_from(["word", "number", "same"]))
            copy = []
            for p in paras:
                if how == "word":
                    p = p.replace(" uses ", f" {draw(st.sampled_from(WORDS))} uses ", 1)
                elif how == "number":
                    p = re.sub(r"\d+", lambda m: str(int(m.group()) + 1), p)
                copy.append(p)
            cards[f"reference/card-{n}-{k}"] = (draw(st.sampled_from(["reference", "feedback"])),
                                                copy)
    edits = draw(st.lists(st.tuples(st.sampled_from(sorted(cards)),
                                    st.sampled_from(["append", "renumber", "delete"]), sentence),
                          max_size=3))
    return cards, edits


def write(root: Path, cid: str, ctype: str, paras: list[str]) -> None:
    folder = "feedback" if ctype == "feedback" else "reference"
    p = root / f"{folder}/{cid.split('/', 1)[1]}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\ntitle: Slots of the pool\ntype: {ctype}\n---\n" + "\n\n".join(paras) + "\n")


def said(root: Path) -> tuple[list[str], list[str]]:
    """(texts of live cards, texts proposals would put in force)."""
    live, proposed = [], []
    for p in sorted(root.rglob("*.md")):
        if ".git" in p.parts or p.parent == root:  # README.md, DISTINCT.md: no cards
            continue
        c = cardlib.load(p, p.relative_to(root).with_suffix("").as_posix())
        if status_of(c) == "proposed":
            proposed.append(c.body)
        elif is_active(c):
            live.append(c.body)
    return live, proposed


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(stores())
def test_maintain_apply_loses_no_sentence_no_number_and_no_rule(tmp_path_factory, store_templates,
                                                                drawn) -> None:
    from cardmem.store.store import Store
    from cardmem.tools.maintain import run

    cards, edits = drawn
    root = tmp_path_factory.mktemp("s") / "store"
    store_templates.copy("example", root)  # 55 cards: rarity (idf) as in a real store
    for cid, (ctype, paras) in cards.items():
        write(root, cid, ctype, paras)
    commit_as_person(Store.open(root))
    for cid, how, extra in edits:
        ctype, paras = cards[cid]
        if how == "append":
            paras = paras + [extra]
        elif how == "renumber":
            paras = [re.sub(r"\d+", "7", p) for p in paras]
        for p in root.glob(f"*/{cid.split('/', 1)[1]}.md"):
            p.unlink()
        if how != "delete":
            write(root, cid, ctype, paras)
    commit_as_person(Store.open(root), "edits")
    rules = {p.stem for p in root.glob("feedback/*.md")}
    before, _ = said(root)
    store = Store.open(root)
    run(store, {"duplicate"}, apply=True, record=False)
    live, proposed = said(root)
    after = "\n".join(live + proposed)
    for body in before:
        for s in re.findall(r"The [^.]*\.", body):
            assert s in after, f"lost: {s!r}"
        for n in re.findall(r"\b\d+\b", body):
            assert re.search(rf"\b{n}\b", after), f"lost the number {n}"
    for p in root.glob("reference/*.md"):  # a card that is not a rule...
        for q in root.glob("feedback/*.md"):
            text = q.read_text()
            # ...never supersedes a rule, live or in a proposal to change one
            assert f"superseded_by: reference/{p.stem}" not in text
    for p in root.rglob("*-proposed*.md"):
        body = p.read_text()
        if "proposes_change_to: feedback/" in body:
            assert "superseded_by: reference/" not in body
    assert rules <= {p.stem for p in root.glob("feedback/*.md")}
