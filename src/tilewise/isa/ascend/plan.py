"""Cover a UB tile with the fewest vector instructions (an elementwise op over a region).

The region is a strided 2-D :class:`Tile`: ``rows x cols`` elements, row ``r`` starting at UB
byte ``base + r * pitch * sizeof(T)`` (``pitch`` in elements, default ``cols``).  Every operand
(dst, and src0/src1 or src) has its own tile of the same ``rows x cols``; tile bases are 32-byte
aligned.  A source tile equal to dst (same base and pitch) makes the op *in place*; a source
that shares elements with dst without being it is rejected.

**Two instruction families**, by case:

``W`` — out of place, all operands with one pitch (contiguous, or a multiple of 32 bytes).
Every legal instruction whose active dst lanes all lie in the tile: any block stride, any
repeat stride, any repeat count, continuous or bitwise masks, counter mode — including
*overlapping repeats* (repeat stride smaller than the blocks a repeat spans): writing an
element twice stores the same value twice when no source aliases dst.  For example f16
``1 x 1000`` without counter mode is one instruction of 56 repeats at repeat stride 1 (mask 120:
seven whole blocks and the 8 elements of the last block) where ``F_row`` needs two, and f32
``8 x 224`` at pitch 256 one instruction with block stride = pitch (the 8 blocks of a repeat
are the 8 rows) where ``F_row`` needs four.  Fewer instructions can mean more repeats (56
against 8 here): plans are minimal in instructions, the measure this planner optimizes.  The
planner takes the best of the ``F_row`` plans and of three constructions (:mod:`.templates`:
overlapping row runs, column strips with block stride = pitch, windows at repeat stride
``pitch / m``), and on regions spanning at most :data:`EXACT_BLOCKS` blocks the exhaustive
minimum (:func:`~.cover.min_cover`).

``F_row`` — in place (each element must be computed exactly once: a repeat must not read an
element an earlier repeat wrote) and operands with different pitches.  Instructions with all
block strides 1 and either

- a *run*: repeats adjacent in memory inside one row (or anywhere in a tile whose operands are
  all contiguous), i.e. ``c`` repeats of ``d`` blocks with continuous mask ``d * E`` and repeat
  stride ``d`` (``E`` = elements per 32-byte block), or one repeat with any continuous mask, or a
  counter-mode instruction over a contiguous range (repeat stride 8);
- a *strip*: the same column interval (continuous mask ``m <= lanes``) of consecutive rows, the
  row gap folded into the repeat stride ``pitch * sizeof(T) / 32`` (needs a pitch that is a
  multiple of 32 bytes and at most 255 blocks), in chunks of at most 255 rows; full-width
  strips (``m == lanes``) of more than 255 rows use one counter-mode instruction;

such that every element of the region is written exactly once and nothing outside it.  A
dynamic program over column positions (each column interval is a strip or a run in every row;
runs of ``b`` aligned blocks split into the fewest ``d x c`` pieces, ``d <= 8``, ``c <= 255``)
gives the exact minimum over ``F_row`` for ``rows <= 255``; for more rows it applies the same
column partition to all rows (an upper bound).

**Rules every plan keeps.**  The footprint rule (:data:`~.cover.REACH`): no dst lane of an
executed repeat, active or masked off, lies before the tile's first 32-byte block or more than
7 blocks (224 bytes) past its last block.  Plans compare by instruction count, then by
instructions in counter mode or with overlapping repeats (counter mode costs a mode switch,
overlapping repeats compute elements again — so counter mode is used only when it saves
instructions), then by repeats executed, then by bitwise masks.  Out of place the
instructions are put in an order in which no masked-off lane of an instruction falls on an
element an earlier one wrote, so the result does not depend on masked-off lanes being
preserved (``simulate(..., poison=True)``); in ``W`` a plan without such an order is passed over
for the next best one.  In place no order can give that guarantee (a masked-off lane on an
element of another instruction clobbers either its input or its result), and plans rely on the
hardware leaving masked-off lanes untouched, as :func:`~.simulate.simulate` does by default.

**Exactness.**  Out of place, on regions spanning at most :data:`EXACT_BLOCKS` blocks, the plan
length equals :func:`~.bruteforce.min_plan_length` (the exhaustive minimum over ``W``, itself
checked against an independent enumeration of ``W`` on tiny regions) unless the search's state
budget runs out or no minimum plan has a poison-safe order (neither seen on 9 000 random small
tiles); beyond that it is an upper bound.  In place it is the minimum over ``F_row`` for
``rows <= 255``.

Example: ``plan("Add", "f16", Tile(0, 30, 100, 128), [Tile(8192, 30, 100, 128),
Tile(16384, 30, 100, 128)])`` is one instruction,
``Add(dst[0], src0[0], src1[0], 100, 30, {1, 1, 1, 8, 8, 8});``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError
from .cover import REACH, Frame, min_cover, region_elements
from .instr import (BinaryRepeatParams, DuplicateParams, Operand, UnaryRepeatParams,
                    VectorInstr, op_spec)
from .mask import (BLOCK_BYTES, BLOCKS_PER_REPEAT, U64, BitMask, ContinuousMask, CounterMask,
                   block_elems, lanes)
from .simulate import UB_BYTES, lane_addresses
from .templates import column_strips, periodic_rows, row_windows

MAX_REPEAT = 255
"""Largest ``repeatTime``."""
EXACT_BLOCKS = 40
"""Out-of-place regions spanning at most this many 32-byte blocks get the exhaustive search
(:func:`~.cover.min_cover`)."""
EXACT_STATES = 300_000
"""State budget of that search inside :func:`plan`; past it the constructive plan is kept."""


@dataclass(frozen=True)
class Tile:
    """A strided 2-D tile of the UB: ``rows x cols`` elements, row ``r`` at byte
    ``base + r * pitch * sizeof(T)``; ``pitch`` in elements (default ``cols``)."""

    base: int
    rows: int
    cols: int
    pitch: "int | None" = None

    def __post_init__(self) -> None:
        if self.pitch is None:
            object.__setattr__(self, "pitch", self.cols)
        for name in ("base", "rows", "cols", "pitch"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise ISAError(f"Tile.{name} = {v!r} is not an integer")
        if self.base < 0 or self.rows < 1 or self.cols < 1:
            raise ISAError(f"Tile(base={self.base}, rows={self.rows}, cols={self.cols}) needs "
                           "base >= 0 bytes and rows, cols >= 1")
        if self.pitch < self.cols:
            raise ISAError(f"Tile pitch {self.pitch} elements is smaller than its {self.cols} "
                           "columns; valid pitch >= cols")

    @property
    def contiguous(self) -> bool:
        return self.rows == 1 or self.pitch == self.cols

    def end_byte(self, element_bytes: int) -> int:
        """One past the tile's last byte in the UB (bytes), for elements of ``element_bytes``."""
        return self.base + ((self.rows - 1) * self.pitch + self.cols) * element_bytes

    def element_offsets(self) -> np.ndarray:
        """Element offsets (from ``base``) of the tile, row-major, shape ``(rows, cols)``."""
        return np.arange(self.rows)[:, None] * self.pitch + np.arange(self.cols)[None, :]


@lru_cache(maxsize=64)
def _pieces(n: int) -> np.ndarray:
    """``out[b]`` = fewest ``d x c`` pieces (d <= 8 blocks, c <= 255 repeats) summing to b."""
    one = np.zeros(n + 1, dtype=bool)
    for d in range(1, BLOCKS_PER_REPEAT + 1):
        one[d: min(n, d * MAX_REPEAT) + 1: d] = True
    out = np.full(n + 1, np.iinfo(np.int64).max, dtype=np.int64)
    out[0], reach, k = 0, one.copy(), 1
    while True:
        out[reach & (out > k)] = k
        if (out[1:] <= k).all():
            return out
        reach = np.convolve(reach, one)[: n + 1] > 0
        k += 1


def _split_blocks(b: int) -> list[tuple[int, int]]:
    """An optimal list of ``(d, c)`` pieces covering ``b`` blocks (largest pieces first)."""
    pieces, out = _pieces(max(b, 1)), []
    while b:
        k = pieces[b]
        for x in range(min(b, BLOCKS_PER_REPEAT * MAX_REPEAT), 0, -1):
            if pieces[b - x] == k - 1 and any(x % d == 0 and x // d <= MAX_REPEAT
                                              for d in range(1, 9)):
                d = max(d for d in range(1, 9) if x % d == 0 and x // d <= MAX_REPEAT)
                out.append((d, x // d))
                b -= x
                break
    return out


class _Builder:
    """Turns strips and runs into instructions for one op over a set of operand tiles."""

    def __init__(self, op: str, dt: DType, tiles: list[Tile], scalar):
        self.op, self.dt, self.tiles, self.scalar = op, dt, tiles, scalar
        self.kind = op_spec(op).kind
        self.names = ["dst"] + (["src0", "src1"] if len(tiles) == 3 else ["src"])[: len(tiles) - 1]

    def _params(self, reps: list[int]):
        if self.kind == "binary":
            return BinaryRepeatParams(1, 1, 1, *reps)
        if self.kind == "duplicate":
            return DuplicateParams(1, reps[0])
        return UnaryRepeatParams(1, 1, *reps)

    def instr(self, offs: list[int], mask, repeat: int, reps: list[int]) -> VectorInstr:
        ops = [Operand(n, t.base, o) for n, t, o in zip(self.names, self.tiles, offs)]
        return VectorInstr(self.op, self.dt, ops[0], tuple(ops[1:]), mask, repeat,
                           self._params(reps), self.scalar)

    def offsets(self, row: int, col: int) -> list[int]:
        return [row * t.pitch + col for t in self.tiles]


def _row_plan(R: int, C: int, E: int, L: int, strips: bool, counter: bool):
    """DP over column positions of a row; returns (cost, [(kind, i, k)]) with kind strip/run.

    Position ``i`` is column ``min(i * E, C)``; a strip covers ``[i, k)`` (k - i <= 8 blocks) of
    all rows, a run covers ``[i, k)`` of one row (cost per row)."""
    cb = -(-C // E)
    tail = C % E
    pieces = _pieces(cb)
    # run cost (per row) of the segment [i, k): aligned end, or ending at C with a partial block
    h_aligned = pieces.astype(float)
    h_tail = np.full(cb + 1, np.inf)
    for b_full in range(cb):
        if b_full * E + tail <= L:
            h_tail[b_full + 1] = 1
        else:
            h_tail[b_full + 1] = 1 + min(pieces[b_full - j] for j in range(min(b_full, 7) + 1)
                                          if j * E + tail <= L)
    if counter:
        h_aligned = np.minimum(h_aligned, 1)
        h_tail = np.minimum(h_tail, 1)
    strip_cost = 1 if R <= MAX_REPEAT else -(-R // MAX_REPEAT)
    dp = np.full(cb + 1, np.inf)
    dp[cb] = 0
    choice: list = [None] * (cb + 1)
    for i in range(cb - 1, -1, -1):
        best, arg = np.inf, None
        if strips:
            for k in range(i + 1, min(i + BLOCKS_PER_REPEAT, cb) + 1):
                width = min(k * E, C) - i * E
                cost = 1 if (counter and width == L) else strip_cost
                if cost + dp[k] < best:
                    best, arg = cost + dp[k], ("strip", i, k)
        span = np.arange(1, cb - i + 1)
        h = h_aligned[span].copy()
        if tail:
            h[-1] = h_tail[span[-1]]
        run = R * h + dp[i + 1:]
        k = int(np.argmin(run))
        if run[k] < best:
            best, arg = run[k], ("run", i, i + 1 + k)
        dp[i], choice[i] = best, arg
    steps, i = [], 0
    while i < cb:
        steps.append(choice[i])
        i = choice[i][2]
    return dp[0], steps


def _emit(b: _Builder, R: int, C: int, E: int, L: int, steps, counter: bool) -> list[VectorInstr]:
    out: list[VectorInstr] = []
    size = b.dt.bytes
    tail = C % E
    for kind, i, k in steps:
        x, end = i * E, min(k * E, C)
        width = end - x
        if kind == "strip":
            reps = [t.pitch * size // BLOCK_BYTES for t in b.tiles] if R > 1 else [8] * len(b.tiles)
            if R > MAX_REPEAT and counter and width == L:
                out.append(b.instr(b.offsets(0, x), CounterMask(R * L), 1, reps))
                continue
            for r0 in range(0, R, MAX_REPEAT):
                n = min(MAX_REPEAT, R - r0)
                out.append(b.instr(b.offsets(r0, x), ContinuousMask(width), n, reps))
            continue
        for r in range(R):
            out += _run(b, r, x, end, E, L, tail if end == C else 0, counter)
    return out


def _run(b: _Builder, row: int, x: int, end: int, E: int, L: int, tail: int,
         counter: bool) -> list[VectorInstr]:
    """Instructions covering columns ``[x, end)`` of one row (``tail`` = partial last block)."""
    n = end - x
    full = (n - tail) // E
    if tail and n <= L:
        return [b.instr(b.offsets(row, x), ContinuousMask(n), 1, [8] * len(b.tiles))]
    if tail:
        pieces = _pieces(max(full, 1))
        j = min((j for j in range(min(full, 7) + 1) if j * E + tail <= L),
                key=lambda j: (pieces[full - j], -j))
        head = _split_blocks(full - j)
        last = [(end - (j * E + tail), j * E + tail)]
    else:
        head, last = _split_blocks(full), []
    if counter and len(head) + len(last) > 1:
        return [b.instr(b.offsets(row, x), CounterMask(n), 1, [8] * len(b.tiles))]
    out, col = [], x
    for d, c in head:
        out.append(b.instr(b.offsets(row, col), ContinuousMask(d * E), c, [d] * len(b.tiles)))
        col += d * c * E
    for col, m in last:
        out.append(b.instr(b.offsets(row, col), ContinuousMask(m), 1, [8] * len(b.tiles)))
    return out


def _solve(b: _Builder, R: int, C: int, strips: bool, counter: bool) -> list[VectorInstr]:
    E, L = block_elems(b.dt), lanes(b.dt)
    _, steps = _row_plan(R, C, E, L, strips, counter)
    return _emit(b, R, C, E, L, steps, counter)


def _poison_safe_order(instrs: list[VectorInstr]) -> "list[VectorInstr] | None":
    """Order the instructions so that no masked-off destination lane of an instruction lands on
    an element whose final value an earlier one wrote: if ``A``'s masked-off lanes cover an
    element last written (in emission order) by ``B``, ``A`` runs before ``B`` (a topological
    order, otherwise keeping the emission order).  The result on the tile then never depends
    on masked-off lanes being preserved, which ``simulate(..., poison=True)`` checks.  Returns
    ``None`` when no such order exists (a cycle)."""
    if len(instrs) < 2:
        return list(instrs)
    size = instrs[0].dtype.bytes
    lane_sets = [lane_addresses(ins) for ins in instrs]
    lo = min(int(a[0].min()) for a, _ in lane_sets) // size
    hi = max(int(a[0].max()) for a, _ in lane_sets) // size + 1
    writer = np.full(hi - lo, -1, dtype=np.int64)
    for k, (addr, active) in enumerate(lane_sets):
        writer[addr[0][active] // size - lo] = k
    after = []
    for k, (addr, active) in enumerate(lane_sets):
        w = np.unique(writer[addr[0][~active] // size - lo])
        after.append([int(j) for j in w if j >= 0 and j != k])
    indegree = [0] * len(instrs)
    for succ in after:
        for j in succ:
            indegree[j] += 1
    ready = [k for k in range(len(instrs)) if indegree[k] == 0]
    order: list[int] = []
    while ready:
        k = min(ready)
        ready.remove(k)
        order.append(k)
        for j in after[k]:
            indegree[j] -= 1
            if indegree[j] == 0:
                ready.append(j)
    if len(order) < len(instrs):
        return None
    return [instrs[k] for k in order]


def _within_reach(instrs: list[VectorInstr], dst: Tile) -> bool:
    """The footprint rule (:data:`~.cover.REACH`): no dst lane of an executed repeat, active
    or masked off, before the tile's first 32-byte block or more than ``REACH`` blocks past its
    last block."""
    if not instrs:
        return True
    size = instrs[0].dtype.bytes
    first = dst.base // BLOCK_BYTES
    last = (dst.base + ((dst.rows - 1) * dst.pitch + dst.cols) * size - 1) // BLOCK_BYTES
    for ins in instrs:
        reps = ins.repeats()
        if reps == 0:
            continue
        blk, rep = ins.strides()[0]
        start = ins.dst.addr(size) // BLOCK_BYTES
        if start < first or start + (reps - 1) * rep + (BLOCKS_PER_REPEAT - 1) * blk \
                > last + REACH:
            return False
    return True


def _rewrites(ins: VectorInstr) -> bool:
    """True when two repeats of ``ins`` write one element (overlapping repeats)."""
    if ins.repeats() < 2:
        return False
    addr, active = lane_addresses(ins)
    written = addr[0][active]
    return np.unique(written).size < written.size


def _cost(p: list[VectorInstr]) -> tuple[int, int, int, int]:
    """Plans compare by instructions; then by instructions in counter mode or with overlapping
    repeats (counter mode needs a mode switch, overlapping repeats compute elements again);
    then by repeats executed (vector cycles); then by bitwise masks."""
    return (len(p), sum(i.counter or _rewrites(i) for i in p), sum(i.repeats() for i in p),
            sum(isinstance(i.mask, BitMask) for i in p))


def _pick(candidates: list[list[VectorInstr]], dst: Tile, safe_first: bool) -> list[VectorInstr]:
    """The cheapest candidate that obeys the footprint rule, put in a poison-safe order.  When
    it has none: with ``safe_first`` the next cheapest one that has, else (or if no candidate
    has one) the cheapest in emission order — correct on hardware, where masked-off lanes are
    untouched."""
    ok = sorted((p for p in candidates if _within_reach(p, dst)), key=_cost)
    for p in ok if safe_first else ok[:1]:
        ordered = _poison_safe_order(p)
        if ordered is not None:
            return ordered
    return ok[0]


def _frame_instr(b: _Builder, f: Frame) -> VectorInstr:
    """The instruction of frame ``f`` (relative to each tile's base) on every operand."""
    E = block_elems(b.dt)
    ops = [Operand(n, t.base, f.start * E) for n, t in zip(b.names, b.tiles)]
    if f.count:
        mask, repeat = CounterMask(f.count), 1
    elif f.lanes == (1 << f.lanes.bit_length()) - 1:
        mask, repeat = ContinuousMask(f.lanes.bit_length()), f.repeat
    else:
        mask, repeat = BitMask(f.lanes & U64, f.lanes >> 64), f.repeat
    k, s = f.blk, f.rep
    params = (BinaryRepeatParams(k, k, k, s, s, s) if b.kind == "binary" else
              DuplicateParams(k, s) if b.kind == "duplicate" else UnaryRepeatParams(k, k, s, s))
    return VectorInstr(b.op, b.dt, ops[0], tuple(ops[1:]), mask, repeat, params, b.scalar)


def _aliasing(names: list[str], tiles: list[Tile], size: int) -> bool:
    """True when a source tile is the dst tile itself (in place); :class:`ISAError` when a
    source shares some elements with dst without being it."""
    dst = tiles[0]
    inplace, dst_el = False, None
    for name, t in zip(names[1:], tiles[1:]):
        if (t.base, t.pitch) == (dst.base, dst.pitch):
            inplace = True
            continue
        lo = max(t.base, dst.base)
        hi = min(t.base + ((t.rows - 1) * t.pitch + t.cols) * size,
                 dst.base + ((dst.rows - 1) * dst.pitch + dst.cols) * size)
        if lo >= hi:
            continue
        if dst_el is None:
            dst_el = dst.base + dst.element_offsets().ravel() * size
        t_el = t.base + t.element_offsets().ravel() * size
        if (t.base - dst.base) % size or np.intersect1d(dst_el, t_el).size:
            raise ISAError(f"{name} tile (base {t.base}, pitch {t.pitch}) overlaps the dst tile "
                           f"(base {dst.base}, pitch {dst.pitch}) without being it; a source "
                           "must be the dst tile itself (in place) or disjoint from it")
    return inplace


def plan(op: str, dtype: "str | DType", dst: Tile, srcs: "list[Tile] | tuple[Tile, ...]" = (),
         *, scalar: "int | float | None" = None, counter: bool = True,
         exact: bool = True, ub_bytes: int = UB_BYTES) -> list[VectorInstr]:
    """The shortest instruction list applying ``op`` elementwise over the tiles,
    ``dst[r, c] = op(srcs[0][r, c], ...)``: fewest instructions of ``W`` out of place (a source
    tile equal to dst makes the op in place: then of ``F_row``; see the module docstring).

    ``counter=False`` forbids counter mode; ``exact=False`` skips the exhaustive search on
    small regions; ``ub_bytes`` is the unified buffer's capacity (bytes).  Raises
    :class:`ISAError` when the tiles differ in shape, a tile reaches past ``ub_bytes``, a tile
    base is not 32-byte aligned, a source overlaps dst without being it, or the rows cannot be covered (a
    strided tile whose pitch is not a multiple of 32 bytes)."""
    spec = op_spec(op)
    dt = _dtype(dtype)
    tiles = [dst, *srcs]
    need = {"binary": 2, "unary": 1, "scalar": 1, "duplicate": 0}[spec.kind]
    if len(srcs) != need:
        raise ISAError(f"{spec.name} needs {need} source tile(s), got {len(srcs)}")
    if dt.name not in spec.dtypes:
        raise ISAError(f"{spec.name} does not support element type {dt.name}; supported: "
                       f"{', '.join(spec.dtypes)}")
    names = ["dst", "src0", "src1"] if need == 2 else ["dst", "src"]
    for name, t in zip(names, tiles):
        if not isinstance(t, Tile):
            raise ISAError(f"{name} must be a Tile, got {type(t).__name__}")
        if (t.rows, t.cols) != (dst.rows, dst.cols):
            raise ISAError(f"{name} tile is {t.rows}x{t.cols} but dst is {dst.rows}x{dst.cols}; "
                           "all operand tiles must have the same shape")
        if t.base % BLOCK_BYTES:
            raise ISAError(f"{name} tile base {t.base} is not 32-byte aligned")
        if t.end_byte(dt.bytes) > ub_bytes:
            raise ISAError(f"{name} tile {t.rows}x{t.cols} (pitch {t.pitch}) at UB byte {t.base} "
                           f"ends at byte {t.end_byte(dt.bytes)}, past the unified buffer of "
                           f"{ub_bytes} bytes; use fewer rows or columns")
    inplace = _aliasing(names, tiles, dt.bytes)
    b = _Builder(spec.name, dt, tiles, scalar)
    R, C = dst.rows, dst.cols
    candidates = []
    if all(t.contiguous for t in tiles):
        flat = _Builder(spec.name, dt, [Tile(t.base, 1, R * C) for t in tiles], scalar)
        candidates += [_solve(flat, 1, R * C, True, False)]
        if counter:
            candidates += [_solve(flat, 1, R * C, True, True)]
    if R > 1 and all(t.pitch * dt.bytes % BLOCK_BYTES == 0 for t in tiles):
        strips = all(t.pitch * dt.bytes // BLOCK_BYTES <= MAX_REPEAT for t in tiles)
        candidates += [_solve(b, R, C, strips, False)]
        if counter:
            candidates += [_solve(b, R, C, strips, True)]
    if not candidates:
        bad = next(t for t in tiles if t.pitch * dt.bytes % BLOCK_BYTES)
        raise ISAError(
            f"rows of a {R}x{C} {dt.name} tile with pitch {bad.pitch} elements "
            f"({bad.pitch * dt.bytes} bytes) do not start 32-byte aligned, and vector operands "
            f"must; use a pitch that is a multiple of {BLOCK_BYTES // dt.bytes} elements"
        )
    if inplace or any(t.pitch != dst.pitch for t in tiles):
        return _pick(candidates, dst, safe_first=False)
    # out of place, one geometry for all operands: the family W
    E, P = block_elems(dt), dst.pitch
    kmax = 255 if spec.kind == "binary" else 65535
    for frames in (row_windows(R, C, P, E), column_strips(R, C, P, E, kmax),
                   periodic_rows(R, C, P, E)):
        if frames:
            candidates.append([_frame_instr(b, f) for f in frames])
    best = _pick(candidates, dst, safe_first=True)
    span = ((R - 1) * P + C - 1) // E + 1
    if exact and len(best) > 1 and span <= EXACT_BLOCKS:
        try:
            frames = min_cover(region_elements(R, C, P), dt, kind=spec.kind, counter=counter,
                               max_depth=len(best) - 1, limit=EXACT_STATES)
        except ISAError:  # state budget exhausted: keep the constructive plan
            frames = None
        if frames is not None:
            best = _pick([[_frame_instr(b, f) for f in frames], best], dst, safe_first=True)
    return best


def tile_of_shape(shape, base: int = 0) -> Tile:
    """The UB region holding a ``tilewise.Shape``'s physical buffer: one contiguous row of
    ``shape.size_in_elements`` elements (padding included) at byte ``base``."""
    bits = getattr(getattr(shape, "layout", None), "element_size_in_bits", 0)
    if bits:
        raise ISAError(f"shape {shape} packs elements into {bits} bits; the vector unit needs "
                       "whole elements of the dtype")
    return Tile(base, 1, int(shape.size_in_elements))
