"""`cardmem rm ID` and `cardmem mv OLD NEW`: thin shells over store/moves.py, one
commit each (`cardmem revert` undoes either)."""
from __future__ import annotations

import os
from pathlib import Path

import click

from cardmem.store.wording import plural
from cardmem.tools.cli.options import AGENT_ENV, emit_json, json_option, open_store, store_option
from cardmem.tools.cli.terminal import complete_id


@click.command()
@click.argument("card_id", metavar="ID", shell_complete=complete_id)
@json_option
@store_option
def rm(card_id: str, as_json: bool, store_path: Path | None) -> None:
    """Delete a card (one commit; `cardmem revert` brings it back).

    \b
    Example:
        cardmem rm reference/old-deploy
        cardmem rm reference/old-deploy --json
    """
    from cardmem.store.moves import remove

    done = remove(open_store(store_path), card_id, agent=os.environ.get(AGENT_ENV) == "1")
    if as_json:
        emit_json(done.as_dict())
        return
    click.echo(f"removed {done.id}" + (f" in {done.commit[:10]}" if done.commit else ""))
    if done.linked_from:
        click.echo(f"cardmem: warning: {plural(len(done.linked_from), 'card')} still link to "
                   f"it: {', '.join(done.linked_from[:10])}", err=True)


@click.command()
@click.argument("old", metavar="OLD", shell_complete=complete_id)
@click.argument("new", metavar="NEW")
@json_option
@store_option
def mv(old: str, new: str, as_json: bool, store_path: Path | None) -> None:
    """Rename a card: its file moves to NEW and every [[link]] to OLD is rewritten to
    NEW, in one commit.

    \b
    Example:
        cardmem mv reference/deploy reference/deploy-steps
        cardmem mv notes/Todo reference/todo --json
    """
    from cardmem.store.moves import rename
    from cardmem.store.cards.paths import check_new_id

    check_new_id(new)
    done = rename(open_store(store_path), old, new, agent=os.environ.get(AGENT_ENV) == "1")
    if as_json:
        emit_json(done.as_dict())
        return
    others = [c for c in done.relinked if c != done.new]
    click.echo(f"moved {done.old} -> {done.new}"
               + (f"; links rewritten in {plural(len(others), 'card')}" if others else ""))
