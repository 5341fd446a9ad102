"""Register `cardmem mcp` with Claude Code as a user-scope MCP server, and take it out.

Claude Code keeps user-scope MCP servers (what `claude mcp add --scope user` writes) in
the top-level `mcpServers` object of ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json
when that variable is set. That file is also Claude Code's own state (and may hold its
login), so the edit is as small as it can be: one key, `mcpServers.cardmem`, is set or
removed; every other key is kept and the file keeps its mode (a new file is made 0600).
An entry named `cardmem` that does not run cardmem is someone else's and is refused,
never overwritten. What install created (the file, the `mcpServers` object) is recorded
in `<file>.cardmem.json`, as the hooks installer does, so uninstall removes exactly that.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError

from ..settings import json_text, keep_record_private, read_json_object, record_path, recorded, write_file, write_record

NAME = "cardmem"
MODULE = "cardmem.tools.cli"


def default_config() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home()) / ".claude.json"


def server_entry(store: Path | None = None, python: str | None = None) -> dict[str, Any]:
    """The stdio server entry: this Python, by absolute path (hosts bring their own PATH)."""
    args = ["-m", MODULE, "mcp"]
    if store is not None:
        args += ["--store", str(Path(store).expanduser().absolute())]
    # CARDMEM_AGENT: the caller is an agent (see cardmem.tools.cli.options.AGENT_ENV)
    return {"type": "stdio", "command": python or sys.executable, "args": args,
            "env": {"CARDMEM_AGENT": "1"}}


def _ours(entry: Any) -> bool:
    return (isinstance(entry, dict) and isinstance(entry.get("args"), list)
            and MODULE in entry["args"] and "mcp" in entry["args"])


def _load(path: Path) -> dict[str, Any]:
    data = read_json_object(path, "--mcp-config")
    if not isinstance(data.get("mcpServers", {}), dict):
        raise CardmemError(f"{path}: mcpServers", "is not an object of name -> server")
    return data


def _write(path: Path, data: dict[str, Any]) -> Path | None:
    """Write the host's JSON file (a new one 0600); returns its backup, None if it was new."""
    return write_file(path, json_text(data), private=True)


def register(config: Path | None = None, store: Path | None = None) -> dict[str, Any]:
    """Set `mcpServers.cardmem` (idempotent); returns {changed, path}."""
    path = Path(config or default_config()).expanduser()
    data = _load(path)
    entry = server_entry(store)
    servers = data.get("mcpServers")
    current = servers.get(NAME) if servers else None
    if current is not None and not _ours(current):
        raise CardmemError(f"{path}: mcpServers.{NAME}",
                           "is another server's entry; rename or remove it, then install again")
    if current == entry:
        keep_record_private(record_path(path))
        return {"changed": False, "path": str(path)}
    created = recorded(path)
    if not path.exists():
        created.append("file")
    if servers is None:
        data["mcpServers"] = servers = {}
        created.append("mcpServers")
    servers[NAME] = entry
    saved = _write(path, data)
    write_record(record_path(path), {"created": sorted(set(created))})
    return {"changed": True, "path": str(path), **({"backup": str(saved)} if saved else {})}


def unregister(config: Path | None = None) -> dict[str, Any]:
    """Remove our `mcpServers.cardmem` (and what install created); returns {changed, path}."""
    path = Path(config or default_config()).expanduser()
    record = record_path(path)
    if not path.exists():
        record.unlink(missing_ok=True)
        return {"changed": False, "path": str(path)}
    changed = remove_entry(path, _load(path), set(recorded(path)), _write)
    record.unlink(missing_ok=True)
    return {"changed": changed, "path": str(path)}


def remove_entry(path: Path, data: dict[str, Any], created: set[str], write) -> bool:
    """Take our `mcpServers.cardmem` out of a host's JSON (and the `mcpServers` or the file
    install created), then `write(path, data)` what is left; False when none of ours is there."""
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or not _ours(servers.get(NAME)):
        return False
    del servers[NAME]
    if not servers and "mcpServers" in created:
        del data["mcpServers"]
    if not data and "file" in created:
        path.unlink()
    else:
        write(path, data)
    return True
