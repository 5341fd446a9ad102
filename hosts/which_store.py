"""Which store a hook works on: its --store PATH, else the default store."""
from __future__ import annotations

from pathlib import Path


def store_root(store_path: str | None) -> Path:
    from cardmem.store.cards.paths import default_store

    return Path(store_path).expanduser().absolute() if store_path else default_store().absolute()
