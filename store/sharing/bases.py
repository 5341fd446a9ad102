"""Attached bases: read-only corpora (a folder of docs, or a git clone of one) searched by name.

A base is attached to a store under a name and recorded in `.cardmem/bases.json`, not in
cardmem.toml: the path is this machine's (a teammate's clone lives elsewhere), so committing
it would hand everyone a path that does not exist for them. Each base gets its own index in
`.cardmem/bases/<name>/`, is searched only when asked for (`search --base NAME`, the MCP
`search` tool), and is never injected at session start: context assembly reads the store's
own folders only, and a base may not sit inside the store (nor the store inside a base).

cardmem never writes inside a base's files. Every file it indexes or reads must resolve
(realpath) inside the base: a symlink out, a `..` or an absolute path is skipped with a
warning. A base that is a git clone can be updated (fast-forward only) and rolled back.
"""
from __future__ import annotations

import json
import os
import re
import time
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..git.head_file import is_repo
from ..cards import paths
from ..errors import CardmemError, NotFound
from ..git.writer import atomic_write, write_lock, check_writable
from ..search.query import search_index
from .updates import update_repo, rollback_repo

if TYPE_CHECKING:
    from ..store import Store

REGISTRY = "bases.json"
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
DOC_SUFFIXES = (".md",)


@dataclass
class Base:
    name: str
    path: Path
    attached: str

    @property
    def is_git(self) -> bool:
        return is_repo(self.path)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "attached": self.attached,
                "git": self.is_git, "present": self.path.is_dir()}


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise CardmemError(f"base name {name!r}",
                           "use lowercase letters, digits, '.', '_' or '-' (at most 64), "
                           "starting with a letter or digit")
    return name


def _state(store: "Store") -> Path:
    # store.root, not Store.state_dir: `search --base` passes a bare root (no YAML import).
    return Path(store.root) / ".cardmem"


def state_dir(store: "Store", name: str) -> Path:
    """Where a base's index and update records live: inside the store, never the base."""
    return _state(store) / "bases" / check_name(name)


# --- the registry --------------------------------------------------------------------

def _registry_path(store: "Store") -> Path:
    return _state(store) / REGISTRY


def load(store: "Store") -> dict[str, Base]:
    path = _registry_path(store)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as exc:
        raise CardmemError(str(path), f"not valid JSON: {exc}; fix or remove it and attach "
                                      "the bases again") from None
    entries = data.get("bases") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise CardmemError(str(path), "expected {\"bases\": {NAME: {\"path\": ...}}}")
    out = {}
    for name, entry in entries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise CardmemError(f"{path}: {name}", "expected {\"path\": \"/abs/path\"}")
        out[name] = Base(name, Path(entry["path"]), str(entry.get("attached", "")))
    return out


def _save(store: "Store", bases: dict[str, Base]) -> None:
    data = {"bases": {n: {"path": str(b.path), "attached": b.attached}
                      for n, b in sorted(bases.items())}}
    atomic_write(_registry_path(store), (json.dumps(data, indent=2) + "\n").encode())


def get(store: "Store", name: str) -> Base:
    bases = load(store)
    if name not in bases:
        known = ", ".join(sorted(bases)) or "none attached"
        raise NotFound(f"base {name!r}", f"not attached to this store ({known}); "
                                         "`cardmem base attach NAME PATH` attaches one")
    return bases[name]


def _lock(store: "Store"):
    return write_lock(store.root, store.lock_timeout())


def _inside(child: str, parent: str) -> bool:
    return os.path.commonpath([child, parent]) == parent


def attach(store: "Store", name: str, path: Path | str) -> Base:
    """Record a folder as a base under name; refuse a name in use or a folder that overlaps."""
    check_name(name)
    real = os.path.realpath(Path(path).expanduser())
    if not os.path.isdir(real):
        raise CardmemError(f"base {name}", f"{path} is not a folder")
    store_real = os.path.realpath(store.root)
    if _inside(real, store_real):
        raise CardmemError(f"base {name}", f"{real} is inside the store: its files would be "
                                           "read as cards; attach a folder outside it")
    if _inside(store_real, real):
        raise CardmemError(f"base {name}", f"{real} contains the store; attach a folder that "
                                           "does not")
    with _lock(store):
        bases = load(store)
        if name in bases:
            raise CardmemError(f"base {name}", f"already attached ({bases[name].path}); "
                                               "detach it first")
        base = Base(name, Path(real), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        bases[name] = base
        _save(store, bases)
    return base


def detach(store: "Store", name: str) -> Base:
    """Forget a base and drop its index; its folder is not touched."""
    with _lock(store):
        bases = load(store)
        if name not in bases:
            get(store, name)  # raises NotFound with the known names
        base = bases.pop(name)
        _save(store, bases)
        shutil.rmtree(state_dir(store, name), ignore_errors=True)
    return base


# --- containment ---------------------------------------------------------------------

def doc_path(base_root: Path, doc_id: str) -> Path:
    """The file of a document id inside a base; refuses `..`, absolute paths, links out."""
    try:
        return paths.card_path(base_root, doc_id)
    except CardmemError as exc:
        raise CardmemError(f"base document {doc_id!r}", exc.why.replace("the store", "the base"),
                           exit_code=exc.exit_code) from None


def documents(base_root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(id, path) of every document that resolves inside the base, and a warning per skip.

    Hidden folders (.git, .github) are not walked. A symlink, to a file or a folder, whose
    target lies outside the base is skipped with a warning; one that stays inside is
    followed for files (its target is read under the link's id) and skipped for folders
    (the folder is walked where it really is, so no loop and no double count).
    """
    root = Path(base_root)
    real_root = os.path.realpath(root)
    docs: list[tuple[str, Path]] = []
    warnings: list[str] = []
    # Not paths.id_of_path: a base is any folder of documents (DOC_SUFFIXES, README too).
    for dirpath, dirnames, filenames in os.walk(root):
        keep = []
        for d in sorted(dirnames):
            if d.startswith("."):
                continue
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                if not _inside(os.path.realpath(full), real_root):
                    warnings.append(f"{full}: skipped: a symlink that resolves outside the base")
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(DOC_SUFFIXES):
                continue
            full = Path(dirpath) / name
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            try:  # refuses a link out and anything but a regular .md file
                docs.append((rel[:-3], doc_path(root, rel)))
            except CardmemError as exc:
                warnings.append(f"{full}: skipped: {exc.why}")
    return docs, warnings


# --- indexing and searching ----------------------------------------------------------

INDEX_FILE = "index.sqlite"


def index_of(store: "Store", base: Base, warnings: list[str] | None = None):
    """The base's own index, over the documents that resolve inside it."""
    from ..index.db import Index  # lazy: SQLite only when a base is searched

    def files() -> list[tuple[str, Path]]:
        docs, warned = documents(base.path)
        if warnings is not None:
            warnings.extend(_not_said_yet(store, base, warned))
        return docs

    def as_text(path: str, why: str) -> None:
        if warnings is not None:  # said when the file is read: once per change of it
            warnings.append(f"{path}: {why}; indexed as plain text")

    return Index(root=base.path, db_path=state_dir(store, base.name) / INDEX_FILE, files=files,
                 as_text=as_text)


SAID_FILE = "skipped.json"


def _not_said_yet(store: "Store", base: Base, warned: list[str]) -> list[str]:
    """The skip warnings not given last time: a symlink out is named once, not on every
    search (again if it goes away and comes back)."""
    said_path = state_dir(store, base.name) / SAID_FILE
    try:
        said = set(json.loads(said_path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        said = set()
    if set(warned) != said:
        said_path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(said_path, json.dumps(sorted(warned)).encode())
    return [w for w in warned if w not in said]


def _check_present(base: Base) -> None:
    if not base.path.is_dir():
        raise CardmemError(f"base {base.name}", f"{base.path} is gone; attach it again or "
                                                "`cardmem base detach` it")
    if os.path.realpath(base.path) != str(base.path):
        # Attached by its real path; a link put in its place could point anywhere.
        raise CardmemError(f"base {base.name}", f"{base.path} now resolves to "
                                                f"{os.path.realpath(base.path)}; attach it again")


def refresh_base(store: "Store", name: str) -> tuple[int, list[str]]:
    """Bring a base's index up to date: (documents indexed, warnings about skipped files)."""
    base = get(store, name)
    _check_present(base)
    warnings: list[str] = []
    with index_of(store, base, warnings) as idx:
        idx.refresh()
        return len(idx.ids()), warnings


def search_base(store: "Store", name: str, query: str, limit: int = 10,
                card_type: str | None = None, project: str | None = None):
    """Refresh base `name`'s index and search it; the store's SearchResult shape.

    Each result also carries `"base": name`, and its `id` is the document's path in the
    base without `.md` (read it with `read_document`). `result.warnings` lists the files
    skipped for leaving the base. The MCP `search` tool and `search --base` call this.
    """
    base = get(store, name)
    _check_present(base)
    warnings: list[str] = []

    with index_of(store, base, warnings) as idx:
        idx.refresh()
        result = search_index(idx, query, limit=limit, card_type=card_type, project=project)
    for r in result.results:
        r["base"] = name
    result.warnings = warnings
    return result


def read_document(store: "Store", name: str, doc_id: str, max_bytes: int = 1024 * 1024) -> str:
    """A base document's text by id, refusing anything that resolves outside the base."""
    base = get(store, name)
    path = doc_path(base.path, doc_id)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except FileNotFoundError:
        raise NotFound(f"base {name} document {doc_id}", "no such document") from None
    if len(raw) > max_bytes:
        raise CardmemError(f"base {name} document {doc_id}", f"larger than {max_bytes} bytes")
    return raw.decode("utf-8", errors="replace")


# --- updating a base that is a git clone ---------------------------------------------

def _git_base(store: "Store", name: str) -> Base:
    base = get(store, name)
    _check_present(base)
    if not base.is_git:
        raise CardmemError(f"base {name}", f"{base.path} is a plain folder, not a git clone; "
                                           "there is nothing to update from")

    check_writable(base.path)  # a stale index.lock, a detached HEAD
    return base


def update_base(store: "Store", name: str, remote: str | None = None):
    """Fast-forward a git-clone base from its upstream (never forced), then re-index it."""
    base = _git_base(store, name)
    with _lock(store):
        return update_repo(base.path, state_dir(store, name), remote, force=False,
                           refresh=lambda: _refresh_quiet(store, base),
                           what=f"update base {name}")


def rollback_base(store: "Store", name: str, to: str | None = None):
    """Return a git-clone base to its head before its last update (or to `to`)."""
    base = _git_base(store, name)
    with _lock(store):
        return rollback_repo(base.path, state_dir(store, name), to,
                             refresh=lambda: _refresh_quiet(store, base),
                             what=f"rollback base {name}")


def _refresh_quiet(store: "Store", base: Base) -> None:
    with index_of(store, base) as idx:
        idx.refresh()
