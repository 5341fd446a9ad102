"""Candidate pairs for the duplicate pass without comparing every pair: MinHash LSH.

Each card is a set of features (stems and facts). BANDS x ROWS MinHash values are taken
per card (numpy, one hash function at a time over every card's features at once); cards
whose ROWS values agree in some band share a bucket. Two sets of Jaccard J share one with
probability 1 - (1 - J**ROWS)**BANDS: 0.98 at J = 0.3, 0.33 at J = 0.1 (ROWS 2, BANDS 40).
A bucket also carries the caller's key (scope and facts), so cards that cannot be
duplicates (other numbers, another project) never meet. Deterministic: fixed hash seeds.
"""
from __future__ import annotations

from collections import defaultdict

ROWS = 2
BANDS = 40
SMALL = 12  # a key's group this small is compared pair by pair: no hashing, no misses
_PRIME = (1 << 61) - 1


def buckets(features: dict[str, set[str]], keys: dict[str, object]) -> list[list[str]]:
    """Groups of ids (each sorted, two or more) whose pairs are worth scoring."""
    by_key: dict[object, list[str]] = defaultdict(list)
    for cid in sorted(features):
        by_key[keys[cid]].append(cid)
    out: list[list[str]] = []
    big: list[str] = []
    for ids in by_key.values():
        if len(ids) > SMALL:
            big.extend(ids)
        elif len(ids) > 1:
            out.append(ids)
    if big:
        out.extend(_lsh(big, features, keys))
    return out


def _lsh(ids: list[str], features: dict[str, set[str]], keys: dict[str, object]) -> list[list[str]]:
    import numpy as np  # here: only a store big enough for LSH pays numpy's import

    vocab: dict[str, int] = {}
    flat: list[int] = []
    starts: list[int] = []
    for cid in ids:
        starts.append(len(flat))
        flat.extend(vocab.setdefault(f, len(vocab)) for f in sorted(features[cid]))
    x = np.asarray(flat, dtype=np.uint64) + np.uint64(1)
    at = np.asarray(starts, dtype=np.int64)
    rng = np.random.default_rng(28)
    n = ROWS * BANDS
    a = rng.integers(1, _PRIME, n, dtype=np.uint64)
    b = rng.integers(0, _PRIME, n, dtype=np.uint64)
    sig = np.empty((len(ids), n), dtype=np.uint64)
    with np.errstate(over="ignore"):  # wrapping multiply: a fine hash for MinHash
        for i in range(n):
            sig[:, i] = np.minimum.reduceat((x * a[i] + b[i]) >> np.uint64(11), at)
    groups: dict[tuple, list[str]] = defaultdict(list)
    for row, cid in enumerate(ids):
        s = sig[row]
        key = keys[cid]
        for band in range(BANDS):
            groups[(key, band, s[band * ROWS:(band + 1) * ROWS].tobytes())].append(cid)
    return [g for g in groups.values() if len(g) > 1]
