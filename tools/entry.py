"""The `cardmem` console script: `cardmem search` without click, everything else with it.

An agent host may run `cardmem search` for every prompt, so it must be a quick process
(issue 3's target: bench/RESULTS.md, "Search and index"), and importing click alone is
a large share of it (bench/RESULTS.md, "Figures from comments"). This entry
parses the common forms of `cardmem search` itself, starts `git status` before its own
imports (the freshness check, store/index/freshness.py, then runs on the other CPU while Python
loads), and prints what the click command prints. Before any of that it asks a running
`cardmem watch` or MCP server of the store, which holds the model, to search
(store/search/searchd.py; a socket, no numpy here). Anything else, and any search
arguments it does not fully understand (--help, --base, a bad value, an unknown option),
go to the click CLI in tools/cli/group.py, which stays the one definition of the command;
tests run both on the same arguments and compare every byte.
"""
from __future__ import annotations

import sys

# option -> parameter of tools/cli/search.py's `search`; flags take no value
_VALUED = {"--limit": "limit", "--type": "card_type", "--project": "project",
           "--store": "store_path"}
_FLAGS = {"--json": "as_json", "--verbose": "verbose", "-v": "verbose"}


def parse_search(args: list[str]) -> dict[str, object] | None:
    """The parameters click would give `search`, or None: let click handle these args."""
    opts: dict[str, object] = {"limit": 10, "card_type": None, "project": None,
                               "store_path": None, "as_json": False, "verbose": False}
    words: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            words += args[i:]
            break
        if not a.startswith("-") or a == "-":
            if a == "-":
                return None
            words.append(a)
            continue
        name, eq, value = a.partition("=")
        if name in _FLAGS and not eq:
            opts[_FLAGS[name]] = True
            continue
        if name not in _VALUED:
            return None  # --help, --base, a typo: click says what it says
        if not eq:
            if i >= len(args):
                return None
            value = args[i]
            i += 1
        opts[_VALUED[name]] = value
    if not " ".join(words).strip():
        return None  # no query: click refuses it
    if opts["card_type"] is not None:
        # only a search with --type pays this import
        from cardmem.store.cards.paths import CARD_TYPES, type_of_word

        opts["card_type"] = type_of_word(str(opts["card_type"]))
        if opts["card_type"] not in CARD_TYPES:
            return None  # click names the types
    try:
        limit = int(str(opts["limit"]))
    except ValueError:
        return None
    if not 1 <= limit <= 1000 or opts["store_path"] == "":
        return None
    opts["limit"] = limit
    opts["query"] = " ".join(words)
    return opts


def search(opts: dict[str, object]) -> None:
    import os

    from cardmem.store import where

    spot = os.path.join(os.getcwd(), os.path.expanduser(str(opts["store_path"]
                                                            or where.default_store())))
    try:
        if _served(spot, opts):
            return
        # git status next: it runs on the other CPU while Python loads the search code
        from cardmem.store.index.freshness import Status, usable

        status = Status(spot) if usable(spot) else None
        try:
            _search_here(spot, opts, status)
        finally:
            if status is not None:
                status.close()
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(0)


def _served(spot: str, opts: dict[str, object]) -> bool:
    """Print the search as a running `cardmem watch` or MCP server of the store answers
    it (store/search/searchd.py: it holds the model); False when none did."""
    from cardmem.store.search.searchd import ask

    say = (lambda line: sys.stderr.write(f"cardmem: search: {line}\n")) if opts["verbose"] else None
    res = ask(spot, str(opts["query"]), int(str(opts["limit"])),
              opts["card_type"] or None, opts["project"] or None, say=say)  # type: ignore[arg-type]
    if res is None:
        return False
    from cardmem.store.errors import CardmemError
    from cardmem.store.root import StoreRoot

    try:
        _emit(StoreRoot.open(spot), res, bool(opts["as_json"]), None, bool(opts["verbose"]))
    except CardmemError as exc:
        sys.stderr.write(f"cardmem: {exc}\n")
        sys.exit(exc.exit_code)
    return True


def _search_here(spot: str, opts: dict[str, object], status: object) -> None:
    from cardmem.store.errors import CardmemError
    from cardmem.store.root import StoreRoot

    try:
        store = StoreRoot.open(spot)  # the folder git status runs in, by the same rule
        from cardmem.store.index.db import Index
        from cardmem.store.search.query import search_index

        if sys.stderr.isatty() and not opts["as_json"]:  # a person waits: say a first load
            from cardmem.tools.cli.progress import model_note

            model_note()
        with Index(store) as idx:
            idx.refresh(status=status)
            res = search_index(idx, str(opts["query"]), limit=int(str(opts["limit"])),
                             card_type=opts["card_type"] or None,  # type: ignore[arg-type]
                             project=opts["project"] or None,  # type: ignore[arg-type]
                             semantic=True)
            problems = idx.problems()
        _emit(store, res, bool(opts["as_json"]), problems, bool(opts["verbose"]))
    except CardmemError as exc:
        sys.stderr.write(f"cardmem: {exc}\n")
        sys.exit(exc.exit_code)


def _emit(store: object, res: object, as_json: bool, problems: list | None = None,
          verbose: bool = False) -> None:
    from cardmem.store.root import SEARCH_READS
    from cardmem.tools.search_text import json_text, lag_line, lines, unreadable

    store.note_reads(r["id"] for r in res.results[:SEARCH_READS])  # type: ignore[attr-defined]
    if res.note:  # type: ignore[attr-defined]
        sys.stderr.write(f"cardmem: {res.note}\n")  # type: ignore[attr-defined]
    for line in unreadable(problems or []):
        sys.stderr.write(line + "\n")
    if verbose and (lag := lag_line(res)):
        sys.stderr.write(f"cardmem: search: {lag}\n")
    out = json_text(res.as_dict()) if as_json else "\n".join(  # type: ignore[attr-defined]
        lines(res, tty=sys.stdout.isatty()))
    if out:
        sys.stdout.write(out + "\n")
    sys.stdout.flush()


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["search"] and (opts := parse_search(args[1:])) is not None:
        search(opts)
        return
    from cardmem.tools.cli.group import main as click_main

    click_main()


if __name__ == "__main__":
    main()
