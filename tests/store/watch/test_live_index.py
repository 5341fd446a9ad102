"""The MCP server's freshness from file events (store/watch/live.py): a search sees every
change made before it, with no git status per search. Each change here is made outside
any watcher, the way a person's editor or a shell makes it; a LiveIndex that skipped the
check would serve the old index and fail."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cardmem.store.index import freshness
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.watch.live import LiveIndex
from cardmem.tools.agents.mcp_server import CardTools


def card(root: Path, cid: str, title: str, body: str) -> None:
    p = root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\ntitle: {title}\n---\n{body}\n")


def found(tools: CardTools, word: str) -> list[str]:
    return [r["id"] for r in tools.search(word, limit=10)["results"]]


@pytest.fixture
def following(example_store, monkeypatch):
    gits: list[list[str]] = []
    real = freshness.Status.__init__

    def counted(self, root, full=False):
        gits.append([root])
        real(self, root, full)

    monkeypatch.setattr(freshness.Status, "__init__", counted)
    tools = CardTools(example_store)
    tools.follow_files()
    yield tools, example_store.root, gits
    tools.close()


def test_edits_new_files_deletes_and_renames_are_seen_without_git(following) -> None:
    tools, root, gits = following
    card(root, "reference/kumquat", "Kumquat notes", "the kumquat tree")
    assert found(tools, "kumquat") == ["reference/kumquat"]  # the first search checks
    asked = len(gits)
    card(root, "reference/kumquat", "Kumquat notes", "now about a loquat tree")  # in place
    assert found(tools, "loquat") == ["reference/kumquat"]
    card(root, "people/new-person", "Persimmon Person", "grows persimmons")  # a new file
    assert found(tools, "persimmon") == ["people/new-person"]
    os.rename(root / "people/new-person.md", root / "reference/persimmon.md")  # a rename
    assert found(tools, "persimmon") == ["reference/persimmon"]
    (root / "reference/kumquat.md").unlink()  # a delete
    assert found(tools, "loquat") == []
    d = root / "projects" / "orchard"  # a folder made with a card in it
    d.mkdir(parents=True)
    (d / "quince.md").write_text("---\ntitle: Quince\n---\nquince jelly\n")
    assert found(tools, "quince") == ["projects/orchard/quince"]
    assert len(gits) == asked  # none of it asked git


def test_what_events_cannot_vouch_for_is_checked_the_ordinary_way(following,
                                                                  monkeypatch) -> None:
    tools, root, gits = following
    found(tools, "deploy")
    live = tools._live
    asked = len(gits)
    live.intake.request_rescan("overflow")  # events were lost
    card(root, "reference/medlar", "Medlar", "medlar fruit")
    assert found(tools, "medlar") == ["reference/medlar"]
    assert len(gits) == asked + 1
    monkeypatch.setattr(live, "_checked_at", live._checked_at - freshness.MAX_AGE_S - 1)
    found(tools, "medlar")
    assert len(gits) == asked + 2  # and one search every MAX_AGE_S


def test_a_fence_that_never_comes_falls_back_to_the_check(example_store, monkeypatch) -> None:
    idx = Index(example_store)
    live = LiveIndex(str(example_store.root), idx, example_store.root / ".cardmem")
    try:
        live.fresh()
        monkeypatch.setattr("cardmem.store.watch.live.FENCE_WAIT_S", 0.05)
        monkeypatch.setattr(live.intake, "on_event", lambda event: None)  # events go nowhere
        card(example_store.root, "reference/sloe", "Sloe", "sloe gin")
        live.fresh()
        assert [r["id"] for r in search_index(idx, "sloe").results] == ["reference/sloe"]
    finally:
        live.close()
        idx.close()
