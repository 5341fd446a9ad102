"""Fixtures shared by the store tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from cardmem.store.index.db import DB_NAME, Index


@pytest.fixture(scope="session")
def _example_index(tmp_path_factory: pytest.TempPathFactory, store_templates) -> Path:
    """The example store's index file, built once a session on a copy of its template (the
    same files, the same mtimes): a build costs ~6 times the refresh that checks a copy."""
    store = store_templates.copy("example", tmp_path_factory.mktemp("index") / "ex")
    with Index(store) as index:
        index.refresh()
    return store.root / ".cardmem" / DB_NAME


@pytest.fixture
def idx(example_store, _example_index: Path):
    """The example store's index, brought up to date (test_watcher.py has its own): the
    session's copy, then a refresh that checks every card against it."""
    import shutil

    shutil.copy2(_example_index, example_store.root / ".cardmem" / DB_NAME)
    with Index(example_store) as index:
        index.refresh()
        yield index
