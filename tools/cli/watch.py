"""`cardmem watch`: keep the index live, and commit hand edits after a quiet period."""
from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from cardmem.tools.cli.options import open_store, store_option
from cardmem.store.search.searchd_server import IndexSearch, Server
from cardmem.store.watch.watcher import Watcher


@click.command()
@click.option("--autocommit/--no-autocommit", default=None,
              help="Commit hand edits after a quiet period (default: [watch] autocommit).")
@click.option("--quiet-s", type=click.FloatRange(min=0), default=None,
              help="Seconds without edits before committing (default: [watch] quiet_s).")
@click.option("-v", "--verbose", is_flag=True, help="Say each batch indexed and each commit.")
@store_option
def watch(autocommit: bool | None, quiet_s: float | None, verbose: bool,
          store_path: Path | None) -> None:
    """Keep the index (and auto-commits) live until Ctrl-C or SIGTERM.

    While it runs it also answers `cardmem search` from the shell with the embedding
    model it holds (a socket in the store's .cardmem/ folder, for this user only), so
    shell searches skip loading the model.

    \b
    Example:
        cardmem watch -v
        cardmem watch --no-autocommit
    """
    store = open_store(store_path)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()
        # A second Ctrl-C while stopping interrupts for real.
        signal.signal(signal.SIGINT, signal.default_int_handler)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    watcher = Watcher(store, autocommit=autocommit, quiet_s=quiet_s, verbose=verbose)
    searches = IndexSearch(store)
    shared = Server(str(store.root), searches, say=watcher.say)
    try:
        watcher.start()
        commits = (f"autocommit after {watcher.quiet_s:g} s quiet" if watcher.autocommit
                   else "no autocommit")
        click.echo(f"cardmem: watching {store.root} ({commits}); Ctrl-C stops", err=True)
        if shared.start() and verbose:
            watcher.say(f"serving searches on {shared.path}")
        while not stop.wait(1.0):
            watcher.ensure_alive()
    finally:
        shared.stop()
        searches.close()
        watcher.stop()
        for s, handler in old.items():
            signal.signal(s, handler)
    s = watcher.stats
    click.echo(f"cardmem: watch stopped ({s.batches} batches, {s.commits} commits, "
               f"{sum(s.rescans.values())} rescans, {s.errors} errors)", err=True)
