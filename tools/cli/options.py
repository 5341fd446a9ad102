"""What every command module shares: --store, --json, opening the store, printing JSON.

Its own module so that command modules (tools/cli/*.py, hosts' commands) and the group
that loads them lazily (group.py) never import each other.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cardmem.store.errors import CardmemError
from cardmem.tools.search_text import json_text

STORE_HELP = ("The store (default: $CARDMEM_STORE, else the store the current folder is in, "
              "else $XDG_DATA_HOME/cardmem).")


def store_value(ctx: click.Context, _param: click.Parameter, value: str | None) -> Path | None:
    """A command's --store, else the one given before the command (`cardmem --store P cmd`)."""
    if value is None:
        value = ctx.find_root().meta.get("cardmem.store")
    return None if value is None else given_path(value, "--store")


def given_path(value: str, what: str) -> Path:
    # Path("") is the current folder: a script's unset variable would write there.
    if not value.strip():
        raise CardmemError(what, "is empty; name the store's folder")
    return Path(value)


def store_option(f):
    return click.option("--store", "store_path", metavar="PATH", envvar=None,
                        callback=store_value, help=STORE_HELP)(f)


def since_option(help: str, default: str | None = None, dest: str = "since"):
    """--since WHEN (12h, 7d, 2w or an ISO date), checked as it is read: a value no reader
    of time takes is one clear error naming the option, exit 2."""
    def check(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            from cardmem.store.by_address import parse_since

            try:
                parse_since(value if value.strip() else "x")
            except ValueError:
                raise CardmemError("--since", "expected like 7d, 12h, 2w or an ISO date, got "
                                              f"{value[:60]!r}", exit_code=2) from None
        return value

    return click.option("--since", dest, metavar="WHEN", default=default,
                        show_default=default is not None, callback=check,
                        help=f"{help} since WHEN: like 12h, 7d, 2w or an ISO date.")


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(f)


class CardType(click.Choice):
    """A card type (click.Choice over CARD_TYPES), also by the words people use for one."""

    def __init__(self) -> None:
        from cardmem.store.cards.paths import CARD_TYPES

        super().__init__(CARD_TYPES)

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            from cardmem.store.cards.paths import type_of_word

            value = type_of_word(value)
        return super().convert(value, param, ctx)


def type_option(help_text: str = "Only cards of this type (rule = feedback)."):
    return click.option("--type", "card_type", type=CardType(), help=help_text)


def project_option(help_text: str = "Only cards of this project."):
    return click.option("--project", help=help_text)


def progress_option(f):
    return click.option("--progress/--no-progress", default=None,
                        help="Show progress on stderr (default: when stderr is a terminal "
                             "and no --json).")(f)


def open_store(store_path: Path | None):
    """The store for a command; its waits (another writer's lock) drawn as progress on a
    terminal, unless the command was given --json."""
    from cardmem.store.store import Store

    from .progress import for_command

    store = Store.open(store_path)
    store.progress = for_command()
    return store


def emit_json(data: Any) -> None:
    click.echo(json_text(data))


# Set ("1") where cardmem launches itself for an agent (hooks, the MCP server entry): an
# agent that shells out to `cardmem new` or `remember` gets its secrets redacted.
AGENT_ENV = "CARDMEM_AGENT"
