"""Words in what cardmem prints: one card, two cards."""
from __future__ import annotations


def plural(n: int, word: str, words: str | None = None) -> str:
    """`1 card`, `2 cards`, `0 cards` (`words` for an irregular plural)."""
    return f"{n} {word if n == 1 else words or word + 's'}"
