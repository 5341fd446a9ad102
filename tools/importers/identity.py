"""Which card an imported item is: by its anchor, else by its text; never by its place.

A source's items move: rules are reordered, removed, added, moved to another section,
reworded. An item is the card an earlier import made of it when
1. its key (the anchor: a heading, a file, an entity; a rule's own words) is the one the
   card records in `source:`, and its text, normalised (case, spacing, Markdown emphasis
   and punctuation aside), is the card's;
2. else its text is the card's, or what the import last wrote into it (an item moved to
   another section, a heading renamed, the second of two sections of one name);
3. else its key is the card's (the text changed: updated three ways, plan.py);
4. else its text is nearly the card's (SIMILAR, of rapidfuzz's ratio): a reworded item.
   The closest pair is taken first, one card per item.

The cards are the live ones this source made and the ones a person deleted since: an
item that is one of those is never made again, whatever else moved. Where nothing says
so, an item is new; and a card no item is stays as it is (the plan reports it gone).
Position decides nothing: pairing by position once revived a deleted rule under the id of
another that had been removed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from rapidfuzz.fuzz import ratio

from .model import Draft

SIMILAR = 0.85  # ratio of normalised texts: "Always write a test…" for "Write a test…"
# is 0.92; "Never push to main" / "…to prod" 0.78, "Always run…" / "Never run…" 0.77.


@dataclass
class Known:
    """A card this source made: live, or deleted by a person (its text at deletion)."""

    src: str  # its `source:` key
    card: Any  # cardlib.Card
    deleted: bool = False
    texts: list[str] = field(default_factory=list)  # other texts it was (what the import wrote)


_MARKUP = re.compile(r"[*_`~>#\[\]()!|\"'.,;:?-]+")


def norm(text: str) -> str:
    """Text as identity sees it: no case, Markdown emphasis, punctuation or spacing."""
    return " ".join(_MARKUP.sub(" ", text.casefold()).split())


def _ratio(a: str, b: str) -> float:
    return ratio(a, b) / 100.0


def match(wanted: dict[str, Draft], known: Iterable[Known], prefix: str,
          earlier: Callable[[Known], list[str]] | None = None) -> dict[str, Known]:
    """Item (source key, `prefix` + the item's key) -> the card it is, for the items that
    are one (see the module). `earlier(k)` gives what the import once wrote into a live
    card or a deleted one (asked only for cards the first pass left: it reads git)."""
    pool = list(known)
    by_src: dict[str, Known] = {}
    for k in pool:  # a live card before a deleted one of the same key
        if k.src not in by_src or by_src[k.src].deleted and not k.deleted:
            by_src[k.src] = k
    found: dict[str, Known] = {}
    taken: set[int] = set()

    def take(src: str, k: Known) -> None:
        found[src] = k
        taken.add(id(k))

    mine = {src: norm(d.body) for src, d in wanted.items()}
    # 1: key and text agree (every item of a source imported again unchanged)
    for src in wanted:
        k = by_src.get(src)
        if k is not None and mine[src] == norm(k.card.body):
            take(src, k)
    left = [k for k in pool if id(k) not in taken]
    if len(found) == len(wanted) or not left:
        return found
    if earlier is not None:
        # A deleted card too: a person may have edited it before deleting it, and the
        # item is still what the import last wrote into it.
        for k in left:
            k.texts = earlier(k)
    forms = {id(k): {norm(t) for t in (k.card.body, *k.texts) if t.strip()} for k in left}

    def may(src: str, k: Known) -> bool:
        # A deleted card is an item only when the item's own key holds no live card: an
        # entity whose text became another's, deleted one, is still that entity.
        own = by_src.get(src)
        return id(k) not in taken and (not k.deleted or own is None or own.deleted
                                       or own is k)

    # 2: the same text (a moved, renamed or repeated item), its own key's card first
    for src in wanted:
        if src in found or not mine[src]:
            continue
        same = [k for k in left if mine[src] in forms[id(k)] and may(src, k)]
        if same:
            same.sort(key=lambda k: (k.src != src, k.deleted))
            take(src, same[0])
    # 3: the key (the item's text changed here, or upstream, or both: three ways)
    for src in wanted:
        k = by_src.get(src)
        if src not in found and k is not None and id(k) not in taken:
            take(src, k)
    # 4: the closest reworded text, one card per item
    scored = []
    for i, src in enumerate(s for s in wanted if s not in found):
        for j, k in enumerate(left):
            if id(k) in taken:
                continue
            best = max((_ratio(mine[src], f) for f in forms[id(k)]), default=0.0)
            if best >= SIMILAR:
                same_group = _group(k.src[len(prefix):]) == wanted[src].group
                scored.append((-best, not same_group, i, j, src, k))
    for *_, src, k in sorted(scored, key=lambda t: t[:4]):
        if src not in found and id(k) not in taken:
            take(src, k)
    return found


def _group(key: str) -> str | None:
    """The section of a rule's key (`code-style/use-ruff`), as Draft.group names it."""
    return key.rsplit("/", 1)[0] if "/" in key else None
