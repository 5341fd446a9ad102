"""Vectors come after words: the index (the watcher's, `cardmem index`'s) is current
without waiting on the embedding model, and a card not embedded yet is found by its words.

The model here is a fake one whose encode() blocks until the test lets it go (the
real model's slowness, without its seconds): whatever waits on the model would wait
forever, so each test fails on code that indexes and embeds in one breath.
"""
from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from cardmem.store.index import embedding, semantic, vectors
from cardmem.store.index.db import Index
from cardmem.store.watch.watcher import Watcher

GIT_ID = {"GIT_AUTHOR_NAME": "Tess Tester", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess Tester", "GIT_COMMITTER_EMAIL": "tess@example.com"}


class StuckModel:
    """A model stand-in: encode() signals it was entered, then waits for `gate`."""

    stamp = "stuck-model@1/512/test"
    entered = threading.Event()
    gate = threading.Event()
    calls: list[int] = []

    def __init__(self) -> None:
        import numpy

        self._np = numpy

    def encode(self, texts: list[str]) -> Any:
        np = self._np
        if len(texts) > 1:  # cards (two texts each) are stuck; a query (one) is not
            type(self).calls.append(len(texts))
            type(self).entered.set()
            if not type(self).gate.wait(60):
                raise RuntimeError("the test never released the model")
        vecs = np.ones((len(texts), embedding.DIM), dtype=np.float32)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


@pytest.fixture
def stuck(monkeypatch) -> type[StuckModel]:
    """The semantic layer on, with StuckModel as this process's model (its gate closed)."""
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setattr(embedding, "LOADER", StuckModel)
    monkeypatch.setattr(embedding, "stamp", lambda: StuckModel.stamp)
    monkeypatch.setattr(embedding, "BACKFILL", False)
    StuckModel.entered.clear()
    StuckModel.gate.clear()
    StuckModel.calls = []
    embedding.reset()
    yield StuckModel
    StuckModel.gate.set()  # let any thread still in encode() go before teardown
    embedding.reset()


def until(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)
    return got


def write(root: Path, cid: str, title: str, body: str) -> None:
    p = root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\ntitle: {title}\n---\n{body}\n")


def git(root: Path, *args: str) -> None:
    import os

    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, **GIT_ID})


def hits(idx: Index, word: str) -> list[str]:
    return [r["id"] for r in idx.search(word).results]


@pytest.fixture
def watching(store, stuck):
    running: list[Watcher] = []

    def _start() -> Watcher:
        w = Watcher(store, autocommit=False, say=lambda line: None).start()
        running.append(w)
        return w

    yield _start
    stuck.gate.set()
    for w in running:
        w.stop()


# --- the watcher -------------------------------------------------------------------------

def test_a_save_is_searchable_while_the_model_is_stuck(store, stuck, watching) -> None:
    write(store.root, "reference/first", "First card", "something to embed at start")
    w = watching()
    # The start rescan indexed the card; its vector is being made, and the model is stuck.
    until(stuck.entered.is_set, 10, "the watcher to start embedding")
    with Index(store) as idx:
        for n in range(3):
            word = f"rambutan{n}x"
            write(store.root, f"reference/saved-{n}", f"Saved {n}", f"a note about {word}")
            until(lambda: hits(idx, word) == [f"reference/saved-{n}"], 5,
                  f"save {n} searchable by its words while the model is stuck")
        assert not stuck.gate.is_set() and not w.backfill.idle()
        stuck.gate.set()
        assert w.wait_idle(30, vectors=True), "vectors did not catch up once the model moved"
        assert semantic.stale(idx, stuck.stamp) == ([], 0)  # every card embedded after all
    assert w.stats.embedded == 4


def test_a_search_while_vectors_lag_finds_those_cards_by_their_words(store, stuck,
                                                                    watching) -> None:
    from cardmem.store.index.db import search
    from cardmem.tools.cli.group import cli

    write(store.root, "reference/first", "First card", "something to embed at start")
    w = watching()
    until(stuck.entered.is_set, 10, "the watcher to start embedding")
    write(store.root, "reference/lagging", "Lagging card", "a note about salak fruit")
    assert w.wait_idle(10)
    res = search(store, "salak", limit=5)  # words and vectors, in the watcher's process
    assert res.semantic["status"] == "on" and res.semantic["not_embedded"] == 2
    assert [(r["id"], r["match"]) for r in res.results] == [("reference/lagging", "lexical")]
    assert "`cardmem watch` is embedding them" in res.note
    assert stuck.calls == [2]  # the search embedded no card: the watcher's one step is all
    out = CliRunner().invoke(cli, ["search", "salak", "-v", "--store", str(store.root)])
    assert out.exit_code == 0 and "reference/lagging" in out.stdout, out.output
    assert ("cardmem: search: 2 cards have no vector yet (being embedded); this search found"
            " those by their words only") in out.stderr


def test_the_index_matches_a_big_checkout_while_the_model_is_stuck(store, stuck,
                                                                   watching) -> None:
    root = store.root
    for n in range(300):
        write(root, f"reference/c{n:03d}", f"Card {n}", f"body {n}")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "300 cards")
    git(root, "checkout", "-qb", "rewrite")
    for n in range(300):
        write(root, f"reference/c{n:03d}", f"Card {n}", f"body {n} rewritten with lychee")
    git(root, "commit", "-qam", "rewrite all")
    git(root, "checkout", "-q", "main")
    w = watching()
    until(stuck.entered.is_set, 10, "the watcher to start embedding")
    with Index(store) as idx:
        until(lambda: len(idx.ids()) == 300, 10, "the start rescan")
        git(root, "checkout", "-q", "rewrite")
        t0 = time.monotonic()
        # A batch waits for git's quiet and its lock to go (up to 2 s): 5 s is the margin.
        until(lambda: idx.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'lychee'")
              .fetchone()[0] == 300, 5, "every rewritten card indexed after the checkout")
        took = time.monotonic() - t0
    assert not stuck.gate.is_set(), "the model was released before the index caught up"
    assert took < 5
    assert w.alive()


def test_a_failing_model_leaves_the_watcher_indexing(store, monkeypatch) -> None:
    class Broken:
        def __init__(self) -> None:
            raise RuntimeError("no weights here")

    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setattr(embedding, "LOADER", Broken)
    embedding.reset()
    said: list[str] = []
    w = Watcher(store, autocommit=False, say=said.append).start()
    try:
        assert w.wait_idle(10, vectors=True)
        write(store.root, "reference/after", "After", "durian")
        assert w.wait_idle(10, vectors=True)
        with Index(store) as idx:
            assert hits(idx, "durian") == ["reference/after"]
        assert any("no vectors (no weights here)" in line for line in said), said
    finally:
        w.stop()
        embedding.reset()


# --- cardmem index -----------------------------------------------------------------------

def test_cardmem_index_returns_with_the_words_and_leaves_vectors_to_the_background(
        store, stuck, monkeypatch) -> None:
    from cardmem.tools.cli.group import cli

    spawned: list[tuple[str, str]] = []
    monkeypatch.setattr(vectors, "spawn", lambda root, state: spawned.append(
        (str(root), str(state))) or 4242)
    for n in range(5):
        write(store.root, f"reference/n{n}", f"Note {n}", f"jackfruit {n}")
    t0 = time.monotonic()
    out = CliRunner().invoke(cli, ["index", "--store", str(store.root)])
    assert out.exit_code == 0, out.output
    assert time.monotonic() - t0 < 30
    assert stuck.calls == [] and not embedding.loaded()  # no model in the command at all
    assert out.stdout.splitlines() == [
        "index: 5 cards (5 added, 0 updated, 0 removed, 0 unchanged)",
        "vectors: 5 cards to embed, in the background (pid 4242); meanwhile searches find"
        " them by their words"]
    assert spawned == [(str(store.root), str(store.root / ".cardmem"))]
    with Index(store) as idx:  # the words are current
        assert sorted(hits(idx, "jackfruit")) == [f"reference/n{n}" for n in range(5)]


def test_cardmem_index_wait_embeds_here_and_reports(store, stuck) -> None:
    from cardmem.tools.cli.group import cli

    for n in range(3):
        write(store.root, f"reference/n{n}", f"Note {n}", f"guava {n}")
    stuck.gate.set()
    out = CliRunner().invoke(cli, ["index", "--wait", "--json", "--store", str(store.root)])
    assert out.exit_code == 0, out.output
    import json

    doc = json.loads(out.stdout)
    assert doc["vectors"] == {"embedded": 3, "reused": 0, "dropped": 0, "pending": 0}
    out = CliRunner().invoke(cli, ["index", "--store", str(store.root)])
    assert "vectors: 0 embedded" in out.stdout  # nothing left: nothing spawned


def test_catch_up_commits_each_step_and_reports_progress(store, stuck) -> None:
    for n in range(7):
        write(store.root, f"reference/n{n}", f"Note {n}", f"feijoa {n}")
    stuck.gate.set()
    seen: list[tuple[str, int, int | None]] = []
    with Index(store) as idx:
        idx.refresh()
        model = embedding.embedder()
        got = vectors.catch_up(idx, model, step=3, progress=lambda *a: seen.append(a))
        assert got["embedded"] == 7 and got["pending"] == 0
    assert stuck.calls == [6, 6, 2]  # two texts a card, three cards a step
    assert seen == [("embedding", 0, None), ("embedding", 3, 7), ("embedding", 6, 7),
                    ("embedding", 7, 7)]


def test_catch_up_stops_when_asked_and_keeps_what_it_did(store, stuck) -> None:
    for n in range(7):
        write(store.root, f"reference/n{n}", f"Note {n}", f"sapote {n}")
    stuck.gate.set()
    steps = iter([True, False])
    with Index(store) as idx:
        idx.refresh()
        got = vectors.catch_up(idx, embedding.embedder(), step=3, proceed=lambda: next(steps))
        assert (got["embedded"], got["pending"]) == (3, 4)
        assert len(semantic.stale(idx, stuck.stamp)[0]) == 4


def test_one_embedder_per_store(tmp_path: Path) -> None:
    first, second = vectors.Lock(tmp_path), vectors.Lock(tmp_path)
    assert first.acquire() and not second.acquire()
    first.release()
    assert second.acquire()
    second.release()
