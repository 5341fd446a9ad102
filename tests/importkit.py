"""Shared set-up of the import tests: the fixtures copied out, a store with a person."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gitremote import cli

FIXTURES = Path(__file__).parent / "tools" / "importers" / "import_fixtures"
MEMORY = "claude-memory/-home-tess-src-acme-api/memory"
PATHS = {"claude-md": "claude-md/CLAUDE.md", "claude-memory": MEMORY,
         "basic-memory": "basic-memory", "mcp-memory": "mcp-memory/memory.json"}


def copy_fixtures(tmp: Path) -> Path:
    """The fixtures in a folder of their own (no git repository above it), to change."""
    dest = tmp / "src"
    shutil.copytree(FIXTURES, dest)
    return dest


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def with_person(store):
    git(store.root, "config", "user.name", "Tess Tester")
    git(store.root, "config", "user.email", "tess@example.com")
    return store


def commits(store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD"))


def cards(store) -> dict[str, object]:
    found, problems = store.scan()
    assert not problems
    return {c.id: c for c in found}


# The import tests' shared fixtures (a test module imports them by name to use them).
@pytest.fixture
def person(store):
    return with_person(store)


@pytest.fixture
def src(tmp_path):
    return copy_fixtures(tmp_path)


def imp(store, kind: str, path, *args: str) -> tuple[int, str, str]:
    """`cardmem import KIND PATH ARGS… --store STORE`: (exit code, stdout, stderr)."""
    return cli("import", kind, str(path), "--store", str(store.root), *args)
