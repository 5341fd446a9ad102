"""The hooks' commands for the cardmem CLI (entry points of the `cardmem.commands` group):
`cardmem hook claude-code EVENT`, `cardmem install claude-code`, `cardmem uninstall claude-code`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from cardmem.store.wording import plural
from cardmem.tools.cli.options import store_value

HOSTS = ["claude-code"]


@click.command(hidden=True, context_settings={"ignore_unknown_options": False})
@click.argument("host", type=click.Choice(HOSTS))
@click.argument("event", type=click.Choice(["session-start", "stop", "session-end",
                                            "pre-tool-use"]))
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store (default: $CARDMEM_STORE, else $XDG_DATA_HOME/cardmem).")
@click.option("--rules-file", type=click.Path(path_type=Path),
              help="session-start: keep every rule whole in this file the host loads.")
def hook(host: str, event: str, store_path: Path | None, rules_file: Path | None) -> None:
    """A host hook: JSON on stdin, JSON on stdout; always exits 0.

    \b
    Example:
        echo '{"tool_name": "Bash", "tool_input": {"command": "git push -f"}}' \\
            | cardmem hook claude-code pre-tool-use
    """
    if event == "pre-tool-use":
        from cardmem.hooks.pretool import run as pretool

        sys.exit(pretool(str(store_path) if store_path else None))
    from cardmem.hooks.claude_code import run

    sys.exit(run(event, str(store_path) if store_path else None,
                 rules_file=str(rules_file) if rules_file else None))


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help="The settings file (default: ~/.claude/settings.json).")
@click.option("--store", "store_path", metavar="PATH", callback=store_value,
              help="The store the hooks use (default: $CARDMEM_STORE, else the default store);"
                   " written into the hook commands.")
@click.option("--init", "init_store", is_flag=True, help="Make the store if it does not exist.")
@click.option("--mcp-config", type=click.Path(path_type=Path),
              help="Where Claude Code keeps user-scope MCP servers (default: ~/.claude.json).")
@click.option("--no-mcp", is_flag=True, help="Do not register the MCP server.")
def install(host: str, settings: Path | None, store_path: Path | None, init_store: bool,
            mcp_config: Path | None, no_mcp: bool) -> None:
    """Register cardmem's hooks and MCP server with a host (idempotent; backs the original up).

    The store is resolved now and written into what is installed, so a session started
    from a desktop or an IDE (without your shell's $CARDMEM_STORE) uses the same store.
    Every rule is written whole to `rules/cardmem.md` beside the settings file, which
    Claude Code loads at start-up; the session-start hook keeps it current.

    \b
    Example:
        cardmem install claude-code
        cardmem install claude-code --store ~/team-memory --init
    """
    from cardmem.hooks.install import install as do_install, rules_path
    from cardmem.store.cards import paths
    from cardmem.store.errors import CardmemError

    root = Path(store_path).expanduser().absolute() if store_path else \
        paths.default_store().absolute()
    try:
        paths.require_store(root)
    except CardmemError as exc:
        if not init_store:
            raise CardmemError(f"store {root}", f"{exc.why.split(';')[0]}; run `cardmem init "
                               f"{root}` first, or install with --init") from None
        from cardmem.store.store import init

        init(root)
        click.echo(f"made the store {root}")
    r = do_install(settings, root)
    if not r["changed"]:
        click.echo(f"already installed in {r['path']} (store {root})")
    else:
        click.echo(f"installed cardmem's hooks in {r['path']} (store {root})"
                   + (f" (backup: {r['backup']})" if r["backup"] else ""))
    from cardmem.store.root import StoreRoot
    from cardmem.store.rules.host_file import deliver

    d = deliver(StoreRoot.open(root), rules_path(settings))
    if d.ok:
        click.echo(f"rules: {plural(d.total, 'rule')} written whole to {d.path}, which Claude Code "
                   "loads at start-up")
    else:
        click.echo(f"cardmem: rules file: {d.error}", err=True)
    from cardmem.store.rules import triggers

    try:
        table = triggers.build(StoreRoot.open(root))
        n = len(table["governed"]["all"])
        click.echo(f"rules at the point of action: {plural(n, 'rule')} naming the tool calls "
                   "they govern (a PreToolUse hook brings them up; `cardmem rules test CMD` "
                   "checks one)")
    except Exception as exc:  # noqa: BLE001 - the hook rebuilds it at its first call
        click.echo(f"cardmem: trigger table: {' '.join(str(exc).split())}", err=True)
    if not no_mcp:
        from cardmem.hooks.mcp_install import register

        m = register(mcp_config, root)
        click.echo(f"{'registered' if m['changed'] else 'already registered:'} the MCP "
                   f"server `cardmem` (user scope) in {m['path']}"
                   + (f" (backup: {m['backup']})" if m.get("backup") else ""))


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help="The settings file (default: ~/.claude/settings.json).")
@click.option("--mcp-config", type=click.Path(path_type=Path),
              help="Where Claude Code keeps user-scope MCP servers (default: ~/.claude.json).")
def uninstall(host: str, settings: Path | None, mcp_config: Path | None) -> None:
    """Remove exactly the hooks and the MCP server `cardmem install` added.

    \b
    Example:
        cardmem uninstall claude-code
    """
    from cardmem.hooks.install import uninstall as do_uninstall
    from cardmem.hooks.mcp_install import unregister

    r = do_uninstall(settings)
    click.echo(f"{'removed cardmem hooks from' if r['changed'] else 'no cardmem hooks in'} {r['path']}")
    m = unregister(mcp_config)
    click.echo(f"{'removed the MCP server `cardmem` from' if m['changed'] else 'no cardmem MCP server in'} {m['path']}")
