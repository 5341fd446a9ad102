"""The duplicate pass's features of each card text, kept between runs in
`.cardmem/maintain-features` (derived, never committed, rebuildable): a later
`cardmem maintain` computes them only for texts it has not seen.

Keyed by the SHA-1 of the text they are computed from (duplicates.card_text), so a card
renamed keeps its entry and a card edited gets a new one. The file names the code that
computed it (a digest of the bytes of the modules that make features, named by the
caller, and the Python version): after a change of that code, or of Python, it is not read. marshal, not pickle:
loading it runs no code. Any fault in reading or writing it only costs the computing.

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

FILE = "maintain-features"
MAX_VOCAB = 2_000_000  # words kept; past it the file starts afresh
Features = tuple[set[str], frozenset[str]]


def _code_digest(sources: list[str]) -> bytes:
    h = hashlib.sha1(sys.version.encode())
    for path in sources:
        h.update(Path(path).read_bytes())
    return h.digest()


class Kept:
    def __init__(self, root: str | os.PathLike[str], compute: Callable[[str], Features],
                 sources: list[str]) -> None:
        """sources: the files of the code compute runs (their bytes name the file)."""
        self.path = Path(root) / ".cardmem" / FILE
        self.compute = compute
        self.vocab: list[str] = []
        self.old: dict[bytes, tuple[tuple[int, ...], int]] = {}  # key -> (ids, facts first)
        self.new: dict[bytes, Features] = {}
        self.asked: set[bytes] = set()
        self.code = b""
        try:
            self.code = _code_digest(sources)
            with open(self.path, "rb") as f:
                code, vocab, old = marshal.loads(f.read())  # load(f) reads object by object
            if code == self.code and isinstance(vocab, list) and isinstance(old, dict):
                self.vocab, self.old = vocab, old
        except (OSError, EOFError, ValueError, TypeError):
            pass

    def of(self, text: str) -> Features:
        key = hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()
        self.asked.add(key)
        if (got := self.old.get(key)) is not None:
            try:
                ids, n = got
                words = list(map(self.vocab.__getitem__, ids))
                return set(words), frozenset(words[:n])
            except (TypeError, ValueError, IndexError):  # a damaged entry: computed anew
                del self.old[key]
        if (done := self.new.get(key)) is None:
            done = self.new[key] = self.compute(text)
        return done

    def save(self, complete: bool) -> None:
        """Write the entries, with those computed this run; complete: only those of the
        texts asked for (the others' cards changed or went). Nothing new: no write."""
        gone = self.old.keys() - self.asked if complete else set()
        if not self.new and not gone:
            return
        vocab = self.vocab if len(self.vocab) < MAX_VOCAB else []  # words of dead cards
        rows = {k: v for k, v in self.old.items() if k not in gone} if vocab else {}
        at = dict(zip(vocab, range(len(vocab))))
        for w in set().union(*(words for words, _ in self.new.values())).difference(at):
            at[w] = len(at)
        for key, (words, fs) in self.new.items():
            rows[key] = (tuple(map(at.__getitem__, [*fs, *(words - fs)])), len(fs))
        try:
            from ..root import write_cache

            self.path.parent.mkdir(exist_ok=True)
            write_cache(self.path, marshal.dumps((self.code, list(at), rows)))
        except (OSError, ValueError):
            pass
