"""What a maintain pass records (.cardmem/maintain.json) and who reads it: search and the
session-start context rank stale cards below the rest and say so; doctor counts the open
findings."""
from __future__ import annotations

import json
import os
import time

import pytest
from gitremote import cli
from maintainkit import AGED, aged_store, commit_as_person, corpus_store, git

import cardmem.store.search.search as search
from cardmem.store.context import session_context
from cardmem.store.index.db import Index
from cardmem.store import maintain_record as record
from cardmem.tools.maintain import run

STALE = AGED


@pytest.fixture
def aged(tmp_path):
    return aged_store(tmp_path / "store")


def ranked(store, query: str) -> list[tuple[str, bool]]:
    with Index.open(store) as idx:
        idx.refresh()
        return [(r["id"], bool(r.get("stale"))) for r in search.run(idx, query).results]


@pytest.mark.corpus
def test_search_ranks_a_stale_card_below_the_rest_once_maintain_found_it(aged) -> None:
    assert ranked(aged, "error handling")[0] == (STALE, False)
    head = git(aged, "rev-parse", "HEAD")
    run(aged, {"stale"})
    assert git(aged, "rev-parse", "HEAD") == head and git(aged, "status", "--porcelain") == ""
    after = ranked(aged, "error handling")
    assert after[0][0] != STALE and (STALE, True) in after
    code, out, _ = cli("search", "error handling", "--store", str(aged.root))
    line = next(ln for ln in out.splitlines() if ln.startswith(STALE))
    assert code == 0 and "(stale: " in line
    code, out, _ = cli("search", "error handling", "--json", "--store", str(aged.root))
    assert [r.get("stale") for r in json.loads(out)["results"] if r["id"] == STALE] == [True]


@pytest.mark.corpus
def test_a_card_changed_since_the_pass_is_no_longer_taken_as_stale(aged) -> None:
    run(aged, {"stale"})
    assert record.stale(aged.root) == {STALE}
    p = aged.root / f"{STALE}.md"
    later = time.time() + 5
    os.utime(p, (later, later))
    assert record.stale(aged.root) == set()


@pytest.mark.corpus
def test_session_context_puts_stale_project_cards_last_and_says_so(aged) -> None:
    before = session_context(aged, project="temporal", budget=200000)
    run(aged, {"stale"})
    pile = session_context(aged, project="temporal", budget=200000)
    assert "1 stale, last" in pile.text and "1 stale" not in before.text
    heads = [ln for ln in pile.text.splitlines() if ln.startswith("### ")]
    assert STALE in heads[-1] and "— stale: unchanged for long" in heads[-1]
    assert before.addresses.index(STALE) < len(before.addresses) - 1


@pytest.mark.corpus
def test_doctor_counts_open_findings_as_a_warning(aged) -> None:
    code, out, _ = cli("doctor", "--json", "--store", str(aged.root))
    [line] = [c for c in json.loads(out) if c["message"].startswith("maintain:")]
    assert line["ok"] and "never run" in line["message"]
    run(aged, {"stale"})
    code, out, _ = cli("doctor", "--json", "--store", str(aged.root))
    [line] = [c for c in json.loads(out) if c["message"].startswith("maintain:")]
    assert line["warning"] and line["message"].startswith("maintain: 1 open finding(s): 1 stale")


@pytest.mark.corpus
def test_a_narrower_pass_keeps_the_other_kinds_record(aged) -> None:
    run(aged, {"stale"})
    run(aged, {"broken-link"})
    kinds = record.load(aged.root)
    assert sorted(kinds) == ["broken-link", "stale"] and len(kinds["stale"]["findings"]) == 1


@pytest.mark.corpus
def test_search_reads_only_the_small_stale_file(aged) -> None:
    run(aged, {"stale"})
    (aged.root / ".cardmem/maintain.json").write_text("not json")  # the big record unread
    assert (STALE, True) in ranked(aged, "error handling")
    assert json.loads((aged.root / ".cardmem/stale.json").read_text())["ids"] == [STALE]
