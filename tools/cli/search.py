"""`cardmem search` and `cardmem index`: the lexical index from the command line.

The search path is kept lean (DESIGN §10 hosts call it per prompt): a StoreRoot, not a
Store (its module loads the writer and the card parser); no rapidfuzz unless a query term
needs correcting.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from cardmem.store.root import SEARCH_READS, StoreRoot
from cardmem.store.errors import CardmemError
from cardmem.tools.cli.options import emit_json, json_option, store_option, type_option
from cardmem.tools.search_text import lag_line, lines, unreadable
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
    from cardmem.store.search.query import search as run_search

    problems: list[dict[str, str]] = []
    text = " ".join(query)
    if not text.strip():  # as the MCP search tool refuses it
        raise CardmemError("query", "is empty; say what to look for", exit_code=2)
    if base_name:
        from cardmem.store.sharing.bases import search_base

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
        if verbose and (lag := lag_line(res)):
            click.echo(f"cardmem: search: {lag}", err=True)
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
    """The search as a running server of the store answers it (store/search/searchd.py),
    or None: search here."""
    from cardmem.store.search.searchd import ask

    say = (lambda line: click.echo(f"cardmem: search: {line}", err=True)) if verbose else None
    return ask(str(store.root), text, limit, card_type, project, say=say)


def _print(res: Any) -> None:
    for line in lines(res, tty=sys.stdout.isatty()):
        click.echo(line)


@click.command()
@click.option("--full", is_flag=True, help="Rebuild from scratch into a new file and swap it in.")
@click.option("--wait", is_flag=True,
              help="Embed the cards' vectors here, with progress, before returning"
                   " (default: in a background process).")
@json_option
@store_option
def index(full: bool, wait: bool, as_json: bool, store_path: Path | None) -> None:
    """Bring the index up to date (or rebuild it with --full).

    The words are indexed first and are searchable when this returns. The vectors of
    cards new to the embedding model follow in a background process (one per store);
    until they come, searches find those cards by their words. --wait embeds them here.

    \b
    Example:
        cardmem index
        cardmem index --full
        cardmem index --wait
    """
    from cardmem.store.search import embedding, vectors as vec
    from cardmem.store.index.db import Index
    from cardmem.store.search.terms import vocabulary

    with Index(StoreRoot.open(store_path)) as idx:
        damage = [] if full else idx.verify()
        if damage:
            click.echo(f"cardmem: index: was damaged ({damage[0]}); rebuilt", err=True)
        counts = idx.rebuild() if full else idx.refresh(walk=True)
        vocabulary(idx, force=True)  # the typo-correction vocabulary, so searches need not
        problems = idx.problems()
        total = len(idx.ids())
        if not as_json:  # the words are current now: say so before any vector is made
            unread = f", {len(problems)} unreadable" if problems else ""  # named below
            click.echo(f"index: {plural(total, 'card')}{unread} ({counts['added']} added,"
                       f" {counts['updated']} updated, {counts['removed']} removed,"
                       f" {counts['unchanged']} unchanged{', rebuilt' if full else ''})")
            for p in problems:
                click.echo(f"cardmem: {p['path']}: skipped: {p['reason']}", err=True)
        todo = vec.pending(idx)  # from the index alone: the model is not loaded for this
        vectors: dict[str, Any] | None = None
        if todo and wait:
            vectors = _embed_here(idx, as_json)
        elif todo and vec.busy(idx.db_path.parent):
            vectors = {"pending": todo, "background_pid": None, "embedding_already": True}
        elif todo:
            proc = vec.spawn(idx.root, idx.db_path)
            vectors = {"pending": todo, "background_pid": proc.pid if proc else None}
        elif todo == 0:
            vectors = {"embedded": 0, "reused": 0, "dropped": 0, "pending": 0}
    off = embedding.reason() if vectors is None or "embedded" not in vectors else None
    if vectors is None and off is None and not embedding.turned_off():
        off = "the embedding model is not installed"
    if as_json:
        emit_json({**counts, "cards": total, "full": full, "problem_files": problems,
                   "vectors": vectors, "semantic_off": off})
        return
    if vectors is not None and "background_pid" in vectors:
        where = (f"in the background (pid {vectors['background_pid']})"
                 if vectors["background_pid"] else "by the process embedding them now"
                 if vectors.get("embedding_already") else "by `cardmem index --wait`")
        click.echo(f"vectors: {plural(vectors['pending'], 'card')} to embed, {where};"
                   " meanwhile searches find them by their words")
    elif vectors is not None:
        click.echo(f"vectors: {vectors['embedded']} embedded, {vectors['reused']} kept (same"
                   f" text), {vectors['dropped']} dropped")
    elif off and not embedding.turned_off():
        click.echo(f"cardmem: semantic search unavailable ({off})", err=True)


def _embed_here(idx: Any, quiet: bool) -> dict[str, Any] | None:
    """Embed what the index lacks in this process (a bar on a terminal); None when the
    model cannot be loaded (embedding.reason() says why)."""
    from cardmem.store.search import embedding, vectors as vec
    from cardmem.tools.cli.progress import bar

    model = embedding.embedder()
    if model is None:
        return None
    with bar(quiet) as progress:
        return vec.catch_up(idx, model, progress=progress)
