"""`basic-memory`: a basic-memory project, a folder of Markdown notes.

A note is frontmatter (`title`, `type`, `tags`, `permalink`), then Markdown whose
observations (`- [category] text #tag (context)`) and relations (`- relation_type
[[Other Note]] (context)`) sit anywhere, conventionally under `## Observations` and
`## Relations`. Each note becomes a card with its title, its tags, and its permalink as
an alias; its body is kept verbatim, so observations stay body lines and relations stay
`[[links]]`, which resolve to the imported cards by their titles and permalinks.
"""
from __future__ import annotations

import os
from pathlib import Path

from cardmem.store.cards.links import key, links
from cardmem.store.cards.paths import slugify

from .model import Draft, Parsed, Skipped, as_list, read_notes, shown

# basic-memory's entity types (free text; `note` by default) to card types.
TYPES = {"person": "person", "people": "person", "project": "project",
         "organization": "entity", "organisation": "entity", "company": "entity",
         "team": "entity", "service": "entity", "tool": "entity", "product": "entity",
         "entity": "entity", "reference": "reference"}


def parse(path: Path, project: str | None) -> Parsed:
    out = Parsed()
    if not path.is_dir():
        out.skipped.append(Skipped(shown(path), "is not a folder; give the basic-memory "
                                                "project's folder"))
        return out
    out.origin = path
    files = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        files += [Path(dirpath) / f for f in sorted(filenames)
                  if f.endswith(".md") and not f.startswith(".")]
    if not files:
        out.skipped.append(Skipped(shown(path), "holds no Markdown notes; not a "
                                                "basic-memory project"))
        return out
    names: set[str] = set()
    for p, meta, body in read_notes(files, out.skipped):
        rel = p.relative_to(path).as_posix()
        title = str(meta.get("title") or "").strip() or _first_heading(body) or p.stem
        kind = TYPES.get(str(meta.get("type") or "note").strip().lower(), "reference")
        scoped = project if kind != "person" else None
        if kind == "project" and not scoped:
            scoped = slugify(title)
        if scoped and kind == "reference":
            kind = "project"
        permalink = str(meta.get("permalink") or "").strip()
        # A relation may name a note by title, permalink or path: each is an alias.
        aliases = []
        for name in (permalink, rel[:-3]):
            if name and name.casefold() not in {a.casefold() for a in (title, *aliases)}:
                aliases.append(name)
        out.drafts.append(Draft(rel, title, kind, body.strip("\n") + "\n", aliases=aliases,
                                tags=as_list(meta.get("tags")), project=scoped))
        names.update(key(n) for n in (title, *aliases))
    for d in out.drafts:
        for target, _ in links(d.body):
            if key(target) not in names:
                out.unresolved.append(f"{d.key}: [[{target}]]")
    return out


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip() or None
    return None
