"""The one error type users see: `cardmem: <what>: <why>` and an exit code."""
from __future__ import annotations


class CardmemError(Exception):
    """An error worth one line to a person: what it concerns, and why."""

    exit_code = 1

    def __init__(self, what: str, why: str, exit_code: int | None = None) -> None:
        super().__init__(f"{what}: {why}")
        self.what, self.why = what, why
        if exit_code is not None:
            self.exit_code = exit_code


class StoreBusy(CardmemError):
    """The store's write lock is held by another writer past our timeout."""

    exit_code = 4


class BadId(CardmemError):
    """A card id that is not a safe address inside the store."""

    exit_code = 2


class NotFound(CardmemError):
    """A card, base, document or receipt that is not there (exit 1, like any error)."""
