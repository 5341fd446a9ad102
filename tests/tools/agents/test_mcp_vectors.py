"""The MCP server's searches never embed: what the index gains is embedded by a background
process (the watcher's, store/watch/backfill.py), with the real model; a search meanwhile
finds those cards by their words and says how many wait."""
from __future__ import annotations

import time

import pytest

from cardmem.store.index.db import Index
from cardmem.store.search import embedding, semantic
from cardmem.store.store import init
from cardmem.tools.agents.mcp_server import CardTools
from semantickit import model, write  # noqa: F401 - model is a fixture


@pytest.fixture
def server(tmp_path, model, monkeypatch):
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    embedding.reset()
    embedding._MODEL = model
    root = tmp_path / "store"
    write(root, "reference/release-zod", "Cutting a zod release",
          "Bump the version in package.json and jsr.json together, then push to main.")
    write(root, "feedback/short-answers", "Keep answers short",
          "Skip the preamble and answer in a few sentences.")
    tools = CardTools(init(root)[0])
    tools.follow_files()
    yield tools
    tools.close()
    assert not embedding.BACKFILL  # the server's searches embed again once it is gone


def embedded(tools: CardTools, model, want: int) -> int:
    with Index(tools.store) as idx:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = idx.conn.execute("SELECT count(*) FROM vectors WHERE model = ?",
                                    (model.stamp,)).fetchone()[0]
            if done >= want and semantic.stale(idx, model.stamp) == ([], 0):
                return done
            time.sleep(0.2)
    log = tools.store.root / ".cardmem" / "embedding.log"
    raise AssertionError(log.read_text() if log.exists() else "no embedding log")


def test_a_server_leaves_embedding_to_a_background_process(server, model) -> None:
    first = server.search("zod release checklist", limit=3)
    assert first["semantic"]["not_embedded"] == 2  # the search embedded none of them
    assert first["results"][0]["id"] == "reference/release-zod"  # found by its words
    assert embedded(server, model, 2) == 2
    write(server.store.root, "reference/friday", "No releases on Fridays",
          "Nothing ships on a Friday afternoon.")
    saved = server.search("Am Freitag wird nichts veröffentlicht", limit=3)
    assert saved["semantic"]["not_embedded"] == 1
    assert embedded(server, model, 3) == 3
    again = server.search("Am Freitag wird nichts veröffentlicht", limit=3)
    assert "not_embedded" not in again["semantic"]
    assert again["results"][0]["id"] == "reference/friday"
