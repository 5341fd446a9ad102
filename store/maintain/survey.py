"""What every maintenance pass reads once: the store's cards, when git last changed each,
and what the passes report (Finding)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..cards import card as cardlib
from ..git import runner as git
from ..cards.paths import id_of_path
from ..cards.status import is_active
from ..index import fastmeta
from ..store import Problem, Store

AGENT_EMAIL = git.AGENT_EMAIL


@dataclass
class Finding:
    """One thing maintenance found: `ids` are the cards concerned (the one to keep first
    where that matters), `fix` what --apply needs to act (None: nothing it can do)."""

    kind: str
    ids: list[str]
    detail: str
    suggestion: str
    fix: dict[str, Any] | None = field(default=None, compare=False)
    applied: str | None = field(default=None, compare=False)  # the commit --apply made
    key: str | None = field(default=None, compare=False)  # a name `--reject` takes

    def as_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "ids": self.ids, "detail": self.detail,
               "suggestion": self.suggestion}
        if self.key:
            out["finding"] = self.key
        return out


@dataclass
class Survey:
    store: Store
    cards: dict[str, cardlib.Card]
    problems: list[Problem]
    now: float = field(default_factory=time.time)

    @classmethod
    def of(cls, store: Store, now: float | None = None) -> "Survey":
        cards, problems = store.scan(fastmeta.parse)
        return cls(store, {c.id: c for c in cards}, problems, now or time.time())

    def active(self) -> list[cardlib.Card]:
        return [c for c in self.cards.values() if is_active(c)]

    @cached_property
    def _last(self) -> dict[str, tuple[float, str]]:
        """id -> (time in epoch seconds, author e-mail) of the newest commit that touched
        the card; one git call for the whole store."""
        out: dict[str, tuple[float, str]] = {}
        log = git.run(self.store.root, "log", "--no-renames", "--format=\x1e%ct %ae",
                      "--name-only", check=False)
        for rec in log.split("\x1e")[1:]:
            head, *files = rec.strip().splitlines()
            stamp, _, author = head.partition(" ")
            for f in files:
                if (cid := id_of_path(f.strip())) is not None:
                    out.setdefault(cid, (float(stamp), author))
        return out

    @property
    def changed(self) -> dict[str, float]:
        return {cid: t for cid, (t, _) in self._last.items()}

    def last_changed(self, cid: str) -> float:
        """When git last changed the card; one git does not know yet is taken as new."""
        return self._last.get(cid, (self.now, ""))[0]

    def by_agent(self, cid: str) -> bool:
        """Whether an agent (cardmem-agent's address) made the card's last change."""
        return self._last.get(cid, (0.0, ""))[1] == AGENT_EMAIL

    @cached_property
    def renames(self) -> dict[str, str]:
        """old id -> the id git saw the card renamed to (chains followed to the end)."""
        log = git.run(self.store.root, "log", "-M", "--diff-filter=R", "--name-status",
                      "--format=", "--", check=False)
        moved: dict[str, str] = {}
        for line in reversed(log.splitlines()):  # oldest first: later renames win
            parts = line.split("\t")
            if len(parts) == 3 and parts[0].startswith("R") and (old := id_of_path(parts[1])) \
                    and (new := id_of_path(parts[2])):
                moved[old] = new
        out = {}
        for old in moved:
            new, seen = moved[old], {old}
            while new in moved and new not in seen:
                seen.add(new)
                new = moved[new]
            out[old] = new
        return out
