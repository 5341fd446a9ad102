"""What every importer hands the planner: drafts of cards, and the input it skipped.

An importer reads another tool's memory (a file or a folder) and returns `Parsed`: one
`Draft` per card it would make, each with a key that stays the same when the same
source is imported again (so a re-run finds the card it made), and one `Skipped` per
line or file it could not read, with where and why. Importers never touch the store.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from cardmem.store.cards import card as cardlib

# The frontmatter keys an import owns: compared on re-import, three ways (what the
# import wrote last, what the source says now, what the card says now).
MANAGED = ("title", "type", "description", "aliases", "tags", "project")


@dataclass
class Draft:
    """A card an importer would make. `key` names the item inside its source (a
    heading, a file, an entity); `group` items may be paired when one is renamed."""

    key: str
    title: str
    type: str
    body: str
    description: str | None = None
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    project: str | None = None
    group: str | None = None

    def fields(self) -> dict[str, Any]:
        """The managed keys with a value, in the order a new card lists them."""
        out: dict[str, Any] = {"title": self.title, "type": self.type}
        if self.description:
            out["description"] = self.description
        if self.aliases:
            out["aliases"] = list(self.aliases)
        if self.tags:
            out["tags"] = list(self.tags)
        if self.project:
            out["project"] = self.project
        return out


@dataclass
class Skipped:
    """Input that was not imported: `where` is a file, or a file and line."""

    where: str
    why: str

    def as_dict(self) -> dict[str, str]:
        return {"where": self.where, "why": self.why}


@dataclass
class Parsed:
    drafts: list[Draft] = field(default_factory=list)
    # The file or folder the drafts came from (a folder given for a file: the file).
    origin: Path | None = None
    skipped: list[Skipped] = field(default_factory=list)
    # Links that name nothing the source holds (kept as written; `cardmem maintain` lists them).
    unresolved: list[str] = field(default_factory=list)


def shown(path: Path) -> str:
    """A path as a person reads it (and as the `source:` of a card keeps it): under the
    home folder with `~`, so the same import from another machine of theirs matches."""
    home = os.path.expanduser("~")
    text = str(path)
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home):]
    return text


# A source file is read whole; one larger than this is no memory file of a person.
MAX_SOURCE_BYTES = 64 * 1024 * 1024


def read_text(path: Path, skipped: list[Skipped]) -> str | None:
    """A source file's text, or None with the reason added to skipped (binary, not
    UTF-8, too large, unreadable). A source may be larger than one card (a memory.json)."""
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise cardlib.CardProblem(f"too large ({size:,} bytes; the limit "
                                      f"is {MAX_SOURCE_BYTES:,})")
        raw = cardlib.read_regular(path)
        if b"\x00" in raw:
            raise cardlib.CardProblem("binary content (NUL byte)")
        try:
            return raw.decode("utf-8").replace("\r\n", "\n")  # cards keep \n endings
        except UnicodeDecodeError as exc:
            raise cardlib.CardProblem(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                                      f"{exc.start})") from None
    except cardlib.CardProblem as exc:
        skipped.append(Skipped(shown(path), str(exc)))
    except OSError as exc:
        skipped.append(Skipped(shown(path), f"unreadable: {exc.strerror or exc}"))
    return None


def front(text: str, where: str, skipped: list[Skipped]) -> tuple[dict[str, Any], str] | None:
    """(frontmatter, body) of a Markdown note, or None with why added to skipped."""
    try:
        c = cardlib.parse(text, "import")
    except cardlib.CardProblem as exc:
        skipped.append(Skipped(where, str(exc)))
        return None
    span = cardlib.split(text)
    return c.meta, text[span[2]:] if span else text


def read_notes(files: Iterable[Path],
               skipped: list[Skipped]) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """(path, frontmatter, body) of each Markdown note that reads and parses; the others
    are named in skipped."""
    for p in files:
        text = read_text(p, skipped)
        if text is None:
            continue
        got = front(text, shown(p), skipped)
        if got is not None:
            yield p, *got


def as_list(value: Any) -> list[str]:
    """A list of strings from YAML that may say `[a, b]`, `a, b` or `a`."""
    if value in (None, ""):
        return []
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v not in (None, "") and str(v).strip()]
    return [p.strip() for p in str(value).split(",") if p.strip()]
