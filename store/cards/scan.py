"""Every card of a store, parsed: what `map`, `doctor`, maintain and a pile without an
index read. Cards only (no writer, no git), so a StoreRoot can scan without a Store."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CardmemError
from . import card as cardlib
from . import paths


@dataclass
class Problem:
    """A file that looks like a card but cannot be read as one."""

    id: str
    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "reason": self.reason}


def card_files(root: Path, skipped: list[Problem] | None = None) -> Iterator[tuple[str, Path]]:
    """(id, path) of every card file, in a stable order; hidden folders skipped.
    `skipped` gets the files that look like cards but no id can address (`x.md.md`)."""
    top_dir = str(root)
    for dirpath, dirnames, filenames in os.walk(top_dir):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(paths.HIDDEN_PREFIX))
        folder = "" if dirpath == top_dir else \
            os.path.relpath(dirpath, top_dir).replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            if (cid := paths.id_of_path(folder + name)) is None:
                if skipped is not None and name.endswith(".md.md") and name[0] != ".":
                    skipped.append(Problem(folder + name[:-3], str(Path(dirpath) / name),
                                           "ends in .md.md, which no id can address; "
                                           "rename it to end in one .md"))
                continue
            yield cid, Path(dirpath) / name


def scan(root: Path, parse: Callable[[str, str, Path], cardlib.Card] = cardlib.parse
         ) -> tuple[list[cardlib.Card], list[Problem]]:
    """Every readable card under root, and every file that could not be read as one;
    `parse` (text, id, path) -> Card is card.parse or one that gives the same cards
    (index/fastmeta.py's parse)."""
    cards: list[cardlib.Card] = []
    problems: list[Problem] = []
    for cid, path in card_files(root, problems):
        try:
            if path.is_symlink():
                paths.card_path(root, cid)  # a link out of the store is no card
            cards.append(parse(cardlib.decode(cardlib.read_regular(path)), cid, path))
        except CardmemError as exc:
            problems.append(Problem(cid, str(path), exc.why))
        except cardlib.CardProblem as exc:
            problems.append(Problem(cid, str(path), str(exc)))
        except OSError as exc:
            problems.append(Problem(cid, str(path), f"unreadable: {exc.strerror}"))
    return cards, problems
