"""The retry queue on disk: entries, backoff, attempts, bounds, give-up, the backlog count."""
from __future__ import annotations

import json
import os
import time

import pytest

from cardmem.store.learning import retry

TURNS = [{"role": "user", "text": "raise the KEDA ceiling"},
         {"role": "assistant", "text": "raised it to 16"}]
T0 = 1_800_000_000.0  # a fixed "now": the queue takes its clock as an argument


def test_a_failure_keeps_the_excerpt_with_what_a_retry_needs(store):
    gone = retry.fail(store.root, "sess-1/../x", TURNS, "HTTP 500:\n fake 500", project="acme",
                      cwd="/src/acme", size=4321, now=T0)
    assert gone == []
    path = store.root / ".cardmem" / "retry" / "sess-1x.json"  # the session's safe name
    e = json.loads(path.read_text())
    assert e["turns"] == TURNS and e["session"] == "sess-1/../x"
    assert (e["project"], e["cwd"], e["size"], e["attempts"]) == ("acme", "/src/acme", 4321, 1)
    assert e["first_failed"] == e["last_failed"] == T0
    assert e["last_error"] == "HTTP 500: fake 500"  # one line
    assert e["next_try"] == T0 + 60
    assert retry.load(store.root, "sess-1/../x") == e


def test_backoff_grows_and_due_respects_it(store):
    waits = []
    now = T0
    for _ in range(len(retry.BACKOFF_S)):
        retry.fail(store.root, "s", TURNS, "timed out", now=now)
        e = retry.load(store.root, "s")
        waits.append(e["next_try"] - now)
        assert retry.due(store.root, now=e["next_try"] - 1) == []  # not yet
        assert [d["session"] for d in retry.due(store.root, now=e["next_try"])] == ["s"]
        now = e["next_try"]
    assert waits == [60, 300, 1800, 7200, 43200]
    assert e["first_failed"] == T0 and e["attempts"] == len(retry.BACKOFF_S)


def test_too_many_attempts_give_up_into_given_up_never_deleted(store):
    for i in range(retry.MAX_ATTEMPTS - 1):
        assert retry.fail(store.root, "s", TURNS, f"HTTP 529: overloaded {i}", now=T0 + i) == []
    gone = retry.fail(store.root, "s", TURNS, "HTTP 529: overloaded", now=T0 + 99)
    assert [g["session"] for g in gone] == ["s"]
    assert "6 failed attempts" in gone[0]["given_up_why"]
    assert retry.load(store.root, "s") is None and retry.due(store.root, now=T0 + 10**6) == []
    kept = json.loads((store.root / ".cardmem/retry/given-up/s.json").read_text())
    assert kept["turns"] == TURNS and kept["last_error"] == "HTTP 529: overloaded"
    # Given up twice (moved back by a person, failed again): both copies kept.
    for i in range(retry.MAX_ATTEMPTS):
        retry.fail(store.root, "s", TURNS, "again", now=T0 + 1000 + i)
    assert len(list((store.root / ".cardmem/retry/given-up").glob("s*.json"))) == 2


def test_no_model_spends_no_attempts_and_stays_due(store):
    for i in range(retry.MAX_ATTEMPTS + 3):
        assert retry.fail(store.root, "s", TURNS, "no ANTHROPIC_API_KEY set", counts=False,
                          now=T0 + i) == []
    e = retry.load(store.root, "s")
    assert e["attempts"] == 0 and e["next_try"] == T0 + retry.MAX_ATTEMPTS + 2
    assert retry.due(store.root, now=e["next_try"])  # due at the next run


def test_the_count_bound_gives_up_the_oldest(store, monkeypatch):
    monkeypatch.setattr(retry, "MAX_ENTRIES", 3)
    for i in range(3):
        assert retry.fail(store.root, f"s{i}", TURNS, "x", now=T0 + i) == []
    # s0 failing again does not make it younger: age is counted from the first failure.
    retry.fail(store.root, "s0", TURNS, "x", now=T0 + 50)
    gone = retry.fail(store.root, "s3", TURNS, "x", now=T0 + 60)
    assert [g["session"] for g in gone] == ["s0"]
    assert "queue full (4 > 3 entries)" in gone[0]["given_up_why"]
    names = sorted(p.name for p in (store.root / ".cardmem/retry").glob("*.json"))
    assert names == ["s1.json", "s2.json", "s3.json"]
    assert retry.retry_backlog(store.root) == {"waiting": 3, "given_up": 1,
                                               "oldest_age_s": None, "last_error": None}


def test_the_byte_bound_gives_up_the_oldest_until_it_fits(store, monkeypatch):
    big = [{"role": "user", "text": "x" * 3000}]
    size = len(json.dumps({"turns": big}))
    monkeypatch.setattr(retry, "MAX_BYTES", int(size * 2.5))
    for i in range(4):
        gone = retry.fail(store.root, f"s{i}", big, "x", now=T0 + i)
    assert [g["session"] for g in gone] == ["s1"]  # s0 went when s2 came
    assert "bytes" in gone[0]["given_up_why"]
    assert retry.retry_backlog(store.root)["given_up"] == 2
    total = sum(p.stat().st_size for p in (store.root / ".cardmem/retry").glob("*.json"))
    assert total <= retry.MAX_BYTES


def test_remove_and_due_order(store):
    retry.fail(store.root, "young", TURNS, "x", now=T0 + 10)
    retry.fail(store.root, "old", TURNS, "x", now=T0)
    assert [e["session"] for e in retry.due(store.root, now=T0 + 10**6)] == ["old", "young"]
    retry.remove(store.root, "old")
    retry.remove(store.root, "never-queued")
    assert [e["session"] for e in retry.due(store.root, now=T0 + 10**6)] == ["young"]


def test_backlog_is_one_listdir_and_reads_nothing(store, monkeypatch):
    assert retry.retry_backlog(store.root) == {"waiting": 0, "given_up": 0,
                                               "oldest_age_s": None, "last_error": None}
    assert not (store.root / ".cardmem" / "retry").exists()  # looking creates nothing
    hour_ago = time.time() - 3600
    retry.fail(store.root, "a", TURNS, "HTTP 500: fake", now=hour_ago)
    retry.fail(store.root, "b", TURNS, "no answer within 30 s", now=hour_ago + 5)
    calls = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda p: calls.append(p) or real(p))

    def no_reads(*a, **k):
        raise AssertionError("the lean backlog reads no entry")

    monkeypatch.setattr("pathlib.Path.read_text", no_reads)
    monkeypatch.setattr("builtins.open", no_reads)
    assert retry.retry_backlog(store.root)["waiting"] == 2
    assert len(calls) == 1
    monkeypatch.undo()
    detail = retry.retry_backlog(store.root, detail=True)
    assert detail["waiting"] == 2 and detail["given_up"] == 0
    assert detail["last_error"] == "no answer within 30 s"  # the latest failure's
    assert detail["oldest_age_s"] == pytest.approx(3600, abs=60)
