"""The duplicate pass's features of each card text, kept between runs in
`.cardmem/maintain-features` (derived, never committed, rebuildable): a later
`cardmem maintain` computes them only for texts it has not seen.

Keyed by the SHA-1 of the text they are computed from (duplicates.card_text), so a card
renamed keeps its entry and a card edited gets a new one. The file names the code that
computed it (a digest of the bytes of the modules that make features, named by the
caller, the Python version and the file's FORMAT): after a change of any of them it is not
read. marshal, not pickle: loading it runs no code. Any fault in reading or writing it
only costs the computing.

    kept = Kept(root, compute, sources)   # compute(text) -> (features, facts)
    kept.of(text) -> (features, facts)
    kept.save(complete)               # complete: texts not asked for are dropped
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Callable

from ..root import write_cache

FILE = "maintain-features"
FORMAT = b"2"  # rows of newline-joined strings (1: ids into a shared vocabulary)
_SEP = "\n"  # no feature holds one (features are parts of whitespace-split tokens)
Features = tuple[set[str], frozenset[str]]


def _code_digest(sources: list[str]) -> bytes:
    h = hashlib.sha1(sys.version.encode() + FORMAT)
    for path in sources:
        h.update(Path(path).read_bytes())
    return h.digest()


class Kept:
    def __init__(self, root: str | os.PathLike[str], compute: Callable[[str], Features],
                 sources: list[str]) -> None:
        """sources: the files of the code compute runs (their bytes name the file)."""
        self.path = Path(root) / ".cardmem" / FILE
        self.compute = compute
        self.old: dict[bytes, tuple[str, str]] = {}  # key -> (facts, the other features)
        self.new: dict[bytes, Features] = {}
        self.asked: set[bytes] = set()
        self.code = b""
        try:
            self.code = _code_digest(sources)
            with open(self.path, "rb") as f:
                code, old = marshal.loads(f.read())  # load(f) reads object by object
            if code == self.code and isinstance(old, dict):
                self.old = old
        except (OSError, EOFError, ValueError, TypeError):
            pass

    def of(self, text: str) -> Features:
        key = hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()
        self.asked.add(key)
        if (got := self.old.get(key)) is not None:
            try:
                fs, rest = got
                facts = frozenset(fs.split(_SEP) if fs != "" else ())
                return set(rest.split(_SEP) if rest != "" else ()).union(facts), facts
            except (TypeError, ValueError, AttributeError):  # a damaged entry: computed anew
                del self.old[key]
        if (done := self.new.get(key)) is None:
            done = self.new[key] = self.compute(text)
        return done

    def save(self, complete: bool) -> None:
        """Write the entries, with those computed this run; complete: only those of the
        texts asked for (the others' cards changed or went). Nothing new: no write.
        Joined strings, not ids into a vocabulary: cheaper to write and to read back."""
        gone = self.old.keys() - self.asked if complete else set()
        if not self.new and not gone:
            return
        rows = {k: v for k, v in self.old.items() if k not in gone}
        for key, (words, fs) in self.new.items():
            a, b = _joined(fs), _joined(words - fs)
            if a is not None and b is not None:
                rows[key] = (a, b)
        try:
            self.path.parent.mkdir(exist_ok=True)
            write_cache(self.path, marshal.dumps((self.code, rows)))
        except (OSError, ValueError):
            pass


def _joined(features: set[str] | frozenset[str]) -> str | None:
    """The features as one string, or None when they would not read back (one holds the
    separator, or is empty)."""
    out = _SEP.join(features)
    return None if "" in features or out.count(_SEP) != max(0, len(features) - 1) else out
