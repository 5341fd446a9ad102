"""What the watcher's parts say and count: one voice on stderr, one tally."""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable


def _default_say(line: str) -> None:
    print(f"cardmem: watch: {line}", file=sys.stderr, flush=True)


@dataclass
class Stats:
    """What the watcher did, for tests, `--verbose` and the benchmark."""

    batches: int = 0
    ids_applied: int = 0
    errors: int = 0
    restarts: int = 0
    commits: int = 0
    not_committed: int = 0
    rescans: Counter[str] = field(default_factory=Counter)


class Voice:
    """Lines for stderr, shared by the watcher's parts; a line repeated back to back is
    said once unless forced."""

    def __init__(self, say: "Callable[[str], None] | None", verbose: bool) -> None:
        self.say = say if say is not None else _default_say
        self.verbose = verbose
        self.stats = Stats()
        self._last = ""

    def tell(self, line: str, *, force: bool = False) -> None:
        if not force and line == self._last:
            return
        self._last = line
        try:
            self.say(line)
        except Exception:  # noqa: BLE001 - a closed stderr must not kill the watcher
            pass

    def failed(self, doing: str, exc: BaseException) -> None:
        self.stats.errors += 1
        self.tell(f"error while {doing}: {type(exc).__name__}: {exc}", force=True)
