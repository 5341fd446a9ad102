"""The card commands: new, remember, show, edit, log, revert (init and where are in
init.py, map, list and recent in listing.py, rm and mv in moves.py).

Each is a thin shell over the store; tools/cli/group.py adds them to the `cardmem` group.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cardmem.store.wording import plural
from cardmem.tools.cli.terminal import complete_id
from cardmem.tools.cli.options import (AGENT_ENV, emit_json, json_option, open_store,
                                       store_option, type_option)
from cardmem.store.cards.paths import project_key, check_new_id
from cardmem.store.errors import BadId, CardmemError, NotFound
from cardmem.store.cards import paths
# Imports inside the commands: every `cardmem` command loads this module (tools/cli/group.py),
# so what one card command needs alone it imports itself (an agent may `cardmem new` per write).


def read_body(body: str | None, piped: bool = False) -> str:
    """--body TEXT, or `-` for standard input; with piped, also standard input when no
    --body is given and it is not a terminal (`echo text | cardmem remember Title`)."""
    if body == "-" or (piped and body is None and not sys.stdin.isatty()):
        return sys.stdin.read()
    return body or ""


def screen_secrets(texts: list[str | None], keep: bool) -> list[str | None]:
    """Texts about to be written, their secrets redacted unless --keep-secrets (an agent's
    never kept); said on stderr by kind (never the secret) before anything is committed."""
    from cardmem.tools.secrets.redact import screen

    keep = keep and os.environ.get(AGENT_ENV) != "1"
    out, kinds = screen(texts, keep)
    say_secrets(kinds, keep)
    return out


def say_secrets(kinds: dict[str, int], kept: bool) -> None:
    """The secrets a write found, by kind (never the secret), on stderr: one line for every
    command that writes outside text (new, remember, import)."""
    if kinds:
        what = ", ".join(sorted(kinds))
        n = sum(kinds.values())
        click.echo(f"cardmem: warning: keeping {plural(n, 'secret')} as written, in git history "
                   f"too: {what}" if kept else
                   f"cardmem: redacted {plural(n, 'secret')} before writing: {what} "
                   "(--keep-secrets keeps them)", err=True)


def secrets_options(f):
    f = click.option("--keep-secrets", is_flag=True,
                     help="Write secrets (API keys, tokens, passwords) as given; by default "
                          "they are replaced by [REDACTED:kind] markers.")(f)
    # The old opt-in, now the default: still accepted, so scripts keep working.
    return click.option("--redact", is_flag=True, hidden=True)(f)


def _listed(value: str | None) -> list[str]:
    """--tags "a, b" as ["a", "b"]."""
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def names_options(f):
    f = click.option("--aliases", metavar="A,B", help="Other names the card answers to, "
                     "comma-separated (people: handles, e-mails).")(f)
    return click.option("--tags", metavar="A,B", help="Tags, comma-separated.")(f)


def _meta(tags: str | None, aliases: str | None) -> dict[str, list[str]]:
    return {k: v for k, v in (("aliases", _listed(aliases)), ("tags", _listed(tags))) if v}


def _project_id(card_id: str, project: str) -> str:
    """The one placement rule for --project (remember's): the card lives in
    projects/<slug>/. A bare name goes there; an id elsewhere is refused with that one."""
    folder = f"projects/{project_key(project)}/"
    if "/" not in card_id:
        return folder + card_id
    if not card_id.startswith(folder):
        raise BadId(f"id {card_id!r}", f"a card of project {project_key(project)} lives in "
                    f"{folder}; did you mean {folder}{card_id.rsplit('/', 1)[-1]}?")
    return card_id


@click.command()
@click.argument("card_id", metavar="ID")
@click.option("--title")
@type_option("The card's type (rule = feedback; default: its folder's).")
@click.option("--project", help="The project it belongs to: the card goes to "
              "projects/<project>/ (ID may be the name alone).")
@click.option("--description")
@names_options
@click.option("--body", help="The card's body, or - to read it from standard input.")
@secrets_options
@json_option
@store_option
def new(card_id: str, title: str | None, card_type: str | None, project: str | None,
        description: str | None, tags: str | None, aliases: str | None, body: str | None,
        keep_secrets: bool, redact: bool, as_json: bool, store_path: Path | None) -> None:
    """Create a card; refuse if it exists. Ids are lowercase, without spaces.

    \b
    Example:
        cardmem new reference/deploy --title "Deploy" --body "make deploy"
        cardmem new deploy --project acme-api --tags ci,release --body "make deploy"
    """
    cid = check_new_id(_project_id(card_id, project) if project else card_id)
    store = open_store(store_path)
    title, description, text, tags, aliases = screen_secrets(
        [title, description, read_body(body), tags, aliases], keep_secrets)
    # An agent shelling out (CARDMEM_AGENT=1) makes no live rule or user card: refused.
    cid = store.new(cid, title=title, card_type=card_type, project=project,
                    description=description, body=text or "", meta=_meta(tags, aliases),
                    agent=os.environ.get(AGENT_ENV) == "1")
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
@type_option("The card's type (rule = feedback): project with --project, else reference "
             "by default.")
@click.option("--project", help="The project it belongs to (its folder under projects/).")
@names_options
@click.option("--body", help="The text to remember, or - to read it from standard input "
              "(read too when text is piped in).")
@secrets_options
@json_option
@store_option
def remember(title: str, card_type: str, project: str | None, tags: str | None,
             aliases: str | None, body: str | None, keep_secrets: bool, redact: bool,
             as_json: bool, store_path: Path | None) -> None:
    """Create the card with this title, or append a dated section to it.

    \b
    Example:
        cardmem remember "Deploy steps" --body "make deploy, then check the dashboard"
        echo "staging DB is db2" | cardmem remember "Staging" --tags infra
    """
    from cardmem.store.store import utf8

    utf8(title, "title")
    given = read_body(body, piped=True)
    if not given.strip():
        raise CardmemError("remember", "nothing to remember: give the text with --body TEXT, "
                           "or pipe it in (echo TEXT | cardmem remember TITLE)", exit_code=2)
    store = open_store(store_path)
    title, text, tags, aliases = screen_secrets([title, given, tags, aliases], keep_secrets)
    if os.environ.get(AGENT_ENV) == "1":
        # An agent shelling out writes through the agents' door: a rule or user card becomes
        # a proposal, and a card a person is editing is not written over.
        from cardmem.tools.agents.remember import remember as agent_remember

        try:
            out = agent_remember(store, title or "", text or "", card_type, project, by="cli",
                                 meta=_meta(tags, aliases))
        except ValueError as exc:
            raise CardmemError("remember", str(exc), exit_code=2) from None
        if as_json:
            emit_json({k: v for k, v in out.items() if k != "redacted"})
        else:
            click.echo(out["note"] if out.get("proposed") else
                       f"{'created' if out['created'] else 'appended to'} {out['id']}")
        return
    cid, created = store.remember(title or "", text or "", card_type=card_type, project=project,
                                  meta=_meta(tags, aliases))
    if as_json:
        emit_json({"id": cid, "created": created})
    else:
        click.echo(f"{'created' if created else 'appended to'} {cid}")
    if created:
        _unread_titles(store, title or "")


def _unread_titles(store, title: str) -> None:
    """After a new card: the card files that do not parse (so the title lookup could not
    read their titles) and mention this title: one of them may be the card meant."""
    from cardmem.store.index.db import Index

    with Index.open(store) as idx:
        problems = idx.problems()
    key = " ".join(title.split()).casefold()
    for p in problems:
        try:
            text = " ".join((store.root / p["path"]).read_text(errors="replace").split())
        except OSError:
            continue
        if key not in text.casefold():
            continue
        click.echo(f"cardmem: note: {p['path']} could not be read, so its title was not "
                   f"looked at: {p['reason']}", err=True)


@click.command()
@click.argument("card_id", metavar="ID", shell_complete=complete_id)
@json_option
@store_option
def show(card_id: str, as_json: bool, store_path: Path | None) -> None:
    """The card, whole: by its id, or by its title or an alias.

    \b
    Example:
        cardmem show feedback/run-tests-with-x
        cardmem show "Deploy steps"
        cardmem show reference/deploy --json
    """
    store = open_store(store_path)
    try:
        text, problem = store.read_raw(card_id)
    except NotFound:
        card_id = _by_name(store, card_id)
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


def _by_name(store, name: str) -> str:
    """The id of the one card with this title or alias; else NotFound naming the ids and
    titles that come close (did you mean)."""
    import difflib

    from cardmem.store.index.db import Index

    found = store.titled(name)
    if len(found) == 1:
        return found[0][0]
    if found:
        raise CardmemError(f"card {name!r}", f"{len(found)} cards have this title or alias: "
                           f"{', '.join(c for c, _ in found[:5])}; show one by its id")
    with Index.open(store) as idx:
        heads = idx.heads()
    names = {cid.casefold(): cid for cid, *_ in heads}
    names.update({title.casefold(): cid for cid, _, title, _, _ in heads if title})
    close = difflib.get_close_matches(name.casefold(), list(names), n=3, cutoff=0.8)
    meant = list(dict.fromkeys(names[c] for c in close))
    raise NotFound(f"card {name}", "no such card (no card has this id, title or alias)"
                   + (f"; did you mean {' or '.join(meant)}?" if meant else
                      " (`cardmem list` shows the ids, `cardmem search` finds by words)"))


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
    if card_id is not None and not commits and not store.exists(card_id):
        raise NotFound(f"card {card_id}", "no such card, and none ever had that id")
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
