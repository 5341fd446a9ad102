"""Address-only reads: list_recent lists cards only, newest change first."""
from __future__ import annotations

from cardmem.store.by_address import list_recent
from cardmem.store.store import Store
from cardmem.store.git.writer import Message


def test_list_recent_lists_cards_newest_first_and_not_the_store_readme(store: Store) -> None:
    store.new("reference/old", body="first")
    store.commit({"README.md": b"# About this store\n", "notes/README.md": b"# Notes\n"},
                 Message("docs: readme"), agent=False)
    store.new("reference/new", body="second")
    ids = [e["id"] for e in list_recent(store)]
    assert ids == ["reference/new", "notes/README", "reference/old"]
