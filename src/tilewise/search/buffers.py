"""Buffer bytes of the declared space, compiled: the search's capacity checks and its
capacity-aware traffic stand-ins.

The rules are the model's (:mod:`tilewise.model.footprint`; :meth:`.Space.buffer_bytes` is the
numpy form the tests compare with): a tensor's buffer at a level holds its full tile, per axis
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
:meth:`tilewise.search.optimize.Engine.capped`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model.footprint import element_bytes, in_place


class BufferTable:
    """Flat arrays describing every buffer of every level of one :class:`.Space`.

    ``bytes(tiles)`` gives the single-buffer bytes; ``cap_tiles(...)`` the capacity-aware
    stand-ins. Levels are indexed as in the arch (0 unused)."""

    def __init__(self, space):
        st, wl = space.st, space.st.workload
        L = st.n_levels
        self.n_moved = len(space.moved)
        self.sizes = np.array(st.sizes, np.int64)
        level, slot, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef = ([] for _ in range(9))

        def add(k, s, t, eb):
            level.append(k)
            slot.append(s)
            nbytes.append(eb)
            ax_lo.append(len(t_lo))
            for ax in t.axes:
                t_lo.append(len(t_dim))
                for d, c in ax.terms:
                    t_dim.append(st.dims.index(d))
                    t_coef.append(c)
                t_hi.append(len(t_dim))
            ax_hi.append(len(t_lo))

        for k in range(1, L):
            inner = k == L - 1
            for i, ti in enumerate(space.moved):
                t = st.tensors[ti]
                add(k, i, t, element_bytes(t, wl, inner))
            if inner:
                shared = in_place(wl)
                for t in st.tensors:
                    if t.name in st.intermediate_names and t.name not in shared:
                        add(k, -1, t, element_bytes(t, wl, True))
                for t in wl.state:
                    add(k, -1, t, t.element_bytes)
        arr = lambda x: np.array(x, np.int64)
        self.desc = (arr(level), arr(slot), arr(nbytes), arr(ax_lo), arr(ax_hi), arr(t_lo),
                     arr(t_hi), arr(t_dim), arr(t_coef))
        block, bank = np.ones(L, np.int64), np.zeros(L, np.int64)
        for k, lv in enumerate(st.arch.levels):
            block[k] = max(int(lv.block_bytes), 1)
            if lv.bank_granular and lv.bank_bytes:
                bank[k] = int(lv.bank_bytes)
        self.block, self.bank = block, bank
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
        self.values = arr(vals)

    def bytes(self, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Single-buffer bytes of the moved tensors ``[n, L, Tm]`` and of the other buffers
        ``[n, L]`` for tiles ``[n, L, D]`` (elements)."""
        n, L, _ = tiles.shape
        bufs = np.zeros((n, L, self.n_moved), np.int64)
        other = np.zeros((n, L), np.int64)
        _bytes(np.ascontiguousarray(tiles, np.int64), self.sizes, *self.desc, self.block,
               self.bank, bufs, other)
        return bufs, other

    def cap_tiles(self, tt: np.ndarray, tm: np.ndarray, s: np.ndarray, cap: np.ndarray,
                  dims: np.ndarray) -> None:
        """Lower, in place, the innermost tile of each dim in ``dims [D]`` (bool: dims whose
        tiles above the innermost are fixed) in the traffic stand-ins ``tt [n, L, D]``, where
        it exceeds the smallest stand-in ``tm``, to the largest candidate value of its split
        ``s [n]`` that fits the innermost capacity ``cap[L-1]`` (bytes) with the other dims
        at ``tm``."""
        _cap_tiles(tt, np.ascontiguousarray(tm, np.int64), np.ascontiguousarray(s, np.int64),
                   float(cap[-1]), np.ascontiguousarray(dims, np.bool_), self.values, self.v_lo,
                   self.v_hi, self.sizes, *self.desc, self.block, self.bank)


@njit(cache=True)
def _round(nb, block, bank):
    nb = -(-nb // block) * block
    if bank > 0:
        nb = -(-nb // bank) * bank
    return nb


@njit(cache=True)
def _buffer(b, tl, sizes, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef, block, bank):
    """Rounded bytes of buffer ``b`` for one level's tiles ``tl [D]``."""
    n = 1
    for a in range(ax_lo[b], ax_hi[b]):
        ext = 1
        span = 1
        for q in range(t_lo[a], t_hi[a]):
            d = t_dim[q]
            t = tl[d]
            ext += t_coef[q] * (t - 1)
            span += t_coef[q] * (max(t, sizes[d]) - 1)
        n *= min(ext, span)
    return _round(n * nbytes[b], block, bank)


@njit(cache=True)
def _bytes(tiles, sizes, level, slot, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef, block,
           bank, bufs, other):
    for i in range(tiles.shape[0]):
        for b in range(level.shape[0]):
            k = level[b]
            nb = _buffer(b, tiles[i, k], sizes, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef,
                         block[k], bank[k])
            if slot[b] >= 0:
                bufs[i, k, slot[b]] = nb
            else:
                other[i, k] += nb


@njit(cache=True)
def _level_total(k, tl, sizes, level, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef, block,
                 bank):
    tot = 0
    for b in range(level.shape[0]):
        if level[b] == k:
            tot += _buffer(b, tl, sizes, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim, t_coef,
                           block[k], bank[k])
    return tot


@njit(cache=True)
def _cap_tiles(tt, tm, s, cap, dims, values, v_lo, v_hi, sizes, level, slot, nbytes, ax_lo,
               ax_hi, t_lo, t_hi, t_dim, t_coef, block, bank):
    n, L, D = tt.shape
    k = L - 1
    tl = np.empty(D, np.int64)
    if not np.isfinite(cap):
        return
    for i in range(n):
        for j in range(D):
            if not dims[j] or tt[i, k, j] <= tm[i, k, j]:
                continue
            for q in range(D):
                tl[q] = tm[i, k, q]
            # largest value <= tt that fits: values ascending, the footprint monotone
            lo = v_lo[s[i], j, k]
            hi = lo + np.searchsorted(values[lo:v_hi[s[i], j, k]], tt[i, k, j], side="right")
            a, z = lo, hi  # values[a - 1] fits (unless a == lo); the answer is below z
            while a < z:
                mid = (a + z) // 2
                tl[j] = values[mid]
                if _level_total(k, tl, sizes, level, nbytes, ax_lo, ax_hi, t_lo, t_hi, t_dim,
                                t_coef, block, bank) <= cap:
                    a = mid + 1
                else:
                    z = mid
            if a > lo and values[a - 1] < tt[i, k, j]:
                tt[i, k, j] = max(values[a - 1], tm[i, k, j])
