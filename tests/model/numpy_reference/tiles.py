"""Per-dim tile lists: the exact multiset of tiles a dim is cut into at each level, batched.

Tiles need not divide their parent, so a dim's tiles at level ``l`` have a few distinct extents:
full tiles and the remainders of full and partial parents. For each candidate they are kept as
a short list of ``(extent, multiplicity)`` entries (each a ``[batch]`` int64 array), built level
by level: tiles of extent ``e`` cut by step ``s`` give ``e // s`` tiles of ``s`` (all full tiles
share one entry) and one of ``e % s``. At the array level the loop steps over *array tiles* of
``ways x t`` and each array tile is sliced into up to ``ways`` non-empty core slices (idle
cores get nothing of a split tensor; tensors not indexed by a split dim are counted per core by
:meth:`tilewise.model.traffic.TrafficCounter.copies`).

Dims under an affine index with other dims (convolution windows ``p*s + r``) also need
positions where clipping at the tensor border can happen: for them explicit
``(start, extent, multiplicity)`` lists keep the first and last tiles of every parent — the only
ones a window can reach the border from (see :func:`border_children`).

``trip1`` filters keep only the tiles that their next loops iterate exactly once (extent <=
step), as the reuse rule needs (:mod:`tilewise.model.traffic`). Example: a dim of 10 cut into
tiles of 4 then 3 has, at the second level, extents ``{3: 3, 1: 2, 2: 1}``.
"""

from __future__ import annotations

import numpy as np


def split(exts, mults, step):
    """Children of compressed tiles cut by ``step``: one full entry, one remainder per entry."""
    full = 0
    rem_e, rem_m = [], []
    for e, m in zip(exts, mults):
        q = e // step
        r = e - q * step
        full = full + m * q
        rem_e.append(r)
        rem_m.append(m * (r > 0))
    return [step] + rem_e, [full] + rem_m


def slice_cores(exts, mults, tile, ways):
    """Non-empty core slices (up to ``ways`` per array tile) of array tiles."""
    full = 0
    rem_e, rem_m = [], []
    for e, m in zip(exts, mults):
        f = np.minimum(e // tile, ways)
        r = e - f * tile
        full = full + m * f
        rem_e.append(r)
        rem_m.append(m * (r > 0))
    return [tile] + rem_e, [full] + rem_m


def border_children(start, ext, mult, step, left: int | None, right: int):
    """Explicit children of tiles cut by ``step``: only the first ``left`` and last ``right``
    of each parent (the rest cannot touch the border windows); ``left=None`` keeps them all.
    ``[batch, k]`` arrays."""
    s = step[:, None, None]
    n = -(-ext // step[:, None])
    keep_all = left is None
    if keep_all:
        left, right = int(n[mult > 0].max(initial=1)), 0
    jl = np.arange(left)[None, None, :]
    jr = n[:, :, None] - right + np.arange(right)[None, None, :]
    j = np.concatenate([np.broadcast_to(jl, n.shape + (left,)), jr], 2)
    ok = (j >= 0) & (j < n[:, :, None])
    ok[:, :, left:] &= j[:, :, left:] >= left  # no duplicates of the left children
    off = np.maximum(j, 0) * s
    cs = start[:, :, None] + off
    ce = np.clip(ext[:, :, None] - off, 0, s)
    cm = mult[:, :, None] * ok
    B = start.shape[0]
    out = cs.reshape(B, -1), ce.reshape(B, -1), cm.reshape(B, -1)
    return out if keep_all else keep_border(*out, left, right)


def keep_border(start, ext, mult, left: int, right: int):
    """Keep the first ``left`` and last ``right`` listed tiles (in start order) of each row."""
    live = mult > 0
    rank = np.cumsum(live, 1)
    keep = live & ((rank <= left) | (rank > rank[:, -1:] - right))
    width = min(left + right, start.shape[1])
    order = np.argsort(~keep, axis=1, kind="stable")[:, :width]
    take = lambda x: np.take_along_axis(x, order, 1)
    return take(start), take(ext), take(mult * keep)


def border_slices(start, ext, mult, tile, ways, width: int):
    """Explicit non-empty core slices of array tiles (``width`` = the largest ways)."""
    i = np.arange(width)[None, None, :]
    t = tile[:, None, None]
    off = np.minimum(i * t, ext[:, :, None])
    cs = start[:, :, None] + off
    ce = np.clip(ext[:, :, None] - i * t, 0, t)
    cm = mult[:, :, None] * ((i < ways[:, None, None]) & (ce > 0))
    B = start.shape[0]
    return cs.reshape(B, -1), ce.reshape(B, -1), cm.reshape(B, -1)


class DimTiles:
    """Tile lists of one dim for a batch: per level, iteration tiles and (per-core) tiles.

    ``steps[k]`` is the level-k loop step ([batch]); ``core_tile``/``ways`` the array level's tile
    and split of this dim; ``array_level`` the level made of cores. ``window`` = (left, right)
    border widths in tiles for explicit lists ((None, 0): all tiles; None: no explicit lists).
    """

    def __init__(self, size: int, steps: list, core_tile, ways, array_level,
                 window: tuple[int, int] | None):
        B = core_tile.shape[0]
        self.steps, self.core_tile, self.ways, self.a = steps, core_tile, ways, array_level
        self.window = window
        one = np.ones(B, np.int64)
        self.tile = [([one * size], [one])]
        self.iter = [self.tile[0]]
        for k, s in enumerate(steps):
            e, m = split(*self.tile[k], s)
            self.iter.append((e, m))
            self.tile.append(slice_cores(e, m, core_tile, ways) if k + 1 == array_level else (e, m))
        self.count = [sum(m) for _, m in self.iter]
        self._cache: dict = {}
        if window is not None:
            o = np.ones((B, 1), np.int64)
            self.tile_x = [(o * 0, o * size, o)]
            for k, s in enumerate(steps):
                x = border_children(*self.tile_x[k], s, *window)
                if k + 1 == array_level:
                    x = border_slices(*x, core_tile, ways, int(ways.max(initial=1)))
                    if window[0] is not None:
                        x = keep_border(*x, *window)
                self.tile_x.append(x)

    def trip1(self, lam: int, level: int):
        """Tiles at ``level`` descending from level-``lam`` tiles whose loops down to ``level``
        all iterate once (compressed)."""
        key = ("c", lam, level)
        if key not in self._cache:
            e, m = self.tile[lam]
            for k in range(lam, level):
                m = [mi * (ei <= self.steps[k]) for ei, mi in zip(e, m)]
                if k + 1 == self.a:
                    e, m = slice_cores(e, m, self.core_tile, self.ways)
            self._cache[key] = (e, m)
        return self._cache[key]

    def trip1_x(self, lam: int, level: int):
        """Explicit version of :meth:`trip1`."""
        key = ("x", lam, level)
        if key not in self._cache:
            s, e, m = self.tile_x[lam]
            for k in range(lam, level):
                m = m * (e <= self.steps[k][:, None])
                if k + 1 == self.a:
                    s, e, m = border_slices(s, e, m, self.core_tile, self.ways,
                                            int(self.ways.max(initial=1)))
                    if self.window[0] is not None:
                        s, e, m = keep_border(s, e, m, *self.window)
            self._cache[key] = (s, e, m)
        return self._cache[key]

    def lists(self, lam: int, level: int):
        """Compressed tiles at ``level`` for prefix level ``lam`` (all tiles if lam == level)."""
        return self.tile[level] if lam == level else self.trip1(lam, level)

    def lists_x(self, lam: int, level: int):
        return self.tile_x[level] if lam == level else self.trip1_x(lam, level)

    def powsum(self, lam: int, level: int, power: int):
        """Sum over the tiles of :meth:`lists` of multiplicity x extent**power ([batch] int64);
        power 0 counts the non-empty tiles."""
        key = ("p", lam, level, power)
        if key not in self._cache:
            e, m = self.lists(lam, level)
            if power == 0:
                self._cache[key] = sum(mi * (ei > 0) for ei, mi in zip(e, m))
            else:
                self._cache[key] = sum(mi * ei ** power for ei, mi in zip(e, m))
        return self._cache[key]
