"""The shared corpora beside the clone (../shared, as in CI), for the tests marked `corpus`.

A clone alone has none: its corpus tests are reported as not run, with the reason. In CI
(CI set) a missing corpus fails them instead: CI runs every one. A plain module (not the
conftest, which pytest may load twice under two names) so that its state is one.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "agents-md"

_current: list[pytest.Item] = []  # the test being set up or run, in this process


def setting_up(item: pytest.Item) -> None:
    """pytest_runtest_setup: a corpus test without its corpus is not run (failed in CI)."""
    _current[:] = [item]
    if item.get_closest_marker("corpus") and not CORPUS.is_dir():
        why = f"needs the shared corpus at {CORPUS} (../shared beside the clone, as in CI)"
        if os.environ.get("CI"):
            pytest.fail(f"CI: {why}", pytrace=False)
        pytest.skip(f"not run: {why}")


def need_corpus() -> Path:
    """The agents-md corpus, for a test marked `corpus`: reading it unmarked is an error,
    so that `-m corpus` and the reports of what did not run are exact."""
    item = _current[0] if _current else None
    assert item is not None and item.get_closest_marker("corpus"), \
        f"{item.nodeid if item else 'this test'} reads the shared corpus: mark it @pytest.mark.corpus"
    return CORPUS
