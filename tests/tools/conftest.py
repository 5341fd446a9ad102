"""Fixtures shared by the tools tests."""
from __future__ import annotations

import os

import pytest
from clikit import Ran, run


@pytest.fixture(scope="session")
def demo_without_a_key() -> Ran:
    """`cardmem demo` with no ANTHROPIC_* (the test machine has no `claude` on PATH): run once for the tests
    that read it; each of its steps is a process of its own (tools/cli/demo.py)."""
    return run("demo", env={k: None for k in os.environ if k.startswith("ANTHROPIC_")},
               script=True)
