"""What the tests of the semantic layer share: card files and the real model, loaded once
per module with its cache in a temporary folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from cardmem.store.search import embedding


def fused_ids(root: Path, cards: dict[str, str], query: str, limit: int = 5) -> list[str]:
    """The ids hybrid.fuse ranks for the query over a new store of these cards (id -> body,
    titled by the id's last part), every card the words found equally near the query for
    the vectors (no model), so the words and the fusion's rules decide."""
    import numpy as np

    from cardmem.store.index.db import Index
    from cardmem.store.search import hybrid
    from cardmem.store.search.search import run as lexical
    from cardmem.store.search.semantic import Similarities
    from cardmem.store.store import init

    for cid, body in cards.items():
        write(root, cid, cid.split("/")[-1].replace("-", " ").title(), body)
    store = init(root)[0]
    with Index(store) as idx:
        idx.refresh()
        res = lexical(idx, query, hybrid.POOL)
        ns = np.array(sorted(res.rowids.values()))
        hybrid.fuse(idx, res, Similarities(ns, np.full(len(ns), 0.5)), limit, None, None)
        return [r["id"] for r in res.results]


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
