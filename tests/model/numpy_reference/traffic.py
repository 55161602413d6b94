"""Exact traffic per level and tensor for a batch of mappings, by counting tile changes.

The rule (the same one :mod:`tilewise.simulation.walker` follows step by step): walking the
flattened nest, a tensor's tile at level ``l`` is (re)loaded each time its identity changes,
i.e. the loops that do not index the tensor and sit inside every loop that does reuse it;
the bytes moved are the real (clipped) bytes of the tile. Outputs: each visit of a tile ends
in a write-back; every visit but the first begins with a reload of the partial sum.

Counting without walking: over the iterations ``it`` of the loops above level ``l`` in the
owning op's nest,

    moved = sum_it bytes(tile(it)) - sum over non-changing transitions of bytes

A transition advances some loop ``q`` and resets the loops inside it. It keeps the tile iff
``q`` does not index the tensor and every indexing loop inside ``q`` iterates once in that
context (a partial parent tile can leave a loop with a single iteration). The iteration space
is a product over dims (a dim's loops depend only on that dim's outer loops), so both sums are
products of per-dim sums over the tile lists of :mod:`tilewise.model.tiles`, selected per
candidate by where each dim's loop sits relative to ``q``. Dims coupled by an affine axis (a
convolution window ``p*s + r``) are summed jointly: the unclipped bytes expand into per-dim
power sums, minus the clipping at the tensor border summed over the border tiles only.

Per-core counting at the array level: a dim split across an axis gives each core its slice;
a tensor not indexed by the split dim is identical along that axis and costs one transfer when
the arch broadcasts along it, else one per core (idle cores included); an output not indexed by
a (reduction) dim split along the columns is summed into one write-back per column.

Inputs read by several ops of a chain over the same dims (LayerNorm's X): below a level with a
real loop over a private dim, every reader walks its own tiles, so the traffic is the sum of
each reader's visits; above it one tile serves them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilewise.errors import TilewiseError
from tilewise.ir.workload import Tensor
from .tiles import DimTiles


@dataclass(frozen=True)
class Group:
    """Dims of a tensor coupled by affine axes, with the plain axes on them."""

    idx: tuple[int, ...]          # dim indices
    members: tuple[str, ...]      # dim names
    powers: tuple[int, ...]       # plain axes per member
    affine: tuple                 # ((Affine, shape), ...)


def groups(t: Tensor, dims: tuple[str, ...]) -> list[Group]:
    """Connected components of ``t``'s dims through its non-plain axes."""
    parent = {d: d for d in t.dims}

    def find(d):
        while parent[d] != d:
            d = parent[d]
        return d

    for ax in t.axes:
        if not ax.is_plain:
            for d in ax.dims[1:]:
                parent[find(d)] = find(ax.dims[0])
    comps: dict = {}
    for d in t.dims:
        comps.setdefault(find(d), []).append(d)
    out = []
    for members in comps.values():
        powers = tuple(sum(1 for ax in t.axes if ax.is_plain and ax.dims[0] == d) for d in members)
        affine = tuple((ax, n) for ax, n in zip(t.axes, t.shape)
                       if not ax.is_plain and ax.dims[0] in members)
        out.append(Group(tuple(dims.index(d) for d in members), tuple(members), powers, affine))
    return out


def border_windows(g: Group, sizes: dict) -> dict[str, tuple[int | None, int]]:
    """Per member dim, how many first/last child tiles can reach the tensor border.

    A single affine axis ``sum(c*d) + const`` over a tensor of extent S clips on the left only
    if every ``c*start_d < -const``, on the right only if every ``c*last_d`` exceeds
    ``S - 1 - const - sum_others c*(D-1)``; several affine axes need every tile (None).
    """
    if len(g.affine) != 1:
        return {d: (None, 0) for d in g.members}
    ax, S = g.affine[0]
    out = {}
    for d, c in ax.terms:
        left = -(-(-ax.const) // c) if ax.const < 0 else 0
        rest = S - 1 - ax.const - sum(c2 * (sizes[d2] - 1) for d2, c2 in ax.terms if d2 != d)
        right = max(0, sizes[d] - 1 - rest // c) if rest >= 0 else sizes[d]
        out[d] = (min(left, sizes[d]), min(right, sizes[d]) + 1 if right else 0)
    return out


def _poly(g: Group) -> dict:
    """The unclipped bytes factor of a group as a polynomial in the member extents."""
    m = len(g.members)
    poly = {tuple([0] * m): 1}

    def mul(poly, terms):
        out: dict = {}
        for mono, c in poly.items():
            for i, k in terms:
                key = list(mono)
                if i is not None:
                    key[i] += 1
                key = tuple(key)
                out[key] = out.get(key, 0) + c * k
        return out

    for ax, _ in g.affine:
        terms = [(g.members.index(d), c) for d, c in ax.terms]
        terms.append((None, 1 - sum(c for _, c in ax.terms)))
        poly = mul(poly, terms)
    for i, p in enumerate(g.powers):
        for _ in range(p):
            poly = mul(poly, [(i, 1)])
    return {k: v for k, v in poly.items() if v}


def _combos(g: Group, lists):
    """Broadcast member lists to ``[B, k1, ..., km]`` and the combination weight."""
    m = len(g.members)
    B = lists[0][0].shape[0]
    shaped = []
    for i, (s, e, mu) in enumerate(lists):
        shape = [B] + [1] * m
        shape[1 + i] = s.shape[1]
        shaped.append((s.reshape(shape), e.reshape(shape), mu.reshape(shape)))
    weight = np.ones([B] + [1] * m, np.int64)
    for i, (s, e, mu) in enumerate(shaped):
        weight = weight * mu * (e > 0) * e ** g.powers[i]
    return shaped, weight


def _clipped(ax, n, g, shaped):
    lo = hi = ax.const
    for d, c in ax.terms:
        s, e, _ = shaped[g.members.index(d)]
        lo = lo + c * s
        hi = hi + c * (s + e - 1)
    return hi - lo + 1, np.maximum(0, np.minimum(hi, n - 1) - np.maximum(lo, 0) + 1)


class TrafficCounter:
    """Counts bytes per (level, tensor) for one batch; see the module docstring."""

    def __init__(self, st, batch, dim_tiles: list[DimTiles]):
        self.st, self.batch, self.dt = st, batch, dim_tiles
        L = st.n_levels
        D = len(st.dims)
        self.a = st.array_level if st.array_level is not None else L - 1
        inv = np.argsort(batch.orders, axis=2) if batch.orders.size else batch.orders
        # per level k and loop position p: the dim there, and per dim j whether its level-k
        # loop sits at or before p (contiguous 1-D arrays: these are reused by every tensor)
        self.dq = [[np.ascontiguousarray(batch.orders[:, k, p]) for p in range(D)] for k in range(L - 1)]
        pos = [[np.ascontiguousarray(inv[:, k, j]) for j in range(D)] for k in range(L - 1)]
        self._values: dict = {}
        i64 = np.int64
        self.after = [[[(pos[k][j] <= p).astype(i64) for j in range(D)] for p in range(D)]
                      for k in range(L - 1)]
        self.is_dq = [[[(self.dq[k][p] == j).astype(i64) for j in range(D)] for p in range(D)]
                      for k in range(L - 1)]

    def _group_value(self, g: Group, lams: dict, level: int):
        key = (g, tuple(lams[j] for j in g.idx), level)
        if key not in self._values:
            self._values[key] = self._compute_group_value(g, lams, level)
        return self._values[key]

    def _compute_group_value(self, g: Group, lams: dict, level: int):
        if not g.affine:
            return self.dt[g.idx[0]].powsum(lams[g.idx[0]], level, g.powers[0])
        if len(g.affine) > 1:  # several affine axes: every tile is listed, sum directly
            shaped, weight = _combos(g, [self.dt[j].lists_x(lams[j], level) for j in g.idx])
            for ax, n in g.affine:
                weight = weight * _clipped(ax, n, g, shaped)[1]
            return weight.reshape(weight.shape[0], -1).sum(1)
        total = 0  # unclipped bytes: a polynomial in the extents, summed per dim
        for mono, coeff in _poly(g).items():
            term = coeff
            for i, j in enumerate(g.idx):
                term = term * self.dt[j].powsum(lams[j], level, mono[i])
            total = total + term
        if all(self.dt[j].window == (0, 0) for j in g.idx):
            return total  # the window never reaches the tensor border
        shaped, weight = _combos(g, [self.dt[j].lists_x(lams[j], level) for j in g.idx])
        unclipped, clipped = _clipped(*g.affine[0], g, shaped)
        return total - (weight * (unclipped - clipped)).reshape(weight.shape[0], -1).sum(1)

    def visits(self, t: Tensor, op, level: int):
        """Bytes summed over the visits of ``t``'s tiles at ``level`` (per the reuse rule)."""
        dims = self.st.dims
        D = len(dims)
        op_dims = {dims.index(d) for d in op.dims}
        t_dims = {dims.index(d) for d in t.dims}
        others = sorted(op_dims - t_dims)
        grps = groups(t, dims)
        full = {j: level for j in range(D)}
        total = 1
        check = np.ones(len(self.batch))
        for j in others:
            total = total * self.dt[j].count[level]
            check = check * self.dt[j].count[level]
        values = {}
        for g in grps:
            v = self._group_value(g, full, level)
            total = total * v
            check = check * v
        if np.any(check * t.element_bytes > 2.0 ** 62):
            raise TilewiseError(f"traffic of {t.name} overflows int64 bytes; the problem is too large")
        nc = 0
        for k in range(level):
            for g in grps:
                if len(g.idx) == 1:
                    j = g.idx[0]
                    lo = self._group_value(g, {j: k}, level)
                    values[(g.idx, k)] = (lo, self._group_value(g, {j: k + 1}, level) - lo)
            for p in range(D):
                if not others:
                    break
                after, is_dq = self.after[k][p], self.is_dq[k][p]
                active = sum(is_dq[j] for j in others)  # the loop at p does not index t
                if not active.any():
                    continue
                term = active
                for j in others:
                    # the loop at p itself: its transitions; others: iterations so far
                    c0, c1 = self.dt[j].count[k], self.dt[j].count[k + 1]
                    term = term * (c0 + after[j] * (c1 - c0) - is_dq[j] * c0)
                for g in grps:
                    if len(g.idx) == 1:
                        lo, diff = values[(g.idx, k)]
                        term = term * (lo + after[g.idx[0]] * diff)
                    else:
                        term = term * self._select(g, after, k, level)
                nc = nc + term
        return (total - nc) * t.element_bytes

    def _select(self, g: Group, after, k: int, level: int):
        out = 0
        for combo in range(1 << len(g.idx)):
            lams = {j: k + ((combo >> i) & 1) for i, j in enumerate(g.idx)}
            mask = 1
            for i, j in enumerate(g.idx):
                mask = mask * (after[j] if (combo >> i) & 1 else 1 - after[j])
            if np.any(mask):
                out = out + mask * self._group_value(g, lams, level)
        return out

    def distinct(self, t: Tensor, level: int):
        """Bytes of all distinct tiles of ``t`` at ``level`` (per core at the array level)."""
        full = {j: level for j in range(len(self.st.dims))}
        v = 1
        for g in groups(t, self.st.dims):
            v = v * self._group_value(g, full, level)
        return v * t.element_bytes

    def copies(self, t: Tensor, level: int):
        """Transfers per tile at the array level: cores along non-broadcast axes ([batch])."""
        if level != self.a or self.st.arch.array is None:
            return 1
        arr, b = self.st.arch.array, self.batch
        t_idx = [self.st.dims.index(d) for d in t.dims]
        out = 1
        for dim, ways, shared in ((b.rows_dim, b.rows_ways, arr.broadcast_cols),
                                  (b.cols_dim, b.cols_ways, arr.broadcast_rows)):
            if not shared:
                missing = (dim >= 0) & ~np.isin(dim, t_idx)
                out = out * np.where(missing, ways, 1)
        return out

    def private_real_above(self, level: int) -> np.ndarray:
        """``[batch]``: whether a loop over a dim private to an op iterates above ``level``."""
        st, b = self.st, self.batch
        D = len(st.dims)
        ways = b.ways(D)
        out = np.zeros(len(b), bool)
        for k in range(level):
            step = b.tiles[:, k + 1, :] * (ways if k + 1 == self.a else 1)
            real = step < b.tiles[:, k, :]
            for j, d in enumerate(st.dims):
                if d not in st.spine:
                    out |= real[:, j]
        return out

    def count(self):
        """``reads, writes, reloads``: int64 ``[batch, levels, tensors]`` bytes."""
        st, b = self.st, self.batch
        B, L, T = len(b), st.n_levels, len(st.tensors)
        reads = np.zeros((B, L, T), np.int64)
        writes = np.zeros((B, L, T), np.int64)
        reloads = np.zeros((B, L, T), np.int64)
        for ti, t in enumerate(st.tensors):
            if t.name in st.intermediate_names:
                continue
            op = st.owner(t.name)
            readers = [o for o in st.workload.ops if any(x.name == t.name for x in o.inputs)]
            alike = len(readers) > 1 and all(set(o.dims) == set(t.dims) for o in readers)
            for level in range(1, L):
                kept = ~b.bypass[:, level, ti]
                v = self.visits(t, op, level)
                if alike:
                    v = np.where(self.private_real_above(level),
                                 sum(self.visits(t, o, level) for o in readers), v)
                if t.name in st.outputs:
                    writes[:, level, ti] = kept * v
                    reloads[:, level, ti] = kept * (v - self.distinct(t, level))
                    reads[:, level, ti] = reloads[:, level, ti]
                else:
                    reads[:, level, ti] = kept * (v * self.copies(t, level))
        return reads, writes, reloads
