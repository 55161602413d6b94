"""The tile ladders of one dim grouped by their first tiles: the tree the search walks per dim.

A node fixes, per dim, the tiles of levels 1 .. depth; the ladders (:class:`.space.TileLadders`)
sharing them form a group, a contiguous range once the ladders of every split are sorted by
their tiles. Depth 0 has one group per split; depth ``L-1`` one group per ladder. Per group the
search reads the stand-ins of its open levels (:class:`TileGroups`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TileGroups:
    """The ladders of one dim (every split, concatenated) grouped by their tiles at levels
    1 .. depth: per group ``[lo, hi)`` the ladder range, ``n_ladders`` its size (float, for
    weight shares), ``[child_lo, child_hi)`` the groups one level deeper inside it (None at the
    deepest), and the stand-ins for its open levels: ``whole`` / ``small [G, L]`` the largest
    and smallest tile per level (elements), ``max_counts [G, L]`` the most tiles visited per
    level, ``min_padded [G]`` the least padded extent one core computes, ``min_padded_all
    [G]`` the least all cores compute (elements)."""

    lo: np.ndarray
    hi: np.ndarray
    n_ladders: np.ndarray
    child_lo: np.ndarray | None
    child_hi: np.ndarray | None
    whole: np.ndarray
    small: np.ndarray
    max_counts: np.ndarray
    min_padded: np.ndarray
    min_padded_all: np.ndarray


def _sorted_ladders(ladders: list, L: int):
    """Tiles, counts, padded extents and group keys (split, tiles of levels 1 ..) of the
    ladders of every split, each split's sorted by tiles level 1 first."""
    tiles, counts, padded, padded_all, split = [], [], [], [], []
    for s, ch in enumerate(ladders):
        order = np.lexsort(tuple(ch.tiles[:, k] for k in range(L - 1, 0, -1)))
        tiles.append(ch.tiles[order])
        counts.append(ch.counts[order])
        padded.append(ch.padded[order])
        padded_all.append(ch.padded_all[order])
        split.append(np.full(len(ch.padded), s, np.int64))
    tiles, counts, padded = np.concatenate(tiles), np.concatenate(counts), np.concatenate(padded)
    key = np.concatenate([np.concatenate(split)[:, None], tiles[:, 1:]], 1)
    return tiles, counts, padded, np.concatenate(padded_all), key


def _ranges(key: np.ndarray, d: int, n_splits: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` of the groups of depth ``d`` over the sorted ``key``s (depth 0: one group
    per split, empty ones included)."""
    n = len(key)
    if n:
        new = np.ones(n, bool)
        new[1:] = (key[1:, :d + 1] != key[:-1, :d + 1]).any(1)
        lo = np.nonzero(new)[0]
    else:
        lo = np.zeros(0, np.int64)
    if d == 0:
        lo = np.searchsorted(key[:, 0], np.arange(n_splits))
    hi = np.append(lo[1:], n) if d else np.searchsorted(key[:, 0], np.arange(n_splits), "right")
    return lo, hi


def prefix_groups(ladders: list, L: int) -> list[TileGroups]:
    """Groups of every depth 0 .. L-1 (depth 0: one group per split) over the ladders of every
    split ``ladders [S]`` (:class:`.space.TileLadders`), sorted by tiles so that every group is
    a contiguous range."""
    tiles, counts, padded, padded_all, key = _sorted_ladders(ladders, L)
    n = len(key)
    ranges = [_ranges(key, d, len(ladders)) for d in range(L)]
    out = []
    for d, (lo, hi) in enumerate(ranges):
        ne = hi > lo
        red = lambda f, a: np.where(ne[:, None] if a.ndim > 1 else ne,
                                    f.reduceat(a, np.minimum(lo, max(n - 1, 0)))
                                    if n else np.ones((len(lo),) + a.shape[1:], np.int64), 1)
        deeper = ranges[d + 1][0] if d + 1 < L else None
        out.append(TileGroups(lo, hi, (hi - lo).astype(float),
                              None if deeper is None else np.searchsorted(deeper, lo),
                              None if deeper is None else np.searchsorted(deeper, hi),
                              red(np.maximum, tiles), red(np.minimum, tiles),
                              red(np.maximum, counts), red(np.minimum, padded),
                              red(np.minimum, padded_all)))
    return out
