"""How search results read: the text lines and the JSON document `cardmem search` prints.

Shared by the click command (tools/cli/search.py) and the lean entry (tools/entry.py),
so both print the same bytes.
"""
from __future__ import annotations

import json
TYPE_CHECKING = False  # typing costs a search ~5 ms to import; annotations only
if TYPE_CHECKING:
    from typing import Any


def json_text(data: Any) -> str:
    """One JSON document, as every `--json` of the CLI prints it."""
    return json.dumps(data, ensure_ascii=False, indent=2, default=str)


def lines(res: Any) -> list[str]:
    """A SearchResult as the lines of the text output."""
    out = []
    if res.corrected:
        fixes = ", ".join(f"{a} -> {b}" for a, b in res.corrected.items())
        out.append(f"(corrected: {fixes})")
    if res.no_confident_results:
        out.append(f"No confident results for {res.query!r}: nothing in memory matches it well.")
        if res.results:
            out.append("Weak candidates, probably not what you want:")
    for r in res.results:
        flag = "" if r["status"] == "active" else f"  ({r['status']})"
        out.append(f"{r['id']}  [{r['type'] or '?'}]  {r['title']}  — {r['confidence']}{flag}")
        if r["snippet"]:
            out.append(f"    {r['snippet']}")
    return out
