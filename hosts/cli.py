"""The hosts' commands for the cardmem CLI (entry points of the `cardmem.commands` group):
`cardmem hook EVENT --host HOST`, `cardmem install HOST`, `cardmem uninstall HOST`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from cardmem.store.wording import plural
from cardmem.tools.cli.options import store_value, open_store
from cardmem.store.errors import CardmemError
# Imports inside the commands: `cardmem hook` (run by hand; installed hooks start hosts/'
# modules with python, without click) loads the hook, not install's machinery.

HOSTS = ["claude-code", "codex", "gemini", "cursor", "copilot"]
HOOK_HOSTS = ["claude", "claude-code", "codex", "gemini", "cursor", "copilot"]
MCP_HELP = ("The file where the host keeps its MCP servers (default: ~/.claude.json, "
            "~/.codex/config.toml, the Gemini settings file, ~/.cursor/mcp.json, "
            "~/.copilot/mcp-config.json).")


# install and uninstall name the same file
SETTINGS_HELP = ("The host's settings file (default: the user's own: ~/.claude/settings.json,"
                 " ~/.codex/hooks.json, ~/.gemini/settings.json, ~/.cursor/hooks.json,"
                 " ~/.copilot/hooks/cardmem.json); a project's for that project only.")

@click.command(hidden=True, context_settings={"ignore_unknown_options": False})
@click.argument("words", nargs=-1, required=True, metavar="EVENT")
@click.option("--host", type=click.Choice(HOOK_HOSTS), default=None,
              help="The host whose payload this is and who reads the answer (default: claude).")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store (default: $CARDMEM_STORE, else $XDG_DATA_HOME/cardmem).")
@click.option("--rules-file", type=click.Path(path_type=Path),
              help="session-start: keep every rule whole in this file the host loads.")
def hook(words: tuple[str, ...], host: str | None, store_path: Path | None,
         rules_file: Path | None) -> None:
    """A host hook: the host's JSON on stdin, its answer on stdout; always exits 0.

    EVENT is session-start, prompt, pre-tool-use, stop or session-end, or the host's own
    name for it (SessionStart, BeforeAgent, preToolUse, ...). `hook claude-code EVENT`
    (0.1.0) still works.

    \b
    Example:
        echo '{"tool_name": "run_shell_command", "tool_input": {"command": "git push -f"}}' \\
            | cardmem hook pre-tool-use --host gemini
    """
    if len(words) == 2 and words[0] in HOOK_HOSTS and host in (None, words[0]):
        host, words = words[0], words[1:]
    if len(words) != 1:
        raise click.UsageError(f"expected one EVENT, got {' '.join(words)!r}")
    from cardmem.hosts.hook import run

    sys.exit(run(words[0], str(store_path) if store_path else None,
                 rules_file=str(rules_file) if rules_file else None, host=host or "claude"))


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help=SETTINGS_HELP)
@click.option("--store", "store_path", metavar="PATH", callback=store_value,
              help="The store the hooks use (default: $CARDMEM_STORE, else the default store);"
                   " written into the hook commands.")
@click.option("--init", "init_store", is_flag=True, help="Make the store if it does not exist.")
@click.option("--mcp-config", type=click.Path(path_type=Path), help=MCP_HELP)
@click.option("--no-mcp", is_flag=True, help="Do not register the MCP server.")
@click.option("--export", "export_to", is_flag=False, flag_value="", default=None,
              metavar="[DIR]",
              help="Also write the rules into the host's own rules file in DIR (AGENTS.md, "
                   "GEMINI.md, .cursor/rules, .github/...), kept current as rules change "
                   "(default: the project of --settings, else ~/.codex/AGENTS.md or "
                   "~/.gemini/GEMINI.md).")
def install(host: str, settings: Path | None, store_path: Path | None, init_store: bool,
            mcp_config: Path | None, no_mcp: bool, export_to: str | None) -> None:
    """Register cardmem's hooks and MCP server with a host (idempotent; backs the original up).

    The store is resolved now and written into what is installed, so a session started
    from a desktop or an IDE (without your shell's $CARDMEM_STORE) uses the same store.
    For Claude Code every rule is written whole to `rules/cardmem.md` beside the settings
    file, which Claude Code loads at start-up; the session-start hook keeps it current.

    \b
    Example:
        cardmem install claude-code
        cardmem install codex --store ~/team-memory --init
        cardmem install gemini --settings .gemini/settings.json
        cardmem install copilot --export ~/src/acme
    """
    from cardmem.hosts.claude_code.install import install as do_install, rules_path
    from cardmem.store.cards import paths
    from cardmem.store.git.head_file import require_store

    if export_to is not None and host == "claude-code":
        raise CardmemError("--export", "Claude Code loads every rule whole from its rules file "
                           "already; `cardmem export agents-md DIR` writes AGENTS.md for the "
                           "other hosts", exit_code=2)
    target = _export_target(host, settings, export_to) if export_to is not None else None
    root = Path(store_path).expanduser().absolute() if store_path else \
        paths.default_store().absolute()
    try:
        require_store(root)
    except CardmemError as exc:
        if not init_store:
            raise CardmemError(f"store {root}", f"{exc.why.split(';')[0]}; run `cardmem init "
                               f"{root}` first, or install with --init") from None
        from cardmem.store.store import init

        init(root)
        click.echo(f"made the store {root}")
    if host != "claude-code":
        from cardmem.hosts.mcp_install import register as add_server

        if not no_mcp:  # a file the server cannot go into stops the install before any write
            add_server(host, mcp_config, root, settings, dry_run=True)
        _install_other(host, settings, root)
        if not no_mcp:
            m = add_server(host, mcp_config, root, settings)
            click.echo(f"{'registered' if m['changed'] else 'already registered:'} the MCP "
                       f"server `cardmem` in {m['path']}"
                       + (f" (backup: {m['backup']})" if m.get("backup") else ""))
        if target is not None:
            _export_rules(host, *target, root)
        return
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
        from cardmem.hosts.claude_code.mcp_install import register

        m = register(mcp_config, root)
        click.echo(f"{'registered' if m['changed'] else 'already registered:'} the MCP "
                   f"server `cardmem` (user scope) in {m['path']}"
                   + (f" (backup: {m['backup']})" if m.get("backup") else ""))


@click.command()
@click.argument("host", type=click.Choice(HOSTS))
@click.option("--settings", type=click.Path(path_type=Path),
              help=SETTINGS_HELP)
@click.option("--mcp-config", type=click.Path(path_type=Path), help=MCP_HELP)
def uninstall(host: str, settings: Path | None, mcp_config: Path | None) -> None:
    """Remove exactly the hooks and the MCP server `cardmem install` added.

    \b
    Example:
        cardmem uninstall claude-code
    """
    if host != "claude-code":
        from cardmem.hosts.install import installed_store, uninstall as other
        from cardmem.hosts.mcp_install import unregister as remove_server

        root = installed_store(host, settings)  # read before the hooks naming it go
        # The server first: Gemini's sits in the hooks' file, and each step gives back the
        # bytes it found, so undoing them in reverse order gives back the file's first bytes.
        m = remove_server(host, mcp_config, settings)
        r = other(host, settings)
        click.echo(f"{'removed cardmem hooks from' if r['changed'] else 'no cardmem hooks in'} {r['path']}")
        click.echo(f"{'removed the MCP server `cardmem` from' if m['changed'] else 'no cardmem MCP server in'} {m['path']}")
        if root is not None:  # what `install HOST --export` wrote, kept current till now
            from cardmem.store.rules.exports import withdraw

            for path, what in withdraw(root, f"install {host}"):
                click.echo(f"took the rules out of {path}; no longer kept current"
                           if what == "removed" else f"{path}: {what}; no longer kept current")
        return
    from cardmem.hosts.claude_code.install import uninstall as do_uninstall
    from cardmem.hosts.claude_code.mcp_install import unregister

    r = do_uninstall(settings)
    click.echo(f"{'removed cardmem hooks from' if r['changed'] else 'no cardmem hooks in'} {r['path']}")
    m = unregister(mcp_config)
    click.echo(f"{'removed the MCP server `cardmem` from' if m['changed'] else 'no cardmem MCP server in'} {m['path']}")


def _export_target(host: str, settings: Path | None, export_to: str) -> tuple[Path, bool]:
    """(the folder `--export [DIR]` writes in, whether it is the host's home-wide one),
    checked before install writes anything."""
    from cardmem.hosts.install import export_folder

    if not export_to:
        return export_folder(host, settings)
    folder = Path(export_to).expanduser()
    if not folder.is_dir():
        raise CardmemError(f"--export {export_to}", "is not a folder (the project's folder, "
                           "where the host looks for its rules files)")
    return folder, False


def _export_rules(host: str, folder: Path, home_wide: bool, root: Path) -> None:
    """`install HOST --export [DIR]`: the host's own rules file, as `cardmem export` writes
    it, remembered so that every rule change writes it again."""
    from cardmem.hosts.install import spec
    from cardmem.store.context.session import project_for
    from cardmem.store.rules.exports import HOSTS as FILES, export_and_keep

    kind = spec(host)["export"][0]
    folder.mkdir(parents=True, exist_ok=True)  # the host's own folder may not exist yet
    store = open_store(root)
    project = None if home_wide else project_for(store, folder)  # home-wide: no project's
    result = export_and_keep(store, kind, folder, project, by=f"install {host}")
    left = f", {len(result.left_out)} left out to fit (named there)" if result.left_out else ""
    click.echo(f"rules: {plural(result.total, 'rule')} in {folder / FILES[kind].main}{left}; "
               "kept current as rules change")


def _install_other(host: str, settings: Path | None, root: Path) -> None:
    """`install codex|gemini|cursor|copilot`: the hooks, and what the person should know."""
    from cardmem.hosts.adapters import load
    from cardmem.hosts.install import install as other

    r = other(host, settings, root)
    label = load(host).LABEL
    if not r["changed"]:
        click.echo(f"already installed in {r['path']} (store {root})")
    else:
        click.echo(f"installed cardmem's hooks for {label} in {r['path']} (store {root})"
                   + (f" (backup: {r['backup']})" if r["backup"] else ""))
    if host == "codex":
        click.echo("Codex runs a project's hooks only once you trust the project; "
                   "`codex` asks at its first start there")
    if host == "copilot":
        click.echo("Copilot CLI reads no hook's memory: `cardmem install copilot --export DIR` "
                   "puts the rules in a project's instruction files. It also keeps "
                   "ANTHROPIC_API_KEY from hooks, so its sessions are learned by the next "
                   "learner with a model (a Claude Code login on PATH, or another host's)")
