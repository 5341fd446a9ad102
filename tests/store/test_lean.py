"""StoreRoot: the store as the SessionStart hook opens it (settings cached per file version)."""
from __future__ import annotations

import os

import pytest

from cardmem.store.errors import CardmemError
from cardmem.store.lean import StoreRoot
from cardmem.store.store import Store


def test_open_refuses_what_store_open_refuses(tmp_path):
    for root in (tmp_path / "missing", tmp_path):
        with pytest.raises(CardmemError) as lean:
            StoreRoot.open(root)
        with pytest.raises(CardmemError) as full:
            Store.open(root)
        assert str(lean.value) == str(full.value)


def test_settings_follow_the_file(example_store):
    toml = example_store.root / "cardmem.toml"
    first = StoreRoot(example_store.root).config
    assert first == Store(example_store.root).config
    assert (example_store.root / ".cardmem" / "settings.json").exists()
    assert StoreRoot(example_store.root).config == first  # read back from the cache
    toml.write_text(toml.read_text().replace("budget_chars = 9000", "budget_chars = 1234"))
    assert StoreRoot(example_store.root).config["context"]["budget_chars"] == 1234
    toml.write_text("[context\n")
    for _ in range(2):  # a malformed file is refused every time, never cached
        with pytest.raises(CardmemError):
            StoreRoot(example_store.root).config  # noqa: B018
    os.unlink(toml)
    assert StoreRoot(example_store.root).config["context"]["budget_chars"] == 9000


def test_scan_falls_back_to_the_full_store(example_store):
    cards, problems = StoreRoot(example_store.root).scan()
    assert len(cards) == 55 and problems == []
