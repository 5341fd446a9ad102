"""`cardmem search` and `cardmem index`: the lexical index from the command line.

The search path is kept lean (DESIGN §10 hosts call it per prompt): a StoreRoot, not a
Store (its module loads YAML); no rapidfuzz unless a query term needs correcting.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cardmem.store.root import SEARCH_READS, StoreRoot
from cardmem.store.errors import CardmemError
from cardmem.tools.cli.options import emit_json, json_option, store_option, type_option
from cardmem.tools.search_text import lines, unreadable
from cardmem.store.wording import plural


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--limit", type=click.IntRange(min=1, max=1000), default=10, show_default=True)
@type_option()
@click.option("--project", help="Only cards of this project.")
@click.option("--base", "base_name", metavar="NAME",
              help="Search the attached base NAME (`cardmem base list`) instead of the cards.")
@json_option
@click.option("-v", "--verbose", is_flag=True,
              help="Say whether a running `cardmem watch` or MCP server answered, or why not.")
@store_option
def search(query: tuple[str, ...], limit: int, card_type: str | None, project: str | None,
           base_name: str | None, as_json: bool, verbose: bool, store_path: Path | None) -> None:
    """Ranked cards for QUERY (typo-tolerant, any language), each with a confidence label.

    Words are matched by the full-text index and, when the embedding model is installed,
    meanings by its vectors; --json says which for each result ("match": lexical,
    semantic or both). A running `cardmem watch` or `cardmem mcp` of the store answers
    the search with the model it holds; without one, this process searches itself.

    \b
    Examples:
        cardmem search "pytets fixtrues"
        cardmem search deploy --project acme-api --json
        cardmem search "Как выпустить релиз?" --json
        cardmem search deploy -v
    """
    from cardmem.store.index.db import search as run_search

    problems: list[dict[str, str]] = []
    text = " ".join(query)
    if not text.strip():  # as the MCP search tool refuses it
        raise CardmemError("query", "is empty; say what to look for", exit_code=2)
    if base_name:
        from cardmem.store.bases import search_base

        res = search_base(StoreRoot.open(store_path), base_name, text, limit=limit,
                          card_type=card_type, project=project)
        for w in res.warnings:
            click.echo(f"cardmem: {w}", err=True)
    else:
        store = StoreRoot.open(store_path)
        res = _served(store, text, limit, card_type, project, verbose)
        if res is None:
            from .progress import model_note

            model_note(as_json)
            res = run_search(store, text, limit=limit, card_type=card_type, project=project)
            problems = _problems(store)
        else:
            problems = []  # a server's answer: its index, not read here
        store.note_reads(r["id"] for r in res.results[:SEARCH_READS])
        if res.note:
            click.echo(f"cardmem: {res.note}", err=True)
        for line in unreadable(problems):
            click.echo(line, err=True)
    if as_json:
        emit_json(res.as_dict())
        return
    _print(res)


def _problems(store: StoreRoot) -> list[dict[str, str]]:
    from cardmem.store.index.db import Index

    with Index.open(store) as idx:
        return idx.problems()


def _served(store: StoreRoot, text: str, limit: int, card_type: str | None,
            project: str | None, verbose: bool) -> Any:
    """The search as a running server of the store answers it (store/index/searchd.py),
    or None: search here."""
    from cardmem.store.index.searchd import ask

    say = (lambda line: click.echo(f"cardmem: search: {line}", err=True)) if verbose else None
    return ask(str(store.root), text, limit, card_type, project, say=say)


def _print(res: Any) -> None:
    for line in lines(res, tty=sys.stdout.isatty()):
        click.echo(line)


@click.command()
@click.option("--full", is_flag=True, help="Rebuild from scratch into a new file and swap it in.")
@json_option
@store_option
def index(full: bool, as_json: bool, store_path: Path | None) -> None:
    """Bring the index up to date (or rebuild it with --full).

    \b
    Example:
        cardmem index
        cardmem index --full
    """
    from cardmem.store.index.db import Index

    with Index(StoreRoot.open(store_path)) as idx:
        damage = [] if full else idx.verify()
        if damage:
            click.echo(f"cardmem: index: was damaged ({damage[0]}); rebuilt", err=True)
        from cardmem.store.index import embedding, semantic

        counts = idx.rebuild() if full else idx.refresh(walk=True)
        from cardmem.store.index.terms import vocabulary

        vocabulary(idx, force=True)  # the typo-correction vocabulary, so searches need not
        model = embedding.embedder()  # the vectors too, so searches need not
        vectors = semantic.sync(idx, model) if model is not None else None
        problems = idx.problems()
        total = len(idx.ids())
    if as_json:
        emit_json({**counts, "cards": total, "full": full, "problem_files": problems,
                   "vectors": vectors, "semantic_off": embedding.reason()})
        return
    unread = f", {len(problems)} unreadable" if problems else ""  # counted as files below
    click.echo(f"index: {plural(total, 'card')}{unread} ({counts['added']} added, {counts['updated']} updated, "
               f"{counts['removed']} removed, {counts['unchanged']} unchanged"
               f"{', rebuilt' if full else ''})")
    if vectors is not None:
        click.echo(f"vectors: {vectors['embedded']} embedded, {vectors['reused']} kept (same"
                   f" text), {vectors['dropped']} dropped")
    elif embedding.reason() and not embedding.turned_off():
        click.echo(f"cardmem: semantic search unavailable ({embedding.reason()})", err=True)
    for p in problems:
        click.echo(f"cardmem: {p['path']}: skipped: {p['reason']}", err=True)
