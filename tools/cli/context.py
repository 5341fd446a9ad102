"""`cardmem context`: the rung-1 pile a coding session starts with."""
from __future__ import annotations

import os
from pathlib import Path

import click

from cardmem.tools.cli.options import emit_json, json_option, open_store, store_option
from cardmem.store.context import session_context


@click.command()
@click.option("--project", help="The project whose cards to include (default: the git "
              "top-level folder of the current directory, mapped by [projects]).")
@click.option("--budget", type=click.IntRange(min=0), help="Character budget (default: "
              "[context] budget_chars).")
@json_option
@store_option
def context(project: str | None, budget: int | None, as_json: bool,
            store_path: Path | None) -> None:
    """What a session starts with: rules, user, project, map, recent changes.

    \b
    Example:
        cardmem context --project acme-api
        cardmem context --budget 4000 --json
    """
    store = open_store(store_path)
    pile = session_context(store, project=project, cwd=os.getcwd(), budget=budget)
    store.note_reads(pile.whole())
    if as_json:
        emit_json(pile.as_dict())
    else:
        click.echo(pile.text, nl=False)
        if not pile.text and pile.left_out:  # nothing fits: say what was cut, not nothing
            cut = ", ".join(e["reason"].removesuffix(" (budget)") for e in pile.left_out)
            click.echo(f"cardmem: context: a budget of {pile.budget} characters holds none of "
                       f"it ({cut}); raise --budget", err=True)
    for n in pile.notices:
        click.echo(f"cardmem: {n}", err=True)
