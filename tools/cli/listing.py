"""`cardmem map`, `cardmem list`, `cardmem recent`: what the store holds, and what changed.

Thin shells over the store's address reads (store/by_address.py): no ranking. A card
that does not parse is named on stderr with its reason by map and list, never skipped in
silence.
"""
from __future__ import annotations

from pathlib import Path

import click

from cardmem.tools.cli.options import (emit_json, json_option, open_store, project_option,
                                       store_option, type_option)
from cardmem.tools.cli.terminal import page
from cardmem.store.cards.paths import project_key
from cardmem.store.errors import CardmemError


def _cards(store, card_type: str | None, project: str | None):
    """The cards of a type and project (either may be None), in id order, and the files
    that did not parse (shown whatever the filter: their type is not known)."""
    cards, problems = store.scan()
    key = project_key(project)
    picked = [c for c in cards if (card_type is None or c.type == card_type)
              and (key is None or c.project == key)]
    return sorted(picked, key=lambda c: c.id), problems


def _say_problems(problems) -> None:
    for p in problems:
        click.echo(f"cardmem: {p.path}: skipped: {p.reason}", err=True)


def _nothing(card_type: str | None, project: str | None) -> str:
    if card_type or project:
        what = " and ".join(x for x in (card_type and f"type {card_type}",
                                        project and f"project {project}") if x)
        return f"no cards of {what}"
    return "no cards yet: `cardmem remember TITLE --body TEXT` makes one"


@click.command(name="map")
@type_option()
@project_option()
@json_option
@store_option
def map_(card_type: str | None, project: str | None, as_json: bool,
         store_path: Path | None) -> None:
    """Every card: id, type, title, description (paged on a terminal, as git does).

    \b
    Example:
        cardmem map
        cardmem map --type rule
        cardmem map --project acme-api --json
    """
    cards, problems = _cards(open_store(store_path), card_type, project)
    if as_json:
        emit_json([c.brief() for c in cards]
                  + [{"id": p.id, "type": None, "title": None, "description": None,
                      "path": p.path, "error": p.reason} for p in problems])
    elif not cards and not problems:
        click.echo(_nothing(card_type, project))
    else:
        page([f"{c.id}  [{c.type or '?'}]  {c.title}"
              + (f" — {c.description}" if c.description else "") for c in cards])
    _say_problems(problems)


@click.command(name="list")
@type_option()
@project_option()
@json_option
@store_option
def list_(card_type: str | None, project: str | None, as_json: bool,
          store_path: Path | None) -> None:
    """The ids of the cards, one a line (for scripts and `xargs`).

    \b
    Example:
        cardmem list --type feedback
        cardmem list --project acme-api --json
    """
    cards, problems = _cards(open_store(store_path), card_type, project)
    if as_json:
        emit_json({"ids": [c.id for c in cards], "unreadable": [
            {"id": p.id, "path": p.path, "error": p.reason} for p in problems]})
    else:
        for c in cards:
            click.echo(c.id)
    _say_problems(problems)


@click.command()
@click.option("--since", metavar="WHEN", default="7d", show_default=True,
              help="Changed since WHEN: like 12h, 7d, 2w or an ISO date.")
@type_option()
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="At most this many cards.")
@json_option
@store_option
def recent(since: str, card_type: str | None, limit: int, as_json: bool,
           store_path: Path | None) -> None:
    """Cards changed lately, newest first, from git's history (deleted ones too).

    \b
    Example:
        cardmem recent
        cardmem recent --since 2w --type rule --json
    """
    from cardmem.store.by_address import list_recent, parse_since

    try:
        parse_since(since) if since.strip() else parse_since("x")
    except ValueError:
        raise CardmemError("--since", f"expected like 12h, 7d, 2w or an ISO date, got "
                                      f"{since[:60]!r}", exit_code=2) from None
    found = list_recent(open_store(store_path), card_type, since, limit)
    if as_json:
        emit_json(found)
        return
    if not found:
        click.echo(f"nothing changed since {since}")
    for e in found:
        what = "(deleted)" if e["deleted"] else f"[{e['type'] or '?'}]  {e['title']}"
        click.echo(f"{e['date'][:10]}  {e['id']}  {what}")
