"""A store opened for reading the pile, without the card parser, the writer or git.

The SessionStart hook runs as a new process before every coding session; importing
`store.store` brings the card parser (dataclasses, inspect, typing), the writer (tempfile,
subprocess) and git's runner with it, a third of the hook's budget (bench/RESULTS.md,
"Figures from comments"); YAML waits until a card is parsed, in either.
`StoreRoot` offers what the pile reads (root, settings, state folder, card paths, and a
scan of every card, whose parser is imported only then); `store.Store` builds on it.
"""
from __future__ import annotations

import json
import os
import time
from functools import cached_property
from pathlib import Path

TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any, Self

from .appendlog import append
from .cards import paths
from .git.head_file import require_store
# config (tomllib) and the card scan are imported where used: a hook that finds the
# settings cached loads neither.

CONFIG_FILE = "cardmem.toml"  # config.FILE; config itself imports tomllib

SETTINGS_CACHE = "settings.json"  # cardmem.toml, parsed, with the file's (mtime, size)
# A file written this recently is not cached: mtimes come from a coarse clock.
RACY_NS = 2_000_000_000

READS_LOG = "reads.log"  # `epoch id` lines; read and compacted by store/maintain/reads.py
SEARCH_READS = 3  # a search's top results count as read


class StoreRoot:
    """Where a store is and how it is opened; store.Store builds on it."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().absolute()

    @classmethod
    def open(cls, root: Path | str | None = None) -> Self:
        """The store at root (or the default one): it must exist and be a git repo."""
        store = cls(root if root is not None else paths.default_store())
        require_store(store.root)
        return store

    @cached_property
    def config(self) -> dict[str, dict[str, Any]]:
        """The store's settings; parsed once per version of cardmem.toml (tomllib's import
        is dear for a hook: bench/RESULTS.md, "Figures from comments"), then read back
        from .cardmem/settings.json."""
        try:
            st = (self.root / CONFIG_FILE).stat()
            stamp = [st.st_mtime_ns, st.st_size]
        except OSError:
            from . import config

            return config.load(self.root)  # no file: the defaults, no TOML to parse
        cache = self.root / ".cardmem" / SETTINGS_CACHE
        try:
            data = json.loads(cache.read_text())
            if data["stamp"] == stamp:
                return data["config"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        from . import config

        cfg = config.load(self.root)  # a malformed file raises here, and is never cached
        if time.time_ns() - st.st_mtime_ns < RACY_NS:
            return cfg  # a rewrite within the same clock tick would keep this stamp
        try:
            write_cache(self.state_dir / SETTINGS_CACHE,
                        json.dumps({"stamp": stamp, "config": cfg}).encode())
        except (OSError, TypeError, ValueError):
            pass
        return cfg

    @property
    def state_dir(self) -> Path:
        d = self.root / ".cardmem"
        d.mkdir(exist_ok=True)
        return d

    def path(self, card_id: str) -> Path:
        return paths.card_path(self.root, card_id)

    def note_reads(self, ids: Any, now: float | None = None) -> None:
        """Note that a reader was given these cards (`stale` asks when a card was last
        read): one O_APPEND write of `epoch id` lines to .cardmem/reads.log, no store
        lock (appends of a few KB do not interleave), never raises."""
        stamp = int(time.time() if now is None else now)
        data = "".join(f"{stamp} {i}\n" for i in dict.fromkeys(ids) if i and "\n" not in i)
        if not data:
            return
        try:
            append(self.state_dir / READS_LOG, data)
        except OSError:
            pass

    def scan(self, parse: Any = None) -> Any:
        """Every card, parsed: what a pile needs when there is no index (cards/scan.py
        imports the card parser, YAML included, only now). `parse`: as cards/scan.py's."""
        from .cards.scan import scan

        return scan(self.root) if parse is None else scan(self.root, parse)


def write_cache(path: Path, data: bytes) -> None:
    """Replace a derived file in .cardmem/ (rebuildable, so no fsync): temp file, rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
