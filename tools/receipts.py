"""Receipts: one JSON line per answer in .cardmem/receipts/YYYY-MM.jsonl (DESIGN §5).

A receipt is appended as one write of one line to a file opened O_APPEND, under an
exclusive flock, so concurrent answers never interleave or tear a line. Receipts are
derived state (.cardmem/ is never committed).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError, NotFound
from cardmem.store.store import Store

ID_RE = re.compile(r"^(\d{8}T\d{6}Z)-[0-9a-f]{6}$")


def new_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def folder(store: Store) -> Path:
    d = store.state_dir / "receipts"
    d.mkdir(exist_ok=True)
    return d


def append(store: Store, receipt: dict[str, Any]) -> Path:
    """Append one receipt (which must carry an `id`) as one line; the file it went to."""
    m = ID_RE.match(receipt.get("id", ""))
    if not m:
        raise CardmemError("receipt", f"bad id {receipt.get('id')!r}")
    stamp = m.group(1)
    path = folder(store) / f"{stamp[:4]}-{stamp[4:6]}.jsonl"
    line = (json.dumps(receipt, ensure_ascii=False, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:  # one write for any sane size; loop only on a short write
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)  # closing releases the lock
    return path


def _files(store: Store) -> list[Path]:
    d = store.root / ".cardmem" / "receipts"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def iter_all(store: Store) -> Iterator[dict[str, Any]]:
    """Every receipt, oldest first; a torn or foreign line is skipped."""
    for path in _files(store):
        with open(path, "rb") as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(rec, dict) and "id" in rec:
                    yield rec


def last(store: Store, n: int) -> list[dict[str, Any]]:
    """The n newest receipts, oldest of them first."""
    recs = list(iter_all(store))
    return recs[-n:] if n > 0 else []


def find(store: Store, receipt_id: str) -> dict[str, Any]:
    """The receipt with this id (or `last` for the newest); NotFound otherwise."""
    if receipt_id == "last":
        recs = last(store, 1)
        if not recs:
            raise NotFound("receipts", "none yet; `cardmem ask` writes one per answer")
        return recs[0]
    if not ID_RE.match(receipt_id):
        raise CardmemError(f"receipt {receipt_id[:60]!r}",
                           "not a receipt id (like 20261130T061200Z-a1b2c3, or `last`)", 2)
    for rec in iter_all(store):
        if rec["id"] == receipt_id:
            return rec
    raise NotFound(f"receipt {receipt_id}", "no such receipt in this store")
