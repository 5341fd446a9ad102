"""What `cardmem doctor` checks of the hooks installed for Codex, Gemini CLI, Cursor and
Copilot CLI (an entry point of the `cardmem.checks` group; Claude Code's own checks are
hosts/claude_code/checks.py): for each host whose user file holds cardmem's hooks, that
every event is there, that each command's Python and script still exist, and which store
the hooks use; and the exports kept current, each written again."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from cardmem.store.git.head_file import is_repo

from .claude_code.checks import _interpreter_ok
from .settings import command_arg
from .install import installed, installed_events, settings_path, spec
from .adapters import load
from .mcp_install import config_path, registered
from .hook import NO_TRANSCRIPT
from cardmem.store.errors import StoreBusy
from cardmem.store.rules.exports import HOSTS, locked, refresh, targets

OTHERS = ("codex", "gemini", "cursor", "copilot")


def check_host(host: str, store: Any, settings: Path | None = None) -> list[tuple[bool | None, str]]:
    label, path, sp = load(host).LABEL, settings_path(host, settings), spec(host)
    ours = installed(host, path)
    if not ours:
        return []  # not installed there: nothing to say (`cardmem install HOST` is in --help)
    key = sp["key"]
    out: list[tuple[bool | None, str]] = []
    kinds = {k for k, _, _ in sp["events"].values()}
    commands = [str(h.get(key)) for h in ours]
    have = {"pre-tool-use" if "pretool_start.py" in c else c.rsplit(" ", 1)[-1] for c in commands}
    missing = sorted(kinds - have)
    if missing:
        out.append((False, f"{label}: {', '.join(missing)} hook(s) missing in {path}; run "
                           f"`cardmem install {host}`"))
    # An event whose kind another event still covers (Cursor answers its shell at
    # beforeShellExecution only; preToolUse leaves the shell to it).
    gone = sorted(e for e, (k, _, _) in sp["events"].items()
                  if k not in missing and e not in installed_events(host, path))
    if gone:
        out.append((False, f"{label}: {', '.join(gone)} hook(s) missing in {path}; run "
                           f"`cardmem install {host}`"))
    for c in commands:
        ok, why = _interpreter_ok(c)
        if not ok:
            out.append((False, f"{label}: a hook cannot start: {why}; run `cardmem install {host}` again"))
            break
    for s in sorted({x for c in commands if (x := command_arg(c, "--store"))}):
        if not is_repo(s):
            out.append((False, f"{label}: the hooks use the store {s}, which does not exist; "
                               f"run `cardmem init {s}` or install again"))
        elif Path(s).resolve() != Path(store.root).resolve():
            out.append((None, f"{label}: the hooks in {path} use another store, {s}, not "
                              f"{store.root}; `cardmem install {host} --store {store.root}` switches them"))
    out += _check_server(host, label, settings)
    said = no_transcript(store, host)
    if said:
        out.append((None, said))
    if not any(ok is not True for ok, _ in out):
        out.append((True, f"{label}: hooks installed in {path}"))
    return out


def _check_server(host: str, label: str, settings: Path | None) -> list[tuple[bool | None, str]]:
    """The MCP server install registered beside the hooks: there, and able to start."""
    entry = registered(host, settings=settings)
    if entry is None:
        return [(None, f"{label}: no cardmem MCP server in {config_path(host, settings=settings)}; "
                       f"`cardmem install {host}` registers it")]
    ok, why = _interpreter_ok(shlex.join([str(entry.get("command", ""))]))
    if not ok:
        return [(False, f"{label}: the MCP server cannot start: {why}; run `cardmem install "
                        f"{host}` again")]
    return []


def no_transcript(store: Any, host: str) -> str:
    """What doctor says when the host's last end-of-session hook named no transcript."""
    if not (Path(store.root) / ".cardmem" / NO_TRANSCRIPT.format(host)).exists():
        return ""
    return (f"{load(host).LABEL}: its end-of-session hook sends no transcript path, so "
            "nothing is learned from its sessions (Cursor: are agent transcripts off?)")


def check_exports(store: Any) -> list[tuple[bool | None, str]]:
    """The exports kept current (`cardmem export`, `install HOST --export`): each written
    again now, so a rule edited by hand and not yet committed reaches it too."""
    out: list[tuple[bool | None, str]] = []
    if not targets(store.root):
        return out
    try:
        with locked(store.root):  # as a commit's refresh: an export ended meanwhile stays ended
            done = refresh(store)
    except StoreBusy as exc:
        return [(None, f"exports: not written again now: {exc}")]
    for t, action, why in done:
        where = Path(t["folder"]) / HOSTS[t["host"]].main
        if action == "failed":
            out.append((False, f"export {t['host']}: {why}; mend it and `cardmem doctor` "
                               "writes it again"))
        elif action == "forgotten":
            out.append((None, f"export {t['host']}: {why}, so it is no longer kept current "
                              f"(`cardmem export {t['host']} {t['folder']}` starts again)"))
        else:
            out.append((True, f"export {t['host']}: {where} "
                              f"{'brought up to date' if action == 'written' else 'current'}"))
    return out


def checks(store: Any) -> list[tuple[bool | None, str]]:
    return [c for host in OTHERS for c in check_host(host, store)] + check_exports(store)
