"""What the last maintenance passes found, kept in `.cardmem/maintain.json` (not in git)
for the readers that cannot afford a pass: `doctor` counts the open findings, search and
the session-start context rank `stale` cards below the rest and say so.

    {"kinds": {"stale": {"at": <epoch seconds>, "findings": [{kind, ids, detail, suggestion}]}}}

A pass records only the kinds it checked, each replacing that kind's earlier record.
A card changed after its kind was checked (file newer than `at`) is no longer taken as
stale. Cheap to import: json and os only (the SessionStart hook and search read it).
"""
from __future__ import annotations

import json
import os

FILE = "maintain.json"


def _path(root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(root), ".cardmem", FILE)


def load(root: str | os.PathLike[str]) -> dict[str, dict]:
    """kind -> {"at", "findings"}; {} when never recorded or unreadable."""
    try:
        with open(_path(root), encoding="utf-8") as f:
            data = json.load(f)
        kinds = data.get("kinds") if isinstance(data, dict) else None
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in kinds.items() if isinstance(v, dict)} \
        if isinstance(kinds, dict) else {}


def save(root: str | os.PathLike[str], kinds: dict[str, list[dict]], at: float) -> None:
    """Record the findings of each kind checked (others keep their record); never raises."""
    from pathlib import Path

    from ..writer import atomic_write

    data = load(root)
    for kind, found in kinds.items():
        data[kind] = {"at": at, "findings": found}
    try:
        os.makedirs(os.path.dirname(_path(root)), exist_ok=True)
        atomic_write(Path(_path(root)),
                     json.dumps({"kinds": data}, indent=1, sort_keys=True).encode())
    except OSError:
        pass


def checked_at(root: str | os.PathLike[str]) -> float | None:
    """When the oldest recorded kind was checked (None: never)."""
    ats = [v.get("at") for v in load(root).values() if isinstance(v.get("at"), (int, float))]
    return min(ats) if ats else None


def stale(root: str | os.PathLike[str], ids: "list[str] | set[str] | None" = None) -> set[str]:
    """The ids (of `ids`, or all) the last `stale` pass found, unless changed since."""
    rec = load(root).get("stale") or {}
    at = rec.get("at") or 0
    out = set()
    for f in rec.get("findings") or ():
        for cid in (f.get("ids") or [])[:1]:
            if ids is not None and cid not in ids:
                continue
            try:
                if os.stat(os.path.join(os.fspath(root), *cid.split("/")) + ".md").st_mtime <= at:
                    out.add(cid)
            except OSError:
                continue
    return out
