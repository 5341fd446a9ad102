"""Searching an index: the one entry callers use, lexical (search.py) or fused with the
nearest vectors (hybrid.py), and the refresh-then-search most callers want.

    res = search(store, "deploy steps")       # brings the index up to date first
    res = search_index(idx, "deploy steps")   # an Index kept open, no refresh
"""
from __future__ import annotations

TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any

    from ..index.db import Index

# Imports inside functions: a lexical search never loads the fused search (hybrid.py) or the model.


def search_index(idx: "Index", query: str, limit: int = 10, card_type: str | None = None,
                 project: str | None = None, semantic: bool = False) -> "Any":
    """Ranked cards for a query (no refresh; see search()); with semantic, fused with the
    nearest vectors when the model is there (store/search/hybrid.py)."""
    if semantic:
        from .hybrid import run
    else:
        from .search import run

    return idx.repairing(lambda: run(idx, query, limit, card_type, project))


def search(store: "Any", query: str, limit: int = 10, card_type: str | None = None,
           project: str | None = None, index: "Index | None" = None, semantic: bool = True) -> "Any":
    """Refresh the store's index, then search it: the one call most callers want."""
    from ..index.db import Index

    idx = index or Index(store)
    try:
        idx.refresh()
        return search_index(idx, query, limit=limit, card_type=card_type, project=project,
                            semantic=semantic)
    finally:
        if index is None:
            idx.close()
