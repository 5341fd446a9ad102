"""Where each project's checkout is: what `drift` compares cards against.

Two sources: `[projects]` in cardmem.toml, whose keys may be a checkout's absolute path
(`"/home/me/src/acme-api" = "acme-api"`), and the working directories the hooks saw,
which they record here (`.cardmem/checkouts.json`, project -> newest folders first).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..root import StoreRoot
from ..git.head_file import enclosing_repo
from ..git.writer import atomic_write

FILE = "checkouts.json"
KEEP = 5  # folders remembered per project


def _path(store: StoreRoot) -> Path:
    return store.state_dir / FILE


def _read(store: StoreRoot) -> dict[str, list[str]]:
    try:
        data = json.loads(_path(store).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): [str(p) for p in v] for k, v in data.items() if isinstance(v, list)} \
        if isinstance(data, dict) else {}


def record(store: StoreRoot, project: str | None, folder: str | os.PathLike[str] | None) -> None:
    """Remember that a session of `project` ran in `folder`, by its git top-level folder
    when it has one (never raises)."""
    if not project or not folder:
        return
    try:
        folder = Path(enclosing_repo(folder) or Path(folder).resolve())
        seen = _read(store)
        folders = [str(folder)] + [f for f in seen.get(project, []) if f != str(folder)]
        if seen.get(project) == folders[:KEEP]:
            return
        seen[project] = folders[:KEEP]
        store.state_dir.mkdir(exist_ok=True)
        atomic_write(_path(store), json.dumps(seen, indent=1, sort_keys=True).encode())
    except OSError:
        pass


def checkouts(store) -> dict[str, Path]:
    """project -> its checkout folder (one that exists): [projects] first, then the
    newest folder the hooks saw."""
    out: dict[str, Path] = {}
    for key, project in store.config.get("projects", {}).items():
        p = Path(key).expanduser()
        if p.is_absolute() and p.is_dir():
            out.setdefault(project, p)
    for project, folders in _read(store).items():
        for f in folders:
            if project not in out and Path(f).is_dir():
                out[project] = Path(f)
    return out
