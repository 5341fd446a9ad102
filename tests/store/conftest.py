"""Fixtures shared by the store tests."""
from __future__ import annotations

import pytest

from cardmem.store.index.db import Index


@pytest.fixture
def idx(example_store):
    """The example store's index, brought up to date (test_watcher.py has its own)."""
    with Index(example_store) as index:
        index.refresh()
        yield index
