"""A host's settings file, read and written with care: one home for what every install
and uninstall (hosts/install.py, hosts/claude_code/) does to a file that is the person's.

A file that is not a JSON object is one clear error, never overwritten. Before cardmem
changes a file it copies it aside (one backup: the file as it was before cardmem's
latest change). What install created (the file, containers) is recorded next to it in
`<file>.cardmem.json`, with the file's bytes as they were, so uninstall can take out
exactly what was added and give the file back byte for byte.
"""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.git.writer import atomic_write


def command_arg(command: str, flag: str) -> str | None:
    """The value after `flag` in a hook command line (None: absent, or not parseable,
    e.g. a hand-edited command with an unbalanced quote)."""
    try:
        args = shlex.split(command)
    except ValueError:
        return None
    return args[args.index(flag) + 1] if flag in args[:-1] else None


def read_json_object(path: Path, hint: str) -> dict[str, Any]:
    """A host's JSON settings file as a dict ({} if absent); one clear line if it is not."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        if text[exc.pos:exc.pos + 2] in ("//", "/*"):  # JSON with comments: Gemini CLI's
            raise CardmemError(str(path), f"has a comment (line {exc.lineno}), which cardmem "
                               "cannot keep, as it writes the file as plain JSON; take the "
                               "comments out, then install again") from None
        raise CardmemError(str(path), f"not valid JSON ({exc}); fix it or pass {hint}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CardmemError(str(path), f"not valid JSON ({exc}); fix it or pass {hint}") from None
    if not isinstance(data, dict):
        raise CardmemError(str(path), "is not a JSON object")
    return data


def read_hooks_file(path: Path) -> dict[str, Any]:
    """A host's settings with hooks in it ({} if absent): `hooks` must map each event to a
    list (of matcher groups, or of hooks); anything else is one clear error."""
    data = read_json_object(path, "--settings")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or any(not isinstance(v, list) for v in hooks.values()):
        raise CardmemError(f"{path}: hooks", "is not an object of event -> list of hooks")
    return data


def record_path(path: Path) -> Path:
    """Where install records what it created (the file, containers) next to a host file."""
    return path.with_name(path.name + ".cardmem.json")


def write_record(record: Path, data: dict[str, Any]) -> None:
    """Write an install record. It may keep the file as it was, and hosts' files hold keys
    (MCP servers' env): the person's eyes only, as the backup keeps the file's own mode."""
    atomic_write(record, json.dumps(data).encode(), mode=0o600)


def keep_record_private(record: Path) -> None:
    """An install that changes nothing still makes its record 0600: releases before 0600
    records (061df25) left Claude Code's readable by all, the person's keys and all."""
    try:
        if record.stat().st_mode & 0o077:
            record.chmod(0o600)
    except OSError:
        pass  # no record (nothing was installed), or not ours to change: nothing to tighten


def read_record(record: Path) -> dict[str, Any]:
    """What an install recorded in `record` ({} when there is none, or it is unreadable)."""
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded(path: Path) -> list[str]:
    """What install recorded creating for this host file ([] without a readable record)."""
    try:
        return list(json.loads(record_path(path).read_text()).get("created", []))
    except (OSError, ValueError, AttributeError, TypeError):
        return []


def backup_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.bak-cardmem")


def backup(path: Path) -> Path | None:
    """Copy a host's file aside before cardmem rewrites it: one backup per file (the file
    as it was before cardmem's latest change), never a pile of them."""
    if not path.exists():
        return None
    shutil.copy2(path, backup_path(path))  # keeps the mode: ~/.claude.json stays 0600
    return backup_path(path)


def json_text(data: dict[str, Any]) -> str:
    """A host's JSON file as cardmem writes it."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_file(path: Path, text: str, *, keep_backup: bool = True,
               private: bool = False) -> Path | None:
    """The one way cardmem writes a host's file: its folder made, the file as it was copied
    aside (`backup`; keep_backup=False when an earlier step of the same install took it),
    then replaced atomically. A new file is made 0600 when private (it may come to hold
    keys). Returns the backup (None: there was no file, or none was taken)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    saved = backup(path) if keep_backup else None
    atomic_write(path, text.encode("utf-8"), mode=0o600 if new and private else None)
    return saved


def original(path: Path) -> str | None:
    """The file's text before cardmem's first install, as recorded (None: none kept)."""
    try:
        text = json.loads(record_path(path).read_text()).get("original")
    except (OSError, ValueError, AttributeError):
        return None
    return text if isinstance(text, str) else None


def write_back(path: Path, data: dict[str, Any], before: str | None) -> None:
    """Write what is left after uninstall: the very bytes of `before` (the file before
    install) when nothing else changed since, else the data as JSON."""
    text = None
    if before is not None:
        try:
            if json.loads(before or "{}") == data:
                text = before
        except ValueError:
            pass
    write_file(path, text if text is not None else json_text(data))
