"""The cost model proper: one compiled loop over candidates (numba ``@njit(cache=True)``).

:func:`evaluate_into` is the only implementation of the model; ``evaluate`` and
``evaluate_batch`` (:mod:`tilewise.model.cost`) both call it. Per candidate it computes, in
this order (all exact int64 except times):

1. *Legality*: tiles within their parent (x ways at the array level), the innermost tile
   aligned and at most its parent rounded up to the alignment, the chain rules of
   :mod:`tilewise.model.legality`. Candidates with a non-positive tile or way get
   ``legal = False`` and zeros elsewhere.
2. *Tile lists per dim*: tiles need not divide their parent, so a dim's tiles at a level have
   a few distinct extents; they are kept as ``(extent, multiplicity)`` lists, level by level:
   tiles of extent ``e`` cut by step ``s`` give ``e // s`` tiles of ``s`` and one of
   ``e % s``; at the array level each array tile of ``ways x t`` is sliced into at most
   ``ways`` non-empty core slices. Level ``l`` always has the same number of entries (empty
   ones have multiplicity 0), so the loops are branch-free and predictable. From them,
   ``P[j, lam, level, p]`` = ``sum(mult * extent**p)`` over the tiles at ``level`` that
   descend from level-``lam`` tiles through loops that all iterate once (``lam == level``:
   all tiles), and ``count[j, l]`` = loop iterations down to level ``l``. Example: a dim of
   10 cut into tiles of 4 then 3 has, at the second level, extents ``{3: 3, 1: 2, 2: 1}``.
   Dims under an affine index that may touch the tensor border also get explicit
   ``(start, extent)`` lists of the border tiles only (:mod:`tilewise.model.problem`).
   Below an array that is not the innermost level each core walks its own slice
   (:func:`_below_array`): the loop counts summed over the cores count only the tiles that
   hold some of a core's slice, the busiest core's (core 0's) give the steps, and an input's
   once-rule is per core (a core idle in a loop's remainder sees one tile).
3. *Traffic* (the reuse rule, the same one :mod:`tilewise.simulation.walker` follows step by
   step): walking the flattened nest, a tensor's tile at level ``l`` is (re)loaded each time
   its identity changes; the bytes moved are the real (clipped) bytes. Counting without
   walking, over the iterations of the loops above ``l`` in the owning op's nest::

       moved = sum_it bytes(tile(it)) - sum over non-changing transitions of bytes

   A transition advances some loop ``q`` and resets the loops inside it; it keeps the tile iff
   ``q`` does not index the tensor and every indexing loop inside ``q`` iterates once in that
   context. The iteration space is a product over dims, so both sums are products of per-dim
   sums over the tile lists, selected by where each dim's loop sits relative to ``q``. Outputs:
   each visit ends in a write-back and every visit but the first starts with a reload. At the
   array level a tensor not indexed by a split dim costs one transfer per core along that axis
   unless the arch broadcasts along it. An input read by several ops of a chain (LayerNorm's
   X) moves once per reader into a level below a real private loop (each op walks its own
   tiles there), once above it. A final output whose reduction is split on an axis without a
   reduction path (cols; rows without ``reduce_cols``) has its visits at the array multiplied
   by its partials (:func:`_partials`): each partial but the last is written to the parent at
   the accumulator type and read back by the merging core.
4. *Footprint* (buffers at full tile size, rounded to blocks and banks, x2 double-buffered,
   checked per part of a level that reserves bytes for some tensors; a chain's fused
   intermediates at their panel, :func:`.rules.panel_tile`, which the orders decide; with
   ``memory="max"`` the max over ops of the buffers each touches),
   *compute* (steps, padded points, cycles), *link times and latency*
   (:mod:`tilewise.model.cost` states the formulas), off-chip bytes.

Reuse across candidates: steps 2 and the tile-only parts of 3 and 4 (affine group values,
buffer bytes before double buffering and bypass, compute, loop iterations) depend on the tiles
and split ways only, not on orders or flags. A search sends each tile combo under many loop
orders in a row, so a dim whose tiles and ways equal those of the previous candidate keeps its
tile lists, and a candidate whose tiles all repeat keeps the tile-only results (about half
the work of a GEMM candidate, most of a convolution's). The results are the same either way
(tests: search-shaped batches against the numpy reference and one-by-one evaluation).

Why compiled: the exact rule needs a few hundred scalar operations per candidate, most on
lists of one to four entries; as numpy array operations over the batch that was ~3,000
element operations per candidate (6 us), as one loop it is about 0.6 us (GEMM, 3 levels). The
hot loop calls no function that takes arrays and slices no views (each costs reference-count
updates per call: passing ~20 arrays per group value made the first version 5x slower);
groups under affine indices (rarer, memoized per tile combo) go through :func:`_affine_value`.
Measured and not worth it: integer ``//`` instead of the reciprocal (slower), flat
``P``/``count`` indexing without wraparound checks, constant loop bounds (+16% only: the
work, not the loop control, dominates), sorted orders (branch prediction is not the limit).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from numba import njit

from .contiguity import aligned_extent, granule_points, pack_pass
from .kernel_bds import bd_traffic, transitions, work_arrays
from .problem import GI_AX, GI_BORDER, GI_KIND, GI_MEM, GI_MONO, GI_NMEM
from .rules import (buffer_bytes_arrays, chain_violation, compute_cycles, compute_energy,
                    panel_tile, passes_at, transfer_energy,
                    holds_partial_sums, latency, link_instances, link_time, loop_step,
                    tile_fits)

_BIG = 2.0 ** 62  # bytes: past this an int64 count could overflow


@njit(cache=True, error_model="numpy")
def _div(e, s, inv):
    """``e // s`` for ``e >= 0``, ``s >= 1`` given ``inv = 1.0 / s``: the float quotient,
    corrected to the exact floor (at most one correction step below 2**50). The tile lists
    divide every extent by one step per level: one reciprocal per step, a multiply each."""
    q = np.int64(e * inv)
    while q * s > e:
        q -= 1
    while (q + 1) * s <= e:
        q += 1
    return q


@njit(cache=True, error_model="numpy")
def _near_border(s, e, size, left, right):
    """Whether tile ``[s, s + e)`` of a dim can reach the tensor border (see :mod:`.problem`)."""
    return s < left or s + e - 1 >= size - right


@njit(cache=True, error_model="numpy")
def _cut_x(X, XN, j, lm_src, lv_src, step, size, left, right, out_s, out_e):
    """Explicit children, cut by ``step``, of the listed tiles ``X[j, lm_src, lv_src]``;
    border tiles only. Returns the count written to ``out_s``/``out_e``."""
    out = 0
    for i in range(XN[j, lm_src, lv_src]):
        s0, e0 = X[j, lm_src, lv_src, i, 0], X[j, lm_src, lv_src, i, 1]
        nc = (e0 + step - 1) // step
        nl = min(nc, (left - s0 + step - 1) // step) if left > s0 else 0
        jr = nc
        if right > 0 and s0 + e0 - 1 >= size - right:
            jr = max(0, (size - right + 1 - s0 + step - 1) // step - 1)
        for part in range(2):
            lo, hi = (0, nl) if part == 0 else (max(nl, jr), nc)
            for jj in range(lo, hi):
                cs = s0 + jj * step
                ce = min(step, e0 - jj * step)
                if _near_border(cs, ce, size, left, right):
                    out_s[out] = cs
                    out_e[out] = ce
                    out += 1
    return out


@njit(cache=True, error_model="numpy")
def _slice_x(in_s, in_e, n, tile, ways, size, left, right, out_s, out_e):
    """Explicit non-empty core slices of ``n`` listed array tiles; border tiles only."""
    out = 0
    for i in range(n):
        for c in range(ways):
            cs = in_s[i] + c * tile
            ce = min(tile, in_e[i] - c * tile)
            if ce > 0 and _near_border(cs, ce, size, left, right):
                out_s[out] = cs
                out_e[out] = ce
                out += 1
    return out


@njit(cache=True, error_model="numpy")
def _affine_value(g, lam, level, gi, mono, axes, P, X, XN, idx):
    """Bytes factor (elements) of a group under affine axes, summed over its tiles at
    ``level`` (member ``i`` from prefix level ``lam[i]``): one axis, the halo polynomial in
    power sums minus the clipping summed over border tiles; several axes, the clipped extents
    summed over every combination of member tiles. An axis whose window rows are rounded out
    (its last ``L`` columns: the DMA word in elements at each level, > 1; every tile is then
    listed) counts each window rounded out to whole words
    (:func:`.contiguity.aligned_extent`) instead of clipped."""
    n = gi[g, GI_NMEM]
    M = (gi.shape[1] - GI_MEM) // 2
    one_axis = gi[g, GI_KIND] == 1
    total = 0
    if one_axis:
        for mo in range(gi[g, GI_MONO], gi[g, GI_MONO + 1]):
            term = mono[mo, 0]
            for i in range(n):
                term *= P[gi[g, GI_MEM + i], lam[i], level, mono[mo, 1 + i]]
            total += term
        if not gi[g, GI_BORDER]:
            return total
    for i in range(n):
        idx[i] = 0
        if XN[gi[g, GI_MEM + i], lam[i], level] == 0:
            return total
    clip = 0
    while True:
        w = 1
        for i in range(n):
            e = X[gi[g, GI_MEM + i], lam[i], level, idx[i], 1]
            for _ in range(gi[g, GI_MEM + M + i]):
                w *= e
        for x in range(gi[g, GI_AX], gi[g, GI_AX + 1]):
            lo = axes[x, 0]
            hi = axes[x, 0]
            for i in range(n):
                c = axes[x, 2 + i]
                s = X[gi[g, GI_MEM + i], lam[i], level, idx[i], 0]
                lo += c * s
                hi += c * (s + X[gi[g, GI_MEM + i], lam[i], level, idx[i], 1] - 1)
            gp = axes[x, axes.shape[1] - P.shape[1] + level]
            if gp > 1:
                clipped = aligned_extent(max(lo, 0), min(hi, axes[x, 1] - 1) + 1, gp)
            else:
                clipped = max(0, min(hi, axes[x, 1] - 1) - max(lo, 0) + 1)
            w *= (hi - lo + 1 - clipped) if one_axis else clipped
        clip += w
        i = 0
        while i < n:
            idx[i] += 1
            if idx[i] < XN[gi[g, GI_MEM + i], lam[i], level]:
                break
            idx[i] = 0
            i += 1
        if i == n:
            return total - clip if one_axis else clip


class CostArrays(NamedTuple):
    """The kernel's outputs for a batch of ``B`` candidates (bytes, cycles, seconds, joules;
    :class:`.cost.CostBatch` names them for users)."""

    footprint: np.ndarray      # [B, L] bytes per instance
    fits: np.ndarray           # [B]
    legal: np.ndarray          # [B]
    reads: np.ndarray          # [B, L, T] bytes into level l
    writes: np.ndarray         # [B, L, T] bytes out of level l
    reloads: np.ndarray        # [B, L, T] partial-sum bytes read back
    fills: np.ndarray          # [B, L, T] transfers into level l (loads and reloads)
    drains: np.ndarray         # [B, L, T] transfers out of level l (stores)
    fill_bds: np.ndarray       # [B, L, T] buffer descriptors of the fills (:mod:`.kernel_bds`)
    drain_bds: np.ndarray      # [B, L, T] and of the drains
    fill_fixed: np.ndarray     # [B, L, T] fixed costs charged: BDs, at least 1 per transfer
    drain_fixed: np.ndarray    # [B, L, T]
    offchip: np.ndarray        # [B] bytes over the outermost link
    steps: np.ndarray          # [B, O] innermost tiles per core
    padded: np.ndarray         # [B, O] padded points, all cores
    cycles: np.ndarray         # [B] busiest core
    compute_s: np.ndarray      # [B]
    transfer_s: np.ndarray     # [B, L]
    latency_s: np.ndarray      # [B]
    util: np.ndarray           # [B]
    ratio: np.ndarray          # [B, L]
    energy: np.ndarray         # [B] joules (NaN: the arch gives no energy numbers)
    pack_s: np.ndarray         # [B] seconds of pack / unpack passes (in latency_s)


@njit(cache=True, error_model="numpy")
def evaluate_into(tiles, orders, bypass, dbuf, rows_dim, rows_ways, cols_dim, cols_ways, only,
                  pack, dims, levels, tensors, groups, buffers, compute, chain, dma, out, flags):
    """Fill ``out`` (:class:`CostArrays`) for every candidate (see the module docstring); the
    problem is described by the groups of :class:`.problem.Problem`. Every output element is
    written (the arrays may come uninitialized).

    ``flags[0]``: 1 + the first tensor whose byte count could overflow int64 (0: none);
    ``flags[1]``: 1 + the first level that moves data but has no bandwidth (0: none);
    ``flags[2]``: 1 + the first candidate whose orders or split dims are not dim indices (0:
    none; evaluation stops there, since they index arrays unchecked).

    ``only[b] >= 0``: count the traffic of that tensor alone (the others' is left zero, and
    the link times and latency cover that tensor only): the search's per-tensor bounds need
    one tensor per candidate, and skipping the rest is most of a candidate's work.

    ``pack [B, T]``: the tensor is stored packed at the outermost level
    (:mod:`.contiguity`; its tile transfers from there are one run each).

    The stages mirror the module docstring's steps. Consecutive candidates often share their
    tiles (a search evaluates each tile combo under many loop orders): a dim whose tiles and
    ways equal the previous evaluated candidate's keeps its tile lists, and when no dim
    changed, the tile-only results (affine group values, unflagged buffer bytes, compute,
    loop iterations) are kept too.
    """
    B, L, D = tiles.shape
    T, O = tensors.moved.shape[0], compute.op_mask.shape[0]
    G, F = groups.gi.shape[0], buffers.tensor.shape[0]
    M = (groups.gi.shape[1] - GI_MEM) // 2
    max_pow, max_x, ME, K = groups.max_pow, groups.max_x, L + 3, max(L - 1, 1)
    # work arrays, reused across candidates, allocated once per batch
    ways = np.ones(D, np.int64)                   # split ways of the candidate
    step = np.ones((K, D), np.int64)              # loop steps
    pos = np.zeros((K, D), np.int64)              # loop position of each dim
    real = np.zeros((K, D), np.bool_)             # loop iterates (chains)
    TE = np.zeros((L, ME), np.int64)              # one dim's tiles per level: extents,
    TM = np.zeros((L, ME), np.int64)              # multiplicities, entries
    TN = np.zeros(L, np.int64)
    te = np.zeros(ME, np.int64)
    tm = np.zeros(ME, np.int64)
    count = np.zeros((D, L), np.int64)            # loop iterations down to level l
    cnt_s = np.zeros((D, L), np.int64)            # the same summed over the cores below the array
    cnt0 = np.zeros((D, L), np.int64)             # core 0's (the busiest core's)
    P = np.zeros((D, L, L, max_pow + 1), np.int64)  # power sums of tile extents
    PS = np.zeros((D, L, L, max_pow + 1), np.int64)  # the same as the cores walk (_below_array)
    X = np.zeros((D, L, L, max_x, 2), np.int64)   # explicit border tiles (start, extent)
    XN = np.zeros((D, L, L), np.int64)
    xs = np.zeros(max_x, np.int64)
    xe = np.zeros(max_x, np.int64)
    xs2 = np.zeros(max_x, np.int64)
    xe2 = np.zeros(max_x, np.int64)
    lam = np.zeros(M, np.int64)                   # prefix level per group member
    idx = np.zeros(M, np.int64)
    memo = np.zeros((G, L ** (M + 1)), np.int64)  # affine group values
    stamp = np.zeros((G, L ** (M + 1)), np.int64)  # epoch of each memo entry
    last = np.full((L + 1, D), -1, np.int64)      # tiles and ways held in P / count / X
    nbraw = np.zeros((L, F), np.int64)            # buffer bytes before double buffering
    op_s = np.zeros(O, np.int64)                  # steps per op
    op_busy = np.zeros(O, np.int64)               # padded points of the busiest core
    op_pad = np.zeros(O, np.int64)                # padded points, all cores
    iters = np.ones(L)                            # tiles visited per level (>= 1)
    src = np.zeros(T, np.int64)                   # nearest level above keeping a tensor
    lk = np.zeros((8, L))                         # per link: bytes and transfers (_links)
    panel = np.zeros(D, np.int64)                 # extents of the fused intermediates' panel
    po = np.zeros((O, levels.part_cap.shape[1] + 1), np.int64)  # bytes per op and part (_fit, max)
    copies = np.ones((T, L), np.int64)            # transfers per tile moved (_copies)
    pf = np.zeros(levels.part_cap.shape[1], np.int64)    # bytes per part of one level (_fit)
    through = np.ones(D, np.int64)                # split ways merged through the parent
    last_through = np.zeros(D, np.int64)
    pstep = np.ones((K, D), np.int64)             # loop steps as the partial-sum rule sees them
    parts = np.ones(T, np.int64)                  # partials per output tile visit at the array
    LE = np.zeros((D, L, L, ME), np.int64)        # the tile lists behind P (_tile_lists)
    LM = np.zeros((D, L, L, ME), np.int64)
    LN = np.zeros((D, L, L), np.int64)
    WC = _max_ways(rows_ways, cols_ways) if levels.array < L - 1 else 1
    LSE = np.empty((D, L, L, WC * ME), np.int64)  # the per-core lists behind PS (_below_array)
    LSM = np.empty((D, L, L, WC * ME), np.int64)
    LSN = np.zeros((D, L, L), np.int64)
    RP = np.zeros((T, D, L, L), np.int64)         # contiguous-run sums (_run_tables)
    RD = np.zeros((T, L), np.int64)
    rnd = np.zeros((T, L), np.bool_)
    rkey = np.full((T, L, 2), -1, np.int64)       # (epoch, granules and packing) of RP
    bw = work_arrays(T, L, D, M, dma, dims.sizes, groups.axes, groups.gi,
                     (ME, WC * ME, max_x))  # BDs (kernel_bds)
    # the candidate loop runs without reference counting (``_nrt=False``): numba's
    # increfs and decrefs of the arrays passed to the inlined steps were half its time
    _evaluate_rows(tiles, orders, bypass, dbuf, rows_dim, rows_ways, cols_dim, cols_ways, only,
                   pack, dims, levels, tensors, groups, buffers, compute, chain, dma, out, flags, (
                    ways, step, pos, real, TE, TM, TN, te, tm, count, cnt_s, cnt0, P, PS, X, XN,
                    xs, xe, xs2, xe2, lam, idx, memo, stamp, last, nbraw, op_s, op_busy, op_pad,
                    iters, src, lk, panel, po, copies, pf, through, last_through, pstep, parts,
                    LE, LM, LN, LSE, LSM, LSN, RP, RD, rnd, rkey, bw))


@njit(cache=True, error_model="numpy", _nrt=False)
def _evaluate_rows(tiles, orders, bypass, dbuf, rows_dim, rows_ways, cols_dim, cols_ways, only,
                   pack, dims, levels, tensors, groups, buffers, compute, chain, dma, out, flags,
                   work):
    """The loop over candidates of :func:`evaluate_into`, on the work arrays it
    allocated (``work``, in its order)."""
    (
     ways, step, pos, real, TE, TM, TN, te, tm, count, cnt_s, cnt0, P, PS, X, XN, xs, xe, xs2,
     xe2, lam, idx, memo, stamp, last, nbraw, op_s, op_busy, op_pad, iters, src, lk, panel, po,
     copies, pf, through, last_through, pstep, parts, LE, LM, LN, LSE, LSM, LSN, RP, RD, rnd,
     rkey, bw) = work
    B, L, D = tiles.shape
    T, O = tensors.moved.shape[0], compute.op_mask.shape[0]
    G, F = groups.gi.shape[0], buffers.tensor.shape[0]
    M = (groups.gi.shape[1] - GI_MEM) // 2
    max_pow, max_x, ME, K = groups.max_pow, groups.max_x, L + 3, max(L - 1, 1)
    epoch = 0                                     # bumped when any dim's tiles change
    # every input bound once (a field read from a tuple costs a reference-count update)
    sizes, align, a = dims.sizes, dims.align, levels.array
    on_chain, spine, forbidden, passes = chain.chain, chain.spine, chain.forbidden, chain.passes
    projected, mem_max, f_ops, f_inner = chain.projected, chain.memory_max, buffers.ops, buffers.inner
    explicit, win = groups.explicit, groups.win
    gi, mono, axes = groups.gi, groups.mono, groups.axes
    moved, psum, tbytes, tmask = tensors.moved, tensors.psum, tensors.tbytes, tensors.tmask
    oth, plain, affine = tensors.oth, tensors.plain, tensors.affine
    part_cap, f_tensor, f_part = levels.part_cap, buffers.tensor, buffers.part
    op_pp, op_rate, clock, call = compute.op_pp, compute.op_rate, compute.clock, compute.call
    e_read, e_write, e_link = levels.e_read, levels.e_write, levels.e_link
    e_point, ideal = compute.e_point, compute.ideal
    legal, footprint, fits = out.legal, out.footprint, out.fits
    steps, padded, cycles, compute_s = out.steps, out.padded, out.cycles, out.compute_s
    f_level, f_axes, ax_terms, terms = buffers.level, buffers.axes, buffers.ax_terms, buffers.terms
    f_bytes, block, bank, op_mask = buffers.bytes, buffers.block, buffers.bank, compute.op_mask
    f_psum, f_red = buffers.psum, buffers.red
    inst, link_a, no_read, no_write = levels.instances, levels.link_array, levels.no_read, levels.no_write
    read_bw, write_bw, xfer_s = levels.read_bw, levels.write_bw, levels.xfer_s
    reads, writes, transfer_s, ratio = out.reads, out.writes, out.transfer_s, out.ratio
    cyc = 0.0                                     # busiest core, kept while tiles repeat
    latency_s, util, offchip, energy_j = out.latency_s, out.util, out.offchip, out.energy
    rows_seen = levels.has_array and not levels.bc_rows_split  # split dims that copy tensors
    cols_seen = levels.has_array and not levels.bc_cols_split
    t_red, reduce_rows = tensors.red, levels.reduce_rows
    WC = _max_ways(rows_ways, cols_ways) if levels.array < L - 1 else 1
    # grouped once here (a call passes at most 30 arguments to be inlined: CPython packs more
    # into a tuple, which numba cannot inline); each callee unpacks them once per candidate
    lists, core_lists = (LE, LM, LN), (LSE, LSM, LSN)
    run_sums = (RP, RD, rnd)
    runs, granule, row_word = tensors.runs, levels.granule, levels.row_word
    for b in range(B):
        if _bad_indices(b, orders, rows_dim, cols_dim, D, L):
            flags[2] = b + 1
            return
        if not _split_ways(b, tiles, rows_dim, rows_ways, cols_dim, cols_ways, ways):
            _zero(b, out)  # a non-positive tile or way: nothing to count
            continue
        legal[b] = _legal(b, tiles, orders, sizes, align, a, on_chain, spine, forbidden,
                          projected, ways, step, real, pos)
        changed = _tile_lists(b, tiles, sizes, a, max_pow, explicit, win, ways, step, last,
                              count, cnt_s, cnt0, TE, TM, TN, te, tm, P, PS, X, XN, xs, xe,
                              xs2, xe2, lists, core_lists)
        if changed:  # the affine memo (keyed by epoch) holds values of the previous tiles
            epoch += 1
        if _through_parent(b, rows_dim, rows_ways, cols_dim, cols_ways, reduce_rows, through,
                           last_through):
            changed = True  # the partial-sum widths of the buffers may differ
        _partials(b, tiles, a, ways, through, step, t_red, pstep, parts)
        _copies(rows_dim[b] if rows_seen else -1, rows_ways[b],
                cols_dim[b] if cols_seen else -1, cols_ways[b], a, tmask, passes, real, spine,
                copies)
        _run_tables(b, only[b], bypass, pack, epoch, runs, tbytes, psum, sizes, tiles, granule,
                    row_word, a, P, PS, lists, core_lists, run_sums, rkey)
        _traffic(b, only[b], bypass, copies, parts, a, moved, psum, tbytes,
                 oth, plain, affine, gi, mono, axes, count, cnt_s, pos, P, PS, X, XN, lam, idx,
                 memo, stamp, epoch, out, flags, run_sums)
        bd_traffic(b, only[b], bypass, copies, parts, a, psum, tbytes, oth, count, cnt_s, pos,
                   sizes, row_word, epoch, last, dma, (gi, axes, X, XN), lists, core_lists, tiles,
                   out, bw)
        if changed:
            cyc = _tile_only(b, tiles, sizes, f_level, f_axes, ax_terms, terms, f_bytes, f_psum,
                             f_red, pstep, block, bank, op_mask, op_pp, op_rate, call, cnt0,
                             count, P, nbraw, op_s, op_busy, op_pad, iters)
        if on_chain:  # the intermediates' panel depends on the orders: every candidate
            _panels(b, tiles, orders, real, spine, step, a, sizes, f_inner, f_axes, ax_terms,
                    terms, f_bytes, block, bank, panel, te, tm, nbraw)
        _fit(b, dbuf, bypass, part_cap, f_tensor, f_part, f_ops, mem_max, nbraw, pf, po,
             footprint, fits)
        _compute(b, cyc, clock, op_s, op_pad, steps, padded, cycles, compute_s)
        _links(b, dbuf, bypass, rows_ways[b] * cols_ways[b], inst, link_a, no_read, no_write,
               read_bw, write_bw, xfer_s, ideal, lk, src, iters, out, flags)
        _offchip_energy(b, bypass, e_read, e_write, e_link, e_point, op_pad, reads, writes,
                        offchip, energy_j)
        _pack_passes(b, only[b], pack, bypass, tiles, sizes, runs, tbytes, psum,
                     rows_ways[b] * cols_ways[b], inst, link_a, read_bw, write_bw, e_read,
                     e_write, e_link, ideal, out)


@njit(cache=True, error_model="numpy")
def _max_ways(rows_ways, cols_ways):
    """The most split ways one dim can have in the batch (rows x cols on the same dim)."""
    r = 1
    c = 1
    for b in range(rows_ways.shape[0]):
        r = max(r, rows_ways[b])
        c = max(c, cols_ways[b])
    return r * c


@njit(cache=True, inline="always", error_model="numpy")
def _bad_indices(b, orders, rows_dim, cols_dim, D, L):
    """Whether candidate ``b``'s orders or split dims are not dim indices."""
    bad = rows_dim[b] < -1 or rows_dim[b] >= D or cols_dim[b] < -1 or cols_dim[b] >= D
    for k in range(L - 1):
        for p in range(D):
            if orders[b, k, p] < 0 or orders[b, k, p] >= D:
                bad = True
    return bad


@njit(cache=True, inline="always", error_model="numpy")
def _split_ways(b, tiles, rows_dim, rows_ways, cols_dim, cols_ways, ways):
    """Fill ``ways [D]``; False when a tile or a way is not positive."""
    D = ways.shape[0]
    for j in range(D):
        ways[j] = 1
    if rows_dim[b] >= 0:
        ways[rows_dim[b]] = rows_ways[b]
    if cols_dim[b] >= 0:  # the same dim on rows too: cut rows x cols ways
        ways[cols_dim[b]] *= cols_ways[b]
    positive = rows_ways[b] >= 1 and cols_ways[b] >= 1
    for l in range(tiles.shape[1]):
        for j in range(D):
            if tiles[b, l, j] < 1:
                positive = False
    return positive


@njit(cache=True, inline="always", error_model="numpy")
def _zero(b, out):
    """Candidate ``b`` is malformed: illegal, and every field zero."""
    out.legal[b] = False
    out.fits[b] = False
    out.offchip[b] = 0
    out.cycles[b] = 0.0
    out.compute_s[b] = 0.0
    out.latency_s[b] = 0.0
    out.util[b] = 0.0
    out.energy[b] = 0.0
    out.pack_s[b] = 0.0
    out.footprint[b, :] = 0
    out.transfer_s[b, :] = 0.0
    out.ratio[b, :] = 0.0
    out.reads[b, :, :] = 0
    out.writes[b, :, :] = 0
    out.reloads[b, :, :] = 0
    out.fills[b, :, :] = 0
    out.drains[b, :, :] = 0
    out.fill_bds[b, :, :] = 0
    out.drain_bds[b, :, :] = 0
    out.fill_fixed[b, :, :] = 0
    out.drain_fixed[b, :, :] = 0
    out.steps[b, :] = 0
    out.padded[b, :] = 0


@njit(cache=True, inline="always", error_model="numpy")
def _legal(b, tiles, orders, sizes, align, a, chain, spine, forbidden, projected, ways, step,
           real, pos):
    """Step 1: tiles within their parents (x ways at the array, :func:`.rules.tile_fits`),
    the innermost aligned, the chain rules (:func:`.rules.chain_violation`). Fills the loop
    steps, positions and real loops of ``sc``."""
    L, D = tiles.shape[1], tiles.shape[2]
    ok = True
    for j in range(D):
        if tiles[b, 0, j] != sizes[j]:
            ok = False
    for k in range(1, L):
        for j in range(D):
            w = ways[j] if k == a else 1
            if not tile_fits(tiles[b, k, j], tiles[b, k - 1, j], w, align[j], k == L - 1):
                ok = False
    for k in range(L - 1):
        for j in range(D):
            step[k, j] = loop_step(tiles[b, k + 1, j], ways[j], k + 1 == a)
        for p in range(D):
            pos[k, orders[b, k, p]] = p
    if chain:
        for k in range(L - 1):
            for j in range(D):
                real[k, j] = step[k, j] < tiles[b, k, j]
        kind, _, _ = chain_violation(orders[b], real, L - 1, spine, forbidden, projected)
        if kind != 0:
            ok = False
    return ok


@njit(cache=True, inline="always", error_model="numpy")
def _tile_lists(b, tiles, sizes, a, max_pow, explicit, win, ways, step, last, count, cnt_s,
                cnt0, TE, TM, TN, te, tm, P, PS, X, XN, xs, xe, xs2, xe2, lists, core_lists):
    """Step 2: per dim whose tiles or ways changed since the last candidate, its tile lists
    ``(extent, multiplicity)`` per level, the power sums ``P``, the loop counts and the
    explicit border tiles (module doc); ``LE``/``LM``/``LN [D, L, L, *]`` keep the lists behind
    ``P`` (extents, multiplicities, entries) for the contiguous-run sums (:func:`_run_tables`).
    Returns whether any dim changed.

    Branch-free: level l always has the same number of entries (one more per cut and per
    array slicing; empty ones have multiplicity 0), so loops are predictable."""
    L, D = tiles.shape[1], tiles.shape[2]
    LE, LM, LN = lists
    changed = False
    for j in range(D):
        same = ways[j] == last[L, j]
        for l in range(L):
            same = same and tiles[b, l, j] == last[l, j]
        if same:  # P[j], count[j], X[j] still hold this chain
            continue
        changed = True
        for l in range(L):
            last[l, j] = tiles[b, l, j]
        last[L, j] = ways[j]
        wj = ways[j]
        TE[0, 0] = sizes[j]
        TM[0, 0] = 1
        count[j, 0] = 1
        n = 1
        for k in range(L - 1):
            s = step[k, j]
            inv = 1.0 / s
            full = 0
            c = 0
            for i in range(n):
                e = TE[k, i]
                m = TM[k, i]
                q = _div(e, s, inv)
                r = e - q * s
                full += m * q
                te[i + 1] = r
                tm[i + 1] = m * (r > 0)
                c += tm[i + 1]
            te[0] = s
            tm[0] = full
            n += 1
            count[j, k + 1] = c + full
            if k + 1 == a:  # slice array tiles into at most `ways` core tiles
                ct = tiles[b, a, j]
                full = 0
                if wj == 1:  # min(e // ct, 1) without dividing
                    for i in range(n):
                        f = np.int64(te[i] >= ct)
                        r = te[i] - f * ct
                        full += tm[i] * f
                        TE[k + 1, i + 1] = r
                        TM[k + 1, i + 1] = tm[i] * (r > 0)
                else:
                    inv = 1.0 / ct
                    for i in range(n):
                        f = min(_div(te[i], ct, inv), wj)
                        r = te[i] - f * ct
                        full += tm[i] * f
                        TE[k + 1, i + 1] = r
                        TM[k + 1, i + 1] = tm[i] * (r > 0)
                TE[k + 1, 0] = ct
                TM[k + 1, 0] = full
                n += 1
            else:
                for i in range(n):
                    TE[k + 1, i] = te[i]
                    TM[k + 1, i] = tm[i]
            TN[k + 1] = n
        TN[0] = 1
        for lm in range(L):
            # P[j, lm, lm]: all tiles at lm; then P[j, lm, lv]: the tiles at lv under a
            # level-lm tile whose loops lm .. lv-1 all iterate once
            n = TN[lm]
            for i in range(n):
                te[i] = TE[lm, i]
                tm[i] = TM[lm, i]
            s0 = 1
            for lv in range(lm, L):
                if s0 == 0:  # no tile left whose loops all iterate once
                    for pw in range(max_pow + 1):
                        P[j, lm, lv, pw] = 0
                    LN[j, lm, lv] = 0
                    continue
                if lv > lm:
                    st = step[lv - 1, j]
                    if lv == a:
                        ct = tiles[b, a, j]
                        full = 0
                        if wj == 1:
                            for i in range(n - 1, -1, -1):
                                mi = tm[i] * (te[i] <= st)
                                f = np.int64(te[i] >= ct)
                                r = te[i] - f * ct
                                full += mi * f
                                te[i + 1] = r
                                tm[i + 1] = mi * (r > 0)
                        else:
                            inv = 1.0 / ct
                            for i in range(n - 1, -1, -1):
                                mi = tm[i] * (te[i] <= st)
                                f = min(_div(te[i], ct, inv), wj)
                                r = te[i] - f * ct
                                full += mi * f
                                te[i + 1] = r
                                tm[i + 1] = mi * (r > 0)
                        te[0] = ct
                        tm[0] = full
                        n += 1
                    else:
                        for i in range(n):
                            tm[i] *= te[i] <= st
                s0 = 0
                s1 = 0
                for i in range(n):
                    s0 += tm[i]
                    s1 += tm[i] * te[i]
                P[j, lm, lv, 0] = s0
                P[j, lm, lv, 1] = s1
                LN[j, lm, lv] = n
                for i in range(n):
                    LE[j, lm, lv, i] = te[i]
                    LM[j, lm, lv, i] = tm[i]
                for pw in range(2, max_pow + 1):
                    acc = 0
                    for i in range(n):
                        v = tm[i]
                        for _ in range(pw):
                            v *= te[i]
                        acc += v
                    P[j, lm, lv, pw] = acc
        _below_array(j, tiles[b, a, j], wj, a, max_pow, step, TE, TM, TN, te, tm, count, P,
                     PS, cnt_s, cnt0, lists, core_lists)
        if explicit[j]:  # border tiles as (start, extent), same recursion
            size, left, right = sizes[j], win[j, 0], win[j, 1]
            XN[j, 0, 0] = 0
            if _near_border(0, size, size, left, right):
                X[j, 0, 0, 0, 0] = 0
                X[j, 0, 0, 0, 1] = size
                XN[j, 0, 0] = 1
            for k in range(L - 1):
                n = _cut_x(X, XN, j, k, k, step[k, j], size, left, right, xs, xe)
                if k + 1 == a:
                    n = _slice_x(xs, xe, n, tiles[b, a, j], ways[j], size, left, right,
                                 xs2, xe2)
                    for i in range(n):
                        xs[i] = xs2[i]
                        xe[i] = xe2[i]
                for i in range(n):
                    X[j, k + 1, k + 1, i, 0] = xs[i]
                    X[j, k + 1, k + 1, i, 1] = xe[i]
                XN[j, k + 1, k + 1] = n
            for lm in range(L - 1):
                n = XN[j, lm, lm]
                for i in range(n):
                    xs[i] = X[j, lm, lm, i, 0]
                    xe[i] = X[j, lm, lm, i, 1]
                for k in range(lm, L - 1):
                    n2 = 0
                    for i in range(n):
                        if xe[i] <= step[k, j]:
                            xs[n2] = xs[i]
                            xe[n2] = xe[i]
                            n2 += 1
                    n = n2
                    if k + 1 == a:
                        n = _slice_x(xs, xe, n, tiles[b, a, j], ways[j], size, left, right,
                                     xs2, xe2)
                        for i in range(n):
                            xs[i] = xs2[i]
                            xe[i] = xe2[i]
                    for i in range(n):
                        X[j, lm, k + 1, i, 0] = xs[i]
                        X[j, lm, k + 1, i, 1] = xe[i]
                    XN[j, lm, k + 1] = n
    return changed


@njit(cache=True, inline="always", error_model="numpy")
def _cut(te, tm, n, s):
    """Cut each listed tile ``(te, tm)[:n]`` by step ``s`` in place: ``e // s`` tiles of ``s``
    (entry 0) and one of ``e % s`` (entry ``i + 1``). Returns the new entry count."""
    full = 0
    for i in range(n - 1, -1, -1):
        q = te[i] // s
        r = te[i] - q * s
        full += tm[i] * q
        te[i + 1] = r
        tm[i + 1] = tm[i] * (r > 0)
    te[0] = s
    tm[0] = full
    return n + 1


@njit(cache=True, inline="always", error_model="numpy")
def _below_array(j, ct, w, a, max_pow, step, TE, TM, TN, te, tm, count, P, PS, cnt_s, cnt0,
                 lists, core_lists):
    """Dim ``j`` as the cores walk it below the array (:mod:`tilewise.simulation.walker`: each
    core its own slice; a core with nothing there does nothing and keeps its tiles).
    ``cnt_s [D, L]``: the loop iterations down to each level summed over the cores along
    ``j``, each counting only the tiles holding some of its slices (the traffic rule's
    ``count`` for levels below the array); ``cnt0``: core 0's (the busiest core's)
    iterations; ``PS[j, lm, lv]`` for ``lm < a < lv``: ``P``'s sums when the loops must
    iterate once *for the core* (exactly one child holds some of its slice: a core idle in
    the remainder of a loop sees its one full tile), summed over the cores. (Outputs keep
    ``P``, the array's rule, once for all cores: a core idle along an output's dim drains
    its tiles of it, so an idle stretch ends their reuse.) ``LSE``/``LSM``/``LSN``: the
    tile lists behind ``PS`` (every core's list in turn), as ``LE``/``LM``/``LN`` are behind
    ``P``, for the contiguous-run sums (:func:`_run_tables`).
    ``ct``: the core tile, ``w`` the ways of ``j``; the array is at level ``a``."""
    L = cnt_s.shape[1]
    LE, LM, LN = lists
    LSE, LSM, LSN = core_lists
    for l in range(L):
        cnt_s[j, l] = count[j, l]
        cnt0[j, l] = count[j, l]
    if a >= L - 1:
        return
    # a tile of extent e above the array holds part of core c's slices iff c x ct is below
    # the extent of its first array tile, min(e, tp) (tp: the tile at a - 1)
    tp = TE[a - 1, 0] if a == 1 else step[a - 2, j]
    for l in range(a):
        acc = 0
        for i in range(TN[l]):
            acc += TM[l, i] * min(w, (min(TE[l, i], tp) + ct - 1) // ct)
        cnt_s[j, l] = acc
    cnt_s[j, a] = P[j, a, a, 0]
    n = TN[a - 1]  # core 0's slices: its part of each array tile, then cut below
    for i in range(n):
        te[i] = TE[a - 1, i]
        tm[i] = TM[a - 1, i]
    n = _cut(te, tm, n, step[a - 1, j])
    for i in range(n):
        te[i] = min(te[i], ct)
    for k in range(a, L - 1):
        n = _cut(te, tm, n, step[k, j])
        c = 0
        for i in range(n):
            c += tm[i]
        cnt0[j, k + 1] = c
    for lm in range(a):
        for lv in range(a + 1, L):
            for pw in range(max_pow + 1):
                PS[j, lm, lv, pw] = P[j, lm, lv, pw] if w == 1 else 0
            LSN[j, lm, lv] = LN[j, lm, lv] if w == 1 else 0
            for i in range(LSN[j, lm, lv]):
                LSE[j, lm, lv, i] = LE[j, lm, lv, i]
                LSM[j, lm, lv, i] = LM[j, lm, lv, i]
    if w == 1:
        return  # one slice per array tile: the cores walk it as the array does
    for lm in range(a):
        for c in range(w):
            th = c * ct  # core c's offset in an array tile
            n = TN[lm]
            for i in range(n):
                te[i] = TE[lm, i]
                tm[i] = TM[lm, i] * (min(TE[lm, i], tp) > th)
            for lv in range(lm + 1, L):
                st = step[lv - 1, j]
                cap = tp if lv < a else st  # first-array-tile extent of a child (as above)
                for i in range(n):
                    if lv <= a:  # one child holds part of the core's slice, or none counts
                        q = te[i] // st
                        r = te[i] - q * st
                        full = q * (min(st, cap) > th)
                        rest = min(r, cap) > th
                        tm[i] *= full + rest == 1
                        te[i] = st if full else r
                        if lv == a:
                            te[i] = max(0, min(ct, te[i] - th))
                    else:
                        tm[i] *= te[i] <= st
                if lv > a:
                    n0 = LSN[j, lm, lv]
                    for i in range(n):
                        v = tm[i]
                        for pw in range(max_pow + 1):
                            PS[j, lm, lv, pw] += v
                            v *= te[i]
                        LSE[j, lm, lv, n0 + i] = te[i]
                        LSM[j, lm, lv, n0 + i] = tm[i]
                    LSN[j, lm, lv] = n0 + n


@njit(cache=True, inline="always", error_model="numpy")
def _walk_sum(per_core, j, kk, lv, pw, a, P, PS):
    """The power sum ``pw`` of dim ``j``'s tiles at level ``lv`` from prefix level ``kk`` that
    the reuse rule takes: each core's walk (``PS``) for an input moved below the array
    (``per_core``) when the prefix is above the array (``kk < a``), else the array's (``P``)."""
    return PS[j, kk, lv, pw] if per_core and kk < a else P[j, kk, lv, pw]


@njit(cache=True, inline="always", error_model="numpy")
def _walk_entries(per_core, j, kk, lv, a, LN, LSN):
    """Entries of the tile list behind :func:`_walk_sum`'s choice."""
    return LSN[j, kk, lv] if per_core and kk < a else LN[j, kk, lv]


@njit(cache=True, inline="always", error_model="numpy")
def _walk_entry(per_core, j, kk, lv, x, a, LE, LM, LSE, LSM):
    """Entry ``x`` (extent, multiplicity) of the tile list behind :func:`_walk_sum`'s choice."""
    if per_core and kk < a:
        return LSE[j, kk, lv, x], LSM[j, kk, lv, x]
    return LE[j, kk, lv, x], LM[j, kk, lv, x]


@njit(cache=True, inline="always", error_model="numpy")
def _through_parent(b, rows_dim, rows_ways, cols_dim, cols_ways, reduce_rows, through, last):
    """Fill ``through [D]``, the split ways whose partials merge through the parent level (the
    cols split; the rows split when the array does not reduce along columns;
    :func:`.legality.through_parent`). Returns whether it differs from ``last`` (updated)."""
    D = through.shape[0]
    for j in range(D):
        through[j] = 1
    if rows_dim[b] >= 0 and not reduce_rows:
        through[rows_dim[b]] = rows_ways[b]
    if cols_dim[b] >= 0:
        through[cols_dim[b]] *= cols_ways[b]
    differs = False
    for j in range(D):
        if through[j] != last[j]:
            differs = True
            last[j] = through[j]
    return differs


@njit(cache=True, inline="always", error_model="numpy")
def _partials(b, tiles, a, ways, through, step, t_red, pstep, parts):
    """``pstep [L-1, D]``: the loop steps the partial-sum width rule sees (a split merged
    through the parent is a loop above the array: the step into the array is the core tile x
    the ways merged on the reduction path); ``parts [T]``: the partials of each final output's
    tile per visit at the array (the product of ``through`` over its reduction dims; each
    but the last is written to the parent and read back to merge, the model's sequential
    count)."""
    K, D = pstep.shape
    for k in range(K):
        for j in range(D):
            pstep[k, j] = step[k, j]
            if k + 1 == a:
                pstep[k, j] = tiles[b, a, j] * (ways[j] // through[j])
    for t in range(t_red.shape[0]):
        n = 1
        for j in range(D):
            if t_red[t, j]:
                n *= through[j]
        parts[t] = n


@njit(cache=True, inline="always", error_model="numpy")
def _copies(r, rw, c, cw, a, tmask, passes, real, spine, copies):
    """Step 3: ``copies [T, L]``, the transfers of each input tile into a level. At the array
    level (``a``) a tensor not indexed by the rows' split dim ``r`` (-1: none, or broadcast)
    is sent to each of the ``rw`` rows, likewise for the columns (``c``, ``cw``); an input
    read by several ops of a chain moves once per reader below a real private loop
    (:func:`.rules.passes_at`; ``real`` is filled for chains, the only place ``passes``
    exceeds 1)."""
    T, L = copies.shape
    for t in range(T):
        for level in range(1, L):
            n = passes_at(passes[t], level, real, spine)
            if level == a:
                if r >= 0 and not tmask[t, r]:
                    n *= rw
                if c >= 0 and not tmask[t, c]:
                    n *= cw
            copies[t, level] = n


@njit(cache=True, inline="always", error_model="numpy")
def _traffic(b, one, bypass, copies, parts, a, moved, psum, tbytes, oth, plain, affine,
             gi, mono, axes, count_a, cnt_s, pos, P, PS, X, XN, lam, idx, memo, stamp, epoch,
             out, flags, run_sums):
    """Step 3: bytes read into / written out of / reloaded at each level per tensor (the reuse
    rule of the module doc); only tensor ``one`` when ``one >= 0``; inputs x their ``copies``
    (:func:`_copies`); a final output's visits at the array level x its ``parts``
    (:func:`_partials`: partials merged through the parent, written and read back). Below
    the array the loop counts are the cores' own, summed (``cnt_s``, :func:`_below_array`),
    and each core has its own first visits of an output's tiles. A tensor moved in
    contiguous runs at ``level`` (``rnd``) takes its plain dims' sums from ``RP`` and its
    final writes from ``RD`` (:func:`_run_tables`, built from the same per-core or array
    sums, :func:`_walk_sum`; ``run_sums = (RP, RD, rnd)``) instead of the exact ones."""
    RP, RD, rnd = run_sums
    reads, writes, reloads = out.reads, out.writes, out.reloads
    fills, drains = out.fills, out.drains
    L = reads.shape[1]
    T = moved.shape[0]
    for t in range(T):
        reads[b, 0, t] = 0
        writes[b, 0, t] = 0
        reloads[b, 0, t] = 0
        fills[b, 0, t] = 0
        drains[b, 0, t] = 0
        if not moved[t] or (one >= 0 and one != t):
            for level in range(1, L):
                reads[b, level, t] = 0
                writes[b, level, t] = 0
                reloads[b, level, t] = 0
                fills[b, level, t] = 0
                drains[b, level, t] = 0
            continue
        for level in range(1, L):
            count = cnt_s if level > a else count_a
            # below the array each core keeps its inputs' tiles while idle; an output's drain
            # when the core idles along its dims (walker): the array's once-rule (P)
            per_core = level > a and not psum[t]
            total = 1
            check = float(max(tbytes[t], psum[t]))
            for ii in range(1, oth[t, 0] + 1):
                total *= count[oth[t, ii], level]
                check *= count[oth[t, ii], level]
            distinct = 1
            n_distinct = 1  # the same sums counting tiles (power 0): transfers, not bytes
            for ii in range(plain[t, 0]):
                v = P[plain[t, 1 + 2 * ii], level, level, plain[t, 2 + 2 * ii]]
                if rnd[t, level]:
                    v = RP[t, plain[t, 1 + 2 * ii], level, level]
                distinct *= v
                n_distinct *= P[plain[t, 1 + 2 * ii], level, level, 0]
                check *= v
            for gg in range(affine[t, 0]):
                g = affine[t, 1 + gg]
                key = level
                for i in range(gi[g, GI_NMEM]):
                    lam[i] = level
                    key = key * L + level
                if stamp[g, key] != epoch:
                    memo[g, key] = _affine_value(g, lam, level, gi, mono, axes, P, X, XN, idx)
                    stamp[g, key] = epoch
                v = memo[g, key]
                distinct *= v
                n_distinct *= _group_tiles(g, lam, level, gi, P)
                check *= v
            n_total = total * n_distinct
            total *= distinct
            if check > _BIG and flags[0] == 0:
                flags[0] = t + 1
            nc = 0
            n_nc = 0
            for k in range(level):
                for qq in range(1, oth[t, 0] + 1):  # transitions of a loop not indexing t
                    q = oth[t, qq]
                    p = pos[k, q]
                    term = transitions(t, k, q, oth, pos, count)
                    n_term = term
                    for ii in range(plain[t, 0]):
                        j = plain[t, 1 + 2 * ii]
                        kk = k + 1 if pos[k, j] < p else k
                        pw = plain[t, 2 + 2 * ii]
                        v = _walk_sum(per_core, j, kk, level, pw, a, P, PS)
                        term *= RP[t, j, kk, level] if rnd[t, level] else v
                        n_term *= _walk_sum(per_core, j, kk, level, 0, a, P, PS)
                    for gg in range(affine[t, 0]):
                        g = affine[t, 1 + gg]
                        key = level
                        for i in range(gi[g, GI_NMEM]):
                            lam[i] = k + 1 if pos[k, gi[g, GI_MEM + i]] < p else k
                            key = key * L + lam[i]
                        if stamp[g, key] != epoch:
                            memo[g, key] = _affine_value(g, lam, level, gi, mono, axes, P, X,
                                                         XN, idx)
                            stamp[g, key] = epoch
                        term *= memo[g, key]
                        n_term *= _group_tiles(g, lam, level, gi, P)
                    nc += term
                    n_nc += n_term
            kept = 1 - bypass[b, level, t]
            own = 1  # every core along a dim the output lacks has its own tiles below the array
            if psum[t] and level > a:
                for ii in range(1, oth[t, 0] + 1):
                    own *= cnt_s[oth[t, ii], 0]
            distinct *= own
            n_distinct *= own
            if psum[t]:  # a final output: the last visit of a tile writes it converted, the
                k_par = parts[t] if level == a else 1  # others write partial sums, reloaded
                again = (total - nc) * k_par - distinct
                final = RD[t, level] * own if rnd[t, level] else distinct
                writes[b, level, t] = (final * tbytes[t] + again * psum[t]) * kept
                re = again * psum[t] * kept
                reloads[b, level, t] = re
                reads[b, level, t] = re
                drains[b, level, t] = (n_total - n_nc) * k_par * kept  # a store per visit
                fills[b, level, t] = ((n_total - n_nc) * k_par - n_distinct) * kept  # a reload per revisit
            else:
                v = (total - nc) * tbytes[t]
                reads[b, level, t] = v * copies[t, level] * kept
                writes[b, level, t] = 0
                reloads[b, level, t] = 0
                fills[b, level, t] = (n_total - n_nc) * copies[t, level] * kept
                drains[b, level, t] = 0


@njit(cache=True, inline="always", error_model="numpy")
def _run_tables(b, one, bypass, pack, epoch, runs, tbytes, psum, sizes, tiles, granule,
                row_word, a, P, PS, lists, core_lists, run_sums, rkey):
    """Step 3, contiguous runs (:mod:`.contiguity`): per tensor laid out in runs and level
    ``c`` keeping it, whether its transfers there are rounded (``rnd [T, L]``: a granule
    coarser than an element, rows padded to whole words of ``row_word`` bytes, or packed) and
    then the sums :func:`_traffic` uses instead of
    ``P``: ``RP [T, D, L, L]`` per dim of the tensor and prefix level (elements at the width
    of the main sums: the accumulator for a final output), ``RD [T, L]`` the distinct tiles'
    elements at the final width. An input moved below the array (level ``c > a``) sums each
    core's tiles for prefixes above the array, as :func:`_traffic` does (:func:`_walk_sum`).
    Recomputed only when the tiles (``epoch``) or the granules and packing (``rkey``) change."""
    RP, RD, rnd = run_sums
    LE, LM, LN = lists
    LSE, LSM, LSN = core_lists
    T, L = rnd.shape
    for t in range(T):
        for c in range(L):
            rnd[t, c] = False
        if runs[t, 0] == 0 or (one >= 0 and one != t):
            continue
        split = row_word > 1 and _rows_split(b, t, bypass, runs, sizes, P)
        src = 0
        for c in range(1, L):
            if bypass[b, c, t]:
                continue
            g = 1
            for l in range(src + 1, c + 1):
                g = max(g, granule[l])
            w = psum[t] if psum[t] else tbytes[t]
            ge = granule_points(g, w)
            gf = granule_points(g, tbytes[t])
            re = granule_points(row_word, w) if split else 1
            rf = granule_points(row_word, tbytes[t]) if split else 1
            packed = pack[b, t] and src == 0
            src = c
            if not packed and ge == 1 and gf == 1 and re == 1 and rf == 1:
                continue
            rnd[t, c] = True
            key = ((ge * 65536 + gf) * 2 + packed) * 2 + split
            if rkey[t, c, 0] == epoch and rkey[t, c, 1] == key:
                continue
            rkey[t, c, 0] = epoch
            rkey[t, c, 1] = key
            per_core = c > a and not psum[t]
            if packed:
                _packed_sums(b, t, c, ge, gf, runs, sizes, tiles, per_core, a, P, PS, RP, RD)
            else:
                _row_major_sums(t, c, ge, gf, re, rf, runs, sizes, per_core, a, P, PS, LE, LM,
                                LN, LSE, LSM, LSN, RP, RD)


@njit(cache=True, inline="always", error_model="numpy")
def _rows_split(b, t, bypass, runs, sizes, P):
    """Whether some level keeping row-major tensor ``t`` tiles its innermost axis with less
    than the whole axis (its rows are then padded: :func:`.contiguity.rows_padded`)."""
    d = runs[t, runs[t, 0]]
    for c in range(1, bypass.shape[1]):
        if not bypass[b, c, t] and not (P[d, c, c, 0] == 1 and P[d, c, c, 1] == sizes[d]):
            return True
    return False


@njit(cache=True, inline="always", error_model="numpy")
def _round_run(n, g):
    """Elements a run of ``n`` elements moves in granules of ``g`` elements."""
    return (n + g - 1) // g * g


@njit(cache=True, inline="always", error_model="numpy")
def _row_major_sums(t, c, ge, gf, re, rf, runs, sizes, per_core, a, P, PS, LE, LM, LN, LSE,
                    LSM, LSN, RP, RD):
    """:func:`_run_tables` for a row-major tensor at level ``c``: the trailing axes whose one
    tile spans the tensor merge into the run of the innermost axis that does not (``star``),
    whose sum rounds each tile's run; the axes outside count their extents, those merged their
    tiles (one). Rows padded to whole words (``re``/``rf`` elements at the main and final
    width, :func:`.contiguity.padded_row`): a merged innermost axis spans its padded row. Sums
    and lists per prefix level as :func:`_walk_sum` picks them."""
    n_ax = runs[t, 0]
    run = 1   # elements of the merged axes at the main width
    runf = 1  # and at the final width (their padded rows differ)
    star = -1
    for i in range(n_ax - 1, -1, -1):
        d = runs[t, 1 + i]
        if P[d, c, c, 0] == 1 and P[d, c, c, 1] == sizes[d]:
            if i == n_ax - 1:
                run = _round_run(sizes[d], re)
                runf = _round_run(sizes[d], rf)
            else:
                run *= sizes[d]
                runf *= sizes[d]
        else:
            star = i
            break
    final = 1
    for kk in range(c + 1):
        for i in range(n_ax):
            d = runs[t, 1 + i]
            if i < star:
                v = _walk_sum(per_core, d, kk, c, 1, a, P, PS)
            elif i > star:
                v = _walk_sum(per_core, d, kk, c, 0, a, P, PS)
            else:
                v = 0
                vf = 0
                for x in range(_walk_entries(per_core, d, kk, c, a, LN, LSN)):
                    e, m = _walk_entry(per_core, d, kk, c, x, a, LE, LM, LSE, LSM)
                    if i == n_ax - 1:  # a tile's row: padded to whole words, then granules
                        v += m * _round_run(_round_run(e, re), ge)
                        vf += m * _round_run(_round_run(e, rf), gf)
                    else:
                        v += m * _round_run(e * run, ge)
                        vf += m * _round_run(e * runf, gf)
                if kk == c:
                    final *= vf
            if star < 0 and i == 0:  # every axis spanned: the tensor is one run
                v *= _round_run(run, ge)
                if kk == c:
                    final *= _round_run(runf, gf) * P[d, kk, c, 0]
            elif kk == c and i != star:
                final *= v
            RP[t, d, kk, c] = v
    RD[t, c] = final


@njit(cache=True, inline="always", error_model="numpy")
def _packed_sums(b, t, c, ge, gf, runs, sizes, tiles, per_core, a, P, PS, RP, RD):
    """:func:`_run_tables` for a packed tensor's transfers between the outermost level and
    ``c``, the first level keeping it: each tile is one run of the whole pack tile (its tile at
    ``c``, clipped to the tensor, padding included); tile counts as :func:`_walk_sum` picks."""
    n_ax = runs[t, 0]
    slot = 1
    for i in range(n_ax):
        d = runs[t, 1 + i]
        slot *= min(tiles[b, c, d], sizes[d])
    final = 1
    for kk in range(c + 1):
        for i in range(n_ax):
            d = runs[t, 1 + i]
            v = _walk_sum(per_core, d, kk, c, 0, a, P, PS)
            if kk == c:
                final *= v
            if i == 0:
                v *= _round_run(slot, ge)
            RP[t, d, kk, c] = v
    RD[t, c] = final * _round_run(slot, gf)


@njit(cache=True, inline="always", error_model="numpy")
def _group_tiles(g, lam, level, gi, P):
    """Tiles of an affine group at ``level`` (member ``i`` from prefix level ``lam[i]``): the
    product of its members' tile counts (every combination is a distinct window tile)."""
    n = 1
    for i in range(gi[g, GI_NMEM]):
        n *= P[gi[g, GI_MEM + i], lam[i], level, 0]
    return n


@njit(cache=True, inline="always", error_model="numpy")
def _tile_only(b, tiles, sizes, f_level, f_axes, ax_terms, terms, f_bytes, f_psum, f_red, step,
               block, bank, op_mask, op_pp, op_rate, call, count, count_all, P, nbraw, op_s,
               op_busy, op_pad, iters):
    """Step 4, the parts that depend on the tiles and ways only: buffer bytes at full tile
    size per level (:func:`.rules.buffer_bytes`, before double buffering and bypass), steps
    and padded points per op (``count``: core 0's iterations, the busiest core's), tiles
    visited per level (``count_all``: below the array summed over the cores, as the search's
    ladder counts); returns the busiest core's cycles (:func:`.rules.compute_cycles`)."""
    L, D = tiles.shape[1], tiles.shape[2]
    for l in range(L):
        for f in range(f_level.shape[0]):
            if not f_level[f, l]:
                nbraw[l, f] = 0
                continue
            width = f_bytes[f, l]
            if l < L - 1 and holds_partial_sums(f_red[f], l, step, tiles[b]):
                width = f_psum[f, l]
            nbraw[l, f] = buffer_bytes_arrays(f, tiles[b, l], sizes, f_axes, ax_terms, terms,
                                              width, block[l], bank[l])
    for o in range(op_mask.shape[0]):
        s = 1
        vol = 1
        ne = 1
        for j in range(D):
            if op_mask[o, j]:
                s *= count[j, L - 1]
                vol *= tiles[b, L - 1, j]
                ne *= P[j, L - 1, L - 1, 0]
        op_s[o] = s
        op_busy[o] = s * vol
        op_pad[o] = ne * vol
    for l in range(L):
        it = 1
        for j in range(D):
            it *= count_all[j, l]
        iters[l] = max(it, 1)
    return compute_cycles(op_busy, op_s, op_pp, op_rate, call)


@njit(cache=True, inline="always", error_model="numpy")
def _panels(b, tiles, orders, real, spine, step, a, sizes, f_inner, f_axes, ax_terms, terms,
            f_bytes, block, bank, panel, ext, mult, nbraw):
    """Step 4, per candidate of a chain: the bytes of the innermost-only buffers (fused
    intermediates, op state) at the panel's extents (:func:`.rules.panel_tile`: the tiles
    the producer writes within one iteration of the shared loops, which the loop orders
    decide; ``ext``/``mult`` work arrays)."""
    L = tiles.shape[1]
    panel_tile(orders[b], real, spine, step, tiles[b], a, panel, ext, mult)
    for f in range(f_inner.shape[0]):
        if f_inner[f]:
            nbraw[L - 1, f] = buffer_bytes_arrays(f, panel, sizes, f_axes, ax_terms, terms,
                                                  f_bytes[f, L - 1], block[L - 1], bank[L - 1])


@njit(cache=True, inline="always", error_model="numpy")
def _fit(b, dbuf, bypass, part_cap, f_tensor, f_part, f_ops, mem_max, nbraw, pf, po,
         footprint, fits):
    """Step 4: footprint per level (x2 double-buffered, nothing for a bypass) and per part of
    the level (``pf [P]`` work sums) against the parts' capacities (:func:`.rules.part_capacity`:
    one part, the level's capacity, unless it reserves bytes for some tensors). With
    ``mem_max`` (Chimera's MU) a level's footprint, and each part's, is the max over ops of
    the buffers each op touches (``f_ops [F, O]``; ``po [O, P + 1]`` work sums per op and
    part, then in all)."""
    fit = True
    O, P = f_ops.shape[1], pf.shape[0]
    for l in range(part_cap.shape[0]):
        fp = 0
        for p in range(P):
            pf[p] = 0
        if mem_max:
            for o in range(O):
                for p in range(P + 1):
                    po[o, p] = 0
        for f in range(f_tensor.shape[0]):
            nb = nbraw[l, f]
            ti = f_tensor[f]
            if ti >= 0:
                nb *= (1 + dbuf[b, l, ti]) * (1 - bypass[b, l, ti])
            fp += nb
            pf[f_part[f, l]] += nb
            if mem_max:
                for o in range(O):
                    if f_ops[f, o]:
                        po[o, f_part[f, l]] += nb
                        po[o, P] += nb
        if mem_max:  # the max over ops, per part and in all
            fp = 0
            for p in range(P):
                pf[p] = 0
            for o in range(O):
                fp = max(fp, po[o, P])
                for p in range(P):
                    pf[p] = max(pf[p], po[o, p])
        footprint[b, l] = fp
        for p in range(pf.shape[0]):
            if pf[p] > part_cap[l, p]:
                fit = False
    fits[b] = fit


@njit(cache=True, inline="always", error_model="numpy")
def _compute(b, cyc, clock, op_s, op_pad, steps, padded, cycles, compute_s):
    """Step 4: steps, padded points and cycles (from :func:`_tile_only`), compute seconds."""
    for o in range(op_s.shape[0]):
        steps[b, o] = op_s[o]
        padded[b, o] = op_pad[o]
    cycles[b] = cyc
    compute_s[b] = cyc / clock


@njit(cache=True, inline="always", error_model="numpy")
def _links(b, dbuf, bypass, used, inst, link_a, no_read, no_write, read_bw, write_bw, xfer_s,
           ideal, lk, src, iters, out, flags):
    """Step 4: bytes and transfers over each link (a transfer from the nearest level above that
    keeps the tensor crosses every link between), link times, latency and utilization
    (:func:`.rules.link_time`, :func:`.rules.latency`). ``lk [8, L]`` work rows: bytes read,
    written, exposed read, exposed written, then the same four as counts of what the fixed
    per-transfer cost is charged for: the transfers' buffer descriptors, at least one per
    transfer (``out.fill_fixed``, ``out.drain_fixed``, :mod:`.kernel_bds`; one per transfer
    where no DMA limits are given)."""
    reads, writes, fills, drains = out.reads, out.writes, out.fill_fixed, out.drain_fixed
    L, T = reads.shape[1], reads.shape[2]
    for l in range(L):
        for i in range(8):
            lk[i, l] = 0.0
    for t in range(T):
        src[t] = 0
    for c in range(1, L):
        for t in range(T):
            hidden = dbuf[b, c, t]
            r, w = reads[b, c, t], writes[b, c, t]
            nr, nw = fills[b, c, t], drains[b, c, t]
            for l in range(src[t] + 1, c + 1):
                lk[0, l] += r
                lk[1, l] += w
                lk[4, l] += nr
                lk[5, l] += nw
                if not hidden:
                    lk[2, l] += r
                    lk[3, l] += w
                    lk[6, l] += nr
                    lk[7, l] += nw
        for t in range(T):
            src[t] = c if not bypass[b, c, t] else src[t]
    cs = out.compute_s[b]
    tmax = 0.0
    ex_sum = 0.0
    fill = 0.0
    out.transfer_s[b, 0] = 0.0
    out.ratio[b, 0] = np.inf
    for l in range(1, L):
        ins = link_instances(inst, l, link_a, used)
        if ((no_read[l] and lk[0, l] > 0) or (no_write[l] and lk[1, l] > 0)) and flags[1] == 0:
            flags[1] = l + 1
        rbw = read_bw[l] * ins
        wbw = write_bw[l] * ins
        xs = xfer_s[l] / ins
        tt = link_time(lk[0, l], lk[1, l], rbw, wbw, lk[4, l], lk[5, l], xs)
        out.transfer_s[b, l] = tt
        out.ratio[b, l] = ideal / tt if tt > 0 else np.inf
        tmax = max(tmax, tt)
        ex_sum += link_time(lk[2, l], lk[3, l], rbw, wbw, lk[6, l], lk[7, l], xs)
        fill += link_time(lk[0, l] - lk[2, l], lk[1, l] - lk[3, l], rbw, wbw,
                          lk[4, l] - lk[6, l], lk[5, l] - lk[7, l], xs) / iters[l]
    lat = latency(cs, ex_sum, tmax, fill)
    out.latency_s[b] = lat
    out.util[b] = ideal / lat if lat > 0 else 0.0


@njit(cache=True, inline="always", error_model="numpy")
def _pack_passes(b, one, pack, bypass, tiles, sizes, runs, tbytes, psum, used, inst, link_a,
                 read_bw, write_bw, e_read, e_write, e_link, ideal, out):
    """Step 4: each packed tensor's pack (an output's unpack) pass, :func:`.contiguity.pack_pass`,
    added to the off-chip bytes, the latency (the pass does not overlap the operator) and the
    energy; the utilization follows the latency."""
    T, L = pack.shape[1], bypass.shape[1]
    ins = link_instances(inst, 1, link_a, used)
    out.pack_s[b] = 0.0
    for t in range(T):
        if not pack[b, t] or runs[t, 0] == 0 or (one >= 0 and one != t):
            continue
        c0 = 1
        while c0 < L - 1 and bypass[b, c0, t]:
            c0 += 1
        nb, sec, joules = pack_pass(t, c0, b, tiles, sizes, runs, tbytes, psum[t] > 0,
                                    read_bw[1] * ins, write_bw[1] * ins, e_read[0], e_write[0],
                                    e_link[1])
        out.offchip[b] += nb
        out.pack_s[b] += sec
        out.energy[b] += joules
    out.latency_s[b] += out.pack_s[b]  # one sum, as the search adds it to its latencies
    lat = out.latency_s[b]
    out.util[b] = ideal / lat if lat > 0 else 0.0


@njit(cache=True, inline="always", error_model="numpy")
def _offchip_energy(b, bypass, e_read, e_write, e_link, e_point, op_pad, reads, writes, offchip,
                    energy_j):
    """Bytes over the outermost link (a tensor's first transfer below level 0) and energy
    (:func:`.rules.transfer_energy` per level and tensor, from the nearest level above that
    keeps the tensor, plus :func:`.rules.compute_energy`)."""
    L, T = reads.shape[1], reads.shape[2]
    off = 0
    e = 0.0
    for t in range(T):
        first = True
        s = 0
        for c in range(1, L):
            r = reads[b, c, t]
            w = writes[b, c, t]
            if first:
                off += r + w
            first = first and bypass[b, c, t]
            e += transfer_energy(r, w, e_read[s], e_write[s], e_read[c], e_write[c], e_link[c])
            if not bypass[b, c, t]:
                s = c
    offchip[b] = off
    energy_j[b] = e + compute_energy(op_pad, e_point)
