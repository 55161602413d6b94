"""Exhaustive minimum plan length over the planner's instruction families, for small tiles.

:func:`min_plan_length` answers in the family :func:`~.plan.plan` uses for the case:

- **out of place** with one geometry for all operands (contiguous, or a pitch that is a
  multiple of 32 bytes): the family ``W`` (any strides, bitwise masks, overlapping repeats,
  counter mode; see :mod:`.cover`), by :func:`~.cover.min_cover`;
- **in place** (or operands with different pitches): the family ``F_row`` (see :mod:`.plan`),
  by the search below.

For ``F_row`` it enumerates **every** instruction of the family whose written elements lie
inside the tile — runs (normal mode: one repeat with any continuous mask, or ``c`` adjacent
repeats of ``d`` whole blocks; counter mode: any contiguous range from a 32-byte aligned start),
strips (a column interval of ``m <= lanes`` elements over 2..255 consecutive rows, repeat
stride = pitch) and counter-mode strips (``lanes`` columns over ``q`` rows plus a shorter last
row) — and finds the fewest of them whose element sets partition the tile exactly, by
depth-first search on the lowest uncovered element with iterative deepening (a depth-limited
search for 1, 2, ... instructions, remembering which remainders failed at which depth).  Only
the dst geometry matters (all operands share masks and repeat counts).

The one pruning is sound: an interval that ends inside a row at an unaligned column can never be
part of an exact cover (the next element would have to start an instruction at an unaligned
address), so such candidates are skipped.

Example: ``min_plan_length("f32", 2, 259, 264, counter=False, inplace=True)`` is 3 (two row
runs and one strip for both rows' tails), like the planner in place; out of place it is 2.
"""

from __future__ import annotations

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError
from .cover import MAX_BLOCKS, min_cover, region_elements
from .mask import BLOCK_BYTES, block_elems, lanes

MAX_REPEAT = 255


def _candidates(dt: DType, rows: int, cols: int, pitch: int, counter: bool) -> dict[int, set]:
    E, L = block_elems(dt), lanes(dt)
    contiguous = rows == 1 or pitch == cols
    by_low: dict[int, set] = {}

    def add(bits: int) -> None:
        low = (bits & -bits).bit_length() - 1
        by_low.setdefault(low, set()).add(bits)

    def span(start: int, n: int) -> int:
        return ((1 << n) - 1) << start

    # runs: along a row, or along the whole tile when it is contiguous
    # (first bit, length, element address of its first element) of each segment
    segments = ([(0, rows * cols, 0)] if contiguous
                else [(r * cols, cols, r * pitch) for r in range(rows)])
    for seg0, seg_len, addr0 in segments:
        for x in range(-addr0 % E, seg_len, E):
            rest = seg_len - x
            for m in range(1, min(L, rest) + 1):
                if m % E and m != rest:
                    continue
                add(span(seg0 + x, m))
                if m % E == 0:
                    for c in range(2, min(MAX_REPEAT, rest // m) + 1):
                        if c * m == rest or (c * m) % E == 0:
                            add(span(seg0 + x, c * m))
            if counter:
                for n in range(1, rest + 1):
                    if n % E == 0 or n == rest:
                        add(span(seg0 + x, n))
    # strips: the same columns of consecutive rows, repeat stride = pitch (in 32-byte blocks)
    if rows > 1 and (pitch * dt.bytes) % BLOCK_BYTES == 0 \
            and pitch * dt.bytes // BLOCK_BYTES <= MAX_REPEAT:
        for x in range(0, cols, E):
            for m in range(1, min(L, cols - x) + 1):
                if m % E and x + m != cols:
                    continue
                row_bits = span(x, m)
                for r0 in range(rows):
                    bits = 0
                    for n in range(1, min(MAX_REPEAT, rows - r0) + 1):
                        bits |= row_bits << ((r0 + n - 1) * cols)
                        if n >= 2:
                            add(bits)
                    if counter and m == L:
                        for q in range(1, rows - r0 + 1):
                            full = sum(row_bits << ((r0 + i) * cols) for i in range(q))
                            add(full)
                            if r0 + q < rows:
                                for t in range(1, L):
                                    if t % E == 0 or x + t == cols:
                                        add(full | (span(x, t) << ((r0 + q) * cols)))
    return by_low


def min_plan_length(dtype: "str | DType", rows: int, cols: int, pitch: "int | None" = None, *,
                    counter: bool = True, inplace: bool = False, kind: str = "binary",
                    limit: int = 200_000) -> int:
    """Fewest instructions covering a ``rows x cols`` tile (``pitch`` elements) in the family
    the planner uses for it: ``W`` out of place when the rows are contiguous or start 32-byte
    aligned, else ``F_row`` (in place: exactly, each element once).  ``kind`` is the op kind
    (block-stride width, ``W`` only).  Raises :class:`ISAError` when the tile cannot be covered
    or the search would visit more than ``limit`` states (it is meant for small tiles)."""
    dt = _dtype(dtype)
    pitch = cols if pitch is None else pitch
    if not inplace and (rows == 1 or pitch == cols or pitch * dt.bytes % BLOCK_BYTES == 0):
        frames = min_cover(region_elements(rows, cols, pitch), dt, kind=kind, counter=counter,
                           max_depth=MAX_BLOCKS, limit=limit)
        assert frames is not None  # one instruction per block always covers
        return len(frames)
    by_low = _candidates(dt, rows, cols, pitch, counter)
    biggest = max((c.bit_count() for cands in by_low.values() for c in cands), default=1)
    failed: dict[int, int] = {}  # rest -> largest depth known to be insufficient
    visits = 0

    def fits(rest: int, depth: int) -> bool:
        nonlocal visits
        if rest == 0:
            return True
        if -(-rest.bit_count() // biggest) > depth or failed.get(rest, -1) >= depth:
            return False
        visits += 1
        if visits > limit:
            raise ISAError(f"brute-force search exceeded {limit} states; use a smaller tile")
        low = (rest & -rest).bit_length() - 1
        for cand in by_low.get(low, ()):
            if cand & ~rest == 0 and fits(rest ^ cand, depth - 1):
                return True
        failed[rest] = depth
        return False

    full = (1 << (rows * cols)) - 1
    union = 0
    for cands in by_low.values():
        for c in cands:
            union |= c
    if union != full:
        raise ISAError(f"a {rows}x{cols} {dt.name} tile with pitch {pitch} cannot be covered by "
                       "32-byte aligned vector instructions")
    depth = 1
    while not fits(full, depth):
        depth += 1
        if depth > rows * cols:
            raise ISAError(f"a {rows}x{cols} {dt.name} tile with pitch {pitch} cannot be covered "
                           "exactly")
    return depth
