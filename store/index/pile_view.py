"""What a pile needs to know of the store: from the index when there is one, else a scan.

At 10k cards, parsing every card costs seconds, so a session's pile reads the index's
rows instead; its whole-store aggregates are kept per index generation in
`.cardmem/context-summary.json`, and only the rules, the user cards and the project's
cards are checked against the files (stat only), so a rule saved a second ago is in the
next session's pile however stale the rest of the index is.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

from ..cards.frontmatter import body_of  # noqa: F401 - re-exported
from ..cards.paths import id_of_path, project_key
from ..cards.status import INACTIVE, PROPOSED, is_active, status_of  # noqa: F401 - re-exported

if TYPE_CHECKING:  # the pile reads a StoreRoot: no card parser (YAML), no writer, no cycle
    from ..root import StoreRoot
# Imports inside functions: a session start that finds the summary current opens no Index.


def active_rules(cards: Iterable[Any]) -> list[Any]:
    return sorted((c for c in cards if c.type == "feedback" and is_active(c)), key=lambda c: c.id)


def in_project(card: Any, project: str) -> bool:
    return card.project == project_key(project)  # Card.project is the key, folder included


class Entry:
    """A card as the index knows it (id, type, title, ...); its body is read on demand."""

    __slots__ = ("id", "type", "title", "_aliases", "_tags", "project", "status",
                 "description", "_store", "_body")

    def __init__(self, store: StoreRoot, row: tuple[Any, ...] | list[Any]) -> None:
        (self.id, self.type, self.title, self._aliases, self._tags, self.project, status,
         self.description) = row[:8]
        self.status = status or "active"
        self._store = store
        self._body: str | None = None

    @property
    def aliases(self) -> list[str]:
        return [a for a in (self._aliases or "").split("\n") if a]

    @property
    def tags(self) -> list[str]:
        return [t for t in (self._tags or "").split("\n") if t]

    @property
    def body(self) -> str:
        """The text after the frontmatter: no YAML is parsed (the index already did)."""
        if self._body is None:
            try:
                raw = self._store.path(self.id).read_bytes()
                self._body = body_of(raw.decode("utf-8"))
            except Exception:  # gone or broken since it was indexed: show what is known
                self._body = "(this card could not be read just now)"
        return self._body


def _ids_under(root: Path, folder: str, recursive: bool = False) -> list[str]:
    """Ids of the .md files in one folder of the store (a cheap listing, no parsing)."""
    base = root / folder
    out: list[str] = []
    if not base.is_dir():
        return out
    walker = os.walk(base) if recursive else [(str(base), [], os.listdir(base))]
    for dirpath, dirnames, filenames in walker:
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        out += [cid for f in filenames if (cid := id_of_path(f"{rel}/{f}")) is not None]
    return out


def _open_index(store: StoreRoot) -> Any:
    try:
        from .db import Index
    except ImportError:
        return None
    try:
        return Index(store)
    except Exception:  # noqa: BLE001
        return None


def catalog(store: StoreRoot) -> tuple[list[Any], list[str]]:
    """Every card (as Entry rows of the index, else as parsed Cards), and problem notices."""
    idx = _open_index(store)
    if idx is not None:
        try:
            idx.refresh()
            rows = idx.conn.execute(f"SELECT {_COLS} FROM cards ORDER BY id").fetchall()
            problems = [f"{p['path']}: skipped: {p['reason']}" for p in idx.problems()]
            return [Entry(store, r) for r in rows], problems
        except Exception:  # noqa: BLE001 - an unusable index must not cost the pile
            pass
        finally:
            idx.close()
    cards, problems = store.scan()  # StoreRoot.scan opens the full Store only now
    return cards, [f"{p.path}: skipped: {p.reason}" for p in problems]


_COLS = "id, type, title, aliases, tags, project, status, description"


class Holdings(NamedTuple):
    """What a session pile needs to know of the store, without reading every card."""

    rules: list[Any]
    users: list[Any]
    project_cards: list[Any]
    type_counts: Counter
    project_counts: Counter
    total: int
    problems: list[str]
    titles: dict[str, str]  # id -> title, of the wanted ids that are cards
    proposals: int = 0  # rules and user cards an agent proposed, awaiting a person


def holdings(store: StoreRoot, project: str | None, want_titles: Iterable[str] = ()) -> Holdings:
    """From the index (rules, user and project cards refreshed first), else from a scan.

    Only the rules, the user cards and the project's cards are brought up to date: the
    counts and titles of the rest are as of the index's last refresh. A store whose
    index is empty is indexed once, in full.
    """
    want = list(want_titles)
    project = project_key(project)  # "Acme API" and acme-api are one project
    fast = _from_summary(store, project, want)
    if fast is not None:
        return fast
    idx = _open_index(store)
    if idx is not None:
        try:
            try:
                h = _holdings_from_index(store, idx, project, want)
            finally:
                idx.close()
            _seal(store, want, h.titles)
            return h
        except Exception:  # noqa: BLE001 - an unusable index must not cost the pile
            pass
    cards, problems = store.scan()
    by_id = {c.id: c.title for c in cards}
    return Holdings(
        rules=active_rules(cards),
        users=sorted((c for c in cards if c.type == "user" and is_active(c)), key=lambda c: c.id),
        project_cards=_project_cards(cards, project),
        type_counts=Counter(c.type or "untyped" for c in cards),
        project_counts=Counter(c.project for c in cards if c.project),
        total=len(cards),
        problems=[f"{p.path}: skipped: {p.reason}" for p in problems],
        titles={i: by_id[i] for i in want_titles if i in by_id},
        proposals=_proposals(cards))


def _project_cards(cards: Iterable[Any], project: str | None) -> list[Any]:
    if not project:
        return []
    return sorted((c for c in cards if in_project(c, project) and is_active(c)
                   and c.type not in ("feedback", "user")), key=lambda c: c.id)


# Speed trick: a session's holdings read from this summary, not recomputed from the rows
# (bench/bench_tricks.py; bench/RESULTS.md, "Speed tricks, each against its plain alternative").
SUMMARY = "context-summary.json"  # in .cardmem/: the index's aggregates, per generation
SUMMARY_VERSION = 2  # of its layout: another layout is recomputed, never misread
_FOCUS_COLS = _COLS + ", mtime_ns, size"


def _summary(store: StoreRoot, idx: Any, project: str | None) -> dict[str, Any]:
    """Counts, rule and user rows, and this project's rows, as of the index's generation.

    The aggregates scan the whole index (tens of ms at 10k cards), so they are kept in
    .cardmem/ and recomputed only when the index changed (its generation moved on).
    """
    gen = idx.generation()
    path = store.root / ".cardmem" / SUMMARY  # the index lives there: it exists
    key = project or ""
    try:
        cached = json.loads(path.read_text())
        if cached.get("v") != SUMMARY_VERSION:
            cached = None
        elif cached.get("generation") == gen and key in cached["projects"]:
            return cached
    except (OSError, ValueError, KeyError, TypeError):
        cached = None
    c = idx.conn
    if cached is None or cached.get("generation") != gen:
        cached = {
            "v": SUMMARY_VERSION,
            "generation": gen,
            "types": dict(c.execute("SELECT coalesce(type, 'untyped'), count(*) FROM cards "
                                    "GROUP BY type")),
            "project_counts": dict(c.execute(
                "SELECT project, count(*) FROM cards WHERE project IS NOT NULL AND "
                "project != '' GROUP BY project")),
            "focus": [list(r) for r in c.execute(
                f"SELECT {_FOCUS_COLS} FROM cards WHERE type IN ('feedback', 'user') ORDER BY id")],
            "problems": [f"{p['path']}: skipped: {p['reason']}" for p in idx.problems()],
            # unreadable files, as (id, mtime_ns, size): unchanged ones are not stale
            "problem_stamps": [list(r) for r in c.execute(
                "SELECT id, mtime_ns, size FROM problems")],
            "projects": {},
        }
    cached["projects"][key] = [list(r) for r in c.execute(
        f"SELECT {_FOCUS_COLS} FROM cards WHERE project = ? OR id LIKE ? ORDER BY id",
        (key, f"projects/{key}/%"))] if key else []
    try:
        from ..root import write_cache

        write_cache(path, json.dumps(cached).encode())
    except OSError:
        pass
    return cached


def _index_stamp(store: StoreRoot) -> list[int] | None:
    """(mtime_ns, size) of the index file and its write-ahead log: any write moves one."""
    base = str(store.root / ".cardmem" / "index.sqlite")
    out: list[int] = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(base + suffix)
            out += [st.st_mtime_ns, st.st_size]
        except FileNotFoundError:
            out += [0, 0]
        except OSError:
            return None
    return out if out[1] else None


def _seal(store: StoreRoot, want: list[str], titles: dict[str, str]) -> None:
    """Mark the summary as matching the index as it is now (closed), with these titles."""
    path = store.root / ".cardmem" / SUMMARY
    try:
        data = json.loads(path.read_text())
        data["index_stamp"] = _index_stamp(store)
        data["titles_for"], data["titles"] = want, titles
        from ..root import write_cache

        write_cache(path, json.dumps(data).encode())
    except (OSError, ValueError, TypeError):
        pass


def _from_summary(store: StoreRoot, project: str | None, want: list[str]) -> Holdings | None:
    """The holdings without opening the index, when nothing moved since the last pile:
    the index files have the stamp the summary was sealed with, the rules, user and
    project cards have the stamps of their rows, and the titles asked for are known."""
    try:
        s = json.loads((store.root / ".cardmem" / SUMMARY).read_text())
        if (s.get("v") != SUMMARY_VERSION or s.get("index_stamp") is None
                or s["index_stamp"] != _index_stamp(store) or (project or "") not in s["projects"]
                or not set(want) <= set(s.get("titles_for", ()))):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    rows = s["focus"] + s["projects"][project or ""]
    # Of the titles, only a card gone counts: a recent file the index could not read has
    # no title, and must not cost every session the summary.
    titled = [i for i in want if i in s["titles"]]
    if _stale(store, rows, _listed(store, project), s["problem_stamps"]) or \
            _moved(store, titled, s["titles"]):
        return None
    return _built(store, s, project, {i: t for i, t in s["titles"].items() if i in want})


def _moved(store: StoreRoot, ids: list[str], titles: dict[str, str]) -> list[str]:
    """The ids (of recent commits) whose file came or went since the index knew them."""
    root = str(store.root) + "/"
    return [i for i in ids if (i in titles) != os.path.isfile(root + i + ".md")]


def _listed(store: StoreRoot, project: str | None) -> set[str]:
    listed = set(_ids_under(store.root, "feedback", True)) | set(_ids_under(store.root, "user", True))
    if project:
        listed |= set(_ids_under(store.root, f"projects/{project}", True))
    return listed


def _built(store: StoreRoot, s: dict[str, Any], project: str | None,
           titles: dict[str, str]) -> Holdings:
    focus = [Entry(store, r) for r in s["focus"]]
    rules = [e for e in focus if e.type == "feedback" and is_active(e)]
    users = [e for e in focus if e.type == "user" and is_active(e)]
    mine = _project_cards([Entry(store, r) for r in s["projects"].get(project or "", [])],
                          project)
    types = Counter(s["types"])
    return Holdings(rules, users, mine, types, Counter(s["project_counts"]),
                    sum(types.values()), s["problems"], titles, _proposals(focus))


def _proposals(cards: Iterable[Any]) -> int:
    return sum(1 for c in cards if c.type in ("feedback", "user") and status_of(c) == PROPOSED)


def _stale(store: StoreRoot, rows: list[list[Any]], listed: set[str],
           problem_stamps: list[list[Any]]) -> set[str]:
    """Ids whose file differs from its row (or has no row, or is gone): stat only."""
    known = {r[0]: (r[8], r[9]) for r in rows}
    known.update((r[0], (r[1], r[2])) for r in problem_stamps if r[0] in listed)
    out = set(listed - set(known))
    root = str(store.root) + "/"
    stat = os.stat
    for cid, (mtime_ns, size) in known.items():
        try:
            st = stat(root + cid + ".md")  # ids use "/": a plain join is enough here
        except OSError:
            out.add(cid)
            continue
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            out.add(cid)
    return out


def _holdings_from_index(store: StoreRoot, idx: Any, project: str | None,
                         want_titles: list[str]) -> Holdings:
    c = idx.conn
    if c.execute("SELECT 1 FROM cards LIMIT 1").fetchone() is None:
        idx.refresh()  # a store never indexed: once, in full
    # Cards just committed may not be indexed yet, or just taken out (rm, a revert): those
    # few first, or the map names a card that is gone.
    titles = _titles(c, want_titles)
    moved = _moved(store, want_titles, titles)
    if moved:
        idx.refresh_ids(moved)
        titles = _titles(c, want_titles)
    s = _summary(store, idx, project)
    # The rules, the user cards and the project's cards must be current: stat them, and
    # re-index what changed (a rule saved a second ago is in this session's pile).
    if stale := _stale(store, s["focus"] + s["projects"].get(project or "", []),
                       _listed(store, project), s["problem_stamps"]):
        idx.refresh_ids(stale)
        s = _summary(store, idx, project)
    return _built(store, s, project, titles)


def _titles(c: Any, ids: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        out.update(c.execute(f"SELECT id, title FROM cards WHERE id IN ({marks})", chunk))
    return out
