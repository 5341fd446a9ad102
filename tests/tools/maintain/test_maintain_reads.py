"""Reads noted in .cardmem/reads.log (show, MCP read_card and search, CLI search, the
session-start context) and `stale` asking them: a card read lately is not stale."""
from __future__ import annotations

import multiprocessing
import sys
import time

import pytest
from click.testing import CliRunner
from maintainkit import AGED, aged_store, commit_as_person, corpus_store

from cardmem.store.errors import NotFound
from cardmem.store.root import READS_LOG, StoreRoot
from cardmem.store.maintain import Survey
from cardmem.store.maintain import reads, stale
from cardmem.tools.maintain import run

STALE = AGED
DAY = 86400


@pytest.fixture
def aged(tmp_path):
    return aged_store(tmp_path / "store")


@pytest.mark.corpus
def test_a_card_read_lately_is_not_stale_and_one_read_long_ago_is(aged) -> None:
    assert [f.ids for f in stale.find(Survey.of(aged))] == [[STALE]]
    assert "with no read noted" in stale.find(Survey.of(aged))[0].detail
    aged.note_reads([STALE], now=time.time() - 3 * DAY)
    assert stale.find(Survey.of(aged)) == []
    aged.note_reads([STALE], now=time.time() - 400 * DAY)  # an older line changes nothing
    assert stale.find(Survey.of(aged)) == []
    (aged.state_dir / READS_LOG).write_text(f"{int(time.time() - 300 * DAY)} {STALE}\n")
    [f] = stale.find(Survey.of(aged))
    assert "unread for 300 days" in f.detail


@pytest.mark.corpus
def test_cli_show_and_search_note_reads(aged, monkeypatch, capfd) -> None:
    from cardmem.tools import entry
    from cardmem.tools.cli.group import cli

    root = str(aged.root)
    assert CliRunner().invoke(cli, ["show", STALE, "--store", root]).exit_code == 0
    assert set(reads.last_read(aged.root)) == {STALE}
    res = CliRunner().invoke(cli, ["search", "worker versioning", "--store", root, "--json"])
    assert res.exit_code == 0, res.output
    import json

    top = [r["id"] for r in json.loads(res.output)["results"][:3]]
    assert top and set(top) <= set(reads.last_read(aged.root))
    (aged.state_dir / READS_LOG).unlink()
    monkeypatch.setattr(sys, "argv", ["cardmem", "search", "--store", root, "error handling"])
    try:  # the console script's lean path
        entry.search(entry.parse_search(["--store", root, "error handling"]))
    except SystemExit:
        pass
    capfd.readouterr()
    assert STALE in reads.last_read(aged.root)


@pytest.mark.corpus
def test_mcp_read_card_and_search_note_reads(aged) -> None:
    from cardmem.tools.agents.mcp_server import CardTools

    tools = CardTools(aged)
    tools.read_card(STALE)
    assert set(reads.last_read(aged.root)) == {STALE}
    (aged.state_dir / READS_LOG).unlink()
    found = [r["id"] for r in tools.search("error handling", limit=10)["results"]]
    assert set(reads.last_read(aged.root)) == set(found[:3])
    with pytest.raises(NotFound, match="no-such-card"):
        tools.read_card("projects/temporal/no-such-card")
    assert "projects/temporal/no-such-card" not in reads.last_read(aged.root)


@pytest.mark.corpus
def test_the_session_start_context_notes_the_cards_it_delivers(aged, tmp_path) -> None:
    from cardmem.hosts.session_start import session_start_context

    cwd = tmp_path / "temporal"
    cwd.mkdir()
    text, outcome, _ = session_start_context({"cwd": str(cwd)}, aged.root)
    assert outcome.startswith("ok")
    got = reads.last_read(aged.root)
    assert STALE in got and STALE in text
    assert all(abs(t - time.time()) < 60 for t in got.values())
    assert stale.find(Survey.of(aged)) == []


@pytest.mark.corpus
def test_cards_the_session_start_cuts_to_a_title_are_not_read(aged, tmp_path) -> None:
    from cardmem.hosts.session_start import session_start_context

    (aged.root / "feedback").mkdir(exist_ok=True)
    for i in range(40):
        (aged.root / f"feedback/rule-{i:02d}.md").write_text(
            f"---\ntitle: Rule {i:02d}\ntype: feedback\n---\n" + "Always do this. " * 60 + "\n")
    commit_as_person(aged)
    (aged.root / "cardmem.toml").write_text("[context]\nbudget_chars = 3000\n")
    text, outcome, _ = session_start_context({"cwd": str(tmp_path)}, aged.root)
    got = reads.last_read(aged.root)
    assert "rule-39" in text and "feedback/rule-00" in got
    assert "feedback/rule-39" not in got  # listed by title only


def _append(root: str, n: int) -> None:
    store = StoreRoot(root)
    for i in range(n):
        store.note_reads([f"projects/p/card-{i % 7}", "feedback/x"], now=1_700_000_000 + i)


@pytest.mark.corpus
def test_concurrent_appends_stay_whole_and_maintain_compacts_them(aged) -> None:
    procs = [multiprocessing.get_context("spawn").Process(target=_append,
                                                           args=(str(aged.root), 300))
             for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    lines = (aged.state_dir / READS_LOG).read_text().splitlines()
    assert len(lines) == 3 * 300 * 2
    assert all(ln.split(" ", 1)[1].startswith(("projects/p/card-", "feedback/x")) for ln in lines)
    assert reads.last_read(aged.root)["feedback/x"] == 1_700_000_299
    aged.note_reads([STALE])
    run(aged, {"broken-link"})  # stale not checked: the log is left alone
    assert len((aged.state_dir / READS_LOG).read_text().splitlines()) == 1801
    run(aged, {"stale"})
    left = (aged.state_dir / READS_LOG).read_text().splitlines()
    assert [ln.split(" ", 1)[1] for ln in left] == [STALE]  # one line a card; gone cards dropped
    assert stale.find(Survey.of(aged)) == []
