"""Buffer descriptors per transfer, from the walk: the simulation's own count of the DMA's BDs.

A transfer between a level and its source (the nearest level above that keeps the tensor)
reads one buffer and writes another; each side is a strided access that the DMA of its level
runs as :func:`~tilewise.model.descriptors.bd_count` BDs, and the transfer takes
:func:`~tilewise.model.descriptors.transfer_bds` of them (its longest side). This module
builds both sides of each transfer the walk makes, as the DMA program addresses them
(:mod:`tilewise.emit.dma.program`), without the emitter:

- buffers are row-major: the whole tensor at the outermost level (its rows padded to whole
  words where :func:`~tilewise.model.contiguity.rows_padded`, a window's rows rounded out to
  the words of every level, :func:`~tilewise.model.contiguity.window_granules`), elsewhere
  per level the largest box any transfer of the walk puts there;
- a box is the walk's, a window's row rounded out to words
  (:func:`~tilewise.model.contiguity.aligned_range`) and a padded row rounded up to whole
  words at the width the transfer carries (partial sums at the accumulator type);
- both sides carry elements of that width. Only levels whose spec gives ``dma:`` limits count
  BDs; :class:`BdCounter` answers None elsewhere.
"""

from __future__ import annotations

from ..model.contiguity import (aligned_range, granule_points, padded_row, rounded_window,
                                row_word, rows_padded, window_granules)
from ..model.descriptors import bd_count, transfer_bds
from ..model.structure import Structure
from .walker import Box, Transfer, kept_tensors


class BdCounter:
    """BDs per transfer for one (workload, arch, mapping); :meth:`see` every walk event first
    (it sizes the buffers), then ask :meth:`bds`."""

    def __init__(self, workload, arch, mapping):
        st = Structure(workload, arch)
        self.w, self.arch = workload, arch
        self.kept = kept_tensors(st, mapping)
        tiles = [lv.sizes for lv in mapping.levels]
        word = row_word(arch)
        self.rows = {t.name for t in st.moved if word > 1 and rows_padded(t, st.dims, tiles, self.kept)}
        self.row_word = word
        self.words = {t.name: [int(granule_points(int(g), t.element_bytes)) for g in window_granules(arch)]
                      for t in st.moved if rounded_window(t, st.outputs)}
        self.extent: dict = {}  # (level, tensor) -> largest box extents
        self.memo: dict = {}    # (tensor, level, moved extents, width) -> BDs (after the walk)
        self.active = any(lv.dma is not None for lv in arch.levels)  # else: nothing to count

    def source(self, tensor: str, level: int) -> int:
        return max(l for l in range(level) if tensor in self.kept[l])

    def box(self, tensor, level: int, box: Box, width: int) -> Box:
        """``box`` as the DMA moves it at ``width`` bytes per element (module doc)."""
        words = self.words.get(tensor.name)
        if words is not None and level:
            box = box[:-1] + (aligned_range(*box[-1], words[level]),)
        if tensor.name in self.rows:
            lo, hi = box[-1]
            box = box[:-1] + ((lo, lo + padded_row(hi - lo, int(granule_points(self.row_word, width)))),)
        return box

    def see(self, ev: Transfer) -> None:
        """Widen the buffer of ``ev``'s level to hold its box."""
        if not ev.level or not self.active:
            return
        box = ev.box
        if ev.tensor in self.words or ev.tensor in self.rows:
            t = self.w.tensor(ev.tensor)
            box = self.box(t, ev.level, box, t.element_bytes)
        key = (ev.level, ev.tensor)
        old = self.extent.get(key)
        ext = tuple(hi - lo for lo, hi in box)
        self.extent[key] = ext if old is None else tuple(max(x, y) for x, y in zip(old, ext))

    def shape(self, tensor, level: int) -> tuple[int, ...]:
        """The buffer of ``tensor`` at ``level`` (elements per axis, row-major)."""
        if level:
            return self.extent[(level, tensor.name)]
        if tensor.name in self.rows:
            pts = int(granule_points(self.row_word, tensor.element_bytes))
            return tuple(tensor.shape[:-1]) + (padded_row(tensor.shape[-1], pts),)
        words = self.words.get(tensor.name)
        if words is None:
            return tuple(tensor.shape)
        return tuple(tensor.shape[:-1]) + (aligned_range(0, tensor.shape[-1], max(words))[1],)

    def bds(self, tensor, level: int, box: Box, width: int) -> int | None:
        """BDs of the transfer of ``box`` of ``tensor`` (a Tensor) between ``level`` and its
        source at ``width`` bytes per element; None where a side's level has no DMA limits."""
        if not self.active:
            return None
        src = self.source(tensor.name, level)
        lims = [self.arch.levels[l].dma for l in (src, level)]
        if any(lim is None for lim in lims):
            return None
        sizes = tuple(hi - lo for lo, hi in self.box(tensor, level, box, width))
        key = (tensor.name, level, sizes, width)
        if key not in self.memo:  # the count depends on the extents, not the offset
            self.memo[key] = self._count(tensor, (src, level), lims, sizes, width)
        return self.memo[key]

    def _count(self, tensor, levels, lims, sizes, width: int) -> int:
        """BDs of a transfer of ``sizes`` between ``levels`` (source, destination)."""
        lanes = (tensor.lanes,) if tensor.lanes > 1 else ()
        counts = []
        for l, lim in zip(levels, lims):
            shape = self.shape(tensor, l) + lanes
            pitch = [1] * len(shape)
            for i in range(len(shape) - 2, -1, -1):
                pitch[i] = pitch[i + 1] * shape[i + 1]
            counts.append(bd_count(sizes + lanes, tuple(pitch), width // tensor.lanes, lim))
        return transfer_bds(counts)
