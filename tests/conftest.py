"""Shared pytest fixtures for the whole suite."""
from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib leaves sys.path alone; put tests/ on it so any test can
# `from fakeapi import FakeAPI, text, tool_use, reply, error, drop`.
sys.path.insert(0, str(Path(__file__).parent))

from fakeapi import FakeAPI  # noqa: E402


@pytest.fixture
def fake_api() -> Iterator[FakeAPI]:
    """A fresh fake Anthropic Messages API on 127.0.0.1 for one test."""
    with FakeAPI() as api:
        yield api


@pytest.fixture
def model_env(fake_api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> FakeAPI:
    """fake_api, with ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY pointing at it."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-test-key")
    return fake_api
