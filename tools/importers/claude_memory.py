"""`claude-memory`: Claude Code's auto memory, `~/.claude/projects/<project>/memory/`.

The folder holds `MEMORY.md`, an index Claude Code loads at session start, whose
entries are one line each (`- [Title](topic.md) — one-line hook`), and topic files
(`debugging.md`, `feedback_testing.md`, …) it reads on demand. A topic file may carry
frontmatter (`name`, `description`, `type: user | feedback | project | reference`).

Each topic file becomes a card: its title from `name`, the index entry or its first
heading; its description from the index entry's hook or `description`; its type from
`type` (else `project`, scoped to the project); its body verbatim. Notes written in
MEMORY.md itself, outside the index entries, become one card of the project.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from cardmem.store.cards.paths import project_key

from .model import Draft, Parsed, Skipped, read_notes, read_text, shown

INDEX = "MEMORY.md"
TYPES = {"user", "feedback", "project", "reference"}
# `- [Title](file.md) — hook`, with -, –, — or : before the hook (or none).
ENTRY = re.compile(r"^\s*[-*+]\s+\[([^\]]+)\]\(([^)\s]+\.md)\)\s*(?:[-–—:]+\s*(.*))?$")
HEADING = re.compile(r"^#{1,6}\s")


def folder_of(path: Path) -> Path:
    """The memory folder: PATH, MEMORY.md's folder, or the `memory/` of a project folder."""
    if path.is_file() and path.name == INDEX:
        return path.parent
    return path / "memory" if (path / "memory").is_dir() and not (path / INDEX).exists() \
        else path


def guess_project(path: Path) -> Path | str | None:
    """The project of `~/.claude/projects/<name>/memory`: <name> is the project's path
    with every `/` (and other non-alphanumeric character) made `-`. The folder it names
    is found again on this machine when it exists; else the name's last part."""
    folder = folder_of(path).absolute()
    name = folder.parent.name if folder.name == "memory" else folder.name
    found = _unsanitize(name)
    if found is not None:
        return found
    # Another machine's path: without its home folder (`-home-tess-`, `-Users-tess-`).
    home = _sanitized(os.path.expanduser("~")) + "-"
    rest = name[len(home):] if name.startswith(home) else \
        re.sub(r"^-(?:home|Users)-[^-]+-", "", name)
    return project_key(rest.strip("-")) if rest.strip("-") else None


def _sanitized(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", text)


def _unsanitize(name: str) -> Path | None:
    """The existing folder whose sanitized path is `name`, walking down from / (greedy
    on the longest matching folder name), or None."""
    here, rest = Path("/"), name.removeprefix("-")
    while rest:
        try:
            subs = sorted((e.name for e in os.scandir(here) if e.is_dir()), key=len, reverse=True)
        except OSError:
            return None
        nxt = next((s for s in subs if rest == _sanitized(s) or
                    rest.startswith(_sanitized(s) + "-")), None)
        if nxt is None:
            return None
        here, rest = here / nxt, rest[len(nxt) + 1:]
    return here if here != Path("/") else None


def parse(path: Path, project: str | None) -> Parsed:
    out = Parsed()
    folder = folder_of(path)
    if not folder.is_dir():
        out.skipped.append(Skipped(shown(path), "is not an auto-memory folder (give the "
                                                "folder holding MEMORY.md)"))
        return out
    out.origin = folder
    entries: dict[str, tuple[str, str | None]] = {}
    index = folder / INDEX
    notes: list[str] = []
    if index.is_file():
        text = read_text(index, out.skipped)
        for n, line in enumerate((text or "").splitlines(), 1):
            m = ENTRY.match(line)
            if not m:
                notes.append(line)
                continue
            target = folder / m.group(2)
            if not target.is_file() or target.parent != folder:
                out.skipped.append(Skipped(f"{shown(index)}:{n}", f"names {m.group(2)}, "
                                                                  "which is not in the folder"))
                continue
            entries[m.group(2)] = (m.group(1).strip(), (m.group(3) or "").strip() or None)
    topics = sorted(p for p in folder.glob("*.md") if p.name != INDEX and p.is_file())
    if not index.is_file() and not topics:
        out.skipped.append(Skipped(shown(folder), "holds no MEMORY.md and no topic files; "
                                                  "not an auto-memory folder"))
        return out
    for p, meta, body in read_notes(topics, out.skipped):
        title, hook = entries.get(p.name, (None, None))
        nested = meta.get("metadata")  # some write `metadata: {type: …}`
        kind = str((nested.get("type") if isinstance(nested, dict) else None)
                   or meta.get("type") or "").strip().lower()
        card_type = kind if kind in TYPES else ("project" if project else "reference")
        title = str(meta.get("name") or "").strip() or title or _first_heading(body) or \
            p.stem.replace("_", " ").replace("-", " ")
        desc = hook or str(meta.get("description") or "").strip() or None
        scoped = project if card_type in ("project", "feedback", "reference") else None
        out.drafts.append(Draft(p.name, title, card_type, body.strip("\n") + "\n",
                                description=desc, project=scoped))
    # The index's own title and the blank lines the entries leave are not notes.
    kept = re.sub(r"\n{3,}", "\n\n", "\n".join(
        ln for ln in notes if not ln.startswith("# "))).strip("\n")
    if any(ln.strip() and not HEADING.match(ln) for ln in notes):
        title = f"Auto memory of {project}" if project else "Auto memory notes"
        out.drafts.append(Draft(INDEX, title, "project" if project else "reference",
                                kept + "\n", description="Notes kept in Claude Code's MEMORY.md",
                                project=project))
    return out


def _first_heading(body: str) -> str | None:
    for line in body.splitlines():
        if HEADING.match(line):
            return line.lstrip("#").strip() or None
    return None
