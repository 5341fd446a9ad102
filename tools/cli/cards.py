"""The card commands: init, where, new, remember, show, edit, map, log, revert.

Each is a thin shell over the store; tools/cli/group.py adds them to the `cardmem` group.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cardmem.store.cards.paths import CARD_TYPES
from cardmem.store.wording import plural
from cardmem.tools.cli.terminal import complete_id, page
from cardmem.tools.cli.options import (AGENT_ENV, emit_json, given_path, json_option,
                                       open_store, store_option)


def read_body(body: str | None) -> str:
    """--body TEXT, or `-` for standard input."""
    if body == "-":
        return sys.stdin.read()
    return body or ""


def screen_secrets(texts: list[str | None], redact: bool) -> list[str | None]:
    """What a person writes is stored as written, with a warning on stderr naming the
    kinds of secret it holds (never the secret); with --redact, or for an agent, the
    secrets are replaced first."""
    from collections import Counter

    from cardmem.tools.redact import redact_with_counts

    redact = redact or os.environ.get(AGENT_ENV) == "1"
    kinds: Counter[str] = Counter()
    out: list[str | None] = []
    for text in texts:
        if text:
            cleaned, counts = redact_with_counts(text)
            kinds.update(counts)
            text = cleaned if redact else text
        out.append(text)
    if kinds:
        what = ", ".join(sorted(kinds))
        n = sum(kinds.values())
        click.echo(f"cardmem: redacted {n} secret(s): {what}" if redact else
                   f"cardmem: warning: stored {n} secret(s) as written: {what} "
                   "(--redact replaces them)", err=True)
    return out


redact_option = click.option("--redact", is_flag=True,
                             help="Replace secrets (API keys, tokens, passwords) by markers.")


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
    from cardmem.store.cards.paths import default_store, id_of_path
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
    from cardmem.store.cards.paths import default_store

    where_to = str((store_path or default_store()).expanduser().absolute())
    if as_json:
        emit_json({"store": where_to})
    else:
        click.echo(where_to)


TYPES = list(CARD_TYPES)


@click.command()
@click.argument("card_id", metavar="ID")
@click.option("--title")
@click.option("--type", "card_type", type=click.Choice(TYPES))
@click.option("--project")
@click.option("--description")
@click.option("--body", help="The card's body, or - to read it from standard input.")
@redact_option
@json_option
@store_option
def new(card_id: str, title: str | None, card_type: str | None, project: str | None,
        description: str | None, body: str | None, redact: bool, as_json: bool,
        store_path: Path | None) -> None:
    """Create a card; refuse if it exists.

    \b
    Example:
        cardmem new reference/deploy --title "Deploy" --body "make deploy" --redact
    """
    store = open_store(store_path)
    title, description, text = screen_secrets([title, description, read_body(body)], redact)
    cid = store.new(card_id, title=title, card_type=card_type, project=project,
                    description=description, body=text or "")
    if as_json:
        emit_json({"id": cid, "created": True})
    else:
        click.echo(f"created {cid}")


class _TitleOnly(click.Command):
    """`cardmem remember "Title" "text"` is the first thing people type: say where the
    text goes instead of click's bare "unexpected extra argument"."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if "unexpected extra argument" in exc.message:
                exc.message += (": the text goes in --body TEXT (or --body - to read standard"
                                " input), and a title of several words in quotes")
            raise


@click.command(cls=_TitleOnly)
@click.argument("title")
@click.option("--type", "card_type", type=click.Choice(TYPES),
              help="The card's type: project with --project, else reference by default.")
@click.option("--project", help="The project it belongs to (its folder under projects/).")
@click.option("--body", help="The text to remember, or - to read it from standard input.")
@redact_option
@json_option
@store_option
def remember(title: str, card_type: str, project: str | None, body: str | None, redact: bool,
             as_json: bool, store_path: Path | None) -> None:
    """Create the card with this title, or append a dated section to it.

    \b
    Example:
        echo "staging DB is db2" | cardmem remember "Staging" --body - --redact
    """
    store = open_store(store_path)
    title, text = screen_secrets([title, read_body(body)], redact)
    cid, created = store.remember(title or "", text or "", card_type=card_type, project=project)
    if as_json:
        emit_json({"id": cid, "created": created})
    else:
        click.echo(f"{'created' if created else 'appended to'} {cid}")


@click.command()
@click.argument("card_id", metavar="ID", shell_complete=complete_id)
@json_option
@store_option
def show(card_id: str, as_json: bool, store_path: Path | None) -> None:
    """The card, whole.

    \b
    Example:
        cardmem show feedback/run-tests-with-x
        cardmem show reference/deploy --json
    """
    from cardmem.store.cards import paths

    store = open_store(store_path)
    text, problem = store.read_raw(card_id)
    if problem is not None:  # a broken card is shown as it is, the reason on stderr
        click.echo(f"cardmem: {store.path(card_id)}: {problem}", err=True)
        if as_json:
            emit_json({"id": paths.normalize_id(card_id), "path": str(store.path(card_id)),
                       "text": text, "error": problem})
        else:
            click.echo(text, nl=not text.endswith("\n"))
        return
    card = store.read(card_id)
    store.note_reads([card.id])
    if as_json:
        emit_json({**card.brief(), "path": str(card.path), "meta": card.meta,
                   "body": card.body, "text": card.text})
    else:
        click.echo(card.text, nl=not card.text.endswith("\n"))


@click.command()
@click.argument("card_id", metavar="ID", shell_complete=complete_id)
@json_option
@store_option
def edit(card_id: str, as_json: bool, store_path: Path | None) -> None:
    """Open a card in $EDITOR and commit the change on exit.

    \b
    Example:
        EDITOR=nano cardmem edit reference/deploy
    """
    from cardmem.tools.editing import edit_card

    cid, committed = edit_card(open_store(store_path), card_id)
    if as_json:
        emit_json({"id": cid, "committed": committed})
    else:
        click.echo(f"{'committed' if committed else 'unchanged'} {cid}")


@click.command(name="map")
@json_option
@store_option
def map_(as_json: bool, store_path: Path | None) -> None:
    """Every card: id, type, title, description (paged on a terminal, as git does).

    \b
    Example:
        cardmem map
        cardmem map --json
    """
    store = open_store(store_path)
    cards, problems = store.map()
    if as_json:
        emit_json(cards + [{"id": p.id, "type": None, "title": None, "description": None,
                            "path": p.path, "error": p.reason} for p in problems])
    elif not cards and not problems:
        click.echo("no cards yet: `cardmem remember TITLE --body TEXT` makes one")
    else:
        page([f"{c['id']}  [{c['type'] or '?'}]  {c['title']}"
              + (f" — {c['description']}" if c["description"] else "") for c in cards])
    for p in problems:
        click.echo(f"cardmem: {p.path}: skipped: {p.reason}", err=True)


@click.command()
@click.argument("card_id", metavar="[ID]", required=False, shell_complete=complete_id)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many commits.")
@json_option
@store_option
def log(card_id: str | None, limit: int | None, as_json: bool, store_path: Path | None) -> None:
    """History of the store, or of one card (ID); without ID, of the whole store.

    \b
    Example:
        cardmem log --limit 5
        cardmem log feedback/run-tests-with-x --json
    """
    store = open_store(store_path)
    commits = store.log(card_id, limit=limit)
    if as_json:
        emit_json([c.as_dict() for c in commits])
        return
    for c in commits:
        click.echo(f"{c.commit[:10]}  {c.date[:19]}  {c.author}")
        click.echo(f"    {c.message.splitlines()[0] if c.message else ''}")


@click.command()
@click.argument("commit")
@json_option
@store_option
def revert(commit: str, as_json: bool, store_path: Path | None) -> None:
    """Undo one commit (with a new commit).

    \b
    Example:
        cardmem log --limit 3
        cardmem revert 3f2a9c1
    """
    sha = open_store(store_path).revert(commit)
    if as_json:
        emit_json({"reverted": commit, "commit": sha})
    else:
        click.echo(f"reverted {commit} in {sha[:10]}")
