"""Contiguous runs: the bytes a link really carries for a tile, given the tensor's layout.

A link does not move arbitrary bytes: a cache fills whole lines, a DMA moves whole words. A
tile moved between two levels is a set of *runs* of contiguous bytes in the tensor's layout,
and each run is rounded up to the link's granule. The rules, each defined once here (the cost
kernel sums them over the tile lists, :mod:`tilewise.simulation.runs` applies them to every
tile's box directly):

- *Granule* of link ``l`` (joining level ``l - 1`` to level ``l``), in bytes: the larger of the
  receiving level's ``block`` (the cache line a cache fills; an Ascend UB's 32 B block) and the
  word of the DMA that reads the source level (``levels[l-1].dma.word``, 4 B on the AIE
  presets); 1 when neither is given. A transfer from level ``s`` to level ``c`` (crossing links
  ``s+1 .. c`` under bypass) is rounded to the coarsest granule it crosses
  (:func:`transfer_granule`). Outputs stored back use the same links, the same granule.
- *Row-major layout* (the default): every level sees the tensor in its row-major layout at the
  outermost level (caches keep main-memory addresses). A tile's box is one run per row of its
  innermost axis; trailing axes the tile spans completely merge into the run (a tile whose rows
  span the whole tensor row is one run per block of rows; a tile spanning every axis is one
  run). A run of ``n`` elements of ``w`` bytes moves ``ceil(n*w / g) * g`` bytes: runs are
  taken to start on a granule (a row pitch and tile starts that are whole granules, as with
  aligned tiles and line-padded rows), so a run of 32 B from a cache with 64 B lines moves 64 B.
  A granule that is not whole elements rounds to the fewest elements that are whole granules
  (:func:`granule_points`).
- *Packed layout* (``pack:A`` at the outermost level, MLIR ``linalg.pack`` with
  ``inner_tiles`` = the tile at the first level below that keeps the tensor, padded to whole
  tiles): each transfer between the outermost level and that level moves one whole pack tile,
  padding included, as one run. Transfers further in see the row-major rule above.
- Only tensors whose axes are all plain dims (``A[m, k]``, each dim once) are laid out this way;
  a tensor indexed by affine windows (a convolution input ``I[p + r]``) moves its exact bytes.

- *Pack pass* (:func:`pack_pass`): packing an input reads its bytes and writes its packed
  bytes over the outermost link before the operator runs; an output packed at the outermost
  level is unpacked by a pass after it. Seed 001's *unpack fusion* (the BRGEMM "directly
  writing in %arg3", the row-major result) is the default: an output not packed is written
  tile by tile in rows, with no pass. The search decides per tensor (``pack`` flags).

Widths: an output's partial sums move at the accumulator width, so their granule in elements
differs from the final data's (:func:`granule_points` per width).
"""

from __future__ import annotations

import numpy as np
from numba import njit



def link_granules(arch) -> np.ndarray:
    """Bytes per link ``[L]`` (index 0 unused, 1): ``max(block of level l, DMA word of level
    l - 1)`` (module doc)."""
    out = [1]
    for l in range(1, len(arch.levels)):
        word = arch.levels[l - 1].dma.word_bytes if arch.levels[l - 1].dma else 1
        out.append(max(int(arch.levels[l].block_bytes), int(word), 1))
    return np.array(out, np.int64)


def transfer_granule(granules, src: int, dst: int) -> int:
    """Bytes: the coarsest granule of the links a transfer from level ``src`` to level ``dst``
    crosses (``src < dst``)."""
    return int(max(granules[src + 1:dst + 1]))


@njit(cache=True, inline="always", error_model="numpy")
def granule_points(granule, width):
    """The granule in elements of ``width`` bytes: the fewest elements that are whole granules,
    ``lcm(granule, width) / width`` (``granule / width`` for a granule of whole elements, 1 for
    an element of whole granules)."""
    a, b = granule, width
    while b:
        a, b = b, a % b
    return granule // a


def run_axes(tensor, dims) -> tuple[int, ...] | None:
    """The dim index of each axis of ``tensor`` (outermost first) when every axis is a plain
    dim used once (the tensor has a row-major or packed layout); None otherwise (exact bytes)."""
    if not all(ax.is_plain for ax in tensor.axes):
        return None
    names = [ax.dims[0] for ax in tensor.axes]
    if len(set(names)) != len(names):
        return None
    return tuple(dims.index(d) for d in names)


def round_run(points: int, granule_pts: int) -> int:
    """Elements a run of ``points`` elements moves: rounded up to whole granules."""
    return -(-points // granule_pts) * granule_pts


@njit(cache=True, inline="always", error_model="numpy")
def pack_pass(t, c0, b, tiles, sizes, runs, tbytes, output, rbw, wbw, e_read0, e_write0, e_link1):
    """The pack pass of tensor ``t`` packed at the outermost level by its tile at level ``c0``
    (the first level below that keeps it): ``(bytes, seconds, joules)``. A pass reads the
    tensor's bytes and writes its packed bytes (whole pack tiles, padding included) over the
    outermost link, one after the other (``rbw``/``wbw`` bytes/s of link 1, all its
    instances); an output's unpack reads the packed bytes and writes the tensor's. Joules: read
    at level 0, written at level 0, both crossing link 1."""
    real = tbytes[t]
    slot = tbytes[t]
    for i in range(runs[t, 0]):
        d = runs[t, 1 + i]
        tile = min(tiles[b, c0, d], sizes[d])
        real *= sizes[d]
        slot *= (sizes[d] + tile - 1) // tile * tile
    rd, wr = (slot, real) if output else (real, slot)
    seconds = rd / rbw + wr / wbw
    joules = rd * e_read0 + wr * e_write0 + (rd + wr) * e_link1
    return rd + wr, seconds, joules
