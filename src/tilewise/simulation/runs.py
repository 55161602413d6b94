"""The elements one transfer moves, from its box: contiguous runs rounded to the link's granule.

The simulation's own reading of :mod:`tilewise.model.contiguity`: where the cost kernel sums
rounded runs over tile lists, this looks at each transferred tile's box (per tensor axis, the
half-open index range it covers) and cuts it into runs directly:

- row-major: from the innermost axis outwards, axes the box covers completely merge into the
  run; the first axis it covers partly holds the run's last factor; every axis outside it
  multiplies the number of runs. Example: a 16 x 8 f32 box of a 64 x 64 matrix is 16 runs of 8
  elements (32 B); through 64 B lines each moves 16 elements' worth, 1024 B in all.
- packed (the tensor is packed at the outermost level, and the transfer is between that level
  and the first level keeping the tensor): one run of the whole pack tile, padding included.
- padded rows (a row-major tensor moved by a DMA whose rows a tile splits): each row of the innermost axis is padded to
  whole words (:func:`~tilewise.model.contiguity.padded_row`): a box's row moves its extent
  rounded up to words, and a box spanning the whole row spans the padded row, so it merges
  with the outer axes at the padded pitch. Example: a 3 x 7 bf16 box spanning a row of 7 is
  one run of 3 x 8 elements (48 B).
- windows (an input whose innermost axis is an affine window, moved by a DMA): each row's
  window rounded out to whole words in the tensor's coordinates
  (:func:`~tilewise.model.contiguity.aligned_extent`); other windows move their exact elements.
"""

from __future__ import annotations

from ..model.contiguity import (aligned_extent, granule_points, link_granules, padded_row,
                                round_run, rounded_window, row_word, rows_padded, run_axes,
                                window_granules)
from ..model.structure import Structure
from .walker import Box, kept_tensors


class RunCounter:
    """Elements moved per transfer for one (workload, arch, mapping)."""

    def __init__(self, workload, arch, mapping):
        st = Structure(workload, arch)
        self.arch, self.mapping = arch, mapping
        self.granules = link_granules(arch)
        self.kept = kept_tensors(st, mapping)
        self.tiles = [lv.sizes for lv in mapping.levels]
        self.layout = {t.name: run_axes(t, st.dims) is not None for t in st.moved}
        self.windows = {t.name for t in st.moved if rounded_window(t, st.outputs)}
        self.wgran = window_granules(arch)
        self.row_word = row_word(arch)
        self.padded = {t.name for t in st.moved
                       if self.row_word > 1 and rows_padded(t, st.dims, self.tiles, self.kept)}

    def source(self, tensor: str, level: int) -> int:
        """The nearest level above ``level`` that keeps ``tensor`` (the outermost always does)."""
        return max([0] + [l for l in range(1, level) if tensor in self.kept[l]])

    def points(self, tensor, level: int, box: Box, width: int) -> int:
        """Elements of ``width`` bytes the transfer of ``box`` of ``tensor`` (a Tensor) between
        ``level`` and its source moves: whole granules per run."""
        extents = [hi - lo for lo, hi in box]
        if any(e <= 0 for e in extents):
            return 0
        exact = 1
        for e in extents:
            exact *= e
        if not self.layout.get(tensor.name):
            if tensor.name not in self.windows:
                return exact
            lo, hi = box[-1]
            gp = int(granule_points(int(self.wgran[level]), width))
            return exact // (hi - lo) * int(aligned_extent(lo, hi, gp))
        src = self.source(tensor.name, level)
        g = max(int(x) for x in self.granules[src + 1:level + 1])
        ge = int(granule_points(g, width))
        if src == 0 and tensor.name in self.mapping.levels[0].pack:
            slot = 1
            for ax, n in zip(tensor.axes, tensor.shape):
                slot *= min(self.tiles[level][ax.dims[0]], n)
            return round_run(slot, ge)
        row = int(granule_points(self.row_word, width)) if tensor.name in self.padded else 1
        run = 1
        for i in range(len(box) - 1, -1, -1):
            lo, hi = box[i]
            run *= padded_row(hi - lo, row) if i == len(box) - 1 else hi - lo
            if (lo, hi) != (0, tensor.shape[i]):  # the run ends here; the outer axes count runs
                runs = 1
                for e in extents[:i]:
                    runs *= e
                return runs * round_run(run, ge)
        return round_run(run, ge)  # the box spans every axis: one run
