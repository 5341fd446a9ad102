"""The walk's three address-only tools (DESIGN §5): their schemas and thin runners.

Each delegates to store/by_address.py, the same reads the MCP server and the CLI use,
with the same caps; the loop that offers them to the model and meters their cost is
tools/ask/walk.py.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cardmem.store import by_address
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

INPUT_SHOWN = 2000  # characters of a tool input kept in the receipt

TOOLS: list[dict[str, Any]] = [
    {"name": "read_card",
     "description": "Read one memory card whole (size-capped) by its id, e.g. "
                    "entities/billing-service. Ids are in the memory map.",
     "input_schema": {"type": "object", "properties": {
         "id": {"type": "string", "description": "the card id, e.g. people/mara-okonkwo"}},
         "required": ["id"]}},
    {"name": "read_memory_map",
     "description": "Every card's id, type, title and description, in id order (count-capped).",
     "input_schema": {"type": "object", "properties": {}}},
    {"name": "list_recent",
     "description": "Cards of a type changed since a time, newest first, from git history.",
     "input_schema": {"type": "object", "properties": {
         "type": {"type": "string", "description": "user, feedback, person, entity, project, "
                                                   "reference or signal; omit for all"},
         "since": {"type": "string", "description": "like 7d, 12h, 2w or an ISO date; "
                                                    "default 14d"}}}},
]
TOOL_NAMES = tuple(t["name"] for t in TOOLS)


def _tool_read_card(store: Store, inp: dict[str, Any]) -> Any:
    cid = inp.get("id")
    if not isinstance(cid, str):
        raise CardmemError("read_card", 'needs {"id": "<card id>"} with a string id')
    return by_address.read_card(store, cid)


def _tool_memory_map(store: Store, inp: dict[str, Any]) -> Any:
    return by_address.memory_map(store).as_dict()


def _tool_list_recent(store: Store, inp: dict[str, Any]) -> Any:
    card_type, since = inp.get("type"), inp.get("since")
    if card_type is not None and not isinstance(card_type, str):
        raise CardmemError("list_recent", "type must be a string (or omitted)")
    if since is not None and not isinstance(since, str):
        raise CardmemError("list_recent", "since must be a string like 7d (or omitted)")
    return {"changes": by_address.list_recent(store, card_type or None, since or None)}


RUNNERS: dict[str, Callable[[Store, dict[str, Any]], Any]] = {
    "read_card": _tool_read_card, "read_memory_map": _tool_memory_map,
    "list_recent": _tool_list_recent}


def shown_input(inp: Any) -> Any:
    """The input as the receipt keeps it: whole, or its JSON cut at INPUT_SHOWN characters."""
    try:
        text = json.dumps(inp, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(inp)
    if len(text) <= INPUT_SHOWN:
        return inp
    return {"cut_json": text[:INPUT_SHOWN], "chars": len(text)}



def shown_arg(inp: dict[str, Any]) -> str:
    """The gist of a tool call's input for a progress line: an id or a query."""
    value = next((inp[k] for k in ("id", "query", "name") if k in inp), "")
    return " ".join(str(value).split())[:60]
