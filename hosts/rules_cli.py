"""`cardmem rules test` and `cardmem rules stats`: check the patterns of rules at the point
of action, and see which rules earn their place (an entry point of `cardmem.commands`).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import click

from cardmem.tools.cli.options import emit_json, json_option, store_option
from cardmem.store.rules import triggers
from cardmem.store.root import StoreRoot
from cardmem.store.rules.match import THRESHOLD, call_text, command_strings, decide, relevance
from cardmem.store.rules.shellsplit import simple_commands
from . import firings


@click.group()
def rules() -> None:
    """Rules at the point of action: what would fire, and what fired.

    \b
    Example:
        cardmem rules test "git push --force origin main"
        cardmem rules stats
    """


def _table(store_path: Path | None) -> tuple[str, dict]:
    root = str(StoreRoot.open(store_path).root)
    return root, triggers.ensure(root)[0]


@rules.command("test")
@click.argument("call")
@click.option("--tool", default=None, help="The tool (default: Bash; Edit with --path).")
@click.option("--path", "as_path", is_flag=True, help="CALL is a file an edit tool writes.")
@click.option("--cwd", type=click.Path(path_type=Path), default=None,
              help="The session's folder (default: this one): its project scopes rules.")
@json_option
@store_option
def test_cmd(call: str, tool: str | None, as_path: bool, cwd: Path | None, as_json: bool,
             store_path: Path | None) -> None:
    """Say which rules would fire for a tool call, and why.

    A Bash line is split into its simple commands (after &&, ;, |, inside $(…), behind
    sudo or env...), and each is matched against the rules' `applies_to` globs; rules
    without `applies_to` are scored by relevance (reminders only, above the threshold).

    \b
    Example:
        cardmem rules test "git push --force origin main"
        cardmem rules test --path db/migrations/0042_add_index.py
        cardmem rules test "touch x && sudo git push -f" --json
    """
    root, table = _table(store_path)
    tool = tool or ("Edit" if as_path else "Bash")
    here = str((cwd or Path.cwd()).absolute())
    tool_input = {"file_path": os.path.join(here, call)} if as_path else \
        {"command": call} if tool == "Bash" else {"input": call}
    fired = decide(table, tool, tool_input, here)
    limit = table.get("threshold", THRESHOLD)
    cmds = simple_commands(call) if tool == "Bash" else None
    near = [{"id": table["rules"][r]["id"], "score": s, "why": why}
            for s, r, why in relevance(table, call_text(tool, tool_input, cmds), cmds)[:3]
            if s < limit]
    downgraded = {r["id"]: r["downgraded"] for r in table["rules"] if r.get("downgraded")}
    commands = command_strings(call) if tool == "Bash" else []
    if as_json:
        emit_json({"tool": tool, "input": tool_input, "commands": commands, "fired": fired,
                   "threshold": limit, "below_threshold": near})
        return
    if commands:
        click.echo("simple commands: " + " | ".join(f"`{c}`" for c in commands))
    if not fired:
        click.echo("no rule fires")
    for f in fired:
        click.echo(f"{f['action']:<6} {f['id']}: {f['why']}")
        if f["id"] in downgraded:
            click.echo(f"       (only reminds: {downgraded[f['id']]})")
    for n in near:
        click.echo(f"below the relevance threshold {limit:.2f}: {n['id']} ({n['score']:.2f}, "
                   f"{n['why']})")


@rules.command("stats")
@click.option("--days", type=int, default=30, show_default=True, help="Look back this far.")
@json_option
@store_option
def stats(days: int, as_json: bool, store_path: Path | None) -> None:
    """How often each rule reminded, asked or refused at a tool call.

    Rules that name what they govern but never fired are listed too: a pattern that
    never matches may be wrong (check it with `cardmem rules test`).

    \b
    Example:
        cardmem rules stats
        cardmem rules stats --days 7 --json
    """
    root, table = _table(store_path)
    counts = firings.counts(root, time.time() - days * 86400)
    gov = [r["id"] for r in table["rules"] if any(k in r for k in ("bash", "paths", "tools"))]
    silent = [i for i in gov if i not in counts]
    if as_json:
        emit_json({"days": days, "rules": counts, "never_fired": silent})
        return
    if not counts:
        click.echo(f"no rule fired at a tool call in the last {days} days")
    else:
        click.echo(f"{'refused':>7} {'asked':>5} {'reminded':>8} {'relevant':>8}  rule")
        for cid, c in sorted(counts.items(), key=lambda kv: -sum(kv[1].values())):
            click.echo(f"{c['deny']:>7} {c['ask']:>5} {c['remind']:>8} {c['relevance']:>8}  {cid}")
    if silent:
        click.echo(f"never fired ({len(silent)}): " + ", ".join(silent[:20])
                   + (" ..." if len(silent) > 20 else ""))
