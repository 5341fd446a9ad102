"""Cards a person said are different: a rejected merge is not proposed again.

Kept in the store, committed (teammates share it), in `DISTINCT.md` at its root (a
Markdown file no walk takes for a card, as README.md; one an adopted folder's .gitignore
lets in), one line per decision, sorted (two people's lines then merge without a
conflict more often than not):

    - 2026-12-02 · reference/api-v2 `3f0c9a1b2c3d4e5f` · reference/api-v3 `9a1b…`

The cards of a line are pairwise distinct while each still has the text whose digest
(store/learning/proposals.py's) is written beside it: once one of them changes, the
pass may find them again. Written by `cardmem maintain --reject FINDING` and by
`cardmem review reject` of any part of a merge maintain proposed. Pure file handling: the
callers compute digests and commit.
"""
from __future__ import annotations

import os
import re
from datetime import date
from itertools import combinations

FILE = "DISTINCT.md"  # in cards.paths.NOT_CARDS
HEAD = """# Cards that are not duplicates

A person said so (`cardmem maintain --reject`, or rejecting a merge in `cardmem review`).
`cardmem maintain` does not find them duplicates again while each card is unchanged (the
digest of its text is beside it). One line per decision; delete one to undo it.

"""
_SEP = " · "
_CARD = re.compile(r"^(.+) `([0-9a-f]+)`$")


def _lines(root: str | os.PathLike[str]) -> list[str]:
    try:
        with open(os.path.join(os.fspath(root), FILE), encoding="utf-8") as f:
            return [ln.rstrip("\n") for ln in f if ln.startswith("- ")]
    except (OSError, UnicodeDecodeError):
        return []


def apart(root: str | os.PathLike[str], digests: dict[str, str]) -> set[tuple[str, str]]:
    """(a, b), a < b: pairs of cards a person called distinct that are unchanged since
    (digests: id -> the digest of its text now)."""
    out: set[tuple[str, str]] = set()
    for line in _lines(root):
        held = [m.group(1) for part in line[2:].split(_SEP)[1:]
                if (m := _CARD.match(part.strip())) and digests.get(m.group(1)) == m.group(2)]
        out.update(combinations(sorted(held), 2))
    return out


def with_decision(root: str | os.PathLike[str], cards: dict[str, str],
                  today: str | None = None) -> bytes:
    """The file's new bytes with one more line: `cards` (id -> digest) are distinct."""
    line = "- " + _SEP.join([today or date.today().isoformat(),
                             *(f"{cid} `{cards[cid]}`" for cid in sorted(cards))])
    lines = sorted(set(_lines(root)) | {line})
    return (HEAD + "".join(f"{ln}\n" for ln in lines)).encode("utf-8")
