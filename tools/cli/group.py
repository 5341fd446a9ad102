"""The command line: every command is a thin shell over a store or tools function.

The group itself: the lazy command table (commands of other areas live in their own
modules and load only when called, so `cardmem search` never pays for the MCP SDK or the
model client), "did you mean", and main's one-line errors. The card commands (new, show,
...) are in tools/cli/cards.py, init and where in tools/cli/init.py.
"""
from __future__ import annotations

import importlib
import sys

import click

from cardmem.store.errors import CardmemError
from cardmem.tools.cli.cards import edit, log, new, remember, revert, show
from cardmem.tools.cli.init import init, where
from cardmem.tools.cli.options import STORE_HELP

# command name -> "module:attribute" of a click command, imported on first use.
LAZY: dict[str, str] = {
    "demo": "cardmem.tools.cli.demo:demo",
    "search": "cardmem.tools.cli.search:search",
    "index": "cardmem.tools.cli.search:index",
    "watch": "cardmem.tools.cli.watch:watch",
    "ask": "cardmem.tools.cli.ask:ask",
    "receipts": "cardmem.tools.cli.ask:receipts",
    "judge": "cardmem.tools.cli.ask:judge",
    "mcp": "cardmem.tools.agents.mcp_server:mcp_command",
    "context": "cardmem.tools.cli.context:context",
    "doctor": "cardmem.tools.cli.doctor:doctor",
    "update": "cardmem.tools.cli.sync:update",
    "rollback": "cardmem.tools.cli.sync:rollback",
    "sync": "cardmem.tools.cli.sync:sync",
    "base": "cardmem.tools.cli.sync:base",
    "review": "cardmem.tools.cli.review:review",
    "maintain": "cardmem.tools.cli.maintain:maintain",
    "import": "cardmem.tools.cli.imports:import_",
    "slack": "cardmem.tools.cli.slack:slack",
    "map": "cardmem.tools.cli.listing:map_",
    "list": "cardmem.tools.cli.listing:list_",
    "recent": "cardmem.tools.cli.listing:recent",
    "rm": "cardmem.tools.cli.moves:rm",
    "mv": "cardmem.tools.cli.moves:mv",
    "export": "cardmem.tools.cli.export:export",
}


# Host adapters (hosts/) sit above tools/ and may not be imported from here: they offer
# their commands as entry points of this group instead (see pyproject.toml).
PLUGIN_GROUP = "cardmem.commands"


def _plugins() -> dict[str, object]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=PLUGIN_GROUP)}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY, *_plugins()})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY:
            module, attr = LAZY[name].split(":")
            return getattr(importlib.import_module(module), attr)
        command = super().get_command(ctx, name)
        if command is None and (ep := _plugins().get(name)) is not None:
            command = ep.load()  # type: ignore[attr-defined]
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """click's, plus a "did you mean" for a mistyped command (never a hidden one)."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            import difflib

            name = args[0] if args else ""
            close = [c for c in difflib.get_close_matches(name, self.list_commands(ctx), n=3)
                     if not getattr(self.get_command(ctx, c), "hidden", True)][:2]
            if not close or name.startswith("-"):
                raise
            exc.message += " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
            raise


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cardmem")
@click.option("--store", "store_path", metavar="PATH", help=STORE_HELP)
@click.pass_context
def cli(ctx: click.Context, store_path: str | None) -> None:
    """cardmem: memory for AI agents, kept as Markdown cards in git.

    \b
    Example:
        cardmem init ~/notes
        cardmem --store ~/notes remember "Deploy steps" --body "make deploy"
        cardmem search deploy
    """
    ctx.meta["cardmem.store"] = store_path


for _command in (init, where, new, remember, show, edit, log, revert):
    cli.add_command(_command)


def main() -> None:
    try:
        # Without standalone mode click returns, rather than raises, a command's exit code.
        rc = cli.main(standalone_mode=False, prog_name="cardmem")
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except click.exceptions.Abort:
        click.echo("cardmem: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except CardmemError as exc:
        click.echo(f"cardmem: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:  # a file system's refusal the store did not foresee: still one line
        click.echo(f"cardmem: {exc.filename or 'error'}: {exc.strerror or exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
