"""The one drawer of progress (store/progress.py's `progress(what, done, total)`) for the
command line: a bar (or a counter when the total is unknown) on stderr at a terminal, and
nothing when stderr is piped or the command was given --json.

A command that can take over a second passes `progress` down to the library:

    with bar(as_json) as progress:
        index.refresh(progress=progress)

`note(text, as_json)` says one line before a wait the library cannot count (the model's
first load). Drawing is click's progressbar (already a dependency; it handles unknown
totals, widths, ETA and the cursor), one bar per phase (`what`), throttled here because
the library may report every card. No click import until something is drawn: the lean
search path uses note() too.
"""
from __future__ import annotations

import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REDRAW_S = 0.1  # at most ten redraws a second; the library may report every card


def shown(as_json: bool = False, wanted: "bool | None" = None) -> bool:
    """Whether progress is drawn: asked for (--progress) or, unless refused (--no-progress)
    or --json, when stderr is a terminal."""
    if wanted is not None:
        return wanted
    return not as_json and sys.stderr.isatty()


class Bars:
    """`progress(what, done, total)` drawn as one bar per phase; a context manager that
    closes the last bar (also when the work failed)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self._bar: "Any" = None
        self._what = ""
        self._drawn = 0.0

    def __call__(self, what: str, done: int, total: "int | None") -> None:
        if not self.on:
            return
        if self._bar is None or what != self._what or (total is not None
                                                        and self._bar.length != total):
            self.close()
            self._open(what, total)
        bar = self._bar
        step = done - bar.pos
        finished = total is not None and done >= total
        now = time.monotonic()
        if step > 0 and (finished or now - self._drawn >= REDRAW_S):
            bar.update(step)
            self._drawn = now
        if finished:
            self.close()

    def _open(self, what: str, total: "int | None") -> None:
        import itertools

        import click

        # No total: an endless iterable makes click draw a moving mark and the count.
        self._bar = click.progressbar(
            length=total, iterable=None if total is not None else itertools.repeat(None),
            label=f"cardmem: {what}", file=sys.stderr, show_pos=True,
            show_eta=total is not None, width=24)
        self._bar.__enter__()
        self._what, self._drawn = what, 0.0

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.__exit__(None, None, None)

    def __enter__(self) -> "Bars":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bar(as_json: bool = False, wanted: "bool | None" = None) -> Bars:
    """The progress callable for a command: drawn on a terminal, quiet when piped or
    with --json (wanted: --progress/--no-progress, None to decide by the terminal)."""
    return Bars(shown(as_json, wanted))


def note(text: str, as_json: bool = False) -> None:
    """One line on stderr before a wait nothing can count, on a terminal only."""
    if shown(as_json):
        sys.stderr.write(f"cardmem: {text}\n")
        sys.stderr.flush()


MODEL_FIRST_LOAD = ("loading the search model, once: ~3 s of CPU, longer on a busy machine "
                    "(later searches read its cache)")


def model_note(as_json: bool = False) -> None:
    """Before a search loads the model: a line when this machine has no model cache yet
    (the first load builds it: seconds; store/search/embedding.py)."""
    if not shown(as_json):
        return
    from cardmem.store.search import embedding

    if embedding.turned_off() or embedding.loaded():
        return
    try:
        embedding.stamp()  # the package is there (else search says it is unavailable)
    except embedding.Unavailable:
        return
    if not embedding.cached():
        note(MODEL_FIRST_LOAD)


def for_command() -> Bars:
    """The bar for the click command running now, --json and --progress read from its
    parameters (for code that opens the store for a command, far from its options)."""
    import click

    ctx = click.get_current_context(silent=True)
    params = ctx.params if ctx is not None else {}
    return bar(bool(params.get("as_json")), params.get("progress"))
