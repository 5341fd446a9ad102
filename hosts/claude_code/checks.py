"""`cardmem doctor`'s checks of the Claude Code installation (an entry point of the
`cardmem.checks` group: tools/ may not import hosts/).

Each check returns (ok, line), like tools/cli/doctor.py's: whether Claude Code's settings run
our hooks with a Python that still exists and this store, whether the rules file the
hosts load is ours and current, whether the MCP server is registered with a live
interpreter, and what the hook log says went wrong lately.
"""
from __future__ import annotations

import os
import shlex
import time
from pathlib import Path
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.git.head_file import is_repo
from cardmem.store.wording import plural

from .. import hooklog, firings
from ..settings import command_arg
from .install import HOOKS, _load, _ours, default_settings
from cardmem.store.rules.host_file import deliver
from cardmem.store.rules import triggers

RECENT_DAYS = 7
# Outcomes in the hook log that mean memory was not loaded or not learned.
FAILURES = ("error", "degraded", "no store", "no model", "extraction failed",
            "could not detach", "spooled")


def _interpreter_ok(command: str) -> tuple[bool, str]:
    try:
        words = shlex.split(command)
        exe = words[0]
    except (ValueError, IndexError):
        return False, "unparsable command"
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return False, f"its interpreter {exe} does not exist (a removed virtualenv?)"
    script = words[1:3]
    if script[:1] == ["-S"] and len(script) == 2 and not os.path.isfile(script[1]):
        return False, f"its script {script[1]} does not exist (cardmem moved or removed?)"
    return True, exe




def check_hooks(store: Any, settings: Path | None = None) -> list[tuple[bool | None, str]]:
    path = Path(settings or default_settings()).expanduser()
    try:
        data = _load(path)
    except CardmemError as exc:
        return [(False, str(exc))]
    found: dict[str, str] = {}
    for event in HOOKS:
        for g in data.get("hooks", {}).get(event, []):
            for h in (g.get("hooks", []) if isinstance(g, dict) else []):
                if _ours(h):
                    found[event] = str(h["command"])
    if not found:
        return [(True, f"Claude Code: cardmem is not installed in {path} "
                       "(`cardmem install claude-code` to use memory there)")]
    out: list[tuple[bool | None, str]] = []
    missing = [e for e in HOOKS if e not in found]
    if missing:
        out.append((False, f"Claude Code: {', '.join(missing)} hook(s) missing in {path}; "
                           "run `cardmem install claude-code`"))
    for event, command in sorted(found.items()):
        ok, why = _interpreter_ok(command)
        if not ok:
            out.append((False, f"Claude Code: the {event} hook cannot start: {why}; run "
                               "`cardmem install claude-code` again"))
    stores = {command_arg(c, "--store") for c in found.values()}
    for s in sorted(x for x in stores if x):
        if not is_repo(s):
            out.append((False, f"Claude Code: the hooks use the store {s}, which does not "
                               f"exist; run `cardmem init {s}` or install again"))
        elif Path(s).resolve() != Path(store.root).resolve():
            # a warning: memory written here is not what sessions read
            out.append((None, f"Claude Code: the hooks in {path} use another store, {s}, "
                              f"not {store.root}; `cardmem install claude-code --store "
                              f"{store.root}` switches them"))
    if None in stores:
        out.append((True, "Claude Code: the hooks name no store; they use $CARDMEM_STORE or "
                          "the default store at run time (install again to fix one)"))
    if not any(ok is not True for ok, _ in out):
        out.append((True, f"Claude Code: hooks installed in {path}"))
    out += check_rules_file(store, found.get("SessionStart"), path)
    return out


def check_rules_file(store: Any, command: str | None, settings: Path) -> list[tuple[bool, str]]:
    target = command_arg(command or "", "--rules-file")
    if not target:
        return [(False, "Claude Code: the SessionStart hook keeps no rules file, so rules "
                        "past the host's 10,000-character cap reach the model by title "
                        "only; run `cardmem install claude-code` again")]
    own = command_arg(command or "", "--store")
    if own and Path(own).resolve() != Path(store.root).resolve():
        return []  # another store's file: that store's doctor checks it

    d = deliver(store, Path(target), dry_run=True)
    if not d.ok:
        return [(False, f"Claude Code: rules file: {d.error}")]
    if not Path(target).exists():
        return [(False, f"Claude Code: the rules file {target} is missing; the next session "
                        "start writes it (that session sees changed rules by title only)")]
    if d.changed or d.removed:
        return [(True, f"Claude Code: the rules file {target} is behind by "
                       f"{len(d.changed) + len(d.removed)} rule(s); the next session start "
                       "shows them and rewrites it")]
    return [(True, f"Claude Code: rules file current ({plural(d.total, 'rule')}, {target})")]


def check_mcp(store: Any, config: Path | None = None) -> list[tuple[bool, str]]:
    from .mcp_install import NAME, _load as load_mcp, _ours, default_config

    path = Path(config or default_config()).expanduser()
    try:
        entry = (load_mcp(path).get("mcpServers") or {}).get(NAME)
    except CardmemError as exc:
        return [(False, str(exc))]
    if entry is None or not _ours(entry):
        return [(True, f"Claude Code: no cardmem MCP server in {path}")]
    exe = str(entry.get("command", ""))
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return [(False, f"Claude Code: the MCP server cannot start: its interpreter {exe} does "
                        "not exist; run `cardmem install claude-code` again")]
    args = entry.get("args", [])
    s = args[args.index("--store") + 1] if "--store" in args[:-1] else None
    if s and not is_repo(s):
        return [(False, f"Claude Code: the MCP server uses the store {s}, which does not exist")]
    return [(True, f"Claude Code: MCP server registered in {path}")]


def check_hook_log(store: Any) -> list[tuple[bool, str]]:
    """Failures the hooks logged in the last RECENT_DAYS days (the newest is quoted)."""
    path = Path(store.root) / ".cardmem" / hooklog.NAME
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-2000:]
    except OSError:
        return [(True, "hooks: no hook has run yet")]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - RECENT_DAYS * 86400))
    bad = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) < 4 or parts[0] < since:
            continue
        outcome = parts[3].split(" ", 1)[1] if parts[3].startswith("session=") else parts[3]
        if outcome.startswith(FAILURES):
            bad.append(line)
    if not bad:
        return [(True, f"hooks: no failures logged in the last {RECENT_DAYS} days")]
    return [(False, f"hooks: {len(bad)} failure(s) in the last {RECENT_DAYS} days; newest: "
                    f"{bad[-1][:300]} (all in {path})")]


def check_point_of_action(store: Any, days: int = 30) -> list[tuple[bool, str]]:
    """The trigger table (rules with applies_to, what was downgraded or is malformed) and
    what fired at tool calls in the last `days` days."""
    out: list[tuple[bool, str]] = []
    try:
        table, rebuilt = triggers.ensure(str(store.root))
    except Exception as exc:  # noqa: BLE001 - say it; the hook lets calls through meanwhile
        return [(False, f"rules at the point of action: the trigger table cannot be built: "
                        f"{' '.join(str(exc).split())}")]
    rules = table["rules"]
    gov = [r for r in rules if any(k in r for k in ("bash", "paths", "tools"))]
    by = {a: sum(1 for r in gov if r["enforce"] == a) for a in triggers.ENFORCE}
    down = [r for r in rules if r.get("downgraded")]
    out.append((True, f"rules at the point of action: {len(gov)} of {len(rules)} rules name "
                      f"what they govern ({by['deny']} deny, {by['ask']} ask, "
                      f"{by['remind']} remind){'; table rebuilt now' if rebuilt else ''}"))
    for r in down:
        out.append((True, f"rules at the point of action: {r['id']} only reminds: {r['downgraded']}"))
    for p in table.get("problems", []):
        out.append((False, f"rules at the point of action: {p}"))
    c = firings.counts(str(store.root), time.time() - days * 86400)
    if c:
        tot = {k: sum(v[k] for v in c.values()) for k in ("deny", "ask", "remind", "relevance")}
        top = sorted(c.items(), key=lambda kv: -sum(kv[1].values()))[:3]
        out.append((True, f"rules at the point of action, last {days} days: {tot['deny']} "
                          f"refusal(s), {tot['ask']} question(s), {tot['remind']} reminder(s), "
                          f"{tot['relevance']} by relevance; most: "
                          + ", ".join(f"{k} ({sum(v.values())})" for k, v in top)
                          + " (`cardmem rules stats`)"))
        refused = sorted(((v["deny"], k) for k, v in c.items() if v["deny"]), reverse=True)
        if refused:
            out.append((True, "rules at the point of action: refused calls, by rule: "
                              + ", ".join(f"{k} ({n})" for n, k in refused[:10])
                              + (" ..." if len(refused) > 10 else "")))
    return out


def checks(store: Any) -> list[tuple[bool, str]]:
    return check_hooks(store) + check_mcp(store) + check_hook_log(store) + \
        check_point_of_action(store)
