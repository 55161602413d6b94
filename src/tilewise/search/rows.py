"""Distinct rows of an integer table, fast: the search works some quantities out once per
distinct node (many nodes share their stand-ins)."""

from __future__ import annotations

import numpy as np

_MIX = np.random.default_rng(0x7157).integers(1, 1 << 62, size=64, dtype=np.int64) | 1


def unique_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(first, inverse)`` of the distinct rows of ``key [n, c]`` (int64): ``key[first]``
    are the distinct rows and ``key[first][inverse] == key``. Rows are hashed to one int64
    (a wrapping dot product with odd random weights) and the hashes sorted; a collision is
    caught by comparing every row with its representative, and then the exact (slower) sort
    of whole rows is used."""
    n, c = key.shape
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if c > len(_MIX):
        return _exact(key)
    with np.errstate(over="ignore"):
        h = key @ _MIX[:c]
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.ravel()
    if not np.array_equal(key[first][inv], key):
        return _exact(key)
    return first, inv


def _exact(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    key = np.ascontiguousarray(key)
    _, first, inv = np.unique(key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))),
                              return_index=True, return_inverse=True)
    return first, inv.ravel()
