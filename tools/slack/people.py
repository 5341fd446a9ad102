"""The asker's person card, by the Slack user id in its frontmatter (`slack: U…`)."""
from __future__ import annotations

import threading
import time
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.index.pile_view import catalog
from cardmem.store.store import Store

PERSON_TYPES = ("person", "user")


class People:
    """Slack user id -> person card id, re-read at most every `ttl_s` seconds (person cards
    change rarely; a question must not pay for reading them all)."""

    def __init__(self, store: Store, ttl_s: float = 30.0) -> None:
        self.store, self.ttl_s = store, ttl_s
        self._map: dict[str, str] | None = None
        self._at = 0.0
        self._lock = threading.Lock()

    def card_for(self, user_id: str) -> str | None:
        with self._lock:
            now = time.monotonic()
            if self._map is None or now - self._at > self.ttl_s:
                self._map, self._at = self._load(), now
            return self._map.get(user_id)

    def _load(self) -> dict[str, str]:
        cards, _ = catalog(self.store)
        out: dict[str, str] = {}
        for c in sorted(cards, key=lambda c: c.id):
            if c.type not in PERSON_TYPES:
                continue
            try:
                value: Any = self.store.read(c.id).meta.get("slack")
            except CardmemError:
                continue
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and v.strip():
                    out.setdefault(v.strip(), c.id)
        return out


def asker_name(card_id: str | None, user_id: str) -> str:
    """What `ask` is told: a name its pile finds the person card by (the card id's last
    part), or the Slack id, which no card answers to, for an unknown asker."""
    return card_id.rsplit("/", 1)[-1] if card_id else f"slack:{user_id}"
