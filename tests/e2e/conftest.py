"""The real Claude Code CLI for end-to-end tests: pinned, installed once per checkout."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLAUDE_CODE_VERSION = "2.1.332"
REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "claude-code"
@pytest.fixture(scope="session")
def claude_code() -> Path:
    """The pinned Claude Code CLI, installed into <repo>/.cache on first use.

    Where npm cannot install it the tests fail in CI (CI set) and are skipped elsewhere.
    """
    return claude_binary()


def claude_binary() -> Path:
    """The pinned CLI, installed first if need be. Under pytest-xdist every worker asks: a
    lock beside the cache lets one install while the others wait, then find it there."""
    from filelock import FileLock

    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(CACHE.parent / "claude-code.lock")):
        return _installed()


def _installed() -> Path:
    exe = CACHE / "node_modules" / ".bin" / "claude"
    pkg = CACHE / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
    try:
        if exe.exists() and json.loads(pkg.read_text())["version"] == CLAUDE_CODE_VERSION:
            return exe
    except (OSError, ValueError, KeyError):
        pass
    CACHE.mkdir(parents=True, exist_ok=True)
    why = None
    if not shutil.which("npm"):
        why = "npm is not installed"
    else:
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(CACHE),
                               f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}"],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not exe.exists():
            why = f"npm install failed: {(proc.stderr or proc.stdout).strip()[-500:]}"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"Claude Code {CLAUDE_CODE_VERSION} is required in CI: {why}")
        pytest.skip(f"not run: needs Claude Code {CLAUDE_CODE_VERSION} (npm installs it): {why}")
    return exe


