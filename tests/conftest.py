"""Shared pytest fixtures for the whole suite."""
from __future__ import annotations

import os
import random
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

# --import-mode=importlib leaves sys.path alone; put tests/ on it so any test can
# `from fakeapi import FakeAPI, text, tool_use, reply, error, drop`.
sys.path.insert(0, str(Path(__file__).parent))

import corpora  # noqa: E402
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


@pytest.fixture
def today() -> str:
    """The date as the test starts (ISO): a module-level `date.today()` is the collection's,
    and a run under load that crossed midnight expected cards filed under the day before."""
    return date.today().isoformat()


REPO = Path(__file__).resolve().parent.parent
EXAMPLE_CARDS = REPO / "cards"
E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e/ runs a real host CLI: marked e2e."""
    for item in items:
        if E2E in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


def pytest_runtest_setup(item: pytest.Item) -> None:
    corpora.setting_up(item)


# Random tests take their randomness from the `rng` fixture: one seed, settable, and shown
# with the failure so that the run can be replayed.
SEED_ENV = "CARDMEM_TEST_SEED"
SEED = pytest.StashKey[int]()


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> random.Random:
    """A random.Random seeded from CARDMEM_TEST_SEED if set, else from the test's
    @pytest.mark.seed(N) if it has one, else drawn anew; a failing test's report says it."""
    mark = request.node.get_closest_marker("seed")
    seed = int(os.environ.get(SEED_ENV) or (mark.args[0] if mark else 0)
               or random.SystemRandom().randrange(1, 2**31))
    request.node.stash[SEED] = seed
    return random.Random(seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    seed = item.stash.get(SEED, None)
    if seed is not None and report.failed:
        report.sections.append(("random seed", f"{SEED_ENV}={seed} python -m pytest "
                                               f"'{item.nodeid}' replays it"))
    return report


@pytest.fixture(autouse=True, scope="session")
def hermetic_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests see no user git config (as on a fresh machine); raw git calls get an identity."""
    cfg = tmp_path_factory.mktemp("gitconfig") / "config"
    cfg.write_text("[init]\n\tdefaultBranch = main\n")
    saved = {k: os.environ.get(k) for k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM",
                                            "CARDMEM_STORE", "EDITOR", "VISUAL",
                                            "CARDMEM_SEMANTIC")}
    os.environ["GIT_CONFIG_GLOBAL"] = str(cfg)
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    for k in ("CARDMEM_STORE", "EDITOR", "VISUAL"):
        os.environ.pop(k, None)
    # Searches are lexical unless a test asks for the model (tests/store/search/test_semantic.py
    # runs the real one): loading it and embedding every test store would cost minutes.
    os.environ["CARDMEM_SEMANTIC"] = "off"
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(autouse=True, scope="session")
def no_claude_on_path() -> Iterator[None]:
    """No `claude` on PATH: with no key the model route would otherwise be the developer's
    own Claude Code login (a real model call). Tests that want one put a fake or the
    pinned CLI on PATH themselves."""
    import shutil

    saved = os.environ.get("PATH", "")
    keep = [d for d in saved.split(os.pathsep)
            if d and not shutil.which("claude", path=d)]
    os.environ["PATH"] = os.pathsep.join(keep)
    yield
    os.environ["PATH"] = saved


GIT_ID = {"GIT_AUTHOR_NAME": "Tess Tester", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess Tester", "GIT_COMMITTER_EMAIL": "tess@example.com"}


# Stores are built once a session and copied for each test: a copy of the example store
# costs about half its `init` (55 cards through git add and commit), an empty one a fifth.
# A copy is the same commit, files, mtimes and state; git re-reads the stat data it has not
# seen (inode, ctime), so the copy's first `git status` hashes its files again.

class StoreTemplates:
    """Stores built once a session ("store": empty; "example": cards/ committed)."""

    def __init__(self, base: Path) -> None:
        import shutil

        from cardmem.store.store import init

        self.base = base
        init(base / "store")
        shutil.copytree(EXAMPLE_CARDS, base / "example")
        init(base / "example")

    def copy(self, name: str, root: Path):
        """A Store at root: a copy of the template name."""
        import shutil

        from cardmem.store.store import Store

        shutil.copytree(self.base / name, root, symlinks=True)
        return Store(root)


@pytest.fixture(scope="session")
def store_templates(tmp_path_factory: pytest.TempPathFactory,
                    hermetic_git: None) -> StoreTemplates:
    return StoreTemplates(tmp_path_factory.mktemp("store-templates"))


@pytest.fixture
def store(tmp_path: Path, store_templates: StoreTemplates):
    """An empty, initialised store in a temp dir."""
    return store_templates.copy("store", tmp_path / "store")


@pytest.fixture
def example_store(tmp_path: Path, store_templates: StoreTemplates):
    """A committed copy of the example store in cards/."""
    return store_templates.copy("example", tmp_path / "example")


@pytest.fixture(autouse=True)
def model_loads_in_the_foreground() -> Iterator[None]:
    """An MCP server built in a test sets embedding.BACKGROUND for its process; put it
    back, or a later semantic test finds "the model is still loading" (order-dependent)."""
    yield
    emb = sys.modules.get("cardmem.store.search.embedding")
    if emb is not None:
        emb.BACKGROUND = False
