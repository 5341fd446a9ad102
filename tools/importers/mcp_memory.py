"""`mcp-memory`: the reference MCP memory server's knowledge graph (`memory.json`).

The server (@modelcontextprotocol/server-memory) keeps one JSON object a line:
`{"type": "entity", "name": …, "entityType": …, "observations": [...]}` and
`{"type": "relation", "from": …, "to": …, "relationType": …}` (some forks save one
`{"entities": [...], "relations": [...]}` document instead; that is read too).

Each entity becomes a card titled by its name, typed from its entityType (person,
project, a rule or preference as feedback, anything else an entity), its observations
as body lines; each relation a `[[link]]` on both cards: `- works_at [[Acme]]` on the
one it starts from, `- [[Jane_Doe]] works_at Acme` on the other.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cardmem.store.cards.paths import slugify

from .model import Draft, Parsed, Skipped, read_text, shown

TYPES = {"person": "person", "people": "person", "user": "person", "human": "person",
         "project": "project", "rule": "feedback", "preference": "feedback",
         "guideline": "feedback", "instruction": "feedback", "convention": "feedback"}


@dataclass
class _Entity:
    name: str
    kind: str
    observations: list[str] = field(default_factory=list)
    out: list[tuple[str, str]] = field(default_factory=list)  # (relation, to)
    into: list[tuple[str, str]] = field(default_factory=list)  # (from, relation)


def parse(path: Path, project: str | None) -> Parsed:
    out = Parsed()
    if path.is_dir():
        path = next((path / n for n in ("memory.jsonl", "memory.json") if (path / n).is_file()),
                    path)
    if path.is_dir():
        out.skipped.append(Skipped(shown(path), "is a folder with no memory.json"))
        return out
    out.origin = path
    text = read_text(path, out.skipped)
    if text is None:
        return out
    where = shown(path)
    items = _items(text, where, out.skipped)
    entities: dict[str, _Entity] = {}
    relations: list[tuple[str, dict[str, Any]]] = []
    for at, item in items:
        kind = item.get("type")
        if kind == "relation" or (kind is None and {"from", "to"} <= item.keys()):
            relations.append((at, item))
            continue
        if kind not in ("entity", None):
            out.skipped.append(Skipped(at, f"type {kind!r} is neither entity nor relation"))
            continue
        name, obs = item.get("name"), item.get("observations", [])
        if not isinstance(name, str) or not name.strip():
            out.skipped.append(Skipped(at, "an entity without a name"))
            continue
        if not isinstance(obs, list) or not all(isinstance(o, str) for o in obs):
            out.skipped.append(Skipped(at, f"entity {name!r}: observations is not a list of "
                                           "strings"))
            continue
        e = entities.setdefault(name, _Entity(name, str(item.get("entityType") or "entity")))
        e.observations += [o for o in obs if o not in e.observations]
    for at, r in relations:
        a, b, rel = r.get("from"), r.get("to"), r.get("relationType")
        if not all(isinstance(v, str) and v.strip() for v in (a, b, rel)):
            out.skipped.append(Skipped(at, "a relation needs from, to and relationType"))
            continue
        if a in entities:
            entities[a].out.append((rel, b))
        if b in entities:
            entities[b].into.append((a, rel))
        for end in (a, b):
            if end not in entities:
                out.unresolved.append(f"{at}: {end!r} is no entity of the file")
    for e in entities.values():
        out.drafts.append(_draft(e, project))
    if not items and not out.skipped and text.strip():
        out.skipped.append(Skipped(where, "holds no entities or relations"))
    return out


def _items(text: str, where: str, skipped: list[Skipped]) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) of each entity or relation: JSON lines, or one graph document."""
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and ("entities" in doc or "relations" in doc):
            return [(f"{where} entity {n}", e) for n, e in enumerate(doc.get("entities") or [], 1)
                    if isinstance(e, dict)] + \
                   [(f"{where} relation {n}", r) for n, r in
                    enumerate(doc.get("relations") or [], 1) if isinstance(r, dict)]
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        at = f"{where}:{n}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            skipped.append(Skipped(at, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        if not isinstance(obj, dict):
            skipped.append(Skipped(at, "not a JSON object"))
            continue
        items.append((at, obj))
    return items


def _draft(e: _Entity, project: str | None) -> Draft:
    card_type = TYPES.get(e.kind.strip().lower(), "entity")
    scoped = None
    if card_type == "project":
        scoped = project or slugify(e.name.replace("_", " "))
    elif card_type == "feedback":
        scoped = project
    lines = [f"- {o}" for o in e.observations]
    rels = [f"- {rel} [[{to}]]" for rel, to in e.out] + \
           [f"- [[{a}]] {rel} {e.name}" for a, rel in e.into]
    body = "\n".join(lines) + ("\n\n## Relations\n" + "\n".join(rels) if rels else "")
    # `Jane_Doe` is titled "Jane Doe"; its name stays an alias, so links by it resolve.
    title = " ".join(e.name.replace("_", " ").split()) or e.name
    aliases = [e.name] if title != e.name else []
    return Draft(e.name, title, card_type, body.strip("\n") + "\n", aliases=aliases,
                 tags=[slugify(e.kind)], project=scoped)
