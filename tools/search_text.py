"""How search results read: the text lines and the JSON document `cardmem search` prints.

Shared by the click command (tools/cli/search.py) and the lean entry (tools/entry.py),
so both print the same bytes.
"""
from __future__ import annotations

import json
import re
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any


def json_text(data: Any) -> str:
    """One JSON document, as every `--json` of the CLI prints it."""
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def unreadable(problems: list[dict[str, str]], shown: int = 5) -> list[str]:
    """The stderr lines naming card files the search could not read (they do not parse),
    so a card missing from the results is not missing in silence."""
    out = [f"cardmem: {p['path']}: unreadable, not searched: {p['reason']}"
           for p in problems[:shown]]
    if len(problems) > shown:
        out.append(f"cardmem: and {len(problems) - shown} more unreadable (`cardmem doctor`)")
    return out


BOLD = re.compile(r"\*\*(.+?)\*\*")


def lines(res: Any, tty: bool = False) -> list[str]:
    """A SearchResult as the lines of the text output. Snippets mark the query's words
    **so**: bold on a terminal (tty), the marks dropped elsewhere."""
    out = []
    if getattr(res, "empty_filter", None):
        return [f"No card has {res.empty_filter}: the filter matches nothing, whatever "
                "the query (`cardmem map` lists the cards' types and projects)."]
    if res.corrected:
        fixes = ", ".join(f"{a} -> {b}" for a, b in res.corrected.items())
        out.append(f"(corrected: {fixes})")
    if res.no_confident_results:
        out.append(f"No confident results for {res.query!r}: nothing in memory matches it well.")
        if res.results:
            out.append("Weak candidates, probably not what you want:")
    for r in res.results:
        flag = "" if r["status"] == "active" else f"  ({r['status']})"
        if r.get("stale"):
            flag += "  (stale: unchanged for long while its project moved on; check it)"
        why = f", {r['match']}" if r.get("match") in ("semantic", "both", "neighbour") else ""
        out.append(f"{r['id']}  [{r['type'] or '?'}]  {r['title']}  — {r['confidence']}{why}{flag}")
        if r["snippet"]:
            out.append("    " + BOLD.sub("\x1b[1m\\1\x1b[0m" if tty else "\\1", r["snippet"]))
    return out


def lag_line(res: Any) -> str | None:
    """For -v: how many cards the search could not compare by meaning (no vector yet),
    or None. Those cards are still found by their words."""
    missing = (res.as_dict().get("semantic") or {}).get("not_embedded")
    if not missing:
        return None
    return (f"{missing} card{'s' if missing != 1 else ''} have no vector yet (being embedded);"
            " this search found those by their words only")
