"""What the tests of the semantic layer share: card files and the real model, loaded once
per module with its cache in a temporary folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from cardmem.store.search import embedding


def write(root: Path, cid: str, title: str, body: str) -> None:
    p = root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    """The real model (USE multilingual v3 from its PyPI package), loaded once a module."""
    mp = pytest.MonkeyPatch()
    mp.delenv("CARDMEM_SEMANTIC", raising=False)
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    embedding.reset()
    m = embedding.embedder()
    assert m is not None, embedding.reason()
    yield m
    embedding.reset()
    mp.undo()
