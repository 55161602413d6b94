"""Buffer descriptors (BDs) per transfer in the cost kernel: the count ``simulate`` makes.

A transfer of a tile between a level ``c`` and its source ``s`` (the nearest level above that
keeps the tensor) reads one buffer and writes another; each side is a strided access that the
DMA of its level runs as :func:`.descriptors.count_bds` BDs, and the transfer takes the most of
its two sides (:func:`.descriptors.transfer_bds`). The count depends on the tile's *moved
extents* per axis (a window's row rounded out to words, a padded row rounded up, at the width
the transfer carries) and on the two buffers' row pitches, so it is a function of the tile's
shape, not of where the tile starts. Here, per tensor and level:

- *buffers* (:func:`_buffers`): at ``c >= 1`` the largest moved box over the level's tiles (at
  the tensor's own width), per axis; at level 0 the tensor, its last axis padded
  (:mod:`.contiguity`) as :class:`tilewise.simulation.bds.BdCounter` lays them out;
- *items* per axis (:func:`_items`): the distinct moved extents of the tiles a count sums
  over, each with its multiplicity: a plain axis from the kernel's tile lists (the array's,
  or each core's below the array, as the reuse rule picks them); an affine axis (a window)
  every combination of its members' tiles at its unclipped extent, then, for the tiles the
  kernel lists near the border (all of them where the window's rows are rounded out), the
  unclipped extent taken back (weight -1) and the clipped (rounded) one added: a signed
  multiset whose sum over any function of the extents is the sum over the real tiles;
- *weighted counts* (:func:`_weighted`): the sum over every combination of the axes' items
  of the product of their weights x the BDs of that shape (memoized per shape);
- the transfer count's reuse sums (:func:`tilewise.model.kernel._traffic`), each a product of
  per-dim tile counts, are recomputed with the per-dim counts replaced by one weighted count
  (:func:`bd_traffic`).

Most shapes need one BD. Per tensor and level, once per change of the tiles or ways of the dims
the tensor depends on (its own epoch, :func:`_tensor_epoch`):
where the two buffers' sizes keep every shape within both DMAs' limits (:func:`_fits_one`, a
sufficient test; tensors none of whose tiles can be empty) or every distinct shape takes one
BD (the items' extents over every prefix level), the counts are the transfer counts, and
nothing is summed. The fixed cost is charged per BD but at least once per transfer
(``fill_fixed``/``drain_fixed``: a window tile wholly in the padding has no BD, yet hands its
buffer over), so the charges never fall below the transfers the search's bounds count. Only
transfers between two levels that both declare DMA limits are counted (elsewhere a transfer is
one BD, as the model charged before), and only tensors whose axes are plain or one window per
group of dims (:class:`.problem.DmaTable` ``n_axes``; others one per transfer).

The per-tile-combo tests (:func:`bd_traffic` down to :func:`_fits_one`) are inlined into the
kernel's candidate loop; the sums (:func:`_level_bds`) and the shape listing are calls, made
only where some shape may take more (or fewer) than one BD: inlining them too made the
candidate loop slower for every problem. Numba's cache does not see a change to an inlined callee in
another module: after editing this module, touch :mod:`.kernel` (or clear the caches).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .contiguity import aligned_extent, granule_points
from .descriptors import (LIM_DIMS, LIM_LENGTH, LIM_STRIDE, LIM_WORD, LIM_WRAP, MAX_DIMS,
                          count_bds)
from .problem import GI_BORDER, GI_MEM, GI_NMEM

H = 512  # memo slots (direct-mapped, per batch)


@njit(cache=True, inline="always", error_model="numpy")
def transitions(t, k, q, oth, pos, count):
    """The weight of a transition of loop ``q`` at level ``k`` for tensor ``t`` in the kernel's
    reuse sums: over the loops not indexing ``t`` (``oth[t]``), ``q``'s own new steps
    (``count[q, k + 1] - count[q, k]``), a loop inside ``q`` in level ``k``'s order at
    ``count[j, k + 1]``, one outside it at ``count[j, k]``. The transfer counts and their BD
    sums (:func:`bd_traffic`) share it."""
    p = pos[k, q]
    term = 1
    for ii in range(1, oth[t, 0] + 1):
        j = oth[t, ii]
        if j == q:
            term *= count[j, k + 1] - count[j, k]
        elif pos[k, j] < p:
            term *= count[j, k + 1]
        else:
            term *= count[j, k]
    return term


@njit(cache=True, error_model="numpy")
def work_arrays(T, L, D, M, dma, sizes, axes, gi, widths):
    """The scratch arrays :func:`bd_traffic` takes (allocated once per batch; tiny where no
    level declares DMA limits). Items per axis: at most its distinct extents, below the
    largest window an axis can have (its members' whole sizes) plus one word's rounding, and
    at most one per :func:`_add` call (:func:`item_calls`, from the tile lists' ``widths``):
    numba zero-fills the lists, so a bound by extents alone (2 x 10^6 for a 10^6 dim) cost
    a memset of 100 MB per batch.
    ``TD [T, D]``: the dims a tensor's BD counts depend on (its plain axes' dims, its windows'
    members)."""
    A = dma.shape.shape[1] if dma.active else 1
    TD = np.zeros((T, D), np.bool_)
    for t in range(T if dma.active else 0):
        for p in range(dma.n_axes[t]):
            kind, j = dma.parts[t, p, 0], dma.parts[t, p, 1]
            if kind == 0:
                TD[t, j] = True
            else:
                for i in range(gi[j, GI_NMEM]):
                    TD[t, gi[j, GI_MEM + i]] = True
    MI = 1
    if dma.active:
        big = 1
        for j in range(sizes.shape[0]):
            big = max(big, sizes[j])
        coef = 1
        for x in range(axes.shape[0]):
            cs = 0
            for i in range(M):
                cs += axes[x, 2 + i]
            coef = max(coef, cs)
        MI = min(64 + big * (coef + 1), item_calls(L, M, widths))
    return (np.zeros((T, L, A + 1), np.int64),     # SH: buffer extents per level (+ lanes)
            np.full((T, 2), -1, np.int64),          # SK: (epoch, rows split) of SH
            np.full((T, L, L, 2, 2), -1, np.int64),  # CK [t, c, src, rows split]: (epoch, code)
            np.zeros((A, MI), np.int64),            # IE: items' extents per axis
            np.zeros((A, MI), np.int64),            # IW: and weights
            np.zeros(A, np.int64),                  # IN: and counts
            np.zeros(A + 1, np.int64),              # odometer
            np.zeros(A + 1, np.int64),              # extents of one shape
            np.zeros((3, A + 1), np.int64),         # sizes, strides of one side
            np.zeros((4, MAX_DIMS), np.int64),      # count_bds scratch
            np.full((H if dma.active else 1, A + 6), -1, np.int64),  # memo keys (+ stamp)
            np.zeros(H if dma.active else 1, np.int64),  # memo values
            np.zeros(max(M, 1), np.int64),          # member odometer
            np.zeros(D, np.int64),                  # prefix level per dim
            np.full((H if dma.active else 1, D + 8), -1, np.int64),  # term memo keys
            np.zeros((H if dma.active else 1, 2), np.int64),          # and values
            np.full((H if dma.active else 1, max(M, 1) + 7), -1, np.int64),  # axis sum keys
            np.zeros((H if dma.active else 1, 2), np.int64),          # and values
            TD,
            np.full((T, L + 2, D), -1, np.int64),  # SNAP: [0, 0] the kernel's epoch, then TD's tiles and ways
            np.full(T, -1, np.int64),               # TEP: each tensor's own epoch
            np.zeros(1, np.int64))                  # GEN: the last epoch handed out


@njit(cache=True)
def item_calls(L, M, widths):
    """The most :func:`_add` calls one axis list takes (so the most items it can hold), with
    ``widths = (ME, WC * ME, max_x)`` the widths of the tile lists (``LE``, ``LSE``) and of the
    border tiles (``X``): over the prefix levels ``0 .. c`` (at most ``L``), a plain axis adds
    one item per listed tile, an affine one per combination of its (at most ``M``) members'
    listed tiles, plus two per combination of their border tiles (:func:`_window_items`)."""
    me, mse, mx = widths
    m = max(M, 1)
    return L * max(mse, me ** m + 2 * mx ** m) + 1


@njit(cache=True, inline="always", error_model="numpy")
def _add(IE, IW, IN, p, e, w):
    """Add item ``(extent e, weight w)`` to axis ``p``'s list, merging equal extents."""
    for i in range(IN[p]):
        if IE[p, i] == e:
            IW[p, i] += w
            return
    if IN[p] == IE.shape[1]:  # never, by item_calls; a guard, not a silent overrun
        raise IndexError("kernel_bds: an axis' item list is full (item_calls is too low)")
    IE[p, IN[p]] = e
    IW[p, IN[p]] = w
    IN[p] += 1


@njit(cache=True, inline="always", error_model="numpy")
def _pad(e, pts):
    """A row of ``e`` elements padded to whole words of ``pts`` elements."""
    return (e + pts - 1) // pts * pts


@njit(cache=True, error_model="numpy")
def _items(t, c, kkd, per_core, a, union, last_pts, dma, gi, axes, lists, core_lists, X, XN,
           IE, IW, IN, midx):
    """Fill the items (:mod:`module doc <.kernel_bds>`) of every axis of tensor ``t`` over its
    tiles at level ``c``, member dim ``j`` from prefix level ``kkd[j]`` (``union``: from every
    prefix level ``0 .. c``, weights 1: the distinct shapes only). ``last_pts``: a padded
    last row's word in elements (0: not padded)."""
    for p in range(dma.n_axes[t]):
        _axis_items(t, p, c, kkd, per_core, a, union, last_pts, dma, gi, axes, lists, core_lists,
                    X, XN, IE, IW, IN, midx)


@njit(cache=True, inline="always", error_model="numpy")
def _axis_items(t, p, c, kkd, per_core, a, union, last_pts, dma, gi, axes, lists, core_lists,
                X, XN, IE, IW, IN, midx):
    """:func:`_items` of axis ``p`` alone."""
    LE, LM, LN = lists
    LSE, LSM, LSN = core_lists
    n_ax = dma.n_axes[t]
    IN[p] = 0
    kind, j, x = dma.parts[t, p, 0], dma.parts[t, p, 1], dma.parts[t, p, 2]
    k0 = 0 if union else c
    for kq in range(k0, c + 1):
        if kind == 0:
            kk = kq if union else kkd[j]
            core = per_core and kk < a
            n = LSN[j, kk, c] if core else LN[j, kk, c]
            for i in range(n):
                e = LSE[j, kk, c, i] if core else LE[j, kk, c, i]
                m = LSM[j, kk, c, i] if core else LM[j, kk, c, i]
                if m == 0 or e == 0:
                    continue
                if p == n_ax - 1 and last_pts > 0:
                    e = _pad(e, last_pts)
                _add(IE, IW, IN, p, e, 1 if union else m)
        else:
            _window_items(t, c, kq, union, p, j, x, kkd, dma, gi, axes, LE, LM, LN, X, XN,
                          IE, IW, IN, midx)


@njit(cache=True, inline="always", error_model="numpy")
def _first_combo(midx, n, g, c, kq, union, kkd, gi, counts):
    """Set ``midx`` to the first combination of group ``g``'s members' listed tiles (``counts``
    per member: ``LN`` for every tile, ``XN`` for the border ones); False if a member lists none."""
    for i in range(n):
        midx[i] = 0
        jm = gi[g, GI_MEM + i]
        if counts[jm, kq if union else kkd[jm], c] == 0:
            return False
    return True


@njit(cache=True, inline="always", error_model="numpy")
def _next_combo(midx, n, g, c, kq, union, kkd, gi, counts):
    """Step ``midx`` to the next combination (the first member fastest); False after the last."""
    i = 0
    while i < n:
        jm = gi[g, GI_MEM + i]
        midx[i] += 1
        if midx[i] < counts[jm, kq if union else kkd[jm], c]:
            return True
        midx[i] = 0
        i += 1
    return False


@njit(cache=True, inline="always", error_model="numpy")
def _window_items(t, c, kq, union, p, g, x, kkd, dma, gi, axes, LE, LM, LN, X, XN, IE, IW, IN,
                  midx):
    """:func:`_items` of an affine axis (group ``g``, axis row ``x``): every combination of the
    members' tiles at its unclipped extent, then the listed border tiles' unclipped extents
    taken back and their clipped (rounded) ones added."""
    L = LN.shape[1]
    n = gi[g, GI_NMEM]
    if not _first_combo(midx, n, g, c, kq, union, kkd, gi, LN):
        return
    while True:  # every combination of the members' listed tiles
        u = 1
        w = 1
        for i in range(n):
            jm = gi[g, GI_MEM + i]
            kk = kq if union else kkd[jm]
            e = LE[jm, kk, c, midx[i]]
            w *= LM[jm, kk, c, midx[i]]
            if e == 0:
                w = 0
            u += axes[x, 2 + i] * (e - 1)
        if w != 0:
            _add(IE, IW, IN, p, u, 1 if union else w)
        if not _next_combo(midx, n, g, c, kq, union, kkd, gi, LN):
            break
    if not gi[g, GI_BORDER]:
        return
    if not _first_combo(midx, n, g, c, kq, union, kkd, gi, XN):
        return
    size = axes[x, 1]
    gp = axes[x, axes.shape[1] - L + c]
    while True:
        lo = axes[x, 0]
        hi = axes[x, 0]
        for i in range(n):
            jm = gi[g, GI_MEM + i]
            kk = kq if union else kkd[jm]
            s = X[jm, kk, c, midx[i], 0]
            e = X[jm, kk, c, midx[i], 1]
            lo += axes[x, 2 + i] * s
            hi += axes[x, 2 + i] * (s + e - 1)
        if gp > 1:
            clipped = aligned_extent(max(lo, 0), min(hi, size - 1) + 1, gp)
        else:
            clipped = max(0, min(hi, size - 1) - max(lo, 0) + 1)
        if union:
            _add(IE, IW, IN, p, clipped, 1)
        else:
            _add(IE, IW, IN, p, hi - lo + 1, -1)
            _add(IE, IW, IN, p, clipped, 1)
        if not _next_combo(midx, n, g, c, kq, union, kkd, gi, XN):
            return


@njit(cache=True, error_model="numpy")
def _buffers(t, L, rsplit, row_pts, dma, gi, axes, lists, core_lists, X, XN, kkd, SH, IE, IW,
             IN, midx):
    """``SH[t, l]``: the extents of ``t``'s buffer at each level (module doc), lanes last."""
    no, zero = np.bool_(False), np.int64(0)  # typed, not literals: one compiled _items
    n_ax = dma.n_axes[t]
    for p in range(n_ax):
        SH[t, 0, p] = dma.shape[t, p]
    if dma.win0[t] > 0:
        SH[t, 0, n_ax - 1] = dma.win0[t]
    elif rsplit:
        SH[t, 0, n_ax - 1] = _pad(dma.shape[t, n_ax - 1], row_pts)
    for l in range(L):
        SH[t, l, n_ax] = dma.lanes[t]
    for c in range(1, L):
        for j in range(kkd.shape[0]):
            kkd[j] = c
        _items(t, c, kkd, no, zero, no, row_pts if rsplit else zero, dma, gi, axes, lists,
               core_lists, X, XN, IE, IW, IN, midx)
        for p in range(n_ax):
            mx = 0
            for i in range(IN[p]):
                if IW[p, i] > 0:
                    mx = max(mx, IE[p, i])
            SH[t, c, p] = mx


@njit(cache=True, inline="always", error_model="numpy")
def _plain_buffers(t, L, rsplit, row_pts, dma, LE, LM, LN, SH):
    """:func:`_buffers` of a tensor whose axes are all plain: per level the largest tile of
    each dim (the last row padded); returns False (nothing done) for any other tensor."""
    n_ax = dma.n_axes[t]
    for p in range(n_ax):
        if dma.parts[t, p, 0] != 0:
            return False
    for p in range(n_ax):
        SH[t, 0, p] = dma.shape[t, p]
    if rsplit:
        SH[t, 0, n_ax - 1] = _pad(dma.shape[t, n_ax - 1], row_pts)
    for l in range(L):
        SH[t, l, n_ax] = dma.lanes[t]
    for c in range(1, L):
        for p in range(n_ax):
            j = dma.parts[t, p, 1]
            mx = 0
            for i in range(LN[j, c, c]):
                if LM[j, c, c, i] > 0:
                    mx = max(mx, LE[j, c, c, i])
            SH[t, c, p] = _pad(mx, row_pts) if rsplit and p == n_ax - 1 else mx
    return True


@njit(cache=True, inline="always", error_model="numpy")
def _fits_one(t, l, width, lim, dma, SH):
    """Whether every shape within level ``l``'s buffer of ``t`` (each extent at most the
    buffer's) is one BD on a DMA with ``lim`` at ``width`` bytes per element: merged dims
    never outnumber the axes, and the largest inner dim, stride and length the buffer allows
    are within the limits (a sufficient test, :func:`.descriptors.count_bds`' rules)."""
    n_ax = dma.n_axes[t]
    lanes = dma.lanes[t]
    n = n_ax + (1 if lanes > 1 else 0)
    f = 0  # the outermost axis the buffer does not hold one of (size-1 axes are dropped)
    while f < n - 1 and SH[t, l, f] == 1:
        f += 1
    if n - f > lim[LIM_DIMS]:
        return False
    eb = width // lanes
    word = lim[LIM_WORD]
    tot = SH[t, l, f]
    inner = 1
    mid = 1
    for x in range(f + 1, n):
        v = SH[t, l, x]
        tot *= v
        inner *= v
        if x < n - 1:
            mid *= v
    inner_w = (inner * eb + word - 1) // word
    if inner_w > lim[LIM_STRIDE] or inner_w > lim[LIM_WRAP] or mid > lim[LIM_WRAP]:
        return False
    return lim[LIM_LENGTH] < 0 or (tot * eb + word - 1) // word <= lim[LIM_LENGTH]


@njit(cache=True, inline="always", error_model="numpy")
def _side(t, l, n, ext, eb, lim, SH, side, cwork):
    """BDs of one side (level ``l``'s buffer) of a transfer of extents ``ext [n]``."""
    sz, st = side[0], side[1]
    pitch = 1
    for i in range(n - 1, -1, -1):
        sz[i] = ext[i]
        st[i] = pitch
        pitch *= SH[t, l, i]
    return count_bds(sz, st, n, eb, lim, cwork)


@njit(cache=True, error_model="numpy")
def _shape_bds(t, c, src, width, rsplit, epoch, ext, dma, SH, side, cwork, MK, MV):
    """BDs of a transfer of extents ``ext`` (lanes last) of ``t`` between ``src`` and ``c`` at
    ``width`` bytes per element: the more of its two sides (memoized per shape)."""
    n = dma.n_axes[t] + 1
    A = MK.shape[1] - 6
    h = (((t * 31 + c) * 31 + src) * 31 + width) * 2 + rsplit
    for i in range(n - 1):
        h = h * 1000003 + ext[i]
    slot = (h ^ (h >> 17)) & (MK.shape[0] - 1)
    hit = (MK[slot, A + 5] == epoch and MK[slot, A] == t and MK[slot, A + 1] == c
           and MK[slot, A + 2] == src and MK[slot, A + 3] == width and MK[slot, A + 4] == rsplit)
    for i in range(n - 1):
        hit = hit and MK[slot, i] == ext[i]
    if hit:
        return MV[slot]
    eb = width // dma.lanes[t]
    v = max(_side(t, src, n, ext, eb, dma.lim[src], SH, side, cwork),
            _side(t, c, n, ext, eb, dma.lim[c], SH, side, cwork))
    for i in range(n - 1):
        MK[slot, i] = ext[i]
    MK[slot, A], MK[slot, A + 1], MK[slot, A + 2] = t, c, src
    MK[slot, A + 3], MK[slot, A + 4], MK[slot, A + 5] = width, rsplit, epoch
    MV[slot] = v
    return v


@njit(cache=True, error_model="numpy")
def _weighted(t, c, src, width, rsplit, epoch, mode, dma, SH, IE, IW, IN, odo, ext, side,
              cwork, MK, MV):
    """Sum over every combination of the axes' items of the weights' product x its BDs, and
    x its BDs but at least 1 (what the fixed cost is charged for; module doc). ``mode`` 0:
    those sums; 1: a check, ``(1, 0)`` when every combination takes one BD, ``(2, 0)`` one or
    none (a window wholly in the padding), else ``(0, 0)``. (Where every shape is known to
    take one BD or none, :func:`_axis_sums` gives the sums without listing combinations.)"""
    n_ax = dma.n_axes[t]
    for p in range(n_ax):
        odo[p] = 0
        if IN[p] == 0:
            return (1, 0) if mode == 1 else (0, 0)
    ext[n_ax] = dma.lanes[t]
    total = 0
    charged = 0
    empty = False
    while True:
        w = 1
        for p in range(n_ax):
            ext[p] = IE[p, odo[p]]
            w *= IW[p, odo[p]]
        if w != 0:
            v = _shape_bds(t, c, src, width, rsplit, epoch, ext, dma, SH, side, cwork, MK, MV)
            if mode == 1 and v > 1:
                return 0, 0
            empty = empty or v == 0
            total += w * v
            charged += w * max(v, 1)
        p = 0
        while p < n_ax:
            odo[p] += 1
            if odo[p] < IN[p]:
                break
            odo[p] = 0
            p += 1
        if p == n_ax:
            if mode == 1:
                return (2 if empty else 1), 0
            return total, charged


@njit(cache=True, inline="always", error_model="numpy")
def _rows_split(b, t, bypass, dma, sizes, tiles):
    """Whether ``t``'s rows are padded (:func:`.contiguity.rows_padded`): some level keeping
    it has a tile of its last axis's dim below the whole axis."""
    if not dma.rows_ok[t]:
        return False
    d = dma.parts[t, dma.n_axes[t] - 1, 1]
    for c in range(1, bypass.shape[1]):
        if not bypass[b, c, t] and tiles[b, c, d] < sizes[d]:
            return True
    return False


@njit(cache=True, inline="always", error_model="numpy")
def _tensor_epoch(t, epoch, last, TD, SNAP, TEP, GEN):
    """Tensor ``t``'s own epoch: a new one only when the tiles or ways of a dim its counts
    depend on (``TD``) changed since its last (``last``: the kernel's current tiles per level,
    ways in the last row; compared only when the kernel's ``epoch`` moved). Its buffers,
    checks and memoized sums hold while it stands, across tile combos that change only other
    dims."""
    if TEP[t] >= 0 and SNAP[t, 0, 0] == epoch:  # no dim changed since t's last look
        return TEP[t]
    same = TEP[t] >= 0
    SNAP[t, 0, 0] = epoch
    for j in range(TD.shape[1]):
        if TD[t, j]:
            for l in range(last.shape[0]):
                if SNAP[t, l + 1, j] != last[l, j]:
                    same = False
                    SNAP[t, l + 1, j] = last[l, j]
    if not same:
        GEN[0] += 1
        TEP[t] = GEN[0]
    return TEP[t]


@njit(cache=True, inline="always", error_model="numpy")
def bd_traffic(b, one, bypass, copies, parts, a, psum, tbytes, oth, count_a, cnt_s, pos,
               sizes, row_word, epoch, last, dma, groups, lists, core_lists, tiles, out, bw):
    """``out.fill_bds`` / ``out.drain_bds [b]``: the BDs of the transfers ``out.fills`` /
    ``out.drains`` count (the module doc; the sums of :func:`.kernel._traffic` with each
    tile weighing its BDs), and ``out.fill_fixed`` / ``out.drain_fixed [b]`` the fixed costs
    charged, one per BD but at least one per transfer (a window tile wholly in the padding
    needs no BD but is still a transfer, its buffer's lock handed over; so the charges never
    fall below the transfers, which the search's bounds count). ``groups = (gi, axes, X,
    XN)``, ``bw`` :func:`work_arrays`."""
    gi, axes, X, XN = groups
    yes, one_bd = np.bool_(True), np.int64(1)  # typed, not literals (one compiled callee each)
    SH, SK, CK, IE, IW, IN, odo, ext, side, cwork, MK, MV, midx, kkd, TK, TV, AK, AV = bw[:18]
    TD, SNAP, TEP, GEN = bw[18], bw[19], bw[20], bw[21]
    fills, drains, fbd, dbd = out.fills, out.drains, out.fill_bds, out.drain_bds
    ffx, dfx = out.fill_fixed, out.drain_fixed
    L, T = fills.shape[1], fills.shape[2]
    if not dma.active:  # every transfer one BD
        for t in range(T):
            for c in range(L):
                fbd[b, c, t] = ffx[b, c, t] = fills[b, c, t]
                dbd[b, c, t] = dfx[b, c, t] = drains[b, c, t]
        return
    for t in range(T):
        fbd[b, 0, t] = ffx[b, 0, t] = 0
        dbd[b, 0, t] = dfx[b, 0, t] = 0
        src = np.int64(0)  # typed, not a literal: one compiled _level_bds, not two
        counted = dma.active and dma.n_axes[t] > 0 and (one < 0 or one == t)
        ep = _tensor_epoch(t, epoch, last, TD, SNAP, TEP, GEN) if counted else 0
        rsplit = 0
        if counted and row_word > 1 and _rows_split(b, t, bypass, dma, sizes, tiles):
            rsplit = 1
        if counted and (SK[t, 0] != ep or SK[t, 1] != rsplit):
            row_pts = granule_points(row_word, tbytes[t])
            if not _plain_buffers(t, L, rsplit, row_pts, dma, lists[0], lists[1], lists[2], SH):
                _buffers(t, L, rsplit, row_pts, dma, gi, axes, lists, core_lists, X, XN, kkd,
                         SH, IE, IW, IN, midx)
            SK[t, 0] = ep
            SK[t, 1] = rsplit
        for c in range(1, L):
            fbd[b, c, t] = ffx[b, c, t] = fills[b, c, t]
            dbd[b, c, t] = dfx[b, c, t] = drains[b, c, t]
            if bypass[b, c, t]:
                continue
            s = src
            src = c
            if not (counted and dma.has[s] and dma.has[c]) or fills[b, c, t] + drains[b, c, t] == 0:
                continue
            widths = 2 if psum[t] else 1
            ck = CK[t, c, s, rsplit]  # per source: the bypass choices of one combo vary it
            if ck[0] != ep:
                code = 1  # 1: every shape one BD; 2: one or none (empty); 0: any number
                per_core = c > a and not psum[t]
                for wi in range(widths):
                    width = tbytes[t] if wi == widths - 1 else psum[t]
                    if _fits_one(t, s, width, dma.lim[s], dma, SH) and \
                            _fits_one(t, c, width, dma.lim[c], dma, SH):
                        if not dma.quick[t]:  # a tile may be empty: none for it
                            code = 2 if code else 0
                        continue
                    pts = granule_points(row_word, width) if rsplit else 0
                    _items(t, c, kkd, per_core, a, yes, pts, dma, gi, axes, lists, core_lists,
                           X, XN, IE, IW, IN, midx)
                    chk, _ = _weighted(t, c, s, width, rsplit, ep, one_bd, dma, SH, IE, IW, IN,
                                       odo, ext, side, cwork, MK, MV)
                    code = 0 if chk == 0 or code == 0 else max(code, chk)
                ck[0], ck[1] = ep, code
            if ck[1] == 1:
                continue
            fbd[b, c, t], ffx[b, c, t], dbd[b, c, t], dfx[b, c, t] = _level_bds(
                t, c, s, a, rsplit, ep, 2 if ck[1] == 2 else 0, copies, parts, psum,
                tbytes, oth, count_a, cnt_s, pos, row_word, dma, groups, lists, core_lists, bw)


@njit(cache=True, inline="always", error_model="numpy")
def _term_slot(TK, t, c, s, width, rsplit, per_core, mode, epoch, kkd):
    """The memo slot of :func:`_term`'s key (tile combo ``epoch``, the transfer, the prefix
    levels ``kkd``) and whether it holds that key."""
    D = kkd.shape[0]
    h = ((((t * 31 + c) * 31 + s) * 31 + width) * 4 + rsplit * 2 + per_core) * 3 + mode
    for j in range(D):
        h = h * 1000003 + kkd[j]
    slot = (h ^ (h >> 17)) & (TK.shape[0] - 1)
    hit = (TK[slot, D] == epoch and TK[slot, D + 1] == t and TK[slot, D + 2] == c
           and TK[slot, D + 3] == s and TK[slot, D + 4] == width and TK[slot, D + 5] == rsplit
           and TK[slot, D + 6] == per_core and TK[slot, D + 7] == mode)
    for j in range(D):
        hit = hit and TK[slot, j] == kkd[j]
    return slot, hit


@njit(cache=True, inline="always", error_model="numpy")
def _cached_term(t, c, s, width, rsplit, epoch, mode, per_core, a, row_word, dma, groups, lists,
                 core_lists, bw, TK, TV, kkd):
    """:func:`_term`, memoized per tile combo and prefix levels (the loop orders of one tile
    combo share most of them); the lookup is inlined, the count a call."""
    slot, hit = _term_slot(TK, t, c, s, width, rsplit, per_core, mode, epoch, kkd)
    if hit:
        return TV[slot, 0], TV[slot, 1]
    w, x = _term(t, c, s, width, rsplit, epoch, mode, per_core, a, row_word, dma, groups, lists,
                 core_lists, bw)
    D = kkd.shape[0]
    for j in range(D):
        TK[slot, j] = kkd[j]
    TK[slot, D], TK[slot, D + 1], TK[slot, D + 2], TK[slot, D + 3] = epoch, t, c, s
    TK[slot, D + 4], TK[slot, D + 5], TK[slot, D + 6], TK[slot, D + 7] = width, rsplit, per_core, mode
    TV[slot, 0], TV[slot, 1] = w, x
    return w, x


@njit(cache=True, error_model="numpy")
def _term(t, c, s, width, rsplit, epoch, mode, per_core, a, row_word, dma, groups, lists,
          core_lists, bw):
    """The weighted count (:func:`_weighted`) of ``t``'s tiles at ``c`` from the prefix levels
    in ``bw``'s ``kkd``, at ``width`` bytes per element."""
    gi, axes, X, XN = groups
    SH, SK, CK, IE, IW, IN, odo, ext, side, cwork, MK, MV, midx, kkd, TK, TV, AK, AV = bw[:18]
    pts = granule_points(row_word, width) if rsplit else 0
    if mode == 2:
        return _axis_sums(t, c, width, rsplit, epoch, per_core, a, pts, dma, groups, lists,
                          core_lists, bw)
    _items(t, c, kkd, per_core, a, np.bool_(False), pts, dma, gi, axes, lists, core_lists, X,
           XN, IE, IW, IN, midx)  # a typed False: the same compiled _items as the others
    return _weighted(t, c, s, width, rsplit, epoch, mode, dma, SH, IE, IW, IN, odo, ext, side,
                     cwork, MK, MV)


@njit(cache=True, error_model="numpy")
def _axis_sums(t, c, width, rsplit, epoch, per_core, a, pts, dma, groups, lists, core_lists, bw):
    """:func:`_weighted`'s ``mode`` 2 (every shape one BD, or none when empty) from per-axis
    sums, each memoized per tile combo and its own dims' prefix levels (a window's members,
    or the plain axis's dim): the product of the axes' nonempty weights and of all their
    weights."""
    gi, axes, X, XN = groups
    SH, SK, CK, IE, IW, IN, odo, ext, side, cwork, MK, MV, midx, kkd, TK, TV, AK, AV = bw[:18]
    Mk = AK.shape[1] - 7
    total = 1
    charged = 1
    for p in range(dma.n_axes[t]):
        kind, j = dma.parts[t, p, 0], dma.parts[t, p, 1]
        nm = gi[j, GI_NMEM] if kind == 1 else 1
        h = ((((t * 31 + c) * 31 + p) * 31 + width) * 4 + rsplit * 2 + per_core)
        for i in range(nm):
            h = h * 1000003 + kkd[gi[j, GI_MEM + i] if kind == 1 else j]
        slot = (h ^ (h >> 17)) & (AK.shape[0] - 1)
        hit = (AK[slot, Mk] == epoch and AK[slot, Mk + 1] == t and AK[slot, Mk + 2] == c
               and AK[slot, Mk + 3] == p and AK[slot, Mk + 4] == width
               and AK[slot, Mk + 5] == rsplit and AK[slot, Mk + 6] == per_core)
        for i in range(nm):
            hit = hit and AK[slot, i] == kkd[gi[j, GI_MEM + i] if kind == 1 else j]
        if not hit:
            _axis_items(t, p, c, kkd, per_core, a, False, pts, dma, gi, axes, lists, core_lists,
                        X, XN, IE, IW, IN, midx)
            nonempty = 0
            every = 0
            for i in range(IN[p]):
                every += IW[p, i]
                if IE[p, i] > 0:
                    nonempty += IW[p, i]
            for i in range(nm):
                AK[slot, i] = kkd[gi[j, GI_MEM + i] if kind == 1 else j]
            AK[slot, Mk], AK[slot, Mk + 1], AK[slot, Mk + 2], AK[slot, Mk + 3] = epoch, t, c, p
            AK[slot, Mk + 4], AK[slot, Mk + 5], AK[slot, Mk + 6] = width, rsplit, per_core
            AV[slot, 0], AV[slot, 1] = nonempty, every
        total *= AV[slot, 0]
        charged *= AV[slot, 1]
    return total, charged


@njit(cache=True, error_model="numpy")
def _level_bds(t, c, s, a, rsplit, epoch, mode, copies, parts, psum, tbytes, oth, count_a,
               cnt_s, pos, row_word, dma, groups, lists, core_lists, bw):
    """BDs into and out of level ``c`` of tensor ``t`` (source ``s``): the transfer count of
    :func:`.kernel._traffic`, every per-dim tile count replaced by one weighted count; and the
    same with each transfer counting at least one (the fixed charges). Returns (fill BDs, fill
    charges, drain BDs, drain charges)."""
    kkd, TK, TV = bw[13], bw[14], bw[15]
    count = cnt_s if c > a else count_a
    per_core = c > a and not psum[t]
    D = kkd.shape[0]
    w_main = psum[t] if psum[t] else tbytes[t]
    total = 1
    for ii in range(1, oth[t, 0] + 1):
        total *= count[oth[t, ii], c]
    for j in range(D):
        kkd[j] = c
    w_all, x_all = _cached_term(t, c, s, w_main, rsplit, epoch, mode, per_core, a, row_word, dma,
                                groups, lists, core_lists, bw, TK, TV, kkd)
    w_fin, x_fin = w_all, x_all
    if psum[t] and tbytes[t] != psum[t]:
        w_fin, x_fin = _cached_term(t, c, s, tbytes[t], rsplit, epoch, mode, per_core, a, row_word,
                                    dma, groups, lists, core_lists, bw, TK, TV, kkd)
    nc = 0
    xc = 0
    for k in range(c):
        for qq in range(1, oth[t, 0] + 1):  # transitions of a loop not indexing t
            q = oth[t, qq]
            p = pos[k, q]
            term = transitions(t, k, q, oth, pos, count)
            if term == 0:
                continue
            for j in range(D):
                kkd[j] = k + 1 if pos[k, j] < p else k
            wn, xn = _cached_term(t, c, s, w_main, rsplit, epoch, mode, per_core, a, row_word, dma,
                                  groups, lists, core_lists, bw, TK, TV, kkd)
            nc += term * wn
            xc += term * xn
    if psum[t]:  # a store per visit, the last of a tile at the final width; a reload per revisit
        own = 1
        if c > a:
            for ii in range(1, oth[t, 0] + 1):
                own *= cnt_s[oth[t, ii], 0]
        k_par = parts[t] if c == a else 1
        loads = (total * w_all - nc) * k_par - w_all * own
        fixed = (total * x_all - xc) * k_par - x_all * own
        return loads, fixed, loads + w_fin * own, fixed + x_fin * own
    return (total * w_all - nc) * copies[t, c], (total * x_all - xc) * copies[t, c], 0, 0
