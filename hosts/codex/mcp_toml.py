"""`cardmem mcp` in Codex's config.toml: `[mcp_servers.cardmem]` with command, args and env
(https://developers.openai.com/codex/mcp; `codex mcp add` writes the same table).

The person's file is edited as text, never re-serialised: install appends one table
between two marker comments, uninstall cuts exactly that block out again, so every other
byte (comments, order, quoting) stays as it was, and a file install left otherwise alone
comes back byte for byte. The result is parsed (tomllib) before it is written: an edit
that would not be valid TOML, or would not give Codex our entry, is refused with one
clear line and nothing written.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError

BEGIN = "# >>> cardmem: the MCP server `cardmem install codex` added (uninstall removes it)\n"
END = "# <<< cardmem\n"
_BLOCK = re.compile(re.escape(BEGIN) + r"[\s\S]*?" + re.escape(END))


def _str(s: str) -> str:
    """A TOML basic string. JSON's escapes are TOML's; DEL must be escaped in TOML too."""
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def block(entry: dict[str, Any]) -> str:
    env = ", ".join(f"{_str(k)} = {_str(v)}" for k, v in entry.get("env", {}).items())
    return (BEGIN + "[mcp_servers.cardmem]\n"
            f"command = {_str(entry['command'])}\n"
            f"args = [{', '.join(_str(a) for a in entry['args'])}]\n"
            f"env = {{ {env} }}\n" + END)


def parse(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CardmemError(str(path), f"not valid TOML ({exc}); fix it or pass --mcp-config") from None


def server(text: str, path: Path) -> Any:
    """The `mcp_servers.cardmem` table the file gives Codex (None: none)."""
    servers = parse(text, path).get("mcp_servers")
    return servers.get("cardmem") if isinstance(servers, dict) else None


def add(text: str, entry: dict[str, Any], path: Path) -> str:
    """The file's text with our block in (in place of an earlier one of ours, else at the
    end). Raises CardmemError if another `cardmem` server is there, or the result would not
    give Codex exactly our entry."""
    ours = _BLOCK.search(text)
    if ours:
        new = text[:ours.start()] + block(entry) + text[ours.end():]
    else:
        if server(text, path) is not None:
            raise CardmemError(f"{path}: mcp_servers.cardmem", "is another server's entry; "
                               "rename or remove it, then install again")
        new = text + ("" if not text or text.endswith("\n") else "\n") + block(entry)
    try:
        got = (tomllib.loads(new).get("mcp_servers") or {}).get("cardmem")
    except (tomllib.TOMLDecodeError, AttributeError):
        got = None
    want = {"command": entry["command"], "args": entry["args"], "env": entry.get("env", {})}
    if got != want:
        raise CardmemError(str(path), "cannot add a [mcp_servers.cardmem] table to this file "
                           "(is mcp_servers an inline table?); add it by hand or pass --mcp-config")
    return new


def remove(text: str, before: str | None) -> str | None:
    """The text with our block cut out (None: no block of ours). `before` is the file as it
    was before install: the newline install added in front of the block goes too."""
    ours = _BLOCK.search(text)
    if not ours:
        return None
    new = text[:ours.start()] + text[ours.end():]
    if before is not None and new == before + "\n" and not before.endswith("\n"):
        new = before  # the separator install added to a file without a final newline
    return new
