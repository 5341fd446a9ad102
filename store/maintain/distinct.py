"""Cards a person said are different: a rejected merge is not proposed again.

Kept in the store, committed (teammates share it), in `maintain-distinct.txt` at its
root, one line per decision, sorted (so two people's lines merge without a conflict
more often than not):

    2026-12-02<TAB>reference/api-v2<TAB>3f0c…<TAB>reference/api-v3<TAB>9a1b…

The cards of a line are pairwise distinct while each still has the text whose digest
(store/learning/proposals.py's) is written beside it: once one of them changes, the
pass may find them again. Written by `cardmem maintain --reject FINDING` and by
`cardmem review reject` of any part of a merge maintain proposed. Pure file handling: the
callers compute digests and commit.
"""
from __future__ import annotations

import os
from datetime import date
from itertools import combinations

FILE = "maintain-distinct.txt"
HEAD = ("# Cards a person said are different (`cardmem maintain --reject`); each line:\n"
        "# date, then card id and digest of its text, for every card of the decision.\n")


def _lines(root: str | os.PathLike[str]) -> list[str]:
    try:
        with open(os.path.join(os.fspath(root), FILE), encoding="utf-8") as f:
            return [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    except (OSError, UnicodeDecodeError):
        return []


def apart(root: str | os.PathLike[str], digests: dict[str, str]) -> set[tuple[str, str]]:
    """(a, b), a < b: pairs of cards a person called distinct that are unchanged since
    (digests: id -> the digest of its text now)."""
    out: set[tuple[str, str]] = set()
    for line in _lines(root):
        fields = line.split("\t")[1:]
        held = [cid for cid, d in zip(fields[0::2], fields[1::2]) if digests.get(cid) == d]
        out.update(combinations(sorted(held), 2))
    return out


def with_decision(root: str | os.PathLike[str], cards: dict[str, str],
                  today: str | None = None) -> bytes:
    """The file's new bytes with one more line: `cards` (id -> digest) are distinct."""
    line = "\t".join([today or date.today().isoformat(),
                      *(x for cid in sorted(cards) for x in (cid, cards[cid]))])
    lines = sorted(set(_lines(root)) | {line})
    return (HEAD + "".join(f"{ln}\n" for ln in lines)).encode("utf-8")
