"""The maintenance pass's speed paths give what the plain code gives (issue 28).

The plain code is kept here, as it was before the speed work: facts token by token with a
regex, stems word by word, links after blanking every card's code, History by two heading
walks, cards parsed by YAML. A generated store and random texts must give the same
findings, facts, stems and History lines either way.
"""
from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maintainkit import commit_as_person, corpus_store

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import links as cardlinks
from cardmem.store.index.porter import stem
from cardmem.store.learning.matching import keywords
from cardmem.store.maintain import Survey, duplicates, facts as factlib, findings, kept, links

# --- the plain code, as it was --------------------------------------------------------------

_TOKEN = re.compile(r"[^\s`]+")
_NEGATED = re.compile(r"\b(?:" + "|".join(sorted(factlib._NEGATION)) + r"|[a-z]+n't)\b")


def plain_facts(text: str) -> frozenset[str]:
    out: set[str] = set()
    for raw in _TOKEN.findall(text):
        if not factlib._MAYBE.search(raw):
            continue
        tok = raw.strip(factlib._EDGE)
        if tok and (factlib._FACTY.search(tok) or factlib._CAMEL.search(tok)):
            out.add("#" + tok.lower().removeprefix("./").rstrip("/\\"))
    lower = text.lower()
    for m in _NEGATED.finditer(lower):
        for w in factlib._WORD.finditer(lower, m.end()):
            word = w.group().strip("'")
            if word in factlib._NEGATION or word.endswith("n't"):
                continue
            if word not in factlib._FILLER and len(word) >= 3:
                out.add("!" + stem(word))
                break
        else:
            out.add("!")
    return frozenset(out)


def plain_stems(text: str, toks: object = None) -> set[str]:
    return {stem(w) if w.isascii() else w for w in keywords(text)}


def plain_links(text: str):
    plain = cardlinks.without_code(text)
    for m in cardlinks.LINK.finditer(plain):
        yield m.group(1).strip(), m.start(1)


def plain_history(text: str) -> list[str]:
    end = cardlib._section_end(text, "History")
    if end is None:
        return []
    start = next(off for _, lvl, name, off in cardlib._headings(text)
                 if lvl == 2 and name.strip().lower() == "history")
    return [ln[2:].strip() for ln in cardlib._lines(text[start:end])[1:] if ln.startswith("- ")]


def plain_survey(store, now: float):
    cards, problems = store.scan()  # YAML for every card
    return Survey(store, {c.id: c for c in cards}, problems, now)


def plain_features(text):
    fs = plain_facts(text)
    return plain_stems(text) | fs, fs


def with_plain_code(monkeypatch) -> None:
    monkeypatch.setattr(duplicates, "text_features", plain_features)
    monkeypatch.setattr(duplicates, "stems", plain_stems)
    monkeypatch.setattr(duplicates, "facts", plain_facts)
    monkeypatch.setattr(links, "links", plain_links)
    monkeypatch.setattr(cardlib, "history", plain_history)


# --- a generated store ---------------------------------------------------------------------

ODD = ["\u00a0", "\u2003", "\t", "`", "``", "\x1c"]  # spaces str.split and \s agree on, marks


def generated_store(root, rng):
    """Corpus cards, and cards made of the corpus's paragraphs (so some are duplicates),
    some copied with one word changed, with History sections (some in code, some in
    another case), wikilinks (some broken, some in code) and odd spaces and backticks."""
    store = corpus_store(root, ("ruff", "oxc", "temporal"))
    paras = [p for f in sorted(root.glob("projects/*/*.md"))
             for p in re.split(r"\n\s*\n", f.read_text().split("\n---\n", 1)[-1]) if len(p) > 40]
    ids = [p.relative_to(root).with_suffix("").as_posix() for p in root.glob("projects/*/*.md")]
    made = {}
    for n in range(160):
        body = "\n\n".join(rng.sample(paras, rng.randint(1, 3)))
        if rng.random() < 0.3:
            body = body.replace(" ", rng.choice(ODD), rng.randint(1, 4))
        if n == 0 or rng.random() < 0.3:  # the first always broken: a seed may draw none
            to = "no/such-card" if n == 0 else rng.choice(ids + ["no/such-card", "Ruff"])
            body += f"\n\nSee [[{to}]] and `[[in code]]`."
        if rng.random() < 0.4:
            heading = rng.choice(["## History", "## history", "##  History ##", "### History"])
            lines = [f"- 2026-11-{rng.randint(1, 28):02d} · session {n:07x} · Decision: "
                     f"{rng.choice(paras)[:60]}" for _ in range(rng.randint(1, 4))]
            lines += lines[:1] if rng.random() < 0.5 else []  # a repeated line
            section = f"{heading}\n" + "\n".join(lines) + "\n"
            body += "\n\n" + (f"```\n{section}```\n" if rng.random() < 0.2 else section)
        made[f"reference/made-{n}"] = body
        if rng.random() < 0.25:  # a near copy: one word changed
            words = body.split(" ")
            words[rng.randrange(len(words))] = rng.choice(["often", "rarely", "builds"])
            made[f"reference/copy-{n}"] = " ".join(words)
    for cid, body in made.items():
        p = root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        n = int(cid.rsplit("-", 1)[1])  # a copy has its original's title: no digit in it
        p.write_text(f"---\ntitle: Card {chr(97 + n // 26)}{chr(97 + n % 26)}\ntype: reference\n"
                     f"tags: [a, b]\n---\n{body}\n")
    commit_as_person(store)
    return store


def as_data(found) -> list[str]:
    return sorted(json.dumps([f.as_dict(), f.fix], sort_keys=True) for f in found)


@pytest.mark.corpus
def test_a_generated_store_gives_the_findings_of_the_plain_code(tmp_path, rng, monkeypatch) -> None:
    store = generated_store(tmp_path / "s", rng)
    now = time.time()
    with monkeypatch.context() as m:
        with_plain_code(m)
        plain = findings(store, None, plain_survey(store, now))
    assert any(f.kind == "duplicate" and len(f.ids) > 1 for f in plain)  # the store has some
    assert any(f.kind == "broken-link" for f in plain)
    kept_file = store.root / ".cardmem" / kept.FILE
    kept_file.unlink()  # the plain run's features: the fast run computes its own
    cold = findings(store, None, Survey.of(store, now))
    assert kept_file.exists()
    warm = findings(store, None, Survey.of(store, now))  # the features kept by the cold run
    assert as_data(cold) == as_data(plain)
    assert as_data(warm) == as_data(plain)


@pytest.mark.corpus
def test_the_survey_reads_the_cards_yaml_reads(tmp_path, rng) -> None:
    store = generated_store(tmp_path / "s", rng)
    (store.root / "reference/odd.md").write_text(
        "---\ntitle: Odd\ncreated: 2026-01-02\nnested:\n  a: 1\nflag: yes\n---\nBody\n")
    (store.root / "reference/broken.md").write_text("---\ntitle: [unclosed\n---\nx\n")
    fast, plain = Survey.of(store), plain_survey(store, 0.0)
    assert fast.cards == plain.cards and len(fast.cards) > 200
    assert fast.problems == plain.problems and len(plain.problems) == 1


# --- random texts ---------------------------------------------------------------------------

PIECES = st.sampled_from([
    "not", "never", "don't", "no", "can't", "avoid", "the", "run", "tests", "v2", "3.11",
    "src/app.py", "--force", "fooBar", "HTTPServer", "x_y", "a::b", "`code`", "(./dir/)",
    "\"quoted\"", "Über", "naïve", "İstanbul", "K", "co-op", "e.g.", "...", "--", "-", "_",
    "##", "## History", "```", "~~~", "- ", "[[link]]", "#", "\n", "\n\n", " ", "\u00a0",
    "\u2003", "\t", "\x1c", "\u2028", "\r\n", "`", "'", "1", "2026-11-30",
    "forbidden", "n't", "'t", "won't", "nothing", "é", "x", "stopped"])
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=40).map(
    lambda parts: " ".join(parts) if len(parts) % 2 else "".join(parts))


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_facts_and_stems_are_the_plain_codes(text) -> None:
    assert factlib.facts(text) == plain_facts(text)
    assert duplicates.stems(text) == plain_stems(text)
    assert duplicates.text_features(text) == plain_features(text)
    assert set(links.links(text)) == set(plain_links(text))


LINES = st.lists(st.sampled_from([
    "## History", "## history", "##\tHistory", "## \u00a0History", "  ## History ##",
    "# History", "### History", "## Other", "```", "~~~", "````", "- 2026-11-30 · a",
    "- b", "-c", "", "   ", "text", "---", "title: x"]), max_size=14)


@settings(max_examples=400, deadline=None)
@given(LINES, st.sampled_from(["\n", "\r\n"]))
def test_history_lines_are_the_plain_codes(lines, nl) -> None:
    text = nl.join(lines)
    assert cardlib.history(text) == plain_history(text)

