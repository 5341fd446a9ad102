"""Register cardmem's hooks with Codex, Gemini CLI, Cursor or Copilot CLI, and take them out.

    cardmem install codex|gemini|cursor|copilot [--settings PATH] [--store PATH]
    cardmem uninstall codex|gemini|cursor|copilot [--settings PATH]

Each host keeps its hooks in a JSON file of its own shape (hosts/<host>/install.py says
which file, which events, and how an entry looks): Codex and Gemini CLI group entries
under a matcher as Claude Code does; Cursor and Copilot CLI list them flat. Every
command runs the one hook program (hosts/hook.py) with `--host`, the PreToolUse one
started without `site` (hosts/pretool_start.py). The store is resolved at install and
written into the commands.

The person's file is treated as Claude Code's is (hosts/settings.py): backed up before
a change, idempotent, other entries untouched, and uninstall gives back the file's
bytes as they were before install when nothing else changed since.
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError

from .adapters import ALIASES, MODULES, load
from .settings import command_arg, json_text, read_hooks_file as _load, read_record, record_path, write_back, write_file, write_record

HOOK_MODULE = "cardmem.hosts.hook"
START = str(Path(__file__).resolve().parent / "pretool_start.py")
MARKS = (HOOK_MODULE, "hosts/pretool_start.py")  # how our entries are recognised


def spec(host: str) -> dict[str, Any]:
    """The host's install spec: hosts/<host>/install.py SPEC."""
    name = ALIASES.get(host, host)
    if name not in MODULES or name == "claude":
        raise CardmemError(f"host {host}", "has no generic install; expected codex, gemini, "
                           "cursor or copilot")
    return __import__(f"cardmem.hosts.{name}.install", fromlist=["SPEC"]).SPEC


def command(host: str, kind: str, store: Path | None, python: str | None = None) -> str:
    """The shell command the host runs for one of our events."""
    if kind == "pre-tool-use":
        parts = [python or sys.executable, "-S", START, "--host", host]
    else:
        parts = [python or sys.executable, "-m", HOOK_MODULE, "--host", host]
    if store is not None:
        parts += ["--store", str(Path(store).expanduser().absolute())]
    if kind != "pre-tool-use":
        parts.append(kind)
    return " ".join(shlex.quote(p) for p in parts)


def export_folder(host: str, settings: Path | None) -> tuple[Path, bool]:
    """Where `install HOST --export` writes the host's own rules file when no folder is
    named, and whether that is the host's home-wide file (which takes no project's
    rules): the project whose hooks file --settings names, else the host's own folder
    (Codex: $CODEX_HOME/AGENTS.md, Gemini CLI: ~/.gemini/GEMINI.md, read in every
    session). Cursor and Copilot CLI read rules files from a project only."""
    if settings is not None:
        for parent in Path(settings).expanduser().absolute().parents:
            if parent.name in (".codex", ".gemini", ".cursor", ".github") \
                    and parent.parent != Path.home():
                return parent.parent, False
    home = spec(host)["export"][1]
    if home is None:
        raise CardmemError("--export", f"{load(host).LABEL} reads rules files from a project, "
                           "not from your home; name the project's folder: --export DIR")
    return home(), True


def _ours(entry: Any, key: str) -> bool:
    return isinstance(entry, dict) and any(m in str(entry.get(key, "")) for m in MARKS)


def settings_path(host: str, settings: Path | None) -> Path:
    return Path(settings).expanduser() if settings else spec(host)["default"]()


def _entry(sp: dict[str, Any], host: str, kind: str, store: Path | None,
           extra: dict[str, Any]) -> dict[str, Any]:
    return {**sp.get("entry", {}), sp["key"]: command(host, kind, store), **extra}


def install(host: str, settings: Path | None = None, store: Path | None = None) -> dict[str, Any]:
    """Merge our hooks into the host's file; returns what it did (changed, backup, path)."""
    sp = spec(host)
    path = settings_path(host, settings)
    existed = path.exists()
    original = path.read_bytes() if existed else None
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    created: list[str] = [] if existed else ["file"]
    for key, value in sp.get("top", {}).items():  # version: 1; hooksConfig: {enabled: true}
        if isinstance(value, dict):
            if key not in data:
                created.append(key)
            if not isinstance(data.get(key), dict):
                data[key] = {}
            for k, v in value.items():
                if data[key].get(k) != v:
                    if k not in data[key]:
                        created.append(f"{key}.{k}")
                    data[key][k] = v
        elif key not in data:
            data[key] = value
            created.append(key)
    if "hooks" not in data:
        data["hooks"] = {}
        created.append("hooks")
    for event, (kind, matcher, extra) in sp["events"].items():
        if event not in data["hooks"]:
            data["hooks"][event] = []
            created.append(f"hooks.{event}")
        entry = _entry(sp, host, kind, store, extra)
        if sp["grouped"]:
            _place_grouped(data["hooks"][event], entry, matcher, sp["key"])
        else:
            _place_flat(data["hooks"][event], entry, sp["key"])
    if json.dumps(data, sort_keys=True) == before:
        return {"changed": False, "path": str(path), "backup": None}
    record = _record(path)
    if not record:  # the first install: what the file was, to give it back on uninstall
        record = {"created": created, "original": original.decode("utf-8") if original else None}
    saved = write_file(path, json_text(data))
    write_record(record_path(path), record)
    return {"changed": True, "path": str(path), "backup": str(saved) if saved else None}


def _place_grouped(groups: list, entry: dict, matcher: str | None, key: str) -> None:
    placed = False
    for g in groups:
        if not (isinstance(g, dict) and isinstance(g.get("hooks"), list)):
            continue
        for i, h in enumerate(g["hooks"]):
            if _ours(h, key):
                g["hooks"][i] = None if placed else entry
                if not placed and matcher and all(_ours(x, key) for x in g["hooks"] if x):
                    g["matcher"] = matcher
                placed = True
        g["hooks"] = [h for h in g["hooks"] if h is not None]
    if not placed:
        groups.append({**({"matcher": matcher} if matcher else {}), "hooks": [entry]})


def _place_flat(entries: list, entry: dict, key: str) -> None:
    at = [i for i, h in enumerate(entries) if _ours(h, key)]
    if at:
        entries[at[0]] = entry
        for i in reversed(at[1:]):
            del entries[i]
    else:
        entries.append(entry)


def _record(path: Path) -> dict[str, Any]:
    return read_record(record_path(path))


def installed_store(host: str, settings: Path | None = None) -> Path | None:
    """The store our hooks in the host's file name (None: none installed, or none named)."""
    sp = spec(host)
    try:
        data = _load(settings_path(host, settings))
    except CardmemError:
        return None
    for h in _entries(data, sp):
        if store := command_arg(str(h.get(sp["key"], "")), "--store"):
            return Path(store)
    return None


def _entries(data: dict[str, Any], sp: dict[str, Any]) -> list[dict[str, Any]]:
    """Our entries in a host's file, wherever they are."""
    return [h for hs in _by_event(data, sp).values() for h in hs]


def _by_event(data: dict[str, Any], sp: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Our entries in a host's file, by the event they sit under."""
    out: dict[str, list[dict[str, Any]]] = {}
    for event, groups in (data.get("hooks") or {}).items():
        for g in groups if isinstance(groups, list) else []:
            inner = g.get("hooks") if sp["grouped"] and isinstance(g, dict) else [g]
            out.setdefault(event, []).extend(
                h for h in (inner if isinstance(inner, list) else []) if _ours(h, sp["key"]))
    return out


def installed_events(host: str, settings: Path | None = None) -> set[str]:
    """The host's events our entries sit under (empty when none, or unreadable)."""
    try:
        return {e for e, hs in _by_event(_load(settings_path(host, settings)), spec(host)).items()
                if hs}
    except CardmemError:
        return set()


def installed(host: str, settings: Path | None = None) -> list[dict[str, Any]]:
    """Our entries in the host's file ([] when none, or the file is unreadable)."""
    try:
        return _entries(_load(settings_path(host, settings)), spec(host))
    except CardmemError:
        return []


def uninstall(host: str, settings: Path | None = None) -> dict[str, Any]:
    """Remove exactly our entries, and what install created; the file's bytes come back
    as they were when nothing else in it changed since."""
    sp = spec(host)
    path = settings_path(host, settings)
    if not path.exists():
        record_path(path).unlink(missing_ok=True)
        return {"changed": False, "path": str(path)}
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    rec = _record(path)
    created = set(rec.get("created", []))
    hooks = data.get("hooks", {})
    for event in list(hooks):
        kept = []
        for g in hooks[event]:
            if sp["grouped"] and isinstance(g, dict) and isinstance(g.get("hooks"), list):
                if any(_ours(h, sp["key"]) for h in g["hooks"]):
                    g["hooks"] = [h for h in g["hooks"] if not _ours(h, sp["key"])]
                    if not g["hooks"] and set(g) <= {"hooks", "matcher"}:
                        continue
            elif not sp["grouped"] and _ours(g, sp["key"]):
                continue
            kept.append(g)
        hooks[event] = kept
        if not kept and f"hooks.{event}" in created:
            del hooks[event]
    for name in sorted(created, key=len, reverse=True):  # inner keys before their container
        top, _, inner = name.partition(".")
        if top == "hooks" or top == "file":
            continue
        if inner and isinstance(data.get(top), dict):
            data[top].pop(inner, None)
            if not data[top] and top in created:
                del data[top]
        elif not inner and top in data and (not isinstance(data[top], dict) or not data[top]):
            del data[top]
    if "hooks" in data and not data["hooks"] and "hooks" in created:
        del data["hooks"]
    changed = json.dumps(data, sort_keys=True) != before
    if not data and "file" in created:
        path.unlink()
        changed = True
    elif changed:
        write_back(path, data, rec.get("original"))
    record_path(path).unlink(missing_ok=True)
    return {"changed": changed, "path": str(path)}
