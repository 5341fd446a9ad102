"""The vectors a long-lived process keeps in memory (store/search/matrix.py): always the
vectors the index holds, whoever wrote them, and reread only where they changed.

A small stand-in model (deterministic vectors from the text) keeps these fast; the real
model's searches over a kept matrix are test_semantic.py's."""
from __future__ import annotations

import hashlib
import sqlite3
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cardmem.store.index import vector_rows
from cardmem.store.index.db import Index
from cardmem.store.search import matrix as kept, semantic
from semantickit import write


class Hashed:
    """A model behind embedding.py's interface whose vector of a text is drawn from the
    text's hash: no model to load, and a changed text is a changed vector."""

    stamp = "hashed-test@1/16/test"
    dim = 16
    affine = (1.0, 0.0)
    _np = np

    def encode(self, texts: list[str]):  # noqa: ANN201 - numpy array
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.sha1(t.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim)
            out[i] = v / np.linalg.norm(v)
        return out

    def query(self, text: str):  # noqa: ANN201
        return self.encode([text])[0]


MODEL = Hashed()
LONG = "\n\n".join(f"Paragraph {i} of a long card, " + "words " * 60 for i in range(3))


def body(version: int, long: bool) -> str:
    return f"Version {version} of this card." + ("\n\n" + LONG if long else "")


def stored(idx: Index) -> tuple[list[int], np.ndarray]:
    rows = idx.conn.execute("SELECT n, vec FROM vectors WHERE model = ? ORDER BY n",
                            (MODEL.stamp,)).fetchall()
    ids = [n for n, v in rows for _ in range(len(v) // MODEL.dim)]
    mat = np.frombuffer(b"".join(v for _, v in rows), dtype=np.int8).reshape(len(ids), MODEL.dim)
    return ids, mat.astype(np.float32)


def assert_as_stored(idx: Index) -> None:
    ids, mat = semantic.matrix(idx, MODEL.stamp)
    want_ids, want = stored(idx)
    assert ids.tolist() == want_ids
    assert np.array_equal(mat, want)


@pytest.fixture
def reads(monkeypatch):
    """Which cards each read of vector rows asked for (None: all of them)."""
    got: list[list[int] | None] = []
    real = kept._read
    monkeypatch.setattr(kept, "_read", lambda c, stamp, only: got.append(only) or
                        real(c, stamp, only))
    return got


@pytest.fixture
def joins(monkeypatch):
    """How many times the join of every card and vector (stale()) ran for an Index."""
    asked: list[Index] = []
    real = semantic.stale
    monkeypatch.setattr(semantic, "stale", lambda idx, stamp: asked.append(idx) or
                        real(idx, stamp))
    return lambda idx: sum(i is idx for i in asked)


def store(tmp_path, n: int = 4):
    root = tmp_path / "store"
    for i in range(n):
        write(root, f"reference/card-{i}", f"Card {i}", body(0, i % 2 == 0))
    return root


@contextmanager
def two_connections(tmp_path, n: int = 4):
    """A store of n cards, embedded, its matrix read by `idx`; `other` is another
    connection to the same index (another process's)."""
    root = store(tmp_path, n)
    db = root / "index.sqlite"
    with Index(root=root, db_path=db) as idx, Index(root=root, db_path=db) as other:
        idx.refresh()
        semantic.sync(idx, MODEL)
        semantic.matrix(idx, MODEL.stamp)
        yield root, idx, other


def test_a_commit_that_touched_no_vector_rereads_nothing(tmp_path, reads) -> None:
    root = store(tmp_path)
    with Index(root=root, db_path=root / "index.sqlite") as idx:
        idx.refresh()
        semantic.sync(idx, MODEL)
        ids, mat = semantic.matrix(idx, MODEL.stamp)
        assert reads == [None]
        # Another process commits (a watcher indexing a save): no vector changed.
        other = sqlite3.connect(root / "index.sqlite", isolation_level=None)
        other.execute("INSERT OR REPLACE INTO meta VALUES('elsewhere', '1')")
        again = semantic.matrix(idx, MODEL.stamp)
        assert again[1] is mat and reads == [None]
        # This connection commits something else (a refresh): the same.
        write(root, "reference/card-1", "Card 1", body(1, False))
        idx.refresh()
        assert semantic.matrix(idx, MODEL.stamp)[1] is mat and reads == [None]
        other.close()


def rowid(idx: Index, i: int) -> int | None:
    row = idx.conn.execute("SELECT n FROM cards WHERE id = ?", (f"reference/card-{i}",)).fetchone()
    return row[0] if row else None


def test_vectors_another_process_writes_are_read_for_their_cards_only(tmp_path, reads) -> None:
    with two_connections(tmp_path) as (root, idx, other):
        before = {i: rowid(idx, i) for i in range(4)}
        write(root, "reference/card-2", "Card 2", body(1, False))  # long -> short
        write(root, "reference/card-9", "Card 9", body(0, True))  # new
        (root / "reference/card-1.md").unlink()
        other.refresh()
        semantic.sync(other, MODEL)
        assert_as_stored(idx)
        assert reads[0] is None and len(reads) == 2
        # the rows of the cards gone (1, and 2 under its old rowid) and new (9, 2 anew)
        assert sorted(reads[1]) == sorted({before[1], before[2], rowid(idx, 2), rowid(idx, 9)})
        assert before[0] not in reads[1] and before[3] not in reads[1]


def test_a_rebuild_copied_in_place_is_read_whole(tmp_path, reads) -> None:
    with two_connections(tmp_path) as (root, idx, other):
        other.rebuild()  # a new file copied over this one: a log of another epoch
        semantic.sync(other, MODEL)
        assert_as_stored(idx)
        assert reads[-1] is None


def test_a_reader_further_behind_than_the_log_reads_whole(tmp_path, reads, monkeypatch) -> None:
    with two_connections(tmp_path, 6) as (root, idx, other):
        c = other.conn
        # Trim as if thousands of changes had come: the log no longer reaches idx's mark.
        for i in range(6):
            write(root, f"reference/card-{i}", f"Card {i}", body(2, i % 3 == 0))
        other.refresh()
        semantic.sync(other, MODEL)
        c.execute("DELETE FROM vector_log WHERE seq < (SELECT max(seq) FROM vector_log)")
        assert_as_stored(idx)
        assert reads[-1] is None


def test_the_log_trims_itself(tmp_path) -> None:
    root = store(tmp_path, 1)
    with Index(root=root, db_path=root / "index.sqlite") as idx:
        vector_rows.ensure(idx.conn)
        c = idx.conn
        c.executemany("INSERT OR REPLACE INTO vectors VALUES (?, '', '', 'm', x'00')",
                      [(i % 7,) for i in range(vector_rows.LOG_KEEP + 2 * vector_rows.LOG_TRIM)])
        n, low, high = c.execute("SELECT count(*), min(seq), max(seq) FROM vector_log").fetchone()
        assert n <= vector_rows.LOG_KEEP + vector_rows.LOG_TRIM and low > 1
        assert n == high - low + 1  # what is kept has no gap


ops = st.lists(st.tuples(st.sampled_from(["edit", "add", "delete", "foreign", "here",
                                          "touch", "partial"]), st.integers(0, 5), st.booleans()),
               min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_the_kept_matrix_is_always_what_the_index_holds(tmp_path_factory, steps) -> None:
    """Whatever mix of edits, adds, deletes and syncs (whole or a card at a time) by this
    process or another comes, the kept matrix equals a fresh read, and so do the
    similarities a search computes from it (the ranking is the one a fresh process would
    give), and the cards a search says wait for a vector are the ones that do."""
    with two_connections(tmp_path_factory.mktemp("prop"), 3) as (root, idx, other):
        for step, (op, i, long) in enumerate(steps):
            path = root / f"reference/card-{i}.md"
            if op in ("edit", "add"):
                write(root, f"reference/card-{i}", f"Card {i}", body(step + 1, long))
            elif op == "delete" and path.exists():
                path.unlink()
            elif op == "touch":
                other.conn.execute("INSERT OR REPLACE INTO meta VALUES('touch', ?)", (str(step),))
            who = idx if op == "here" or (long and op != "partial") else other
            who.refresh()
            semantic.sync(who, MODEL, limit=1 if op == "partial" else None)
            assert_as_stored(idx)
            waiting = semantic.sync(idx, MODEL, limit=0)["pending"]  # a search's count
            with Index(root=root, db_path=root / "index.sqlite") as fresh:
                assert waiting == len(semantic.stale(fresh, MODEL.stamp)[0])
                a = semantic.similarities(idx, MODEL, "card words")
                b = semantic.similarities(fresh, MODEL, "card words")
                assert a.ids.tolist() == b.ids.tolist()
                assert np.array_equal(a.sims, b.sims) and a.top(5) == b.top(5)


class Counting(Hashed):
    def __init__(self) -> None:
        self.asked: list[str] = []

    def query(self, text: str):  # noqa: ANN201
        self.asked.append(text)
        return super().query(text)


def test_a_query_asked_again_is_not_encoded_again(tmp_path) -> None:
    from cardmem.store.search import embedding

    root = store(tmp_path)
    one, two = Counting(), Counting()
    with Index(root=root, db_path=root / "index.sqlite") as idx:
        idx.refresh()
        semantic.sync(idx, one)
        first = semantic.similarities(idx, one, "card words")
        again = semantic.similarities(idx, one, "card words")
        assert one.asked == ["card words"]
        assert np.array_equal(first.sims, again.sims)
        semantic.similarities(idx, two, "card words")  # another model: its own vector
        semantic.similarities(idx, one, "other words")
        assert two.asked == ["card words"] and one.asked == ["card words", "other words"]
        for i in range(embedding.QUERIES_KEPT):  # the oldest are forgotten
            semantic.similarities(idx, one, f"query {i}")
        semantic.similarities(idx, one, "card words")
        assert one.asked[-1] == "card words"
        with pytest.raises(ValueError):
            embedding.query_vector(one, "card words")[0] = 1.0  # shared: read-only


def test_vectors_another_process_commits_are_checked_card_by_card(tmp_path, joins) -> None:
    """An embedder's commit elsewhere (vectors only) is checked for the cards it wrote,
    not by the join of every card and vector; what it leaves wrong is still found."""
    root = store(tmp_path)
    db = root / "index.sqlite"
    with Index(root=root, db_path=db) as idx, Index(root=root, db_path=db) as other:
        idx.refresh()
        semantic.sync(idx, MODEL)
        assert semantic.sync(idx, MODEL)["pending"] == 0 and joins(idx) == 1
        n = rowid(idx, 2)
        c = other.conn
        c.execute("UPDATE vectors SET vec = vec WHERE n = ?", (n,))  # rewritten as it was
        assert semantic.sync(idx, MODEL, limit=0) == {
            "embedded": 0, "reused": 0, "dropped": 0, "pending": 0}
        assert joins(idx) == 1
        c.execute("UPDATE vectors SET hash = 'elsewhere' WHERE n = ?", (n,))  # left wrong
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 1 and joins(idx) == 1
        assert semantic.sync(idx, MODEL)["embedded"] == 0  # the same text: its vector kept
        assert joins(idx) == 2  # (work to do: the join finds it)
        assert semantic.stale(idx, MODEL.stamp) == ([], 0)


def test_without_a_vector_log_a_reader_reads_again(tmp_path, reads) -> None:
    """A connection that may not write the file cannot make the log: what another process
    writes is still seen, by reading every vector again."""
    root = store(tmp_path)
    db = root / "index.sqlite"
    with Index(root=root, db_path=db) as idx:
        idx.refresh()
        semantic.sync(idx, MODEL)
        for t in ("insert", "update", "delete"):  # as a file made before the log
            idx.conn.execute(f"DROP TRIGGER vector_log_{t}")
        idx.conn.execute("DROP TABLE vector_log")
        idx.conn.execute("PRAGMA query_only = 1")  # and that this process may not write
        semantic.matrix(idx, MODEL.stamp)
        c = sqlite3.connect(db, isolation_level=None)
        c.execute("UPDATE vectors SET vec = zeroblob(length(vec)) WHERE n = ?", (rowid(idx, 0),))
        c.close()
        assert_as_stored(idx)
        assert reads == [None, None]
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 0  # answered, by the join


def test_cards_waiting_for_a_background_embedder_are_counted_once(tmp_path, joins) -> None:
    """Searches that leave the embedding to another process (limit 0) count the cards
    that wait once, not by a join each, until something changes."""
    root = store(tmp_path)
    db = root / "index.sqlite"
    with Index(root=root, db_path=db) as idx, Index(root=root, db_path=db) as other:
        idx.refresh()
        assert [semantic.sync(idx, MODEL, limit=0)["pending"] for _ in range(3)] == [4, 4, 4]
        assert joins(idx) == 1
        semantic.sync(other, MODEL, limit=1)  # an embedder's step elsewhere: told by the log
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 3 and joins(idx) == 1
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 3 and joins(idx) == 1
        assert semantic.sync(idx, MODEL, limit=2)["embedded"] == 2  # a search that may embed
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 1
        write(root, "reference/card-7", "Card 7", body(0, False))
        idx.refresh()
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 2
        assert semantic.sync(idx, MODEL)["embedded"] == 2
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 0
        assert_as_stored(idx)


def test_a_card_saved_while_the_model_works_is_not_taken_for_embedded(tmp_path) -> None:
    """Cards indexed by another process while a sync's model was at work were never seen
    by that sync: its commit must not mark the index 'nothing to do'."""
    root = store(tmp_path, 2)
    db = root / "index.sqlite"
    with Index(root=root, db_path=db) as idx, Index(root=root, db_path=db) as other:

        class Busy(Hashed):
            def encode(self, texts):  # noqa: ANN001, ANN202
                if len(texts) > 1 and not (root / "reference/late.md").exists():
                    write(root, "reference/late", "Late card", body(0, False))
                    other.refresh()  # the watcher indexes a save meanwhile
                return super().encode(texts)

        idx.refresh()
        assert semantic.sync(idx, Busy())["embedded"] == 2
        assert semantic.sync(idx, MODEL, limit=0)["pending"] == 1  # the late card waits
        assert semantic.sync(idx, MODEL)["embedded"] == 1
