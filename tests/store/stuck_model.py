"""A stand-in for the embedding model whose encode() of cards waits until a gate file
exists (tests/store/test_vectors_after_words.py). It works across processes: the test
names it in CARDMEM_TEST_EMBEDDER for the background embedder, and in embedding.LOADER
for its own process. Every card batch it is given is logged, one line each."""
from __future__ import annotations

import os
import time
from typing import Any

STAMP = "stuck-model@1/512/test"
DIM = 512


class StuckModel:
    stamp = STAMP
    dim = DIM
    affine = (1.0, 0.0)

    def __init__(self) -> None:
        import numpy

        self._np = numpy
        self.gate, self.log = os.environ["STUCK_GATE"], os.environ["STUCK_LOG"]

    def encode(self, texts: list[str]) -> Any:
        np = self._np
        if len(texts) > 1:  # cards (two texts each) wait for the gate; a query (one) not
            with open(self.log, "a") as fh:
                fh.write(f"{os.getpid()} {len(texts)}\n")
            deadline = time.monotonic() + 60
            while not os.path.exists(self.gate):
                if time.monotonic() > deadline:
                    raise RuntimeError("the test never opened the gate")
                time.sleep(0.01)
        vecs = np.ones((len(texts), DIM), dtype=np.float32)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)

    def query(self, text: str) -> Any:
        return self.encode([text])[0]


class Broken:
    """A model that cannot be loaded."""

    def __init__(self) -> None:
        raise RuntimeError("no weights here")
