"""The store itself: `cardmem init` makes one (all or nothing: store/git/make.py), `cardmem
where` says which one the commands use. tools/cli/group.py adds them to the `cardmem` group.
"""
from __future__ import annotations

from pathlib import Path

import click

from cardmem.store.cards.paths import default_store, id_of_path
from cardmem.store.wording import plural
from cardmem.tools.cli.options import emit_json, given_path, json_option, store_option


# How many adopted and left-out paths `init` names before it counts the rest.
SHOW_PATHS = 20


def _some(paths: list[str]) -> str:
    shown = ", ".join(paths[:SHOW_PATHS])
    return shown + (f" and {len(paths) - SHOW_PATHS} more" if len(paths) > SHOW_PATHS else "")


@click.command()
@click.argument("path", required=False)
@json_option
@store_option
def init(path: str | None, as_json: bool, store_path: Path | None) -> None:
    """Make a store (idempotent on an existing one).

    A folder that is not yet a git repository is adopted: its notes (*.md) are
    committed, and a .gitignore keeps everything else (.env, node_modules/,
    photos) out of git.

    \b
    Example:
        cardmem init ~/notes
        cardmem --store ~/notes init --json
    """
    from cardmem.store.store import init_store

    root = given_path(path, "init PATH") if path is not None else store_path
    done = init_store(root or default_store())
    if as_json:
        emit_json({"store": str(done.store.root), "created": done.created,
                   "adopted": done.adopted, "left_out": done.left_out})
        return
    click.echo(f"{'initialized' if done.created else 'already a store:'} {done.store.root}")
    notes = [p for p in done.adopted if id_of_path(p)]
    if done.adopted:
        click.echo(f"adopted {plural(len(notes), 'note')}: {_some(notes) or '(none)'}")
    if done.left_out:
        click.echo(f"left out of git by .gitignore: {_some(done.left_out)}")


@click.command()
@json_option
@store_option
def where(as_json: bool, store_path: Path | None) -> None:
    """Print the store's path.

    \b
    Example:
        cardmem where
        cd "$(cardmem where)" && git log
    """
    where_to = (store_path or default_store()).expanduser().absolute()
    exists = (where_to / "cardmem.toml").is_file()
    if as_json:
        emit_json({"store": str(where_to), "exists": exists})
    else:
        click.echo(str(where_to))
    if not exists:  # the path is still the answer; say what is (not yet) there
        there = "is a folder but no store" if where_to.exists() else "does not exist yet"
        click.echo(f"cardmem: note: {where_to} {there}; `cardmem init {where_to}` makes it "
                   "a store", err=True)
