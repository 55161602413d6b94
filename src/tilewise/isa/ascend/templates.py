"""Constructive out-of-place covers of a tile by instruction frames (fast, any tile size).

Each function returns a list of :class:`~.cover.Frame` (dst addressing relative to the tile's
first 32-byte block) whose written elements are exactly the tile's, or ``None`` when the
template does not apply.  Tiles here start 32-byte aligned and are contiguous or have a pitch
that is a multiple of 32 bytes; ``E`` is elements per block, ``pitch`` in elements.  Elements
may be written more than once (out of place that is harmless); :func:`~.plan.plan` keeps the
shortest plan that also obeys the footprint rule :data:`~.cover.REACH`.

- :func:`row_windows` — each row (the whole tile when contiguous) as runs of overlapping
  repeats: repeat stride 1 block, so one instruction covers up to 262 blocks, the first and the
  last block through bitwise masks;
- :func:`column_strips` — block stride = row pitch: the 8 blocks of a repeat are 8 rows and the
  repeats walk along the columns;
- :func:`periodic_rows` — repeat stride ``pitch / m``: repeat ``i`` lands on window
  ``i mod m`` of row ``i div m``, so one instruction covers ``m`` windows of every row (f32 rows
  of 192 elements at a pitch of 256: repeat stride 16 blocks covers columns 0..63 and
  128..191), chosen greedily by elements gained per instruction.

Example: f32 rows of 192 elements at a pitch of 256 (24 of 32 blocks): ``periodic_rows(16,
192, 256, 8)`` is two frames, 32 repeats at repeat stride 16 covering blocks 0..7 and 16..23 of
every row, and 16 repeats at repeat stride 32 covering blocks 8..15.
"""

from __future__ import annotations

from .cover import MAX_REP_STRIDE, MAX_REPEAT, Frame
from .mask import BLOCKS_PER_REPEAT


def _full(nblocks: int, E: int) -> int:
    return (1 << (nblocks * E)) - 1


def _slots(masks: list[int], E: int) -> int:
    """Lane mask from per-slot position masks."""
    out = 0
    for b, m in enumerate(masks):
        out |= m << (b * E)
    return out


def _row_masks(x0: int, x1: int, E: int) -> list[int]:
    """Per-block position masks of elements ``[x0, x1)``, blocks from ``x0 // E``."""
    out, B = [], x0 // E
    while B * E < x1:
        lo, hi = max(x0 - B * E, 0), min(x1 - B * E, E)
        out.append(((1 << hi) - 1) ^ ((1 << lo) - 1))
        B += 1
    return out


def row_windows(rows: int, cols: int, pitch: int, E: int) -> list[Frame]:
    """Every row (the whole tile if contiguous) as runs of overlapping repeats."""
    if rows == 1 or pitch == cols:
        spans = [(0, rows * cols)]
    else:
        spans = [(r * pitch, r * pitch + cols) for r in range(rows)]
    frames: list[Frame] = []
    for x0, x1 in spans:
        masks = _row_masks(x0, x1, E)
        B0, nb = x0 // E, len(masks)
        if nb <= BLOCKS_PER_REPEAT:
            frames.append(Frame(B0, 1, 8, 1, _slots(masks, E)))
            continue
        start = 0
        while start < nb:
            # repeat stride 1: repeat i covers blocks start+i .. start+i+7
            end = min(nb, start + MAX_REPEAT + BLOCKS_PER_REPEAT - 1)
            start = min(start, end - BLOCKS_PER_REPEAT)
            slot = [masks[start]] + [_full(1, E)] * 6 + [masks[end - 1]]
            frames.append(Frame(B0 + start, 1, 1, end - start - 7, _slots(slot, E)))
            start = end
    return frames


def column_strips(rows: int, cols: int, pitch: int, E: int, kmax: int) -> "list[Frame] | None":
    """Groups of up to 8 rows, one block per row per repeat (block stride = pitch)."""
    if rows < 2 or pitch % E or pitch // E > kmax:
        return None
    p = pitch // E
    masks = _row_masks(0, cols, E)
    whole = sum(m == _full(1, E) for m in masks)  # leading whole blocks of the row
    frames: list[Frame] = []
    for r0 in range(0, rows, BLOCKS_PER_REPEAT):
        g = min(BLOCKS_PER_REPEAT, rows - r0)
        for i0 in range(0, whole, MAX_REPEAT):
            n = min(MAX_REPEAT, whole - i0)
            frames.append(Frame(r0 * p + i0, p, 1 if n > 1 else 8, n, _slots([_full(1, E)] * g, E)))
        if whole < len(masks):
            frames.append(Frame(r0 * p + whole, p, 8, 1, _slots([masks[-1]] * g, E)))
    return frames


def periodic_rows(rows: int, cols: int, pitch: int, E: int) -> "list[Frame] | None":
    """Windows repeated ``m`` times per row at repeat stride ``pitch / m`` (``m = 1``: a strip
    over the rows), chosen greedily by elements gained per instruction."""
    if rows < 2 or pitch % E:
        return None
    p = pitch // E
    masks = _row_masks(0, cols, E)
    w = len(masks)
    cands = []  # (m, s, c0, per-slot masks, {(block, mask)})
    for m in range(1, min(w, MAX_REPEAT) + 1):
        if p % m or p // m > MAX_REP_STRIDE:
            continue
        s = p // m
        for g in range(1, BLOCKS_PER_REPEAT + 1):
            for c0 in range(w):
                if c0 + (m - 1) * s + g - 1 >= w:
                    break
                slot = []
                for b in range(g):
                    mk = _full(1, E)
                    for j in range(m):
                        mk &= masks[c0 + j * s + b]
                    slot.append(mk)
                if all(slot):
                    got = {(c0 + j * s + b, slot[b]) for j in range(m) for b in range(g)}
                    cands.append((m, s, c0, slot, got))
    need = dict(enumerate(masks))
    chosen = []
    while need:
        best, score = None, 0.0
        for cand in cands:
            gain = sum((need.get(c, 0) & mk).bit_count() for c, mk in cand[4])
            cost = -(-rows * cand[0] // MAX_REPEAT)
            if gain and gain / cost > score:
                best, score = cand, gain / cost
        if best is None:
            return None
        chosen.append(best)
        for c, mk in best[4]:
            if c in need:
                need[c] &= ~mk
                if not need[c]:
                    del need[c]
    frames = []
    for m, s, c0, slot, _ in chosen:
        total, chunk = rows * m, MAX_REPEAT - MAX_REPEAT % m  # chunks end at a row boundary
        for i0 in range(0, total, chunk):
            n = min(chunk, total - i0)
            frames.append(Frame((i0 // m) * p + c0, 1, s if n > 1 else 8, n, _slots(slot, E)))
    return frames
