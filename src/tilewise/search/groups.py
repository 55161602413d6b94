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
    [G]`` the least all cores compute (elements). ``inner`` and ``padded [N]`` (the same
    arrays at every depth): per ladder, in the order ``lo``/``hi`` index, its innermost tile
    and the padded extent one core computes with it (elements)."""

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
    inner: np.ndarray
    padded: np.ndarray


@dataclass(frozen=True)
class _SplitGroups:
    """The groups of one split's ladders (:class:`.space.TileLadders`) at depths 1 .. L-1,
    in local indices (ladders sorted by tiles, level 1 first): per depth ``lo``, ``hi`` and
    the stand-ins of :class:`TileGroups` (``stats``: whole, small, max_counts, min_padded,
    min_padded_all); ``top`` those stand-ins over every ladder (depth 0; 1 where none);
    ``inner``, ``padded`` per sorted ladder its innermost tile and padded extent."""

    n: int
    lo: list
    hi: list
    stats: list
    top: tuple
    inner: np.ndarray
    padded: np.ndarray


def _split_groups(ch, L: int) -> _SplitGroups:
    """:class:`_SplitGroups` of the ladders ``ch`` of one split."""
    order = np.lexsort(tuple(ch.tiles[:, k] for k in range(L - 1, 0, -1)))
    tiles, counts = ch.tiles[order], ch.counts[order]
    n = len(order)
    arrays = ((np.maximum, tiles), (np.minimum, tiles), (np.maximum, counts),
              (np.minimum, ch.padded[order]), (np.minimum, ch.padded_all[order]))
    los, his, stats = [None], [None], [None]
    for d in range(1, L):
        new = np.ones(n, bool)
        new[1:] = (tiles[1:, 1:d + 1] != tiles[:-1, 1:d + 1]).any(1)
        lo = np.nonzero(new)[0]
        los.append(lo)
        his.append(np.append(lo[1:], n) if n else lo)
        stats.append(tuple(f.reduceat(a, lo) if n else a[:0] for f, a in arrays))
    top = tuple(f.reduce(a, axis=0) if n else np.ones(a.shape[1:], np.int64) for f, a in arrays)
    return _SplitGroups(n, los, his, stats, top, tiles[:, L - 1].copy(), ch.padded[order])


def prefix_groups(ladders: list, L: int) -> list[TileGroups]:
    """Groups of every depth 0 .. L-1 (depth 0: one group per split) over the ladders of every
    split ``ladders [S]`` (:class:`.space.TileLadders`), sorted by tiles so that every group is
    a contiguous range (each ladder set's ladders sorted, the sets one after the other). Splits
    that share one ladder set (the space caches them) share its groups below depth 0: their
    depth-0 groups span the same range (cpu-6core's GEMM: 11 splits, one set of 43,680 ``k``
    ladders, stored once)."""
    once: dict[int, int] = {}
    parts: list[_SplitGroups] = []
    for ch in ladders:
        if id(ch) not in once:
            once[id(ch)] = len(parts)
            parts.append(_split_groups(ch, L))
    which = np.array([once[id(ch)] for ch in ladders], np.int64)
    n = np.array([p.n for p in parts], np.int64)
    start = np.cumsum(n) - n
    # per ladder set and depth: its groups, and the index of its first one
    n_groups = np.array([[1] + [len(p.lo[d]) for d in range(1, L)] for p in parts],
                        np.int64).reshape(len(parts), L)
    g_start = np.cumsum(n_groups, 0) - n_groups
    inner = np.concatenate([p.inner for p in parts]) if parts else np.zeros(0, np.int64)
    padded = np.concatenate([p.padded for p in parts]) if parts else np.zeros(0, np.int64)
    out = []
    for d in range(L):
        if d == 0:
            lo, hi = start[which], start[which] + n[which]
            stats = [np.stack([p.top[i] for p in parts])[which] for i in range(5)]
        else:
            lo = np.concatenate([p.lo[d] + start[u] for u, p in enumerate(parts)])
            hi = np.concatenate([p.hi[d] + start[u] for u, p in enumerate(parts)])
            stats = [np.concatenate([p.stats[d][i] for p in parts]) for i in range(5)]
        c_lo = c_hi = None
        if d == 0 and L > 1:
            c_lo, c_hi = g_start[which, 1], g_start[which, 1] + n_groups[which, 1]
        elif d + 1 < L:
            c_lo = np.concatenate([np.searchsorted(p.lo[d + 1], p.lo[d]) + g_start[u, d + 1]
                                   for u, p in enumerate(parts)])
            c_hi = np.concatenate([np.searchsorted(p.lo[d + 1], p.hi[d]) + g_start[u, d + 1]
                                   for u, p in enumerate(parts)])
        out.append(TileGroups(lo, hi, (hi - lo).astype(float), c_lo, c_hi, *stats, inner,
                              padded))
    return out
