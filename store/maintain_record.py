"""What the last maintenance passes found, kept in `.cardmem/maintain.json` (not in git)
for the readers that cannot afford a pass: `doctor` counts the open findings, search and
the session-start context rank `stale` cards below the rest and say so.

    {"kinds": {"stale": {"at": <epoch seconds>, "findings": [{kind, ids, detail, suggestion}]}}}

A pass records only the kinds it checked, each replacing that kind's earlier record.
The stale cards' ids also go to `.cardmem/stale.json` (`{"at", "ids"}`), small, so that
search and the session start never read a large record (thousands of duplicates). A
card changed after the pass (file newer than `at`) is no longer taken as stale. Cheap to
import: json and os only. Kept below search (and the session-start context), which read
the stale marks; `cardmem maintain` (store/maintain, tools/maintain) writes it.
"""
from __future__ import annotations

import json
import os

FILE = "maintain.json"
STALE_FILE = "stale.json"


def _path(root: str | os.PathLike[str], name: str = FILE) -> str:
    return os.path.join(os.fspath(root), ".cardmem", name)


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
    # here, not at the top: the readers (search, the hooks) import json and os only
    from pathlib import Path

    from .root import write_cache  # derived, rebuildable: no fsync

    data = load(root)
    for kind, found in kinds.items():
        data[kind] = {"at": at, "findings": found}
    try:
        os.makedirs(os.path.dirname(_path(root)), exist_ok=True)
        if "stale" in kinds:
            ids = sorted({f["ids"][0] for f in kinds["stale"] if f.get("ids")})
            write_cache(Path(_path(root, STALE_FILE)), json.dumps({"at": at, "ids": ids}).encode())
        write_cache(Path(_path(root)), json.dumps({"kinds": data}, indent=1,
                                                   sort_keys=True).encode())
    except OSError:
        pass


def checked_at(root: str | os.PathLike[str]) -> float | None:
    """When the oldest recorded kind was checked (None: never)."""
    ats = [v.get("at") for v in load(root).values() if isinstance(v.get("at"), (int, float))]
    return min(ats) if ats else None


def stale(root: str | os.PathLike[str], ids: "list[str] | set[str] | None" = None) -> set[str]:
    """The ids (of `ids`, or all) the last `stale` pass found, unless changed since."""
    try:
        with open(_path(root, STALE_FILE), encoding="utf-8") as f:
            data = json.load(f)
        at, found = float(data["at"]), [str(i) for i in data["ids"]]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    out = set()
    for cid in found:
        if ids is not None and cid not in ids:
            continue
        try:
            if os.stat(os.path.join(os.fspath(root), *cid.split("/")) + ".md").st_mtime <= at:
                out.add(cid)
        except OSError:
            continue
    return out
