"""StoreRoot: the store as the SessionStart hook opens it (settings cached per file version)."""
from __future__ import annotations

import os

import pytest

from cardmem.store.errors import CardmemError
from cardmem.store.root import StoreRoot
from cardmem.store.store import Store


def test_open_refuses_what_store_open_refuses(tmp_path):
    for root in (tmp_path / "missing", tmp_path):
        with pytest.raises(CardmemError) as lean:
            StoreRoot.open(root)
        with pytest.raises(CardmemError) as full:
            Store.open(root)
        assert str(lean.value) == str(full.value)


def age(path, by: int = 3600) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - by * 10**9))


def test_settings_follow_the_file(example_store):
    toml = example_store.root / "cardmem.toml"
    age(toml)  # a file written in the last seconds is never cached (see the next test)
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


def test_a_file_rewritten_within_one_clock_tick_is_read_again(example_store):
    """Same size, same mtime (a coarse clock): the cache must not have been written."""
    toml = example_store.root / "cardmem.toml"
    os.utime(toml)  # just written
    stamp = toml.stat().st_mtime_ns
    assert StoreRoot(example_store.root).config["context"]["budget_chars"] == 9000
    toml.write_text(toml.read_text().replace("budget_chars = 9000", "budget_chars = 1234"))
    os.utime(toml, ns=(stamp, stamp))
    assert StoreRoot(example_store.root).config["context"]["budget_chars"] == 1234
