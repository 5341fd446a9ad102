"""The spool: a run's signals kept in `.cardmem/spool/` while the write lock is busy.

One JSON file per run, written atomically; the next run of compound.file_signals claims
and files them first, under the lock. Nothing is dropped.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..git.writer import atomic_write
from ..store import Store
from .retry import session_file_name

SPOOL = "spool"


def spool_dir(store: Store) -> Path:
    d = store.state_dir / SPOOL
    d.mkdir(exist_ok=True)
    return d


def spool(store: Store, batch: dict[str, Any]) -> Path:
    """Keep a run's signals for the next run: one JSON file, written atomically."""
    name = f"{time.time_ns()}-{os.getpid()}-{_safe(batch.get('session', ''))}.json"
    path = spool_dir(store) / name
    atomic_write(path, json.dumps(batch, ensure_ascii=False).encode())
    return path


def _safe(s: str) -> str:
    return session_file_name(s, 40)


def spooled_batches(store: Store) -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for p in sorted(spool_dir(store).glob("*.json")):
        try:
            data = json.loads(p.read_text())
            if isinstance(data, dict) and isinstance(data.get("signals"), list):
                out.append((p, data))
        except (OSError, ValueError):
            continue  # a half-read file stays for a later run; atomic writes make this rare
    return out
