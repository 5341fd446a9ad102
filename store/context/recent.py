"""Recent changes for the pile, read from git: the last commits of a 14-day window.

Speed trick: kept per HEAD and day, so a session start reads a file instead of running
git (bench/bench_tricks.py; bench/RESULTS.md, "Speed tricks, each against its plain
alternative").
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..cards.paths import id_of_path
from ..git.head_file import head as _git_head
from .pile import MAP_RECENT_TITLES, RECENT_COMMITS, RECENT_DAYS, _Builder

if TYPE_CHECKING:
    from ..store import Store

# Imports inside functions: a session start that finds today's cache loads no git runner.

RECENT_CACHE = "recent-changes.json"  # in .cardmem/: the window's commits, per HEAD and day
_KEEP_IDS = MAP_RECENT_TITLES * 4  # card ids kept per commit (the lines show 3)


def _recent(store: Store) -> list[dict[str, Any]]:
    """The last commits of the recent-changes window, newest first.

    One git process, and none while HEAD and the day are what they were last time: the
    window's commits are kept in .cardmem/ (an adopted store's first commit can name
    10,000 files, which git takes tens of milliseconds to list).
    """
    from datetime import date

    head, day = _git_head(str(store.root)), date.today().isoformat()
    cache = store.root / ".cardmem" / RECENT_CACHE
    if head:
        try:
            data = json.loads(cache.read_text())
            if data.get("head") == head and data.get("day") == day:
                return data["commits"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    commits = _git_recent(store)
    if head:
        try:
            from ..root import write_cache

            write_cache(cache, json.dumps({"head": head, "day": day, "commits": commits}).encode())
        except OSError:
            pass
    return commits


def _git_recent(store: Store) -> list[dict[str, Any]]:
    from datetime import datetime, timedelta, timezone

    from ..git import runner as git

    since = (datetime.now(timezone.utc) - timedelta(days=RECENT_DAYS)).isoformat()
    try:
        log = git.log(store.root, limit=RECENT_COMMITS + 1, since=since)
    except Exception:  # a broken repo must not break the pile
        return []
    commits = []
    for c in log:
        ids = [cid for f in c.paths if (cid := id_of_path(f)) is not None]
        commits.append({"commit": c.commit, "author": c.author.split(" <")[0], "date": c.date,
                        "subject": c.message.splitlines()[0] if c.message else "",
                        "ids": ids[:_KEEP_IDS], "n_ids": len(ids)})
    return commits


def _recent_lines(commits: list[dict[str, Any]]) -> tuple[list[str], int]:
    """Recent commits as lines (newest first), and how many more there were."""
    lines = []
    for c in commits[:RECENT_COMMITS]:
        ids, n = c["ids"], c["n_ids"]
        more = f" +{n - 3}" if n > 3 else ""
        lines.append(f"- {c['date'][:10]} {c['author']}: {c['subject']}"
                     + (f" ({', '.join(ids[:3])}{more})" if ids else ""))
    return lines, max(0, len(commits) - RECENT_COMMITS)


def _recent_ids(commits: list[dict[str, Any]]) -> list[str]:
    """Ids the recent commits touched, newest first, each once (a few more than shown)."""
    ids: list[str] = []
    for c in commits:
        for cid in c["ids"]:
            if len(ids) >= _KEEP_IDS:
                return ids
            if cid not in ids:
                ids.append(cid)
    return ids


def _add_recent(b: _Builder, lines: list[str], more: int) -> None:
    if not lines:
        return
    if not b.fits(f"## Recent changes (last {RECENT_DAYS} days, from git)\n{lines[0]}"):
        b.cut(None, "recent changes (budget)", len(lines) + more)
        return
    b.add(f"## Recent changes (last {RECENT_DAYS} days, from git)")
    shown = 0
    for line in lines:
        if not b.add(line):
            break
        shown += 1
    if shown < len(lines) + more:
        b.cut(None, "older or further commits (see `cardmem log`)", len(lines) + more - shown)
    b.add("")


