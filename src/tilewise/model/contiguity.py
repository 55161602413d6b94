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
- Only tensors whose axes are all plain dims (``A[m, k]``, each dim once) are laid out this way.
- *Windows* (an input indexed by affine windows, a convolution input ``I[.., p + r, q + s]``):
  where a DMA moves the tensor (:func:`window_granules`: a level whose ``dma:`` gives a word),
  each row of a window on the tensor's innermost axis is *rounded out* to whole words in the
  tensor's own coordinates: the clipped window ``[lo, hi)`` moves
  ``ceil(hi / g) * g - floor(lo / g) * g`` elements (:func:`aligned_extent`, ``g`` the word
  in elements, :func:`granule_points`). The DMA reads the words around the window (real
  neighbouring elements, or the zeros of the row's pad past the tensor's last column: every
  row is padded to whole words, host-side in DDR), since it can address neither a byte offset
  nor a byte length (AM020's shim DMA: "a 32-bit aligned start address"; AM025's BD lengths,
  strides and zero padding all count 32-bit words, so the memtile's zero padding cannot make
  a 10-byte run whole either). A window on an outer axis, and every window where no DMA is
  described (caches), moves its exact bytes.

- *Padded rows* (a row-major tensor moved by a DMA, :func:`row_word` > 1 byte: the AIE
  presets, whose innermost axis some level's tile splits, :func:`rows_padded`): every row on
  the tensor's innermost axis is padded to whole DMA words (:func:`padded_row`) and a tile's
  row ``[lo, hi)`` moves ``round_run(hi - lo)`` elements, from ``lo`` up to whole words. A
  tensor whose rows no tile splits keeps its own row pitch (a 3x3 filter's rows of 3 bf16
  stay 6 B; its tiles are runs of whole rows, rounded as above). The DDR copy's rows are laid
  out padded host-side: zeros
  after each input row, and an output's pad written by the border tiles and cropped by the
  host after the run (AM020's shim DMA: "a 32-bit aligned start address"; AM025: BD lengths
  and strides count 32-bit words). So a tile spanning the whole row spans the padded row and
  merges with the next axis as one run of ``rows x padded_row(N)`` elements, and a bf16
  output's border row of 1 element moves 4 B. Writes (stores of finished tiles and of partial
  sums leaving a level) are rounded the same way, at their own width (an i32 partial sum is a
  whole word): the words past ``hi`` are the row's pad or the tile's own rounded buffer, never
  another tile's elements, because a tile that starts inside a word cannot be moved at all
  (the emitter and the DMA-limits check report it: its offset is not a whole word). Caches
  (no ``dma:``) keep the tensor's own row pitch.

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


def window_granules(arch) -> np.ndarray:
    """Bytes per level ``[L]`` a window row moved into level ``l`` is rounded out to (module
    doc): the largest DMA word of levels ``0 .. l`` (1 where none declares a ``dma:``), so the
    rows of every buffer start on whole words whichever levels a transfer crosses."""
    out, word = [], 1
    for lv in arch.levels:
        word = max(word, lv.dma.word_bytes if lv.dma is not None else 1)
        out.append(word)
    out[0] = 1
    return np.array(out, np.int64)


def row_word(arch) -> int:
    """Bytes a row-major tensor's rows are padded to (module doc, *Padded rows*): the largest
    DMA word of ``arch``'s levels; 1 where no level declares a ``dma:``."""
    return int(window_granules(arch).max())


def padded_row(n: int, word_pts: int) -> int:
    """Elements a row of ``n`` elements takes padded to whole words of ``word_pts`` elements
    (:func:`granule_points` of :func:`row_word`): the DDR row pitch, and what a tile's row
    moves."""
    return round_run(n, word_pts)


def rows_padded(tensor, dims, tiles, kept) -> bool:
    """Whether ``tensor``'s rows are padded to whole words (module doc, *Padded rows*; given
    :func:`row_word` > 1): a row-major tensor (:func:`run_axes`) that some level ``l >= 1``
    keeping it (``kept[l]``: names) tiles with less than its whole innermost axis (``tiles[l]``:
    dim -> elements; at the array level a core's tile). The cost kernel applies the same test
    to its tile lists."""
    if run_axes(tensor, dims) is None or tensor.lanes != 1:
        return False
    d, n = tensor.axes[-1].dims[0], tensor.shape[-1]
    return any(tiles[l][d] < n for l in range(1, len(tiles)) if tensor.name in kept[l])


def aligned_range(lo: int, hi: int, granule_pts: int) -> tuple[int, int]:
    """The window row ``[lo, hi)`` rounded out to whole granules of ``granule_pts`` elements
    (unchanged when empty): the elements the DMA moves (:func:`aligned_extent` counts them)."""
    if hi <= lo:
        return lo, hi
    return lo // granule_pts * granule_pts, -(-hi // granule_pts) * granule_pts


@njit(cache=True, inline="always", error_model="numpy")
def aligned_extent(lo, hi, granule_pts):
    """Elements a window row ``[lo, hi)`` (clipped to the tensor) moves rounded out to whole
    granules of ``granule_pts`` elements in the tensor's coordinates; 0 when it is empty."""
    if hi <= lo:
        return 0
    return (hi + granule_pts - 1) // granule_pts * granule_pts - lo // granule_pts * granule_pts


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


def rounded_window(tensor, outputs) -> bool:
    """Whether ``tensor``'s rows are windows rounded out to the DMA word (module doc): an input
    (not in ``outputs``, the names of the workload's outputs) whose innermost axis is an affine
    window."""
    return tensor.name not in outputs and not tensor.axes[-1].is_plain and tensor.lanes == 1


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
