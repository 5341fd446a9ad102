"""`cardmem mcp`: the store as an MCP server on stdio (official `mcp` SDK).

Thin by design: each tool checks its arguments, calls the same store function the CLI
and the walk use (the reads by address in store/by_address.py, the search in
store/search/query.py, agents' `remember` in tools/agents/remember.py), and hands back JSON.
Every failure a model can cause or meet (bad id, no such card, store busy, card too
large, bad `since`) comes back as a ToolError the model can read; nothing else of the
exception (no stack trace) leaves the server. Logs go to stderr; stdout is the wire.

Start-up (bench/bench_mcp.py; bench/RESULTS.md, "Figures from comments"): importing the SDK
is most of it, more than half of that pydantic building ~550 model classes (the protocol
models of both versions in `mcp_types` alone are about half the import); every `mcp.*`
module pays all of it, as `mcp/__init__.py` imports the client, server and HTTP stacks (so
the low-level server is no cheaper). It is imported only after the store is found, with the
cyclic GC paused (see _sdk_import_gc). Nothing is indexed at start-up: once the server is
built, a background thread only opens the existing index and loads the search code
(CardTools.warm) while the client's handshake runs; the first search still checks freshness
itself, like every search.
"""
import functools
import gc
import importlib
import logging
import os
import sys
import threading
import time
from pathlib import Path
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, TypeVar, Annotated

import click

from cardmem.store.errors import CardmemError, NotFound
from cardmem.store.root import SEARCH_READS
from cardmem.tools.cli.options import open_store, store_option

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from cardmem.store.store import Store

log = logging.getLogger("cardmem.mcp")

CardType = Literal["user", "feedback", "person", "entity", "project", "reference", "signal"]
SEARCH_MAX = 50

INSTRUCTIONS = """\
cardmem is the user's long-term memory: Markdown cards in a git repository, each
addressed by an id such as `feedback/run-tests-with-x` or `projects/acme-api/deploy`.
Use `search` to find cards, `read_card` to read one whole, `memory_map` to see what
exists, and `list_recent` for what changed lately. When `search` says
no_confident_results, treat its results as weak guesses, not as memory.
Write with `remember` only when the user asks you to remember something."""

F = TypeVar("F", bound=Callable[..., Any])


def _readable_errors(fn: F) -> F:
    """Turn the failures a model can meet into one readable ToolError line.

    CardmemError already reads `<what>: <why>`; ValueError comes from argument parsing
    (e.g. `since`); OSError is said with its file, never with a traceback.
    """
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except CardmemError as exc:
            log.info("%s: %s", fn.__name__, exc)
            raise ToolError(str(exc)) from None
        except ValueError as exc:
            log.info("%s: %s", fn.__name__, exc)
            raise ToolError(str(exc)) from None
        except OSError as exc:
            log.warning("%s: %s", fn.__name__, exc)
            where = exc.filename or "store"
            raise ToolError(f"{where}: {exc.strerror or exc}") from None
        log.info("%s done in %.0f ms", fn.__name__, (time.perf_counter() - started) * 1000)
        return result

    return wrapper  # type: ignore[return-value]


class CardTools:
    """The five tools over one store, as plain functions (the SDK only wraps them)."""

    def __init__(self, store: "Store") -> None:
        self.store = store
        # Tools run in worker threads; searches share one index file, so take turns.
        self._search_lock = threading.Lock()
        self._index: Any = None
        self._follow = False  # follow_files(): freshness from file events
        self._live: Any = None
        self._backfill: Any = None  # the background embedder of what the index gains

    def warm(self) -> None:
        """Open the store's index and load the search code, ahead of the first search.

        Run in a background thread while the handshake goes on. It neither indexes nor
        checks freshness: every search does that itself when it is asked (DESIGN: every
        read of the index first compares the tree), and a store with no index file yet
        is left alone, its first search builds it. A failure is only logged: the first
        search meets it again and says it.
        """
        started = time.perf_counter()
        try:
            from cardmem.store.index.db import Index

            importlib.import_module("cardmem.store.search.search")  # the query code, loaded now

            with self._search_lock:
                idx = Index(self.store)
                if self._index is not None:
                    return
                if not idx.db_path.exists():
                    log.info("warm-up: no index yet; the first search builds it")
                    return
                idx.conn  # noqa: B018 - opens (and repairs) the file now
                self._index = idx
        except Exception as exc:  # noqa: BLE001 - the first search reports it properly
            log.info("warm-up: %s", exc)
            return
        log.info("warm-up: index opened in %.0f ms", (time.perf_counter() - started) * 1000)
        from cardmem.store.search import embedding

        if embedding.cached():  # cheap from the cache: ready before the first question
            embedding.BACKGROUND = True  # (set again, harmlessly, by the first search)
            embedding.embedder()  # loads in a background thread

    def search(self, query: str, limit: int = 5, type: str | None = None,
               project: str | None = None, base: str | None = None) -> dict[str, Any]:
        if not query or not query.strip():
            raise ValueError("query: is empty; say what to look for")
        limit = max(1, min(int(limit), SEARCH_MAX))
        if base:
            from cardmem.store.sharing.bases import search_base

            out = search_base(self.store, base, query, limit=limit, card_type=type or None,
                              project=project or None).as_dict()
            out["next"] = f"read_card(id, base={base!r}) returns a result's whole document"
            return out
        result = self.search_result(query, limit, type or None, project or None)
        self.store.note_reads(r["id"] for r in result.results[:SEARCH_READS])
        out = result.as_dict()
        out["next"] = "read_card(id) returns a result's whole card"
        return out

    def search_result(self, query: str, limit: int, card_type: str | None,
                      project: str | None) -> Any:
        """The store's search (a SearchResult), over the kept-open index, one at a time:
        the search tool's, and the shell's through the search socket (store/search/searchd.py)."""
        from cardmem.store.index.db import Index  # lazy: the first search also refreshes the index
        from cardmem.store.search import embedding
        from cardmem.store.search.query import search, search_index

        # The semantic model is loaded once, in a background thread started by the first
        # search, and kept: no request waits seconds for it (until it is ready, searches
        # are lexical and say so), and a session that never searches never loads it.
        embedding.BACKGROUND = True
        with self._search_lock:
            if self._index is None:
                self._index = Index(self.store)  # kept open across searches
            if not self._follow:
                # search refreshes first: git's word on what changed, then a stat of it
                return search(self.store, query, limit=limit, card_type=card_type,
                              project=project, index=self._index)
            if self._live is None:
                from cardmem.store.watch.live import LiveIndex

                self._live = LiveIndex(str(self.store.root), self._index,
                                       self.store.root / ".cardmem", say=log.info)
            first = self._backfill is None
            counts = self._live.fresh()  # the files' events since the last search, not git
            self._embed_later(counts, first)
            return search_index(self._index, query, limit=limit, card_type=card_type,
                                project=project, semantic=True)

    def _embed_later(self, counts: dict[str, int] | None, first: bool) -> None:
        """Cards the index gained or changed are embedded by a background process (the
        watcher's store/watch/backfill.py), not by the next search: embedding a card with
        its passages costs a search tens of ms, a checkout's worth seconds. Until its
        vectors come, a card is found by its words (the search says how many wait)."""
        from cardmem.store.search import embedding, vectors

        if embedding.turned_off():
            return
        if self._backfill is None:
            from cardmem.store.watch.backfill import Backfill
            from cardmem.store.watch.report import Voice

            self._backfill = Backfill(self.store, Voice(log.info, verbose=False))
        changed = bool(counts and (counts.get("added") or counts.get("updated")
                                   or counts.get("removed")))
        if first and not changed:
            changed = bool(vectors.pending(self._index))  # a store new to the model
        if changed:
            self._backfill.poke()  # (with another embedder at work, it waits its turn)

    def follow_files(self) -> None:
        """Keep the index fresh from file events rather than a git status per search (a
        long-running server: store/watch/live.py); stop with close()."""
        self._follow = True

    def close(self) -> None:
        with self._search_lock:
            if self._live is not None:
                self._live.close()
                self._live = None
            if self._backfill is not None:
                self._backfill.stop()
                self._backfill = None

    def read_card(self, id: str, base: str | None = None) -> dict[str, Any]:
        from cardmem.store.by_address import CARD_CHARS, read_card

        if base:
            from cardmem.store.sharing.bases import read_document

            text = read_document(self.store, base, id)
            cut = max(0, len(text) - CARD_CHARS)
            return {"id": id, "base": base, "text": text[:CARD_CHARS], "truncated_chars": cut}

        try:
            card = read_card(self.store, id)
        except NotFound as exc:
            raise NotFound(exc.what, f"{exc.why}; find ids with search or memory_map") from None
        self.store.note_reads([card["id"]])
        return card

    def memory_map(self, type: str | None = None, project: str | None = None) -> dict[str, Any]:
        from cardmem.store.by_address import memory_map

        return memory_map(self.store, card_type=type or None, project=project or None).as_dict()

    def list_recent(self, type: str | None = None, since: str | None = None) -> dict[str, Any]:
        from cardmem.store.by_address import list_recent, parse_since

        after = parse_since(since)  # ValueError on a bad value, before any git work
        changes = list_recent(self.store, card_type=type or None, since=since)
        return {"since": after.isoformat(timespec="seconds"), "changes": changes,
                "shown": len(changes)}

    def remember(self, title: str, body: str, type: CardType = "reference",
                 project: str | None = None) -> dict[str, Any]:
        from cardmem.tools.agents.remember import remember

        return remember(self.store, title, body, type, project, by="mcp")


def build_server(store: "Store", warm: bool = False,
                 tools: CardTools | None = None) -> "MCPServer":
    """An MCPServer with the five cardmem tools over `store` (tools: these ones).

    warm: start CardTools.warm in a background thread once the tools are registered.
    """
    # No `from __future__ import annotations` in this module: the SDK reads these
    # tools' annotations as objects, and the aliases below are local to this function.

    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations
    from pydantic import Field

    tools = tools or CardTools(store)
    server = MCPServer("cardmem", title="cardmem memory", instructions=INSTRUCTIONS,
                       version=_version(), log_level="WARNING")

    def read_only(title: str) -> ToolAnnotations:
        return ToolAnnotations(title=title, readOnlyHint=True, destructiveHint=False,
                               idempotentHint=True, openWorldHint=False)

    TypeFilter = Annotated[str | None, Field(
        description="Only cards of this type: user, feedback, person, entity, project, "
                    "reference or signal.")]
    ProjectFilter = Annotated[str | None, Field(description="Only cards of this project (slug).")]
    BaseName = Annotated[str | None, Field(
        description="An attached docs base to use instead of the cards (`cardmem base list`).")]

    @server.tool(annotations=read_only("Search memory"))
    @_readable_errors
    def search(query: Annotated[str, Field(description="What to look for, in plain words.")],
               limit: Annotated[int, Field(ge=1, le=SEARCH_MAX)] = 5,
               type: TypeFilter = None, project: ProjectFilter = None,
               base: BaseName = None) -> dict[str, Any]:
        """Search the memory cards (or, with base, an attached read-only docs base). Returns
        ranked results (id, title, type, score, confidence high|medium|low, snippet) and
        no_confident_results: when it is true, nothing matched well and the results are
        guesses, not memory."""
        return tools.search(query, limit, type, project, base)

    @server.tool(annotations=read_only("Read a card"))
    @_readable_errors
    def read_card(id: Annotated[str, Field(
            description="The card's id: its path in the store without .md, "
                        "e.g. feedback/run-tests-with-x.")],
                  base: BaseName = None) -> dict[str, Any]:
        """Read one memory card whole (cut at 8,000 characters, with the cut said), with
        its last few History entries; with base, a document of that attached base."""
        return tools.read_card(id, base)

    @server.tool(annotations=read_only("Map of memory"))
    @_readable_errors
    def memory_map(type: TypeFilter = None, project: ProjectFilter = None) -> dict[str, Any]:
        """Every card's id, type, title and description, in id order. Count-capped: total
        says how many cards there are, left_out how many were not shown."""
        return tools.memory_map(type, project)

    @server.tool(annotations=read_only("Recent changes"))
    @_readable_errors
    def list_recent(type: TypeFilter = None, since: Annotated[str | None, Field(
            description="How far back: 12h, 7d, 2w, or an ISO date. Default 14 days.")] = None
                    ) -> dict[str, Any]:
        """Cards changed since a time, newest first, read from git history: id, commit,
        date, author, commit subject; deleted cards are marked deleted."""
        return tools.list_recent(type, since)

    @server.tool(annotations=ToolAnnotations(
        title="Remember", readOnlyHint=False, destructiveHint=False, idempotentHint=False,
        openWorldHint=False))
    @_readable_errors
    def remember(title: Annotated[str, Field(description="A short title; the card's id is "
                                              "made from it.")],
                 body: Annotated[str, Field(description="What to remember, in Markdown.")],
                 type: Annotated[CardType, Field(description="The kind of memory.")] = "reference",
                 project: ProjectFilter = None) -> dict[str, Any]:
        """Save something to long-term memory. Use this ONLY when the user explicitly asks
        you to remember something; never on your own initiative. Creates the card for the
        title, or appends a dated section to the existing one. A feedback or user card is
        saved as a proposal that a person must accept before it is in force. Each write is
        a git commit by the agent, so a person can review or revert it. Secrets are
        redacted."""
        return tools.remember(title, body, type, project)

    if warm:
        threading.Thread(target=tools.warm, name="cardmem-mcp-warm", daemon=True).start()
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cardmem")
    except PackageNotFoundError:
        return "0"


@click.command(name="mcp")
@store_option
@click.option("-v", "--verbose", is_flag=True, help="Log each tool call to stderr.")
def mcp_command(store_path: Path | None, verbose: bool) -> None:
    """The MCP server on stdio (for Claude Code, Claude Desktop, other MCP hosts).

    \b
    Example:
        claude mcp add cardmem -- cardmem mcp --store ~/notes
        cardmem mcp -v
    """
    from ..model import CHILD_ENV

    if os.environ.get(CHILD_ENV) == "1":  # inside cardmem's own `claude -p`: serve nothing
        return
    store = open_store(store_path)  # a missing store fails here, before the SDK loads
    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="cardmem mcp: %(message)s")
    tools = CardTools(store)
    tools.follow_files()
    with _sdk_import_gc():
        server = build_server(store, warm=True, tools=tools)
    from cardmem.store.search.searchd_server import Server

    # Shell searches of this store use the model this server holds (store/search/searchd.py).
    shared = Server(str(store.root), tools.search_result, say=log.info)
    if shared.start():
        log.info("serving searches on %s", shared.path)
    log.info("serving %s on stdio", store.root)
    try:
        server.run("stdio")
    finally:
        shared.stop()
        tools.close()


@contextmanager
def _sdk_import_gc() -> Iterator[None]:
    """Pause the cyclic GC while the SDK loads, then freeze what it made.

    The import makes ~120k long-lived objects (model classes, validators, schemas) and
    the GC, left on, walks them again and again as they pile up (~180 young and one full
    collection here, 10-15% of the import). Almost none of it is garbage, so freezing it
    afterwards (gc.freeze: later collections skip it) loses next to nothing.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
