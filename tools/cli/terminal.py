"""What the command line does at a terminal: card ids completed by the shell, long
listings paged (tools/cli/cards.py's commands use these)."""
from __future__ import annotations

import os
import sys

import click
# Imports inside functions: shell completion runs on every TAB and loads only what it uses.


def complete_id(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[str]:
    """Card ids for shell completion (`cardmem show feed<TAB>`): the store's card files."""
    from cardmem.store.cards.paths import id_of_path
    from cardmem.store.where import default_store

    root = os.path.expanduser(str(ctx.params.get("store_path")
                                  or ctx.find_root().params.get("store_path") or default_store()))
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        rel = os.path.relpath(folder, root)
        for name in files:
            cid = id_of_path(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
            if cid and cid.startswith(incomplete):
                found.append(cid)
    return sorted(found)


def stdout_is_tty() -> bool:
    return sys.stdout.isatty()


def page(lines: list[str]) -> None:
    """Lines to stdout; through the pager ($PAGER, else less) on a terminal when they are
    more than a screenful, as git does."""
    import shutil

    if stdout_is_tty() and len(lines) >= shutil.get_terminal_size().lines:
        os.environ.setdefault("LESS", "-FRX")  # as git: colours pass, the screen is left as is
        click.echo_via_pager("\n".join(lines) + "\n")
        return
    for line in lines:
        click.echo(line)
