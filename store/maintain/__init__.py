"""Model-free maintenance findings (DESIGN §8, issue 17): what in a store has stopped
being true or useful, found without a model and without writing anything.

    findings(store, only={"broken-link"})  -> [Finding(kind, ids, detail, suggestion)]

Long passes report through `progress(what, done, total)` (store/progress.py); a caller
with a CPU budget passes `within(seconds, progress)`, which raises OutOfTime from the
pass's next report once the process has used that much CPU: the finders write nothing,
so a pass cut off leaves nothing half-done.

Kinds: `broken-link` (links.py), `duplicate` (duplicates.py), `drift` (drift.py),
`stale` (stale.py), `long-history` (history.py). The model-judged `contradiction` and the `--apply` consolidation
live in tools/maintain/.
"""
from __future__ import annotations

import time

TYPE_CHECKING = False  # no `typing` import: the session-end learner comes here
if TYPE_CHECKING:
    from typing import Any

    from ..progress import Progress
    from .survey import Finding, Survey

MODEL_FREE = ("broken-link", "duplicate", "drift", "stale", "long-history")


class OutOfTime(Exception):
    """A pass used up its CPU budget (within)."""


def within(seconds: float, progress: Progress | None = None) -> Progress:
    """A progress callback that passes reports on and raises OutOfTime once this process
    has used `seconds` more CPU (user + system) than when it was made (at any report
    but one that says its phase is done)."""
    end = time.process_time() + seconds

    def report(what: str, done: int, total: int | None) -> None:
        # a phase that says it is done is let finish: its work is not thrown away
        if (total is None or done < total) and time.process_time() > end:
            raise OutOfTime(f"{what}: out of CPU time ({seconds:g} s) at {done} of {total}")
        if progress is not None:
            progress(what, done, total)

    return report


def findings(store, only: set[str] | None = None, survey: Survey | None = None,
             progress: Progress | None = None) -> list[Finding]:
    """Every model-free finding of the kinds in `only` (all when None), in kind order."""
    # here: the learner imports checkouts.py through this package, without the finders
    from . import drift, duplicates, history, links, stale
    from .survey import Survey

    survey = survey or Survey.of(store)
    report = progress or (lambda what, done, total: None)
    finders = {"broken-link": links.find, "drift": drift.find, "stale": stale.find,
               "long-history": history.find}
    kinds = [k for k in MODEL_FREE if only is None or k in only]
    out: list[Finding] = []
    for n, kind in enumerate(kinds):
        report("checking the store", n, len(kinds))
        out.extend(duplicates.find(survey, report) if kind == "duplicate"
                   else finders[kind](survey))
    report("checking the store", len(kinds), len(kinds))
    return out


def __getattr__(name: str) -> Any:
    # Lazily: the session-end learner imports checkouts.py through this package, which
    # must not pull in the card parser and git.
    if name in ("Finding", "Survey"):
        from . import survey

        return getattr(survey, name)
    raise AttributeError(name)


__all__ = ["Finding", "Survey", "findings", "within", "OutOfTime", "MODEL_FREE"]
