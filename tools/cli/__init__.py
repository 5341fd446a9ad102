"""The command line: a thin click shell over store and tools.

    group.py     the `cardmem` group, its lazy command table, and the card commands
                 (init, where, new, remember, show, edit, map, log, revert)
    options.py   what every command module shares: --store, --json, open_store, emit_json
    <name>.py    one area's commands, loaded only when called: search, watch, ask, sync,
                 review, maintain, context, doctor, demo

`python -m cardmem.tools.cli` runs it (__main__.py): users' MCP settings name that path.
The names below are re-exported for code written before this was a package; new code
imports from group and options themselves.
"""
from .group import cli, main  # noqa: F401
from .options import emit_json, json_option, open_store, store_option, store_value  # noqa: F401
