"""The hooks' commands for the cardmem CLI (entry points of the `cardmem.commands` group):
`cardmem hook claude-code EVENT`, `cardmem install claude-code`, `cardmem uninstall claude-code`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

HOSTS = ["claude-code"]


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("host", type=click.Choice(HOSTS))
@click.argument("event", type=click.Choice(["session-start", "stop", "session-end"]))
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store (default: $CARDMEM_STORE, else $XDG_DATA_HOME/cardmem).")
def hook(host: str, event: str, store_path: Path | None) -> None:
    """A host hook: JSON on stdin, JSON on stdout; always exits 0."""
    from cardmem.hooks.claude_code import run

    sys.exit(run(event, str(store_path) if store_path else None))


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help="The settings file (default: ~/.claude/settings.json).")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="Bake this store into the hook commands (default: resolved at run time).")
@click.option("--mcp-config", type=click.Path(path_type=Path),
              help="Where Claude Code keeps user-scope MCP servers (default: ~/.claude.json).")
@click.option("--no-mcp", is_flag=True, help="Do not register the MCP server.")
def install(host: str, settings: Path | None, store_path: Path | None,
            mcp_config: Path | None, no_mcp: bool) -> None:
    """Register cardmem's hooks and MCP server with a host (idempotent; backs the original up)."""
    from cardmem.hooks.install import install as do_install

    r = do_install(settings, store_path)
    if not r["changed"]:
        click.echo(f"already installed in {r['path']}")
    else:
        click.echo(f"installed cardmem's hooks in {r['path']}"
                   + (f" (backup: {r['backup']})" if r["backup"] else ""))
    if not no_mcp:
        from cardmem.hooks.mcp_install import register

        m = register(mcp_config, store_path)
        click.echo(f"{'registered' if m['changed'] else 'already registered:'} the MCP "
                   f"server `cardmem` (user scope) in {m['path']}")


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help="The settings file (default: ~/.claude/settings.json).")
@click.option("--mcp-config", type=click.Path(path_type=Path),
              help="Where Claude Code keeps user-scope MCP servers (default: ~/.claude.json).")
def uninstall(host: str, settings: Path | None, mcp_config: Path | None) -> None:
    """Remove exactly the hooks and the MCP server `cardmem install` added."""
    from cardmem.hooks.install import uninstall as do_uninstall
    from cardmem.hooks.mcp_install import unregister

    r = do_uninstall(settings)
    click.echo(f"{'removed cardmem hooks from' if r['changed'] else 'no cardmem hooks in'} {r['path']}")
    m = unregister(mcp_config)
    click.echo(f"{'removed the MCP server `cardmem` from' if m['changed'] else 'no cardmem MCP server in'} {m['path']}")
