"""Buffer bytes of the declared space, compiled: the search's capacity checks and its
capacity-aware traffic stand-ins.

The rule and the buffer list are the model's (:func:`tilewise.model.rules.buffer_bytes` over
:class:`tilewise.model.problem.Buffers`): a tensor's buffer at a level holds its full tile, per axis
the halo extent ``sum(c * (t - 1)) + 1`` clipped to the extent the padded problem spans, times
its bytes per point (accumulator type for an op's output in the innermost level), rounded up to
the level's block and, when bank granular, to whole banks. Moved tensors get one slot each;
the innermost level also holds the fused intermediates (not computed in place) and the ops'
state, summed as "other" bytes.

:meth:`BufferTable.cap_tiles` tightens the search's traffic stand-ins. An open innermost
tile under fixed parents is bounded, for traffic, by the largest tile of its group; but every
buffer grows with every tile, so a mapping below the node that fits the innermost level has that
tile no larger than the largest candidate value that fits with every *other* dim at its
smallest stand-in (single buffers). Using the smaller of the two keeps the bound valid (a larger
innermost tile under the same parents never moves more bytes) and stops a node from claiming
the reuse of a tile that cannot fit (attention on aie-4x2: a 64-row core tile of Q needs a
seventh 8 KiB bank). Deeper tiles under an open parent are not capped: see
:meth:`tilewise.search.engine.Engine.capped`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model.rules import buffer_bytes, holds_partial_sums, level_bytes, loop_step
from .rows import unique_rows


class BufferTable:
    """The model's buffer description (:class:`tilewise.model.problem.Buffers`: per buffer
    its tensor, the levels that keep it, its bytes per point per level and its axes) with, per
    buffer, the slot of its moved tensor (``-1``: fused intermediates and state, summed as
    "other"), and the candidate tile values of the space.

    ``bytes(tiles)`` gives the single-buffer bytes; ``cap_tiles(...)`` the capacity-aware
    stand-ins. Levels are indexed as in the arch (0 unused)."""

    def __init__(self, space, problem):
        st = space.st
        L = st.n_levels
        self.n_moved = len(space.moved)
        self.sizes = problem.dims.sizes
        self.desc = problem.buffers
        self.array_level = problem.levels.array
        self.slot = np.array([space.moved.index(t) if t in space.moved else -1
                              for t in problem.buffers.tensor], np.int64)
        # per (split, dim, level): the candidate tile values, ascending, flattened
        S, D = len(space.splits), len(st.dims)
        vals, self.v_lo, self.v_hi = [], np.zeros((S, D, L), np.int64), np.zeros((S, D, L), np.int64)
        pos = 0
        for s in range(S):
            for j, d in enumerate(st.dims):
                for k in range(1, L):
                    v = sorted(space.values[s][st.arch.levels[k].name][d])
                    self.v_lo[s, j, k], self.v_hi[s, j, k] = pos, pos + len(v)
                    vals += v
                    pos += len(v)
        self.values = np.array(vals, np.int64)

    def bytes(self, tiles: np.ndarray, ways: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """Single-buffer bytes of the moved tensors ``[n, L, Tm]`` and of the other buffers
        ``[n, L]`` for tiles ``[n, L, D]`` (elements). With the split ``ways [n, D]`` exact:
        an output's buffers hold partial sums (the accumulator type) where the model's
        :func:`~tilewise.model.rules.holds_partial_sums` says so; without, every buffer at its
        final width, a lower bound for any split (what the node bounds need, since smaller open
        tiles would split reductions the mapping may not split)."""
        n, L, D = tiles.shape
        bufs = np.zeros((n, L, self.n_moved), np.int64)
        other = np.zeros((n, L), np.int64)
        exact = ways is not None
        w = np.ascontiguousarray(ways if exact else np.ones((n, D)), np.int64)
        _bytes(np.ascontiguousarray(tiles, np.int64), w, exact, self.array_level, self.sizes,
               self.slot, self.desc, bufs, other)
        return bufs, other

    def cap_tiles(self, tt: np.ndarray, tm: np.ndarray, s: np.ndarray, cap: np.ndarray,
                  dims: np.ndarray) -> None:
        """Lower, in place, the innermost tile of each dim in ``dims [D]`` (bool: dims whose
        tiles above the innermost are fixed) in the traffic stand-ins ``tt [n, L, D]``, where
        it exceeds the smallest stand-in ``tm``, to the largest candidate value of its split
        ``s [n]`` that fits the innermost capacity ``cap[L-1]`` (bytes) with the other dims
        at ``tm``."""
        k = tt.shape[1] - 1
        # only the innermost tiles change, from the split and innermost stand-ins: many nodes
        # share those (the children of a tile stage above the innermost), each worked out once
        key = np.ascontiguousarray(np.concatenate(
            [np.asarray(s, np.int64)[:, None], tt[:, k], tm[:, k]], 1).astype(np.int64))
        first, inv = unique_rows(key)
        tu = np.ascontiguousarray(tt[first][:, k:], np.int64)
        _cap_tiles(tu, np.ascontiguousarray(tm[first][:, k:], np.int64),
                   np.ascontiguousarray(np.asarray(s)[first], np.int64), float(cap[-1]),
                   np.ascontiguousarray(dims, np.bool_), self.values, self.v_lo, self.v_hi,
                   self.sizes, self.desc, k)
        tt[:, k] = tu[inv, 0]


@njit(cache=True)
def _bytes(tiles, ways, exact, a, sizes, slot, desc, bufs, other):
    n, L, D = tiles.shape
    step = np.zeros((max(L - 1, 1), D), np.int64)
    for i in range(n):
        for k in range(L - 1):
            for d in range(D):
                step[k, d] = loop_step(tiles[i, k + 1, d], ways[i, d], k + 1 == a)
        for k in range(1, L):
            for f in range(slot.shape[0]):
                if not desc.level[f, k]:
                    continue
                partial = exact and k < L - 1 and holds_partial_sums(desc.red[f], k, step,
                                                                      tiles[i])
                nb = buffer_bytes(f, k, tiles[i, k], sizes, desc, partial)
                if slot[f] >= 0:
                    bufs[i, k, slot[f]] = nb
                else:
                    other[i, k] += nb


@njit(cache=True, inline="always")
def fitting_end(values, lo, hi, tl, j, k, sizes, desc, cap):
    """The end ``a`` of the values ``values[lo:hi]`` (ascending) of dim ``j`` that fit level
    ``k`` with the other dims at ``tl``: ``values[a - 1]`` is the largest that fits (none when
    ``a == lo``); the footprint grows with the tile, so a binary search (:func:`level_bytes`).
    Leaves ``tl[j]`` at the last value tried."""
    a, z = lo, hi
    while a < z:
        mid = (a + z) // 2
        tl[j] = values[mid]
        if level_bytes(k, tl, sizes, desc) <= cap:
            a = mid + 1
        else:
            z = mid
    return a


@njit(cache=True)
def _cap_tiles(tt, tm, s, cap, dims, values, v_lo, v_hi, sizes, desc, k):
    """:meth:`BufferTable.cap_tiles` on ``tt, tm [n, 1, D]``: the innermost level ``k`` only."""
    n, _, D = tt.shape
    tl = np.empty(D, np.int64)
    if not np.isfinite(cap):
        return
    for i in range(n):
        for j in range(D):
            if not dims[j] or tt[i, 0, j] <= tm[i, 0, j]:
                continue
            for q in range(D):
                tl[q] = tm[i, 0, q]
            # largest value <= tt that fits: values ascending, the footprint monotone
            lo = v_lo[s[i], j, k]
            hi = lo + np.searchsorted(values[lo:v_hi[s[i], j, k]], tt[i, 0, j], side="right")
            a = fitting_end(values, lo, hi, tl, j, k, sizes, desc, cap)
            if a > lo and values[a - 1] < tt[i, 0, j]:
                tt[i, 0, j] = max(values[a - 1], tm[i, 0, j])
