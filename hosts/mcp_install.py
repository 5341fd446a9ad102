"""Register `cardmem mcp` with Codex, Gemini CLI, Cursor or Copilot CLI, and take it out:
what `install claude-code` does for Claude Code (hosts/claude_code/mcp_install.py).

Where each host keeps MCP servers (hosts/<host>/install.py SPEC["mcp"]):
- Codex: `[mcp_servers.cardmem]` in ~/.codex/config.toml ($CODEX_HOME), edited as text
  (hosts/codex/mcp_toml.py);
- Gemini CLI: `mcpServers.cardmem` in the same settings.json as its hooks;
- Cursor: `mcpServers.cardmem` in ~/.cursor/mcp.json;
- Copilot CLI: `mcpServers.cardmem` (`type: local`, `tools: ["*"]`) in
  ~/.copilot/mcp-config.json ($COPILOT_HOME).

Install sets one key (or appends one TOML block), refuses a `cardmem` entry that does not
run cardmem, and records what it created and the file as it was in
`<file>.cardmem-mcp.json`: its own record, so Gemini's hooks record in the same
settings.json is never overwritten. Uninstall (run before the hooks' own) removes exactly
that and gives the file back byte for byte when nothing else changed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError

from .claude_code.mcp_install import NAME, _ours, remove_entry, server_entry
from .codex import mcp_toml
from .install import settings_path, spec
from .settings import backup_path, json_text, read_json_object, read_record, write_back, write_file, write_record


def record_path(path: Path) -> Path:
    return path.with_name(path.name + ".cardmem-mcp.json")


def _spec(host: str) -> dict[str, Any]:
    return spec(host)["mcp"]


def config_path(host: str, config: Path | None = None, settings: Path | None = None) -> Path:
    """The host's MCP file: --mcp-config; else the one beside a --settings file (a project's
    .cursor/mcp.json, .codex/config.toml, .github/mcp.json); else the user's (Gemini: the
    hooks' own settings file)."""
    if config:
        return Path(config).expanduser()
    if _spec(host).get("in_settings"):
        return settings_path(host, settings)
    beside = _spec(host).get("beside")
    if settings and beside:  # a project's hooks: the project's MCP file, not the user's
        found = beside(Path(settings).expanduser())
        if found:
            return found
    return _spec(host)["default"]()


def entry(host: str, store: Path | None = None) -> dict[str, Any]:
    base = {k: v for k, v in server_entry(store).items() if k != "type"}
    return {**_spec(host).get("entry", {}), **base, **_spec(host).get("after", {})}


def _record(path: Path) -> dict[str, Any]:
    return read_record(record_path(path))


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.exists() else None
    except UnicodeDecodeError:
        raise CardmemError(str(path), "is not UTF-8 text; fix it or pass --mcp-config") from None


def register(host: str, config: Path | None = None, store: Path | None = None,
             settings: Path | None = None, dry_run: bool = False) -> dict[str, Any]:
    """Add `cardmem` to the host's MCP servers (idempotent); returns {changed, path, backup}.
    dry_run: raise what a real run would (unreadable file, another `cardmem`), write nothing."""
    path = config_path(host, config, settings)
    before = _text(path)
    want = entry(host, store)
    created: list[str] = [] if before is not None else ["file"]
    if _spec(host).get("toml"):
        new = mcp_toml.add(before or "", want, path)
        if new == before:
            return {"changed": False, "path": str(path)}
        text = new
    else:
        data = read_json_object(path, "--mcp-config")
        if "mcpServers" not in data:
            created.append("mcpServers")
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise CardmemError(f"{path}: mcpServers", "is not an object of name -> server")
        current = servers.get(NAME)
        if current is not None and not _ours(current):
            raise CardmemError(f"{path}: mcpServers.{NAME}",
                               "is another server's entry; rename or remove it, then install again")
        if current == want:
            return {"changed": False, "path": str(path)}
        servers[NAME] = want
        text = json_text(data)
    if dry_run:
        return {"changed": True, "path": str(path)}
    rec = _record(path) or {"created": created, "original": before}
    # The hooks' own file (Gemini's settings.json): their step keeps the backup of what the
    # person had; this step does not replace it with the file it just wrote.
    shared = _spec(host).get("in_settings") and backup_path(path).exists()
    saved = write_file(path, text, keep_backup=not shared)
    write_record(record_path(path), rec)
    return {"changed": True, "path": str(path), "backup": str(saved) if saved else None}


def unregister(host: str, config: Path | None = None,
               settings: Path | None = None) -> dict[str, Any]:
    """Remove our `cardmem` server and what install created; returns {changed, path}."""
    path = config_path(host, config, settings)
    rec = _record(path)
    out = _unregister(host, path, rec)
    record_path(path).unlink(missing_ok=True)  # kept when the file could not be read
    return out


def _unregister(host: str, path: Path, rec: dict[str, Any]) -> dict[str, Any]:
    text = _text(path)
    if text is None:
        return {"changed": False, "path": str(path)}
    created, original = set(rec.get("created", [])), rec.get("original")
    if _spec(host).get("toml"):
        new = mcp_toml.remove(text, original)
        if new is None:
            return {"changed": False, "path": str(path)}
        if not new and "file" in created:
            path.unlink()
        else:
            write_file(path, new)
        return {"changed": True, "path": str(path)}
    changed = remove_entry(path, read_json_object(path, "--mcp-config"), created,
                           lambda p, data: write_back(p, data, original))
    return {"changed": changed, "path": str(path)}


def registered(host: str, config: Path | None = None,
               settings: Path | None = None) -> dict[str, Any] | None:
    """Our server entry in the host's MCP file (None: not there, or the file is unreadable)."""
    path = config_path(host, config, settings)
    try:
        text = _text(path)
        if text is None:
            return None
        if _spec(host).get("toml"):
            found = mcp_toml.server(text, path)
        else:
            found = (read_json_object(path, "--mcp-config").get("mcpServers") or {}).get(NAME)
    except (CardmemError, AttributeError):
        return None
    return found if _ours(found) else None


def home(env: str, name: str) -> Path:
    """A host's own directory: $ENV if set, else ~/NAME."""
    value = os.environ.get(env)
    return Path(value).expanduser() if value else Path.home() / name
