"""The command line: a thin click shell over store and tools.

    group.py     the `cardmem` group, its lazy command table, "did you mean", main
    cards.py     the card commands (init, where, new, remember, show, edit, log, revert)
    listing.py   map, list, recent;  moves.py: rm, mv
    options.py   what every command module shares: --store, --json, open_store, emit_json
    <name>.py    one area's commands, loaded only when called: search, watch, ask, sync,
                 review, maintain, context, doctor, demo

`python -m cardmem.tools.cli` runs it (__main__.py): users' MCP settings name that path.
Code imports from group and options themselves; this package's own namespace stays empty
so that importing options (every command module does) does not load group.
"""
from __future__ import annotations


def __getattr__(name: str) -> object:
    # `cardmem = "cardmem.tools.cli:main"` was the console script before tools/entry.py;
    # a wrapper pip wrote then still imports `main` from here, loaded only when asked for.
    if name in ("cli", "main"):
        from . import group

        return getattr(group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
