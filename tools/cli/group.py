"""The command line: every command is a thin shell over a store or tools function.

Commands of other areas live in their own modules and load only when called (LAZY), so
`cardmem search` never pays for the MCP SDK or the model client.
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from cardmem.store.errors import CardmemError
from cardmem.store.cards.paths import CARD_TYPES
from cardmem.store.wording import plural
from cardmem.tools.cli.terminal import complete_id, page
from cardmem.tools.search_text import json_text
from cardmem.tools.cli.options import (AGENT_ENV, STORE_HELP, emit_json, given_path, json_option,
                                       open_store, store_option)

# command name -> "module:attribute" of a click command, imported on first use.
LAZY: dict[str, str] = {
    "demo": "cardmem.tools.cli.demo:demo",
    "search": "cardmem.tools.cli.search:search",
    "index": "cardmem.tools.cli.search:index",
    "watch": "cardmem.tools.cli.watch:watch",
    "ask": "cardmem.tools.cli.ask:ask",
    "receipts": "cardmem.tools.cli.ask:receipts",
    "judge": "cardmem.tools.cli.ask:judge",
    "mcp": "cardmem.tools.mcp_server:mcp_command",
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
}


# Host adapters (hooks/) sit above tools/ and may not be imported from here: they offer
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


# How many adopted and left-out paths `init` names before it counts the rest.
SHOW_PATHS = 20


def _some(paths: list[str]) -> str:
    shown = ", ".join(paths[:SHOW_PATHS])
    return shown + (f" and {len(paths) - SHOW_PATHS} more" if len(paths) > SHOW_PATHS else "")


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.command()
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


@cli.command(name="map")
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


@cli.command()
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


@cli.command()
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
