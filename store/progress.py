"""Progress of long work: the library reports it, whoever called draws it (or not).

The store knows nothing of terminals. A function that can take more than a second takes
`progress=`, a callable `progress(what, done, total)`: `what` names the phase in plain
words ("indexing", "embedding", "comparing cards"), `done` counts what is finished and
`total` is the whole, or None when it is not known yet. It is called at the start of a
phase (done=0), as work finishes (as often as is cheap; the drawer throttles) and once
at the end (done == total). The CLI turns it into a bar on a terminal and into nothing
when stderr is piped or `--json` is given; tests pass a list's append.
"""
from __future__ import annotations

TYPE_CHECKING = False  # no `typing` import: hooks and the shell search import the store lean
if TYPE_CHECKING:
    from typing import Callable, Optional

    Progress = Callable[[str, int, Optional[int]], None]


def quiet(what: str, done: int, total: int | None) -> None:
    """The progress of a caller that shows none."""
    return None
