"""The real agents-md corpus (395 cards nobody here wrote) as a store: every card parses
or is reported, edits on real text stay byte-preserving, and search finds real cards."""
from __future__ import annotations

import difflib
import shutil

import pytest
from corpora import CORPUS, need_corpus

from cardmem.store.cards import card as cardlib
from cardmem.store.search.query import search
from cardmem.store.store import init

pytestmark = pytest.mark.corpus  # every test here reads the corpus


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory):
    need_corpus()
    root = tmp_path_factory.mktemp("corpus") / "store"
    # Cards go under one folder each per project, as a team would keep them.
    for src in sorted(CORPUS.glob("*--*.md")):
        owner, repo, slug = src.stem.split("--", 2)
        dest = root / "projects" / f"{owner}-{repo}" / f"{slug}.md"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    return init(root)[0]


def test_every_corpus_card_parses_with_its_title(corpus_store) -> None:
    cards, problems = corpus_store.scan()
    assert problems == []
    assert len(cards) == len(list(CORPUS.glob("*--*.md"))) >= 390
    for c in cards:
        raw = (corpus_store.root / f"{c.id}.md").read_text(encoding="utf-8")
        assert c.title and c.title in raw  # from frontmatter or heading, never invented
        assert c.meta.get("source")  # unknown keys are kept


def only_insertions(old: str, new: str) -> bool:
    """Whether new is old with lines added and nothing else changed."""
    ops = difflib.SequenceMatcher(None, old.splitlines(True), new.splitlines(True),
                                  autojunk=False).get_opcodes()
    return any(op == "insert" for op, *_ in ops) and all(op in ("equal", "insert") for op, *_ in ops)


def test_edits_on_real_cards_change_only_their_lines(corpus_store) -> None:
    for cid, path in corpus_store.card_files():
        text = path.read_text(encoding="utf-8")
        added = cardlib.append_history(text, "2026-11-30 · session abc1234 · Worked: x")
        assert only_insertions(text, added), cid
        keyed = cardlib.set_key(text, "last_verified", "2026-11-30")
        before = cardlib.parse(text, cid).meta
        after = cardlib.parse(keyed, cid).meta
        assert after.pop("last_verified") == "2026-11-30"
        before.pop("last_verified", None)
        assert after == before
        body_at = cardlib.split(text)[2]
        assert keyed.endswith(text[body_at:])


@pytest.mark.parametrize("query,expected", [
    ("Running Tests", "projects/astral-sh-ruff/running-tests"),
    ("writing mdtests", "projects/astral-sh-ruff/writing-mdtests"),
    ("cdp-use", "projects/browser-use-browser-use/cdp-use"),
    ("runing tsets", "projects/astral-sh-ruff/running-tests"),
])
def test_search_finds_real_cards(corpus_store, query: str, expected: str) -> None:
    result = search(corpus_store, query, limit=10)
    ids = [r["id"] for r in result.results]
    assert expected in ids, (query, ids)
    assert not result.no_confident_results


def test_nonsense_is_not_confident_on_the_corpus(corpus_store) -> None:
    assert search(corpus_store, "zxqv blorfle quonk").no_confident_results


def test_search_without_the_model_is_the_lexical_search_at_every_limit(corpus_store) -> None:
    """The fused search's fallback (model off, missing or loading) ranks as lexical search
    does: it must not ask FTS5 for the fused pool and cut it, which lets weaker tiers in."""
    from cardmem.store.search import hybrid, search as lexical
    from cardmem.store.index.db import Index

    questions = ["config file", "use uv", "run the tests", "release process", "lint rules",
                 "database migrations", "how to add a dependency", "code style"]
    with Index(corpus_store) as idx:
        idx.refresh()
        for q in questions:
            for limit in (1, 3, 5, 10):
                want = [r["id"] for r in lexical.run(idx, q, limit).results]
                got = [r["id"] for r in hybrid.run(idx, q, limit).results]
                assert got == want, (q, limit)
