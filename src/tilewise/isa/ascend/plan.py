"""Cover a UB tile with the fewest vector instructions (an elementwise op over a region).

The region is a strided 2-D :class:`Tile`: ``rows x cols`` elements, row ``r`` starting at UB
byte ``base + r * pitch * sizeof(T)`` (``pitch`` in elements, default ``cols``).  Every operand
(dst, and src0/src1 or src) has its own tile of the same ``rows x cols``.

**The instruction family** (``F_row``) the planner chooses from, and within which its plans are
minimal: instructions with all block strides 1 and either

- a *run*: repeats adjacent in memory inside one row (or anywhere in a tile whose operands are
  all contiguous), i.e. ``c`` repeats of ``d`` blocks with continuous mask ``d * E`` and repeat
  stride ``d`` (``E`` = elements per 32-byte block), or one repeat with any continuous mask, or a
  counter-mode instruction over a contiguous range (repeat stride 8);
- a *strip*: the same column interval (continuous mask ``m <= lanes``) of consecutive rows, the
  row gap folded into the repeat stride ``pitch * sizeof(T) / 32`` (needs a pitch that is a
  multiple of 32 bytes and at most 255 blocks), in chunks of at most 255 rows; full-width
  strips (``m == lanes``) of more than 255 rows use one counter-mode instruction;

such that every element of the region is written exactly once and nothing outside it.  Counter
mode is used only when it makes the plan strictly shorter.  The planner solves a dynamic
program over column positions (each column interval is a strip or a run in every row); runs of
``b`` aligned blocks are split into the fewest ``d x c`` pieces (``d <= 8``, ``c <= 255``).  For
``rows <= 255`` this is the exact minimum over ``F_row`` (checked against
:func:`~.bruteforce.min_plan_length`, an exhaustive search, on small regions); for more rows it
applies the same column partition to all rows (an upper bound).

Not in the family, and sometimes shorter: repeat strides that hop between columns and rows,
bitwise masks selecting several short rows in one repeat, block strides > 1.  For instance f32
rows of 192 elements at pitch 256 take 3 strips here, but 2 instructions with a repeat stride of
16 blocks covering columns 0..63 and 128..191 of every row at once.

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
from .instr import (BinaryRepeatParams, DuplicateParams, Operand, UnaryRepeatParams,
                    VectorInstr, op_spec)
from .mask import BLOCK_BYTES, BLOCKS_PER_REPEAT, ContinuousMask, CounterMask, block_elems, lanes

MAX_REPEAT = 255
"""Largest ``repeatTime``."""


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
    return _poison_safe_order(_emit(b, R, C, E, L, steps, counter))


def _poison_safe_order(instrs: list[VectorInstr]) -> list[VectorInstr]:
    """Order the instructions so that no masked-off destination lane of an instruction lands on
    an element written by an earlier one: if ``A``'s masked-off lanes cover elements ``B``
    writes, ``A`` runs first (a topological order, otherwise keeping the emission order).  The
    result then never depends on masked-off lanes being preserved, which
    ``simulate(..., poison=True)`` checks.  Without such an order (a cycle) the emission order is
    kept: correct on hardware, where masked-off lanes are untouched."""
    from .simulate import lane_addresses

    writer: dict[int, int] = {}
    holes = []
    for k, ins in enumerate(instrs):
        addr, active = lane_addresses(ins)
        for a in addr[0][active].tolist():
            writer[a] = k
        holes.append(addr[0][~active].tolist())
    after = [sorted({writer[a] for a in h if a in writer} - {k}) for k, h in enumerate(holes)]
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
        return instrs
    return [instrs[k] for k in order]


def plan(op: str, dtype: "str | DType", dst: Tile, srcs: "list[Tile] | tuple[Tile, ...]" = (),
         *, scalar: "int | float | None" = None, counter: bool = True) -> list[VectorInstr]:
    """The shortest instruction list (in the family ``F_row`` of the module docstring) applying
    ``op`` elementwise over the tiles: ``dst[r, c] = op(srcs[0][r, c], ...)``.

    ``counter=False`` forbids counter mode.  Raises :class:`ISAError` when the tiles differ in
    shape, a tile base is not 32-byte aligned, or the rows cannot be covered (a strided tile
    whose pitch is not a multiple of 32 bytes)."""
    spec = op_spec(op)
    dt = _dtype(dtype)
    tiles = [dst, *srcs]
    need = {"binary": 2, "unary": 1, "scalar": 1, "duplicate": 0}[spec.kind]
    if len(srcs) != need:
        raise ISAError(f"{spec.name} needs {need} source tile(s), got {len(srcs)}")
    if dt.name not in spec.dtypes:
        raise ISAError(f"{spec.name} does not support element type {dt.name}; supported: "
                       f"{', '.join(spec.dtypes)}")
    for name, t in zip(["dst", "src0", "src1"] if need == 2 else ["dst", "src"], tiles):
        if not isinstance(t, Tile):
            raise ISAError(f"{name} must be a Tile, got {type(t).__name__}")
        if (t.rows, t.cols) != (dst.rows, dst.cols):
            raise ISAError(f"{name} tile is {t.rows}x{t.cols} but dst is {dst.rows}x{dst.cols}; "
                           "all operand tiles must have the same shape")
        if t.base % BLOCK_BYTES:
            raise ISAError(f"{name} tile base {t.base} is not 32-byte aligned")
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
    return min(candidates, key=lambda p: (len(p), sum(i.counter for i in p)))


def tile_of_shape(shape, base: int = 0) -> Tile:
    """The UB region holding a ``tilewise.Shape``'s physical buffer: one contiguous row of
    ``shape.size_in_elements`` elements (padding included) at byte ``base``."""
    bits = getattr(getattr(shape, "layout", None), "element_size_in_bits", 0)
    if bits:
        raise ISAError(f"shape {shape} packs elements into {bits} bits; the vector unit needs "
                       "whole elements of the dtype")
    return Tile(base, 1, int(shape.size_in_elements))
