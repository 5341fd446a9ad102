"""Register cardmem's hooks in Claude Code's settings.json, and take them out again.

    cardmem install claude-code [--settings PATH] [--store PATH]
    cardmem uninstall claude-code [--settings PATH]

The merge keeps every other setting and every other hook byte-for-byte in meaning (the
file is re-serialised as JSON), backs the original up once, and is idempotent. The hook
commands name the Python that runs cardmem by its absolute path, because hosts start
hooks with their own PATH. Our entries are recognised by the module they run, so
uninstall removes exactly them, plus the containers it created (recorded in a small
`<settings>.cardmem.json` next to the file).
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError

from ..settings import command_arg, json_text, keep_record_private, original, read_hooks_file as _load, record_path, recorded, write_back, write_file, write_record
from cardmem.store.rules.host_file import remove

MODULE = "cardmem.hosts.claude_code"
# ... the PreToolUse hook started as a script without `site`: see hosts/pretool_start.py.
PRETOOL_START = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "pretool_start.py")
# How ours are recognised, the paths of earlier releases too (install rewrites those to
# today's; hooks/ keeps them working until then).
MODULES = (MODULE, "cardmem.hosts.pretool", "hosts/pretool_start.py",
           "cardmem.hooks.claude_code", "cardmem.hooks.pretool", "hooks/pretool_start.py")
# event in settings.json -> (our event name, extra keys of the hook entry)
HOOKS: dict[str, tuple[str, dict[str, Any]]] = {
    "SessionStart": ("session-start", {"timeout": 10}),
    "UserPromptSubmit": ("prompt", {"timeout": 10}),  # the cards this prompt is about
    "Stop": ("stop", {"async": True, "timeout": 30}),
    "SessionEnd": ("session-end", {"async": True, "timeout": 30}),
    "PreToolUse": ("pre-tool-use", {"timeout": 10}),
}
# The tools that act: shell, edits and writes, and MCP tools whose names say they change
# something (an MCP server's reads need no rule at the point of action). Anchored: Claude
# Code tests a matcher that is not a plain list of names as a regular expression.
MCP_WRITES = ("create|update|delete|write|edit|push|merge|remove|put|post|send|move|rename"
              "|insert|exec|run|deploy|publish|apply|drop|commit|upload|set")
MATCHERS = {"PreToolUse": f"^(Bash|Edit|Write|MultiEdit|NotebookEdit|mcp__.*__.*({MCP_WRITES}).*)$"}


def default_settings() -> Path:
    return Path.home() / ".claude" / "settings.json"


def rules_path(settings: Path | None = None) -> Path:
    """The rules file for the hooks of a settings file: `rules/cardmem.md` beside it, which
    Claude Code loads whole at start-up (~/.claude/rules/ for the user's settings; a
    project's .claude/rules/ for a project's), so the rules reach exactly the sessions
    whose hooks use this store."""
    return Path(settings or default_settings()).expanduser().absolute().parent / "rules" / "cardmem.md"


def command(event: str, store: Path | None = None, python: str | None = None,
            rules_file: Path | None = None) -> str:
    """The shell command Claude Code runs for one of our events."""
    if event == "pre-tool-use":
        parts = [python or sys.executable, "-S", PRETOOL_START]
        if store is not None:
            parts += ["--store", str(Path(store).expanduser().absolute())]
        return " ".join(shlex.quote(p) for p in parts)
    parts = [python or sys.executable, "-m", MODULE]
    if store is not None:
        parts += ["--store", str(Path(store).expanduser().absolute())]
    if rules_file is not None:
        parts += ["--rules-file", str(rules_file)]
    parts.append(event)
    return " ".join(shlex.quote(p) for p in parts)


def _ours(entry: Any) -> bool:
    return isinstance(entry, dict) and any(m in str(entry.get("command", "")) for m in MODULES)


def install(settings: Path | None = None, store: Path | None = None) -> dict[str, Any]:
    """Merge our hooks into settings; returns what it did (changed, backup, path)."""
    path = Path(settings or default_settings()).expanduser()
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    created = recorded(path)
    if not path.exists():
        created.append("file")
    if "hooks" not in data:
        data["hooks"] = {}
        created.append("hooks")
    for host_event, (ours, extra) in HOOKS.items():
        if host_event not in data["hooks"]:
            data["hooks"][host_event] = []
            created.append(f"hooks.{host_event}")
        rules = rules_path(path) if ours == "session-start" else None
        entry = {"type": "command", "command": command(ours, store, rules_file=rules), **extra}
        placed = False
        matcher = MATCHERS.get(host_event)
        for g in data["hooks"][host_event]:
            if not (isinstance(g, dict) and isinstance(g.get("hooks"), list)):
                continue
            # Ours already there (perhaps from another venv or store): update in place.
            for i, h in enumerate(g["hooks"]):
                if _ours(h):
                    if placed:
                        g["hooks"][i] = None
                    else:
                        g["hooks"][i], placed = entry, True
                        if matcher and all(map(_ours, g["hooks"])):
                            g["matcher"] = matcher  # our own group: keep its matcher current
            g["hooks"] = [h for h in g["hooks"] if h is not None]
        if not placed:
            data["hooks"][host_event].append(
                {**({"matcher": matcher} if matcher else {}), "hooks": [entry]})
    if json.dumps(data, sort_keys=True) == before:
        keep_record_private(record_path(path))
        return {"changed": False, "path": str(path), "backup": None}
    kept = original(path) if record_path(path).exists() else (
        path.read_text(encoding="utf-8") if path.exists() else None)
    saved = write_file(path, json_text(data))
    write_record(record_path(path), {"created": sorted(set(created)), "original": kept})
    # The MCP server (`cardmem mcp`) is registered next to this call, by its own module:
    # Claude Code keeps user-scope MCP servers in ~/.claude.json ("mcpServers"), not here.
    return {"changed": True, "path": str(path), "backup": str(saved) if saved else None}


def _was_ours(group: dict[str, Any]) -> bool:
    """A matcher group with no hooks left after ours were taken out, and nothing else."""
    return set(group) <= {"hooks", "matcher"} and (
        group.get("matcher") in (None, "") or group.get("matcher") in MATCHERS.values())


def installed_store(settings: Path | None = None) -> Path | None:
    """The store our SessionStart hook in this settings file names (None: not baked in)."""
    path = Path(settings or default_settings()).expanduser()
    try:
        data = _load(path)
    except CardmemError:
        return None
    for g in data.get("hooks", {}).get("SessionStart", []):
        for h in (g.get("hooks", []) if isinstance(g, dict) else []):
            if _ours(h):
                if store := command_arg(str(h.get("command", "")), "--store"):
                    return Path(store)
    return None


def uninstall(settings: Path | None = None) -> dict[str, Any]:
    """Remove exactly our hook entries (and the containers install created), and the rules
    file they kept (only if cardmem wrote it)."""
    path = Path(settings or default_settings()).expanduser()

    rules_gone = remove(installed_store(path), rules_path(path))
    if not path.exists():
        return {"changed": rules_gone, "path": str(path)}
    data = _load(path)
    before = json.dumps(data, sort_keys=True)
    created = set(recorded(path))
    hooks = data.get("hooks", {})
    for host_event in list(hooks):
        kept = []
        for g in hooks[host_event]:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list) and any(map(_ours, g["hooks"])):
                g["hooks"] = [h for h in g["hooks"] if not _ours(h)]
                if not g["hooks"] and _was_ours(g):
                    continue  # the group we added, now empty
            kept.append(g)
        hooks[host_event] = kept
        if not kept and f"hooks.{host_event}" in created:
            del hooks[host_event]
    if "hooks" in data and not data["hooks"] and "hooks" in created:
        del data["hooks"]
    changed = json.dumps(data, sort_keys=True) != before
    if not data and "file" in created:
        path.unlink()  # install made this file; nothing else is in it
        changed = True
    elif changed:
        write_back(path, data, original(path))
    record_path(path).unlink(missing_ok=True)
    return {"changed": changed, "path": str(path)}
