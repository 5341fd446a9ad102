"""`broken-link`: a `[[target]]` that resolves to no card by id, title or alias.

Links are read, and keyed, by store/cards/links.py (code is no link there). A broken
link's fix is unambiguous when git saw the card it named renamed (`git log -M`): then
--apply rewrites the link. A close title or id (rapidfuzz) is only suggested, never
applied.
"""
from __future__ import annotations

from ..cards.links import key, links
from .survey import Finding, Survey

CLOSE = 88  # rapidfuzz WRatio at or above: a name worth suggesting


class Resolver:
    """What a link target may name: a card's id, title or alias (case-insensitive)."""

    def __init__(self, survey: Survey) -> None:
        self.names: dict[str, set[str]] = {}
        for c in survey.cards.values():
            for name in (c.id, c.title, *c.aliases):
                self.names.setdefault(key(name), set()).add(c.id)
        self.survey = survey

    @property
    def renames(self) -> dict[str, str]:
        return self.survey.renames  # a git log, asked only once a link names no card

    def resolves(self, target: str) -> bool:
        return key(target) in self.names

    def renamed_to(self, target: str) -> str | None:
        new = self.renames.get(target.removesuffix(".md").strip("/"))
        return new if new is not None and key(new) in self.names else None

    def closest(self, target: str) -> str | None:
        """The one name that comes close to target, or None (none, or several)."""
        from rapidfuzz import fuzz, process  # here: only a broken link pays its import

        hits = process.extract(key(target), list(self.names), scorer=fuzz.WRatio,
                               score_cutoff=CLOSE, limit=2)
        if len(hits) == 1 or (len(hits) == 2 and hits[0][1] - hits[1][1] >= 5):
            ids = self.names[hits[0][0]]
            return next(iter(ids)) if len(ids) == 1 else None
        return None


def find(survey: Survey) -> list[Finding]:
    resolver: Resolver | None = None  # made at the first link: many stores have none
    out: list[Finding] = []
    for cid in sorted(survey.cards):
        text = survey.cards[cid].text
        for target, _ in links(text):
            resolver = resolver or Resolver(survey)
            if resolver.resolves(target):
                continue
            if new := resolver.renamed_to(target):
                out.append(Finding("broken-link", [cid, new], f"[[{target}]] names no card; "
                                   f"git saw {target} renamed to {new}",
                                   f"point the link at [[{new}]] (--apply does)",
                                   fix={"card": cid, "target": target, "new": new}))
                continue
            near = resolver.closest(target)
            out.append(Finding("broken-link", [cid], f"[[{target}]] names no card",
                               f"did you mean [[{near}]]? edit the card" if near else
                               "create the card, or remove or fix the link"))
    return out
