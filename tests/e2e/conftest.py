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
    return npm_binary("@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude", CACHE)


# The other hosts whose CLIs run here (hosts/codex, hosts/gemini): pinned, installed the same way.
CODEX_VERSION = "0.171.0"
GEMINI_CLI_VERSION = "0.61.0"
COPILOT_CLI_VERSION = "1.0.102"


def npm_binary(package: str, version: str, bin_name: str, cache: Path | None = None) -> Path:
    """A pinned npm CLI in <repo>/.cache/<bin_name>, installed on first use under a lock;
    where npm cannot install it, a failure in CI and a skip elsewhere."""
    from filelock import FileLock

    cache = cache or REPO / ".cache" / bin_name
    cache.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cache.parent / f"{cache.name}.lock")):
        exe = cache / "node_modules" / ".bin" / bin_name
        pkg = cache / "node_modules" / Path(*package.split("/")) / "package.json"
        try:
            if exe.exists() and json.loads(pkg.read_text())["version"] == version:
                return exe
        except (OSError, ValueError, KeyError):
            pass
        cache.mkdir(parents=True, exist_ok=True)
        why = None
        if not shutil.which("npm"):
            why = "npm is not installed"
        else:
            proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix",
                                   str(cache), f"{package}@{version}"],
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0 or not exe.exists():
                why = f"npm install failed: {(proc.stderr or proc.stdout).strip()[-500:]}"
        if why:
            if os.environ.get("CI"):
                pytest.fail(f"{package} {version} is required in CI: {why}")
            pytest.skip(f"not run: needs {package} {version} (npm installs it): {why}")
        return exe


@pytest.fixture(scope="session")
def codex() -> Path:
    return npm_binary("@openai/codex", CODEX_VERSION, "codex")


@pytest.fixture(scope="session")
def gemini_cli() -> Path:
    return npm_binary("@google/gemini-cli", GEMINI_CLI_VERSION, "gemini")


@pytest.fixture(scope="session")
def copilot_cli() -> Path:
    return npm_binary("@github/copilot", COPILOT_CLI_VERSION, "copilot")
