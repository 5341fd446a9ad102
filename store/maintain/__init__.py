"""Model-free maintenance findings (DESIGN §8, issue 17): what in a store has stopped
being true or useful, found without a model and without writing anything.

    findings(store, only={"broken-link"})  -> [Finding(kind, ids, detail, suggestion)]

Kinds: `broken-link` (links.py), `duplicate` (duplicates.py), `drift` (drift.py),
`stale` (stale.py), `long-history` (history.py). The model-judged `contradiction` and the `--apply` consolidation
live in tools/maintain/.
"""
from __future__ import annotations

TYPE_CHECKING = False  # no `typing` import: search and the session-start hook come here
if TYPE_CHECKING:
    from typing import Any

    from .survey import Finding, Survey

MODEL_FREE = ("broken-link", "duplicate", "drift", "stale", "long-history")


def findings(store, only: set[str] | None = None, survey: Survey | None = None) -> list[Finding]:
    """Every model-free finding of the kinds in `only` (all when None), in kind order."""
    from . import drift, duplicates, history, links, stale
    from .survey import Survey

    survey = survey or Survey.of(store)
    finders = {"broken-link": links.find, "duplicate": duplicates.find,
               "drift": drift.find, "stale": stale.find, "long-history": history.find}
    out: list[Finding] = []
    for kind in MODEL_FREE:
        if only is None or kind in only:
            out.extend(finders[kind](survey))
    return out


def __getattr__(name: str) -> Any:
    # Lazily: record.py (read by search and the session-start hook) must not pull in the
    # card parser and git through this package's import.
    if name in ("Finding", "Survey"):
        from . import survey

        return getattr(survey, name)
    raise AttributeError(name)


__all__ = ["Finding", "Survey", "findings", "MODEL_FREE"]
