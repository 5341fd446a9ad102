"""Ranking with the real model (issue 27): an exact rare word is never buried or labelled
low, a long card is found by any of its passages, nothing is padded under the similarity
floor, and the model is asked only when the words leave room."""
from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from cardmem.store.search import embedding, hybrid, semantic
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.search.query import search
from cardmem.store.store import init
from corpora import need_corpus
from semantickit import model, write  # noqa: F401 - model is a fixture


@pytest.fixture
def on(model, monkeypatch):
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    embedding.reset()
    embedding._MODEL = model
    return model


LOOKALIKES = {
    "reference/db-pooling": ("Database connection pooling",
                             "Keep connection pools small: each worker holds its own pool of"
                             " database connections, and Postgres caps them."),
    "reference/pool-sizing": ("Sizing the connection pool",
                              "Pool size is cores times two plus disks; more connections"
                              " make Postgres slower, not faster."),
    "reference/db-timeouts": ("Database timeouts",
                              "Set statement and idle timeouts on every database connection."),
}
# Other notes of a small team's store, so that words weigh as they do in a real one.
FILLER = ["Releases are cut on Tuesdays from the main branch",
          "The design review happens before any new service is built",
          "Feature flags are removed a month after a full rollout",
          "On-call engineers hand over every Monday at ten",
          "Logs are kept for fourteen days in the central store",
          "Frontend builds use the shared lint configuration",
          "Secrets live in the vault and never in the repository",
          "Every migration is tested against a copy of production data",
          "Incidents get a written review within a week",
          "Dependencies are updated by the bot every Thursday",
          "Customer data never leaves the European region",
          "Queues are drained before a worker is restarted"]


def write_filler(root: Path) -> None:
    for i, line in enumerate(FILLER):
        write(root, f"notes/filler-{i:02d}", line.split(" ")[0] + " note " + str(i), line + ".")


INFRA = ("Notes from the infrastructure review.\n\n"
         "Deploys go out from the main branch after the checks pass.\n\n"
         "We run pgbouncer in transaction mode in front of the primary; prepared statements"
         " are off for it.\n\n"
         "Backups are taken nightly and kept for thirty days.")


def embedded(store) -> None:
    with Index(store) as idx:
        idx.refresh()
        semantic.sync(idx, embedding.embedder())


def lookalike_store(tmp_path: Path, *extra: tuple[str, str, str], filler: bool = False):
    """A store of the LOOKALIKES and the extra (id, title, body) cards, embedded."""
    root = tmp_path / "store"
    for cid, (title, body) in LOOKALIKES.items():
        write(root, cid, title, body)
    for cid, title, body in extra:
        write(root, cid, title, body)
    if filler:
        write_filler(root)
    store = init(root)[0]
    embedded(store)
    return store


def test_an_exact_rare_word_stays_first_and_is_never_low(tmp_path, on) -> None:
    root = tmp_path / "store"
    for cid, (title, body) in LOOKALIKES.items():
        write(root, cid, title, body)
    write(root, "reference/infra-notes", "Infra review notes", INFRA)
    write_filler(root)
    store = init(root)[0]
    embedded(store)
    for q in ("pgbouncer", "PgBouncer", "how do we run pgbouncer"):
        res = search(store, q, limit=5)
        top = res.results[0]
        assert top["id"] == "reference/infra-notes", (q, res.results)
        assert top["confidence"] in ("medium", "high"), (q, top)
        assert not res.no_confident_results, q


def test_a_long_card_is_found_by_a_later_passage(tmp_path, on) -> None:
    root = tmp_path / "store"
    for cid, (title, body) in LOOKALIKES.items():
        write(root, cid, title, body)
    # Sections of a few sentences each (over semantic.SHORT_CHARS: a passage each).
    filler = (" Questions about this section go to the people team, who keep this page current,"
              " review it every quarter with the managers"
              " and answer within a working day.")
    paras = [t + filler for t in (
        "Welcome to the team handbook. Read it in your first week and ask your buddy.",
        "Laptops are ordered through the IT portal and arrive within three days.",
        "Expenses under fifty dollars need no receipt, anything above does.",
        "The office opens at eight and the kitchen is restocked every Tuesday.",
        "Holidays are booked in the shared calendar at least two weeks ahead.")]
    paras.insert(5, "Nothing ships on a Friday afternoon: releases wait until Monday morning."
                    " On Friday nobody deploys, nobody publishes a version, nobody merges to"
                    " the release branch; the next release goes out on Monday morning.")
    write(root, "reference/handbook", "Team handbook", "\n\n".join(paras))
    assert len(semantic.passages("\n\n".join(paras))) == len(paras)
    store = init(root)[0]
    embedded(store)
    # No word in common with the card: only the vectors of its sixth paragraph relate.
    res = search(store, "Am Freitagnachmittag wird nichts ausgeliefert, Veröffentlichungen warten"
                        " bis Montag", limit=5)
    assert res.results and res.results[0]["id"] == "reference/handbook", res.results
    assert res.results[0]["match"] == "semantic"
    assert "Friday" in res.results[0]["snippet"]  # the passage that matched, not the start


def test_nothing_is_padded_under_the_similarity_floor(tmp_path, on) -> None:
    store = lookalike_store(tmp_path, ("reference/api-keys", "Service credentials",
                                       "The staging key is sk-live-4f9a8b7c6d5e4f3a2b1c;"
                                       " rotate it monthly."))
    for q in ("quarterly revenue forecast for the sales team", "what is the capital of mongolia"):
        res = search(store, q, limit=10)
        assert res.semantic["status"] == "on"
        assert res.results == [], (q, [(r["id"], r["similarity"]) for r in res.results])
        assert res.no_confident_results


def test_the_model_is_asked_only_when_the_words_leave_room(tmp_path, on) -> None:
    root = tmp_path / "store"
    for cid, (title, body) in LOOKALIKES.items():
        write(root, cid, title, body)
    store = init(root)[0]
    with Index(store) as idx:
        idx.refresh()
        from cardmem.store.search.search import run as lexical

        def needs(q: str) -> bool:
            return hybrid.needs_vectors(lexical(idx, q, 10), q)

        assert not needs("Sizing the connection pool")  # named whole by one card's words
        assert needs("how many connections should a worker open")  # a paraphrase
        assert needs("Wie groß soll der Verbindungspool sein?")  # another language
        assert needs("kubernetes pod eviction")  # nothing found
        res = search_index(idx, "Sizing the connection pool", limit=3, semantic=True)
        assert res.semantic["status"] == "skipped" and res.results[0]["id"] == "reference/pool-sizing"


def test_high_is_only_for_a_card_the_words_single_out(tmp_path, on) -> None:
    store = lookalike_store(tmp_path, (
        "reference/pool-tuning", "Connection pool sizing for Postgres",
        "Pool size is cores times two; past that, more connections slow Postgres down."),
        filler=True)
    # Two cards hold every word of the question: the words cannot tell which one answers.
    res = search(store, "connection pool sizing", limit=5)
    both = [r for r in res.results if r["id"] in ("reference/pool-sizing", "reference/pool-tuning")]
    assert len(both) == 2 and res.semantic["status"] == "on", res.results
    assert [r["confidence"] for r in both] == ["medium", "medium"], both
    # One card alone holds them all: it may be high.
    res = search(store, "database timeouts idle statement", limit=5)
    assert res.results[0]["id"] == "reference/db-timeouts"
    assert res.results[0]["confidence"] == "high", res.results[0]


def test_the_words_are_searched_once_whether_or_not_the_vectors_join_in(tmp_path, on,
                                                                        monkeypatch) -> None:
    store = lookalike_store(tmp_path, filler=True)
    from cardmem.store.index import search as words

    calls: list[str] = []
    real = words.run

    def counted(*args, **kw):
        calls.append(args[1])
        return real(*args, **kw)

    monkeypatch.setattr(words, "run", counted)
    with Index(store) as idx:
        for q, status in (("how many connections should a worker open", "on"),
                          ("Sizing the connection pool", "skipped")):
            calls.clear()
            res = hybrid.run(idx, q, limit=2)
            assert res.semantic["status"] == status, (q, res.semantic)
            assert calls == [q], q  # one lexical search, the fusion's pool
            assert 0 < len(res.results) <= 2, (q, res.results)


def corpus_store(root: Path, n: int) -> None:
    """n cards of real agents-md paragraphs (deterministic)."""
    paras = []
    for path in sorted(need_corpus().glob("*--*.md")):
        text = path.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
        paras += [" ".join(b.split()) for b in re.split(r"\n\s*\n", text)
                  if len(b.split()) >= 8 and not b.lstrip().startswith(("#", "```", "|"))]
    for i in range(n):
        body = paras[i % len(paras)][:280]
        title = " ".join(body.split()[:6]).strip(".,:;`*")
        write(root, f"notes/n{i:04d}", title or f"Note {i}", body)


@pytest.mark.corpus
def test_a_unique_token_just_saved_is_first_and_confident_40_of_40(tmp_path, on) -> None:
    root = tmp_path / "store"
    corpus_store(root, 1000)
    store = init(root)[0]
    embedded(store)
    rnd = random.Random(40)
    got = []
    with Index(store) as idx:
        for i in range(40):
            token = "nt" + "".join(rnd.choice("0123456789abcdef") for _ in range(12))
            cid = f"inbox/saved-{i:02d}"
            body = (f"The deploy id for the staging rollout is {token}; quote it to the"
                    " on-call engineer when the database migration needs a rollback.")
            if i % 2:
                write(root, cid, f"Staging rollout {token}", body)
            else:
                write(root, cid, "Staging rollout id", body)
            idx.refresh()
            q = token if i % 4 < 2 else f"rollout id {token}"
            res = search(store, q, limit=10, index=idx)
            top = res.results[0] if res.results else {}
            got.append((top.get("id") == cid and top.get("confidence") in ("medium", "high")))
    assert sum(got) == 40, got
