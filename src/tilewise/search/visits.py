"""Floors of the bytes moved into a level, visit by visit of the level above: loop order and capacity together.

A node's traffic bound (:mod:`.bound`) gives each tensor its own least-traffic orders and each
open tile its largest value, so each tensor is credited with reuse the others forbid: in a GEMM
with every order open, A is reused across ``n``, B across ``m`` and C across ``k`` at once. On a
deep cache hierarchy whose links do not overlap compute (cpu-6core) every link's time adds to
the latency, and that slack let tens of millions of nodes through.

The floor here is joint in the order and the capacity. Take a node whose level-``k`` tiles are
fixed and whose level-``k`` loop order is open (``k`` < L-1). Every mapping below it visits the
same level-``k`` tiles (a *visit*: one iteration of the loops of levels ``0 .. k-1``; its tile
``e`` per dim, partial at the borders) and, within a visit, walks level-``k+1`` tiles ``c`` with
its level-``k`` loops. For a single op whose tensors are indexed by plain dims (GEMM, batched
GEMM, contractions), the bytes of tensor ``t`` moved into level ``k+1`` during a visit are
``w_t |t(e)| f_t``: every sweep over its own tiles moves ``|t(e)|`` points (partial tiles sum
to ``e``), and it is swept again for each iteration of a real loop not indexing it that lies
outside its innermost real indexing loop. Whatever the order, its innermost *real* loop (trips
``> 1``) is over one dim ``j``: then ``f_t = prod of the trips of the dims not indexing t`` for
the tensors ``j`` indexes, at least 1 for the others. An output is written ``f_t`` times and
read back (its partial sums) ``f_t - 1`` times. So the bytes of a visit are at least

    min over fitting c and real j of  sum_t w_t |t(e)| f_t(c, j)     (reads and writes apart)

with ``c`` over the least tile for each trip count (``ceil(e / trips)``: the same trips, the
least footprint), ``w_t`` the tensor's least bytes per point (at output or accumulator width),
and the fit the single buffers of the tensors the level holds, unrounded (a superset of what
fits). The loop over ``j`` costs nothing but its realness, so ``c_j`` is taken at 1. Across
visits a tensor's first tile may still be resident from the visit before, but only a tensor
the advancing dim does not index, and only if its tile ``c`` covers all of its ``e`` (else the
visit before ended on its last tile and this one starts on its first): per ``c``, the most
over dims ``j`` of the bytes of ``e`` of such tensors, at most the level's capacity, is taken
off that ``c``'s bytes (``k = 0`` has one visit and nothing resident). The node's floor is
the sum over its visits, each border shape counted once with its multiplicity.

*Runs.* A link moves whole granules (a cache line, a DMA word: :mod:`tilewise.model.contiguity`,
each run of a row rounded up). Per sweep, a tensor's rows on its innermost axis (``e_x`` of the
visit, cut into ``t = ceil(e_x / c_x)`` tiles) move at least
``max(ceil(e_x w / g) g, t g)`` bytes each: the runs' rounded bytes sum to at least the row's
rounded, and each run is at least a granule ``g``. One tile spanning the tensor's whole axis
(``t = 1``, ``e_x`` the axis) merges with the rows after it and counts its exact bytes. The
bound never grows as a tile grows (fewer runs), so the branch and bound below stands; an open
innermost loop ``j`` counts 2 tiles on ``j`` (the fewest that make it real) while its
footprint takes the tile 1, and a tile kept from the visit before counts its own sweep's floor.
Where the search may pack a tensor (one run per packed tile) the granule is 1: exact bytes.
On cpu-6core (64 B lines) this is what separates a 32 B row of an f32 tile from a 64 B one:
GEMM 512x512x1024 f32, 9,803 -> 6,454 nodes.

The minimum is found by branch and bound (:func:`_least_over`), one innermost real loop ``j``
at a time: with ``j`` fixed a visit's bytes never grow as a tile grows and what stays from the
visit before never shrinks, so the bytes with the tiles not yet chosen whole bound every
choice of them, and the open dims' least tiles are tried largest first, each dim's smaller
tiles dropped once that bound reaches the least so far. It is the least over the same tiles
as enumerating them all (on seed 001's packed BRGEMM on cpu-6core, a 6-dim visit with every
tile open: 2 ms -> 0.1 ms).

Across the array (:func:`core_regions`): where the bytes into the array level are the cores'
sum (no broadcast, no merge along the array), each visit of the level above is cut into the
regions the cores walk, and each region is a visit of one core's level; a level below the
array is reached the same way through open levels between, whose nest repeats a tensor no
more often than one order over the region, loop by loop. A level above the array is shared
by the cores, so a split changes none of its visits: its floor is the one of an unsplit node
(at cpu-6core's L3 this floor, not the model's per-order bytes, is what prunes most of the
L3 tiles: GEMM 512x512x1024 f32 4.4 -> 3.0 s). While a split dim's core tile is open the
regions are not known: each visit is then one region of one core's level, less what the other
cores may keep (:func:`box_floors`).

Not applied (floor 0, still a bound): several ops (a chain's projections), affine or clipped
axes (halos), the array level where a broadcast or a merge moves fewer bytes than the cores'
sum or while a split dim's core tile is open, a visit whose branch and bound costs more than
:data:`MAX_STEPS` tile choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from .rows import _MIX

# The kernels here compile with numba's numpy error model: integer divisions are not checked
# for a zero divisor (tiles and extents are positive; model/rules.py does the same). The
# checks took ~12 % of the packed BRGEMM search on cpu-6core (benchmarks/search.py, three
# runs each side: 1.97-2.18 s -> 1.69-1.87 s, the same 18,512 nodes and answer).
MAX_STEPS = 1 << 14   # per visit shape: past this many tile choices costed, no floor


@dataclass(frozen=True)
class VisitTable:
    """The plain single op's tensors as the floor needs them: ``uses [Tm, D]`` which dims
    index each moved tensor, ``width [Tm]`` its least bytes per point, ``output [Tm]``,
    ``held [L, Tm]`` which levels keep it, ``last [Tm]`` the dim of its innermost axis (its
    rows, :func:`_row_bytes`)."""

    uses: np.ndarray
    width: np.ndarray
    output: np.ndarray
    held: np.ndarray
    last: np.ndarray

    @classmethod
    def of(cls, st, problem, moved: list[int]) -> "VisitTable | None":
        """The table, or None where the floor does not apply (module doc)."""
        wl = st.workload
        if len(wl.ops) != 1 or not moved:
            return None
        D = len(st.dims)
        uses = np.zeros((len(moved), D), np.bool_)
        last = np.zeros(len(moved), np.int64)
        for i, ti in enumerate(moved):
            t = st.tensors[ti]
            if t.lanes != 1:
                return None
            for ax, shape in zip(t.axes, t.shape):
                if ax.const or len(ax.terms) != 1 or ax.terms[0][1] != 1:
                    return None
                d = st.dims.index(ax.terms[0][0])
                if uses[i, d] or shape != wl.sizes[ax.terms[0][0]]:
                    return None
                uses[i, d] = True
                last[i] = d   # the innermost axis, once the loop ends
        bf = problem.buffers
        width = np.full(len(moved), np.inf)
        for f in range(len(bf.tensor)):
            if bf.tensor[f] in moved:
                i = moved.index(int(bf.tensor[f]))
                for arr in (bf.bytes[f], bf.psum[f]):
                    pos = arr[arr > 0]
                    if len(pos):
                        width[i] = min(width[i], float(pos.min()))
        if not np.isfinite(width).all():
            return None
        output = np.array([st.tensors[ti].name in st.outputs for ti in moved], np.bool_)
        held = np.ascontiguousarray(st.held[:, moved]).astype(np.bool_)
        return cls(uses, width, output, held, last)


@njit(cache=True, inline="always", error_model="numpy")
def _least_tiles(e, out):
    """The least tile for each trip count of an extent ``e``: distinct values, largest first,
    into ``out`` (at least ``2 sqrt(e) + 3`` long); returns how many."""
    n = 0
    c = e
    while True:
        out[n] = c
        n += 1
        if c == 1:
            break
        t = -(-e // (c - 1))
        c = -(-e // t)
    return n


@njit(cache=True, error_model="numpy")
def _footprint(c, e, uses, width, held):
    f = 0.0
    for i in range(uses.shape[0]):
        if held[i]:
            p = width[i]
            for d in range(uses.shape[1]):
                if uses[i, d]:
                    p *= min(c[d], e[d])
            f += p
    return f


@njit(cache=True, inline="always", error_model="numpy")
def _kept(c, e, uses, held, sweep1):
    """The most bytes a visit with tiles ``c`` can find left by the one before. Between two
    visits some dim ``j`` advances, so only a tensor ``j`` does not index can keep its tile,
    and only if its tile ``c`` covers all of its ``e`` (else the visit before ended on its last
    tile and this one starts on its first); the most over ``j``. A kept tile's bytes are its
    one sweep's floor ``sweep1 [Tm]`` (:func:`_sweeps`): what its transfer would have moved."""
    T, D = uses.shape
    whole = 0   # bit i: tensor i held, its tile covering its e
    for i in range(T):
        w = held[i]
        for d in range(D):
            w &= not (uses[i, d] and c[d] < e[d])
        if w:
            whole |= 1 << i
    most = 0.0
    if whole == 0:
        return most
    for j in range(D):
        f = 0.0
        for i in range(T):
            if (whole >> i) & 1 and not uses[i, j]:
                f += sweep1[i]
        most = max(most, f)
    return most


@njit(cache=True, inline="always", error_model="numpy")
def _row_bytes(ex, trips, full, w, g):
    """The least bytes a sweep moves per row of a visit of ``ex`` elements of ``w`` bytes on
    the tensor's innermost axis (``full`` elements), cut into ``trips`` tiles, each run
    rounded up to granules of ``g`` bytes (:mod:`tilewise.model.contiguity`): at least the
    row's bytes rounded, and a granule per run; one tile spanning the whole axis merges with
    the rows after it (no rounding counted)."""
    if g <= 1.0 or (trips == 1 and ex >= full):
        return ex * w
    rounded = np.ceil(ex * w / g) * g
    return rounded if trips == 1 else max(rounded, trips * g)


@njit(cache=True, inline="always", error_model="numpy")
def _sweeps(e, uses, width, runs, rest, sweep1):
    """Per tensor of a visit of ``e``: into ``rest [Tm]`` the points of one row sweep's other
    axes (the product of ``e`` over the dims it uses but its innermost), into ``sweep1 [Tm]``
    the least bytes of one sweep of its tile whole (:func:`_row_bytes` at one trip)."""
    for i in range(uses.shape[0]):
        x = runs.last[i]
        p = 1.0
        for d in range(e.shape[0]):
            if uses[i, d] and d != x:
                p *= e[d]
        rest[i] = p
        sweep1[i] = _row_bytes(float(e[x]), 1, runs.full[i], width[i], runs.granule) * p


@njit(cache=True, inline="always", error_model="numpy")
def _innermost_bytes(j, j_open, c, e, uses, width, output, held, runs, rest, kept, out):
    """Into ``out [2]``: the bytes (reads, writes) moved into the level during a visit of tile
    ``e [D]`` with the level's tiles ``c [D]`` and dim ``j`` its innermost real loop (``-1``:
    no loop real), less ``kept`` bytes found left by the visit before (at least 0). A tensor
    ``j`` indexes is swept once per iteration of the real loops not indexing it (a dim with
    ``c >= e`` iterates once), any other tensor once (module doc); a sweep's rows are rounded
    to the link's granules (:func:`_row_bytes`; ``rest``: :func:`_sweeps`), an open ``j``
    (``j_open``: its tile taken at 1) at the fewest tiles that make it real, 2."""
    r = w = 0.0
    for i in range(uses.shape[0]):
        if not held[i]:
            continue
        x = runs.last[i]
        trips = 2 if (j_open and x == j) else -(-e[x] // min(c[x], e[x]))
        pts = _row_bytes(float(e[x]), trips, runs.full[i], width[i], runs.granule) * rest[i]
        f = 1.0
        for d in range(e.shape[0]):
            if not uses[i, d] and j >= 0 and uses[i, j] and c[d] < e[d]:
                f *= float(-(-e[d] // c[d]))
        if output[i]:
            w += pts * f
            r += pts * (f - 1.0)
        else:
            r += pts * f
    out[0] = max(r - kept, 0.0)
    out[1] = max(w - kept, 0.0)


class Runs(NamedTuple):
    """How a level's link rounds each moved tensor's rows (:func:`_row_bytes`): ``last [Tm]``
    the dim of its innermost axis, ``full [Tm]`` that axis's elements, ``granule`` the link's
    bytes per run granule (1.0: exact bytes)."""

    last: np.ndarray
    full: np.ndarray
    granule: float


class _Work(NamedTuple):
    """Work arrays of :func:`_visit_floor`, allocated once per batch."""

    best: np.ndarray        # [2] reads, writes: the least so far
    got: np.ndarray         # [2] reads, writes of the tiles being costed
    up: np.ndarray          # [D] tiles, each dim not yet chosen at its largest (whole)
    low: np.ndarray         # [D] tiles, each dim not yet chosen at its smallest (1)
    free: np.ndarray        # [D] the dims chosen one after the other
    idx: np.ndarray         # [D] per chosen dim its position in its list of least tiles
    lists: np.ndarray       # [D, n] least tiles per open dim, largest first (:func:`_least_tiles`)
    lens: np.ndarray        # [D]
    rest: np.ndarray        # [Tm] per tensor, its row sweep's other points (:func:`_sweeps`)
    sweep1: np.ndarray      # [Tm] per tensor, one sweep of its whole tile (:func:`_sweeps`)


@njit(cache=True, error_model="numpy")
def _work(E, T):
    u, D = E.shape
    most = 1
    for i in range(u):
        for d in range(D):
            most = max(most, E[i, d])
    return _Work(np.empty(2), np.empty(2), np.empty(D, np.int64), np.empty(D, np.int64),
                 np.empty(D, np.int64), np.zeros(D, np.int64),
                 np.empty((D, 2 * int(np.sqrt(most)) + 3), np.int64), np.zeros(D, np.int64),
                 np.empty(T), np.empty(T))


@njit(cache=True, error_model="numpy")
def visit_floor(e, fixed, uses, width, output, held, runs, cap, across):
    """``(reads, writes)``: the least bytes moved into a level of ``cap`` bytes during one visit
    of a tile ``e [D]`` (module doc), with the level's tiles ``fixed [D]`` (0: open); with
    ``across`` (a visit among several) less what the visit before may leave in the level
    (:func:`_kept`); ``(0, 0)`` past :data:`MAX_STEPS` tile choices costed."""
    return _visit_floor(e, fixed, uses, width, output, held, runs, cap, across,
                        _work(e.reshape(1, -1), uses.shape[0]))


@njit(cache=True, inline="always", error_model="numpy")
def _visit_floor(e, fixed, uses, width, output, held, runs, cap, across, wk):
    """:func:`visit_floor` with work arrays ``wk`` (:class:`_Work`): per innermost real loop
    (an open dim at tile 1, a fixed dim whose tile is under ``e``, or none) the least over
    the open dims' least tiles that fit (:func:`_least_over`)."""
    D = e.shape[0]
    best, lists, lens = wk.best, wk.lists, wk.lens
    best[0] = best[1] = np.inf
    _sweeps(e, uses, width, runs, wk.rest, wk.sweep1)
    fixed_real = False
    n_open = 0
    for d in range(D):
        fixed_real |= 0 < fixed[d] < e[d]
        if fixed[d] == 0:   # the least tiles of an open dim: the same for every loop below
            lens[d] = _least_tiles(e[d], lists[d])
            n_open += 1
    if n_open == 0:
        return _closed_floor(e, fixed, fixed_real, uses, width, output, held, runs, cap, across,
                             wk)
    steps = 0
    # j < D: open dim j real and innermost, at tile 1 (its loop costs nothing but its
    # realness); D + j: fixed dim j real and innermost; -1: no loop real (open tiles whole)
    for opt in range(-1, 2 * D):
        j = opt if opt < D else opt - D
        if opt == -1 and fixed_real:
            continue
        if 0 <= opt < D and (fixed[j] > 0 or e[j] == 1):
            continue
        if opt >= D and not 0 < fixed[j] < e[j]:
            continue
        steps = _least_over(j if opt >= 0 else -1, opt == -1, e, fixed, uses, width, output,
                            held, runs, cap, across, wk, steps)
        if steps > MAX_STEPS:
            return 0.0, 0.0
    if not np.isfinite(best[0]):
        return np.inf, np.inf   # nothing fits
    return best[0], best[1]


@njit(cache=True, inline="always", error_model="numpy")
def _closed_floor(e, fixed, fixed_real, uses, width, output, held, runs, cap, across, wk):
    """:func:`_visit_floor` of a visit whose level tiles are all ``fixed``: the least over its
    real dims as the innermost loop (none real: the one sweep of each tensor)."""
    if _footprint(fixed, e, uses, width, held) > cap:
        return np.inf, np.inf
    best, got = wk.best, wk.got
    kept = min(cap, _kept(fixed, e, uses, held, wk.sweep1)) if across else 0.0
    for j in range(-1, e.shape[0]):
        if (j == -1 and not fixed_real) or (j >= 0 and fixed[j] < e[j]):
            _innermost_bytes(j, False, fixed, e, uses, width, output, held, runs, wk.rest,
                             kept, got)
            best[0] = min(best[0], got[0])
            best[1] = min(best[1], got[1])
    return best[0], best[1]


@njit(cache=True, inline="always", error_model="numpy")
def _first_fit(d, low, e, uses, width, held, cap, lst, n):
    """The first of the least tiles ``lst[:n]`` of dim ``d`` (largest first, the last 1) that
    fits ``cap`` bytes with the tiles ``low`` of the other dims (the tile 1 fits)."""
    lo, hi = 0, n - 1
    while lo < hi:
        mid = (lo + hi) // 2
        low[d] = lst[mid]
        if _footprint(low, e, uses, width, held) <= cap:
            hi = mid
        else:
            lo = mid + 1
    low[d] = 1
    return lo


@njit(cache=True, inline="always", error_model="numpy")
def _least_over(j, whole, e, fixed, uses, width, output, held, runs, cap, across, wk, steps):
    """Lower ``wk.best`` to the least bytes of a visit of ``e`` with dim ``j`` the innermost
    real loop (``-1``: none, every open tile ``whole``) over the least tiles of the other
    open dims that fit, chosen one dim after the other, largest first (branch and bound):
    with ``j`` fixed the bytes never grow as a tile grows and what stays from the visit
    before never shrinks, so the bytes with the dims not yet chosen whole bound every choice
    below, and once they reach the least so far (reads and writes) no smaller tile of the
    dim being chosen does better. Returns ``steps`` plus the tile choices costed."""
    D = e.shape[0]
    best, got, up, low, free, idx, lists, lens, rest, sweep1 = wk
    j_open = j >= 0 and fixed[j] == 0
    n_free = 0
    for d in range(D):
        if fixed[d] > 0:
            up[d] = low[d] = fixed[d]
        elif d == j:
            up[d] = low[d] = 1
        elif whole:
            up[d] = low[d] = e[d]
        else:
            up[d], low[d] = e[d], 1
            free[n_free] = d
            n_free += 1
    if _footprint(low, e, uses, width, held) > cap:
        return steps   # not even the smallest tiles fit
    if n_free == 0:
        kept = min(cap, _kept(up, e, uses, held, sweep1)) if across else 0.0
        _innermost_bytes(j, j_open, up, e, uses, width, output, held, runs, rest, kept, got)
        best[0] = min(best[0], got[0])
        best[1] = min(best[1], got[1])
        return steps + 1
    pos = 0
    d = free[0]
    idx[0] = _first_fit(d, low, e, uses, width, held, cap, lists[d], lens[d]) - 1
    while pos >= 0:
        d = free[pos]
        idx[pos] += 1
        if idx[pos] < lens[d]:
            up[d] = low[d] = lists[d, idx[pos]]
            steps += 1
            if steps > MAX_STEPS:
                return steps
            kept = min(cap, _kept(up, e, uses, held, sweep1)) if across else 0.0
            _innermost_bytes(j, j_open, up, e, uses, width, output, held, runs, rest, kept,
                             got)
            if got[0] < best[0] or got[1] < best[1]:   # else no smaller tile of d does better
                if pos == n_free - 1:   # every tile chosen: the visit's bytes
                    best[0] = min(best[0], got[0])
                    best[1] = min(best[1], got[1])
                else:
                    pos += 1
                    nd = free[pos]
                    idx[pos] = _first_fit(nd, low, e, uses, width, held, cap, lists[nd],
                                          lens[nd]) - 1
                    continue
        up[d], low[d] = e[d], 1   # d back to not chosen; the dim before takes its next tile
        pos -= 1
    return steps


def visit_lists(sizes: np.ndarray, tiles: np.ndarray, k: int):
    """Per node the level-``k`` tiles visited (compiled): for tiles
    ``tiles [n, >=k+1, D]``, ``ext, cnt [n, D, k+1]`` the distinct extents per dim and their
    visit counts (count 0: no such extent)."""
    n, _, D = tiles.shape
    ext = np.zeros((n, D, k + 1), np.int64)
    cnt = np.zeros((n, D, k + 1), np.int64)
    _visit_lists(np.asarray(sizes, np.int64), np.ascontiguousarray(tiles, np.int64), k, ext, cnt)
    return ext, cnt


@njit(cache=True, error_model="numpy")
def _visit_lists(sizes, tiles, k, ext, cnt):
    n, _, D = tiles.shape
    ce = np.empty(2 * (k + 1), np.int64)
    cc = np.empty(2 * (k + 1), np.int64)
    ne = np.empty(2 * (k + 1), np.int64)
    nc = np.empty(2 * (k + 1), np.int64)
    for i in range(n):
        for d in range(D):
            ce[0], cc[0], m = sizes[d], 1, 1
            for lvl in range(1, k + 1):
                t = tiles[i, lvl, d]
                q = 0
                for x in range(m):   # each extent: full tiles (or itself) and a remainder
                    e, c = ce[x], cc[x]
                    parts = ((e, c, 0), (e, 0, 0)) if t >= e else ((t, c * (e // t), 0), (e % t, c, 0))
                    for pe, pc, _ in parts:
                        if pc == 0 or pe == 0:
                            continue
                        y = 0
                        while y < q and ne[y] != pe:
                            y += 1
                        if y == q:
                            ne[q], nc[q] = pe, 0
                            q += 1
                        nc[y] += pc
                for y in range(q):
                    ce[y], cc[y] = ne[y], nc[y]
                m = q
            for y in range(m):
                ext[i, d, y], cnt[i, d, y] = ce[y], cc[y]


class VisitMemo:
    """The floors of the visit shapes with an open tile met so far (one per level ``k``):
    rows ``(e, fixed)`` by their hash (:data:`.rows._MIX`, never 0) in an open-addressing
    table ``hashes``/``at`` (linear probing, at most half full), each checked against the
    stored row (a collision is computed again, not trusted). Read and filled inside
    :func:`_node_floors`; :meth:`reserve` makes room first."""

    def __init__(self):
        self.hashes = np.zeros(1024, np.int64)   # 0: an empty slot
        self.at = np.zeros(1024, np.int64)       # the stored row of each slot
        self.rows = np.zeros((0, 0), np.int64)
        self.floor = np.zeros((0, 2))
        self.n = 0

    def reserve(self, more: int, width: int) -> None:
        """Room for ``more`` rows of ``width`` columns past the ``n`` stored (doubling)."""
        need = self.n + more
        if need > len(self.rows):
            size = max(need, 2 * len(self.rows), 1024)
            grown = np.zeros((size, width), np.int64)
            fl = np.zeros((size, 2))
            if self.n:
                grown[:self.n] = self.rows[:self.n]
                fl[:self.n] = self.floor[:self.n]
            self.rows, self.floor = grown, fl
        if 2 * need > len(self.hashes):
            size = len(self.hashes)
            while 2 * need > size:
                size *= 2
            hashes, at = np.zeros(size, np.int64), np.zeros(size, np.int64)
            _rehash(self.hashes, self.at, hashes, at)
            self.hashes, self.at = hashes, at


@njit(cache=True, error_model="numpy")
def _slot(hashes, h):
    """The slot of hash ``h`` in the table ``hashes``: its own, or the empty one it would take."""
    mask = len(hashes) - 1
    i = h & mask
    while hashes[i] != 0 and hashes[i] != h:
        i = (i + 1) & mask
    return i


@njit(cache=True, error_model="numpy")
def _rehash(hashes, at, new_hashes, new_at):
    for i in range(len(hashes)):
        if hashes[i] != 0:
            j = _slot(new_hashes, hashes[i])
            new_hashes[j], new_at[j] = hashes[i], at[i]


def core_regions(ext: np.ndarray, cnt: np.ndarray, tile: np.ndarray, ways: np.ndarray):
    """The extents ``ext, cnt [n, D, W]`` (visits of a parent tile) cut into the regions the
    cores walk, ``[n, D, 3W]`` (live entries first): a dim split ``ways [n, D]`` into core
    tiles ``tile [n, D]`` is walked in steps of ``tile x ways``, each core taking one tile per
    step, so of an extent ``e`` with ``f`` full steps and ``p`` left over, ``p // tile``
    cores walk ``(f + 1) tile``, one walks ``f tile + p % tile`` and the rest ``f tile``
    (empty regions dropped). Unsplit dims keep their extents."""
    n, D, W = ext.shape
    e3 = np.zeros((n, D, 3 * W), np.int64)
    c3 = np.zeros((n, D, 3 * W), np.int64)
    _core_regions(np.ascontiguousarray(ext, np.int64), np.ascontiguousarray(cnt, np.int64),
                  np.ascontiguousarray(tile, np.int64), np.ascontiguousarray(ways, np.int64),
                  e3, c3)
    return e3, c3


@njit(cache=True, error_model="numpy")
def _core_regions(ext, cnt, tile, ways, e3, c3):
    """:func:`core_regions` into ``e3, c3 [n, D, 3W]`` (zeros): per dim the regions of
    ``(f + 1) tile`` for each extent, then those of ``f tile + p % tile``, then those of
    ``f tile``, the live ones (visits > 0) in that order."""
    n, D, W = ext.shape
    for i in range(n):
        for d in range(D):
            t, w = tile[i, d], ways[i, d]
            y = 0
            for b in range(3 if w > 1 else 1):
                for x in range(W):
                    e, c = ext[i, d, x], cnt[i, d, x]
                    if w > 1:
                        f, p = e // (t * w), e % (t * w)
                        q, part = p // t, p % t
                        if b == 0:
                            e, c = (f + 1) * t, c * q
                        elif b == 1:
                            e, c = f * t + part, c * (part > 0)
                        else:
                            e, c = f * t, c * (w - q - (part > 0))
                    if c > 0 and e > 0:
                        e3[i, d, y], c3[i, d, y] = e, c
                        y += 1


@njit(cache=True, error_model="numpy")
def _node_floors(ext, cnt, fixed, uses, width, output, held, runs, cap, across, mix,
                 hashes, slots, rows, floor, n_stored, out):
    """Per node (row of ``ext, cnt [n, D, W]``, live entries first) the sum over every
    combination of its dims' visited extents of the visit's floor times its visits, into
    ``out [n, 2]``; each visit shape ``(extents, fixed [n, D])`` with an open tile is looked
    up in, or computed and added to, the memo ``hashes``/``slots``/``rows``/``floor``
    (:class:`VisitMemo`, room reserved; one with every tile fixed is computed: that costs
    less than a look-up); returns the rows stored."""
    n, D, W = ext.shape
    most = 1
    for i in range(n):
        for d in range(D):
            for x in range(W):
                most = max(most, ext[i, d, x])
    wk = _work(np.full((1, D), most, np.int64), uses.shape[0])
    idx = np.zeros(D, np.int64)
    key = np.empty(2 * D, np.int64)
    for i in range(n):
        out[i, 0] = out[i, 1] = 0.0
        closed = True   # every level tile known: a floor costs less than a look-up
        for d in range(D):
            idx[d] = 0
            closed &= fixed[i, d] > 0
        while True:
            m = 1
            for d in range(D):
                key[d] = ext[i, d, idx[d]]
                key[D + d] = fixed[i, d]
                m *= cnt[i, d, idx[d]]
            if closed:
                r, w = _visit_floor(key[:D], key[D:], uses, width, output, held, runs, cap,
                                    across, wk)
            else:
                h = 0
                for c in range(2 * D):
                    h += key[c] * mix[c]
                h = h if h != 0 else 1
                q = _slot(hashes, h)
                at = slots[q] if hashes[q] != 0 else -1
                same = at >= 0
                if same:
                    for c in range(2 * D):
                        same &= rows[at, c] == key[c]
                if same:
                    r, w = floor[at, 0], floor[at, 1]
                else:
                    r, w = _visit_floor(key[:D], key[D:], uses, width, output, held, runs,
                                        cap, across, wk)
                    if at < 0:
                        rows[n_stored] = key
                        floor[n_stored, 0], floor[n_stored, 1] = r, w
                        hashes[q], slots[q] = h, n_stored
                        n_stored += 1
            out[i, 0] += r * m
            out[i, 1] += w * m
            d = 0
            while d < D:   # next combination of live entries (they come first)
                idx[d] += 1
                if idx[d] < W and cnt[i, d, idx[d]] > 0:
                    break
                idx[d] = 0
                d += 1
            if d == D:
                break
    return n_stored


def node_floors(table: VisitTable, sizes: np.ndarray, tiles: np.ndarray, known: np.ndarray,
                k: int, capacity: np.ndarray, memo: VisitMemo, into: int | None = None,
                cores: tuple[np.ndarray, np.ndarray] | None = None, granule: float = 1.0
                ) -> tuple[np.ndarray, np.ndarray]:
    """Floors ``(reads, writes) [n]`` of the bytes moved into level ``k+1`` of nodes whose
    tiles ``tiles [n, L, D]`` are fixed through level ``k`` (and at level ``k+1`` where
    ``known [D]``), with the level-``k`` order open (module doc). ``capacity [L]`` the bytes
    a level holds (the model's fit); ``memo`` keeps each visit shape's floor across calls
    (one memo per receiving level and kind). ``into``: the level whose capacity, tensors and
    known tiles (``tiles[:, into]``) the floor takes (default ``k + 1``; deeper when the levels
    between are open: a nest over them repeats a tensor at least as often as one order over
    the visit, loop by loop). ``cores = (tile [n, D], ways [n, D])``: level
    ``k + 1`` is the array level, split ``ways`` per dim into core tiles ``tile`` (known on
    every split dim): each visit is cut into the regions the cores walk (:func:`core_regions`)
    and each region is a visit of one core's level. ``granule``: the bytes a run moved into
    level ``into`` is rounded up to (:func:`.contiguity.link_granules`; 1: exact bytes)."""
    into = k + 1 if into is None else into
    D = tiles.shape[2]
    ext, cnt = visit_lists(sizes, tiles, k)                       # [n, D, k+1]
    if cores is not None:
        ext, cnt = core_regions(ext, cnt, *cores)
    fixed = np.ascontiguousarray(np.where(known[None, :], tiles[:, into, :], 0))   # [n, D]
    open_rows = (fixed == 0).any(1)    # the others' floors are computed, not kept
    shapes = int(np.prod((cnt[open_rows] > 0).sum(2), axis=1).sum())   # at most new
    memo.reserve(shapes, 2 * D)
    out = np.empty((len(tiles), 2))
    runs = Runs(table.last, np.asarray(sizes, np.int64)[table.last], float(granule))
    memo.n = _node_floors(ext, cnt, fixed, table.uses, table.width, table.output,
                          table.held[into], runs, float(capacity[into]), k > 0, _MIX[:2 * D],
                          memo.hashes, memo.at, memo.rows, memo.floor, memo.n, out)
    return out[:, 0], out[:, 1]


def box_floors(table: VisitTable, sizes: np.ndarray, tiles: np.ndarray, known: np.ndarray,
               k: int, capacity: np.ndarray, memo: VisitMemo, into: int, cores: np.ndarray,
               granule: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Floors ``(reads, writes) [n]`` of the bytes moved into a per-core level ``into`` (the
    array level or one below it, the cores' sum) of nodes split over ``cores [n]`` cores
    whose core tile on a split dim is still open, so the regions the cores walk
    (:func:`core_regions`) are not known. Each visit of a level-``k`` tile is taken as one
    region walked by one core's level (:func:`node_floors` without ``cores``), less
    ``(cores - 1) x capacity`` per visit, in reads and in writes.

    Why it holds: the cores' regions partition the visit along the split dims, and every core
    walks its region with the same tiles. For one innermost real loop ``j`` and those tiles,
    the module doc's bytes add up over such a partition to at least the visit's: a tensor the
    split dim indexes has its points divided among the regions and the same sweeps; one it
    does not index is swept whole by every region, its sweeps over the split dim's tiles (where
    ``j`` indexes it) adding up to the visit's (the regions' tiles along the split dim are at
    least the visit's). The visit's floor is the least over ``j`` (any real loop: a region's own
    ``j`` is one of them) and carries one visit's credit for what stays in the level from the
    visit before; each of the other cores may keep as much in its own level, at most the
    level's capacity (:func:`_kept`'s cap). Checked against the model's bytes on random split
    mappings with the core tiles taken as open (tests/search/test_visits.py)."""
    r, w = node_floors(table, sizes, tiles, known, k, capacity, memo, into=into,
                       granule=granule)
    _, cnt = visit_lists(sizes, tiles, k)
    visits = np.prod(cnt.sum(2), axis=1).astype(float)
    credit = (np.asarray(cores, float) - 1) * float(capacity[into]) * visits
    return np.maximum(r - credit, 0.0), np.maximum(w - credit, 0.0)
