"""A structure-of-arrays batch of candidate mappings sharing one workload and architecture.

``tiles[b, i, j]``: tile of dim ``j`` at level ``i`` (elements, int64); ``orders[b, i, p]``: the
dim index of loop position ``p`` (outermost first) at level ``i`` (levels 0 .. n-2);
``bypass`` / ``double_buffer[b, i, t]``: flags per level and tensor (``Structure.tensors``
order; a tensor its level does not hold, ``Structure.held``, is bypassed whatever the flag
says, and :meth:`MappingBatch.mapping` writes it so); ``rows_dim`` / ``cols_dim[b]``: the split dim index or -1, with ``rows_ways`` /
``cols_ways[b]``; ``pack[b, t]``: the tensor is stored packed at the outermost level
(:mod:`.contiguity`; all False when not given). Build it from :class:`~tilewise.mapping.Mapping` objects with
:meth:`MappingBatch.from_mappings`, or directly from arrays (the search does)::

    >>> batch = MappingBatch.from_mappings(workload, arch, [m1, m2])
    >>> batch.mapping(1, workload, arch) == m2
    True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MappingError
from ..mapping import LevelMapping, Mapping, Spatial
from .legality import validate as check_legal
from .structure import Structure


@dataclass(frozen=True)
class MappingBatch:
    tiles: np.ndarray
    orders: np.ndarray
    bypass: np.ndarray
    double_buffer: np.ndarray
    rows_dim: np.ndarray
    rows_ways: np.ndarray
    cols_dim: np.ndarray
    cols_ways: np.ndarray
    pack: np.ndarray | None = None

    def __post_init__(self):
        if self.pack is None:
            object.__setattr__(self, "pack", np.zeros((len(self), self.bypass.shape[2]), bool))

    def __len__(self) -> int:
        return self.tiles.shape[0]

    @classmethod
    def from_mappings(cls, workload, arch, mappings, validate: bool = True) -> "MappingBatch":
        """Stack mappings, validating each first (MappingError names the offender) unless
        ``validate`` is False (the batch's ``legal`` mask then reports illegal ones)."""
        st = Structure(workload, arch)
        dims, names = st.dims, [t.name for t in st.tensors]
        B, L, D, T = len(mappings), st.n_levels, len(st.dims), len(names)
        tiles = np.zeros((B, L, D), np.int64)
        orders = np.zeros((B, max(L - 1, 0), D), np.int64)
        bypass = np.zeros((B, L, T), bool)
        db = np.zeros((B, L, T), bool)
        sp = np.full((4, B), -1, np.int64)
        sp[1] = sp[3] = 1
        pack = np.zeros((B, T), bool)
        moved = {t.name for t in st.moved}
        forced = ~st.held & np.array([n in moved for n in names])[None, :]
        for b, m in enumerate(mappings):
            if validate:
                check_legal(workload, arch, m)
            for i, lv in enumerate(m.levels):
                tiles[b, i] = [lv.sizes[d] for d in dims]
                if i < L - 1:
                    orders[b, i] = [dims.index(d) for d in lv.order]
                bypass[b, i] = [t in lv.bypass for t in names] | forced[i]
                db[b, i] = [t in lv.double_buffer for t in names]
            pack[b] = [t in m.levels[0].pack for t in names]
            for j, s in enumerate((m.rows, m.cols)):
                if s:
                    sp[2 * j, b], sp[2 * j + 1, b] = dims.index(s.dim), s.ways
        return cls(tiles, orders, bypass, db, sp[0], sp[1], sp[2], sp[3], pack)

    def mapping(self, i: int, workload, arch) -> Mapping:
        """Candidate ``i`` as a :class:`Mapping`."""
        st = Structure(workload, arch)
        dims, names = st.dims, [t.name for t in st.tensors]
        moved = {t.name for t in st.moved}
        if not 0 <= i < len(self):
            raise MappingError(f"candidate {i} out of range: batch has {len(self)}")
        levels = []
        for k, lv in enumerate(arch.levels):
            order = tuple(dims[j] for j in self.orders[i, k]) if k < st.n_levels - 1 else ()
            levels.append(LevelMapping(
                lv.name, tuple((d, int(self.tiles[i, k, j])) for j, d in enumerate(dims)), order,
                frozenset(n for t, n in enumerate(names)
                          if self.bypass[i, k, t] or (n in moved and not st.held[k, t])),
                frozenset(n for t, n in enumerate(names) if self.double_buffer[i, k, t]),
                frozenset(n for t, n in enumerate(names) if k == 0 and self.pack[i, t])))
        rows = Spatial(dims[self.rows_dim[i]], int(self.rows_ways[i])) if self.rows_dim[i] >= 0 else None
        cols = Spatial(dims[self.cols_dim[i]], int(self.cols_ways[i])) if self.cols_dim[i] >= 0 else None
        return Mapping(tuple(levels), rows, cols)

    def ways(self, n_dims: int) -> np.ndarray:
        """``[batch, dims]`` int64: ways each dim is split across the array (1 if not split)."""
        w = np.ones((len(self), n_dims), np.int64)
        idx = np.arange(len(self))
        for dim, ways in ((self.rows_dim, self.rows_ways), (self.cols_dim, self.cols_ways)):
            has = dim >= 0
            w[idx[has], dim[has]] = ways[has]
        return w


def stated(workload, arch, mapping: Mapping) -> Mapping:
    """``mapping`` with the bypass its arch forces written out (a tensor a level does not hold,
    ``Level.holds``): what the mapping text and JSON of a cost report show."""
    return MappingBatch.from_mappings(workload, arch, [mapping], validate=False).mapping(
        0, workload, arch)
