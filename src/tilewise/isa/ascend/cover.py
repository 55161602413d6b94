"""Exact fewest instructions writing a small UB region out of place (the family ``W``).

The family ``W`` is every legal normal-mode or counter-mode instruction whose *written* (active)
dst lanes all lie in the region, with any block stride (``1..255`` for binary ops, ``1..65535``
otherwise), any repeat stride ``0..255``, any repeat count and any mask (continuous or
bitwise), under one footprint rule: no lane of an executed repeat, active or masked off, lies
more than :data:`REACH` 32-byte blocks past the region's last block, nor before its first.

Out of place (no source aliases dst) writing an element twice stores the same value twice, so
*any* cover of the region is a correct plan: overlapping repeats (repeat stride smaller than the
blocks a repeat spans) are allowed.  (In place they are not — a repeat would read an element an
earlier repeat already wrote — so :func:`~.plan.plan` plans in-place ops in its own family.)

How the search stays small and exact:

- **Frames and maximal masks.**  An instruction's written set is fixed by its *frame* —
  ``(start block a, block stride k, repeat stride s, repeats n)`` — and its mask: lane
  ``(b, j)`` (block slot ``b`` of 8, element ``j`` of the ``E`` in a block) writes element
  ``E * (a + i*s + b*k) + j`` in repeat ``i < n``.  For a set cover a frame is only ever needed
  with its *maximal* mask (every lane whose ``n`` elements all lie in the region), and of those
  sets only the inclusion-maximal ones: replacing a set by a superset never breaks a cover.
- **Cells.**  Positions ``j`` that lie in exactly the same blocks of the region (and on the same
  side of every point where a counter-mode prefix can stop) are interchangeable: every maximal
  set holds all of them or none.  The search therefore works on ``(block, group)`` cells.
- **Search.**  Iterative deepening on the number of instructions, branching on the lowest
  uncovered cell over the maximal sets that contain it, with a table of remainders known to
  fail at a depth, and a bound ``ceil(remaining cells / largest set)``.
- Frames are pruned only when another frame's set contains theirs *and* that frame obeys the
  footprint rule (slot 0 empty: the frame one slot later; every slot unchanged by one more
  repeat before the first or after the last: the longer frame).

The test suite checks :func:`min_cover` against an independent enumeration of every instruction
of ``W`` on tiny regions.  Measured: regions of up to ~40 blocks take milliseconds to a few
hundred milliseconds; :func:`~.plan.plan` calls it on regions of at most
:data:`~.plan.EXACT_BLOCKS` blocks.

Example: f16 ``1 x 1000`` without counter mode is one instruction (56 repeats at repeat stride
1, continuous mask 120: seven whole blocks and the 8 elements of the last block), where
``F_row`` (:mod:`.plan`) needs two; f32 rows of 259 elements at a pitch of 264 take one such
instruction per row::

    >>> [(f.blk, f.rep, f.repeat) for f in min_cover(region_elements(1, 1000, 1000), "f16",
    ...                                              counter=False)]
    [(1, 1, 56)]
    >>> len(min_cover(region_elements(2, 259, 264), "f32", counter=False))
    2
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError
from .mask import BLOCKS_PER_REPEAT, block_elems, lanes

MAX_REPEAT = 255
"""Largest ``repeatTime`` (uint8)."""
MAX_REP_STRIDE = 255
"""Largest repeat stride in blocks (uint8 in every repeat-params struct)."""
MAX_BLOCKS = 96
"""Largest region span (32-byte blocks) :func:`min_cover` accepts."""
REACH = 7
"""The footprint rule: no lane of an instruction, active or masked off, lies more than this
many 32-byte blocks past the region's last block.  Seven is what the plain forms need (the last
repeat of a run or a strip starts inside the region and spans 8 blocks), so masked-off lanes
stay within 224 bytes past the region's last block, as with :mod:`.plan`'s row family."""


@dataclass(frozen=True)
class Frame:
    """The dst side of one instruction, relative to the region's first 32-byte block.

    ``start`` block, ``blk`` block stride, ``rep`` repeat stride (32-byte blocks), ``repeat``
    repeats and ``lanes`` (bit ``b*E + j`` = element ``j`` of block slot ``b``) in normal mode;
    ``count > 0`` means counter mode (``count`` elements, ``repeat`` and ``lanes`` unused).
    """

    start: int
    blk: int
    rep: int
    repeat: int
    lanes: int
    count: int = 0

    def elements(self, E: int) -> list[int]:
        """Written element offsets (from the region's first block), in lane order."""
        L = BLOCKS_PER_REPEAT * E
        if self.count:
            return [E * (self.start + (t // L) * self.rep + (t % L // E) * self.blk) + t % E
                    for t in range(self.count)]
        on = [t for t in range(L) if self.lanes >> t & 1]
        return [E * (self.start + i * self.rep + (t // E) * self.blk) + t % E
                for i in range(self.repeat) for t in on]


def region_elements(rows: int, cols: int, pitch: int) -> np.ndarray:
    """Element offsets of a ``rows x cols`` tile with row pitch ``pitch`` (elements), starting
    at a 32-byte boundary, row-major."""
    return (np.arange(rows)[:, None] * pitch + np.arange(cols)[None, :]).ravel()


@dataclass(frozen=True)
class _Cells:
    E: int
    nb: int                 # blocks spanned
    groups: tuple[int, ...]  # position bitmask of each group of interchangeable positions
    qa: tuple[int, ...]     # per block: bitmask of the groups inside the region
    full: int               # bitmask of all region cells (cell = block * A + group)

    @property
    def A(self) -> int:
        return len(self.groups)


def _cells(elements: np.ndarray, E: int, counter: bool) -> _Cells:
    nb = int(elements.max()) // E + 1
    member = np.zeros((nb, E), dtype=bool)
    member[elements // E, elements % E] = True
    sig = [member]
    if counter:  # a counter-mode prefix stops where a block's leading run of elements ends
        first_out = np.where(member.all(1), E, np.argmin(member, axis=1))
        for t in np.unique(first_out):
            sig.append(np.broadcast_to(np.arange(E) < t, (1, E)))
    sig_arr = np.concatenate(sig, axis=0)
    by_sig: dict[bytes, int] = {}
    for j in range(E):
        if member[:, j].any():
            key = sig_arr[:, j].tobytes()
            by_sig[key] = by_sig.get(key, 0) | (1 << j)
    groups = tuple(sorted(by_sig.values(), key=lambda m: m & -m))
    qa, full = [], 0
    for B in range(nb):
        q = int(sum(1 << j for j in range(E) if member[B, j]))
        bits = sum(1 << g for g, m in enumerate(groups) if m & q == m)
        qa.append(bits)
        full |= bits << (B * len(groups))
    return _Cells(E, nb, groups, tuple(qa), full)


def _repeat_copies(bits: int, step: int, n: int) -> int:
    """``bits | bits << step | ... | bits << (n - 1) * step`` (an OR: copies may overlap)."""
    out = 0
    for i in range(n):
        out |= bits << (i * step)
    return out


def _normal_sets(c: _Cells, kmax: int, lim: float, out: dict) -> None:
    """Maximal-mask sets of the normal-mode frames ``(a, k, s, n)`` inside the footprint
    ``lim`` (exclusive block bound), less frames another such frame contains."""
    A, nb = c.A, c.nb
    for s in range(0, min(nb, MAX_REP_STRIDE + 1)):
        ns = [1] if s == 0 else range(2, min((nb - 1) // s + 1, MAX_REPEAT) + 1)
        V = list(c.qa) if s == 0 else [c.qa[B] & c.qa[B + s] for B in range(nb - s)]
        for n in ns:
            # V[B]: groups inside the region in all n blocks B, B+s, ..., B+(n-1)s
            nxt = [V[B] & c.qa[B + n * s] for B in range(nb - n * s)] if s else []
            nV = len(V)
            for a, va in enumerate(V):
                last = a + (n - 1) * s  # block of slot 0 in the last repeat
                for k in range(1, min(kmax, max(1, nV - 1 - a)) + 1):
                    if last + 7 * k >= lim:
                        break
                    if not va and last + 8 * k < lim:
                        continue  # contained in the frame starting at slot 1
                    idx = [a + b * k for b in range(BLOCKS_PER_REPEAT) if a + b * k < nV]
                    if s and n < MAX_REPEAT and (
                            (last + s + 7 * k < lim
                             and all(B < len(nxt) and nxt[B] == V[B] for B in idx))
                            or all(B >= s and nxt[B - s] == V[B] for B in idx)):
                        continue  # contained in the frame with one more repeat
                    bits = 0
                    for B in idx:
                        bits |= V[B] << (B * A)
                    bits = _repeat_copies(bits, s * A, n)
                    if bits and bits not in out:
                        out[bits] = (a, k, s, n)
            V = nxt


def _maximal_lanes(elements: set[int], E: int, a: int, k: int, s: int, n: int) -> int:
    """Lanes of frame ``(a, k, s, n)`` whose ``n`` elements all lie in ``elements``."""
    out = 0
    for b in range(BLOCKS_PER_REPEAT):
        for j in range(E):
            if all(E * (a + i * s + b * k) + j in elements for i in range(n)):
                out |= 1 << (b * E + j)
    return out


def _counter_sets(c: _Cells, elements: set[int], kmax: int, lim: float, out: dict) -> None:
    """Counter-mode instructions ``(a, k, s, count)`` with the largest ``count`` (the first
    ``count`` lanes in repeat-major order all in the region, the footprint rule kept).  Only
    those a normal frame cannot match are added: at least one full repeat and then a partial
    one, or more than 255 full repeats."""
    E, L = c.E, BLOCKS_PER_REPEAT * c.E
    full = [all(E * B + j in elements for j in range(E)) for B in range(c.nb)]

    def is_full(B: int) -> bool:
        return 0 <= B < c.nb and full[B]

    for a in range(c.nb):
        for k in range(1, min(kmax, max(1, c.nb - 1 - a)) + 1):
            if not all(is_full(a + b * k) for b in range(BLOCKS_PER_REPEAT)):
                continue
            for s in range(1, min(c.nb - a, MAX_REP_STRIDE + 1)):
                q = 1
                while all(is_full(a + q * s + b * k) for b in range(BLOCKS_PER_REPEAT)):
                    q += 1
                t = q * L
                while True:  # extend into repeat q, lane by lane
                    b, j = divmod(t - q * L, E)
                    if b == BLOCKS_PER_REPEAT or E * (a + q * s + b * k) + j not in elements:
                        break
                    t += 1
                if t > q * L and a + q * s + 7 * k >= lim:
                    t = q * L  # the partial repeat's masked-off lanes would reach too far
                if t % L == 0 and t // L <= MAX_REPEAT:
                    continue
                f = Frame(a, k, s, 0, 0, t)
                bits = 0
                for x in f.elements(E):
                    B, j = divmod(x, E)
                    g = next(i for i, m in enumerate(c.groups) if m >> j & 1)
                    bits |= 1 << (B * c.A + g)
                out.setdefault(bits, f)


def _maximal(sets) -> list[int]:
    """The inclusion-maximal sets (largest first)."""
    kept: list[int] = []
    by_cell: dict[int, list[int]] = {}
    for bits in sorted(sets, key=lambda b: -b.bit_count()):
        low = (bits & -bits).bit_length() - 1
        high = bits.bit_length() - 1
        cands = min(by_cell.get(low, ()), by_cell.get(high, ()), key=len)
        if any(bits & ~k == 0 for k in cands):
            continue
        kept.append(bits)
        _index(by_cell, bits)
    return kept


def _index(by_cell: dict[int, list[int]], bits: int) -> None:
    """File the set ``bits`` under each of its cells."""
    rest = bits
    while rest:
        cell = (rest & -rest).bit_length() - 1
        by_cell.setdefault(cell, []).append(bits)
        rest &= rest - 1


def _set_cover(full: int, sets: list[int], max_depth: int, limit: int) -> "list[int] | None":
    by_cell: dict[int, list[int]] = {}
    for bits in sets:
        _index(by_cell, bits)
    biggest = max((b.bit_count() for b in sets), default=1)
    failed: dict[int, int] = {}  # remainder -> largest depth known to be insufficient
    chosen: list[int] = []
    visits = 0

    def fits(rest: int, depth: int) -> bool:
        nonlocal visits
        if rest == 0:
            return True
        if depth == 0 or -(-rest.bit_count() // biggest) > depth or failed.get(rest, -1) >= depth:
            return False
        visits += 1
        if visits > limit:
            raise ISAError(f"exact search exceeded {limit} states; the region is too large "
                           "for the exhaustive search (use a smaller region or a larger limit)")
        low = (rest & -rest).bit_length() - 1
        for bits in by_cell.get(low, ()):
            chosen.append(bits)
            if fits(rest & ~bits, depth - 1):
                return True
            chosen.pop()
        failed[rest] = depth
        return False

    for depth in range(1, max_depth + 1):
        if fits(full, depth):
            return chosen
    return None


def min_cover(elements: "np.ndarray | list[int]", dtype: "str | DType", *, kind: str = "binary",
              counter: bool = True, max_depth: int = 64, reach: "int | None" = REACH,
              limit: int = 2_000_000) -> "list[Frame] | None":
    """A minimum list of :class:`Frame` s of ``W`` writing exactly the dst ``elements``
    (offsets in elements from a 32-byte boundary) out of place, or ``None`` if it needs more
    than ``max_depth`` instructions.  ``kind`` is the op kind (``binary`` ops have ``uint8``
    block strides, the others ``uint16``); ``counter=False`` forbids counter mode; ``reach`` is
    the footprint rule (``None`` lifts it).  Raises :class:`ISAError` for a region of more than
    :data:`MAX_BLOCKS` blocks or a search of more than ``limit`` states."""
    dt = _dtype(dtype)
    E = block_elems(dt)
    lanes(dt)
    el = np.unique(np.asarray(elements, dtype=np.int64))
    if el.size == 0 or el[0] < 0:
        raise ISAError("the region must be a non-empty set of non-negative element offsets")
    nb = int(el[-1]) // E + 1
    if nb > MAX_BLOCKS:
        raise ISAError(f"region spans {nb} blocks of 32 bytes; the exact search handles at most "
                       f"{MAX_BLOCKS}")
    kmax = 255 if kind == "binary" else 65535
    lim = float("inf") if reach is None else nb + reach
    c = _cells(el, E, counter)
    members = set(el.tolist())
    sets: dict = {}
    if counter:
        _counter_sets(c, members, kmax, lim, sets)
    _normal_sets(c, kmax, lim, sets)
    chosen = _set_cover(c.full, _maximal(sets), max_depth, limit)
    if chosen is None:
        return None
    out = []
    for bits in chosen:
        f = sets[bits]
        if isinstance(f, tuple):
            a, k, s, n = f
            f = Frame(a, k, s if n > 1 else 8, n, _maximal_lanes(members, E, a, k, s, n))
        out.append(f)
    return out
