"""Floors of the bytes moved into the first open level of a node: the least over its tiles that fit.

A node's traffic bound (:mod:`.bound`) takes every open tile at its largest (capped one dim at
a time, :meth:`.BufferTable.cap_tiles`), so each tensor is credited with the reuse of tiles
that cannot all fit at once: on aie-4x2 a GEMM node with its memtile tiles fixed is credited
with core tiles m512 n96 k192 (A wants a large n tile, B a large m tile, C a large k tile;
48 KiB holds none of those together). Where the energy of the core transfers decides the
ranking, that bound let 1.8 M nodes through.

The floor is a joint bound. Take a node whose tiles above level ``l`` are fixed and some
level-``l`` tile open (``l`` = its first open level). Every mapping below it has level-``l``
tiles ``c`` (per dim one of the node's candidates) whose single buffers fit level ``l``, and
the bytes read into (written out of) level ``l``, summed over tensors, are at least

    min over maximal fitting c' of  sum_t R_t(c')     (and the same for W_t)

with ``R_t`` the model's traffic of tensor ``t`` under its own least-traffic orders for the
open levels (:func:`.bound.favorable_orders`): (1) the favourable orders are least for each
tensor at every level whatever the tiles; (2) the bytes moved into level ``l`` depend on the
tiles of levels ``0 .. l`` and the orders of levels ``0 .. l-1`` only, and never grow when a
tile grows (:mod:`.bound`, fact 2); (3) footprints grow with every tile, so every fitting ``c``
lies below a *maximal* fitting ``c'`` (each dim at its largest candidate that still fits with
the others) that moves no more bytes. The fit uses the model's single-buffer bytes at the final
widths (:meth:`.BufferTable.bytes` without a split), a lower bound of any mapping's footprint.

Per node the maximal combos are enumerated (the last open dim at its largest fitting value for
each choice of the others) and costed in one model call; a node with more than
:data:`MAX_COMBOS` combos gets no floor (0: still a bound), which keeps the cost per node
small. Reads and writes are floored separately, so a weighting of them (energy per byte in and
out) stays a bound.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .buffers import fitting_end

MAX_COMBOS = 512  # per node: above this many maximal tile combos, no floor
MAX_ORDERS = 24   # per node: above this many orders of the level being fixed, no order floor


@njit(cache=True)
def _enumerate(vals, v_lo, v_hi, l, cap, sizes, desc, max_combos, out_owner, out_tiles):
    """Per node ``i`` the maximal fitting level-``l`` tile combos: per dim the candidates
    ``vals[v_lo[i, j]:v_hi[i, j]]`` (ascending), the last dim with several candidates at its
    largest that fits ``cap`` bytes (:func:`.buffers.fitting_end`) for each choice of the others.
    Writes ``out_owner [m]`` and ``out_tiles [m, D]`` up to their size; returns ``m`` (or -1
    when they are too small). A node with more than ``max_combos`` choices gets none."""
    n, D = v_lo.shape
    m = 0
    tl = np.empty(D, np.int64)
    idx = np.empty(D, np.int64)
    for i in range(n):
        last = -1
        total = 1
        for j in range(D):
            if v_hi[i, j] - v_lo[i, j] > 1:
                if last >= 0:
                    total *= v_hi[i, last] - v_lo[i, last]
                last = j
        if last < 0 or total > max_combos:
            continue
        for j in range(D):
            idx[j] = v_lo[i, j]
        while True:
            for j in range(D):
                tl[j] = vals[idx[j]]
            # the largest value of the last open dim that fits (footprint monotone)
            a = fitting_end(vals, v_lo[i, last], v_hi[i, last], tl, last, l, sizes, desc, cap)
            if a > v_lo[i, last]:
                tl[last] = vals[a - 1]
                if m >= out_owner.shape[0]:
                    return -1
                out_owner[m] = i
                for j in range(D):
                    out_tiles[m, j] = tl[j]
                m += 1
            # next choice of the other dims (odometer over the dims before and after last)
            j = D - 1
            while j >= 0:
                if j != last:
                    idx[j] += 1
                    if idx[j] < v_hi[i, j]:
                        break
                    idx[j] = v_lo[i, j]
                j -= 1
            if j < 0:
                break
    return m


def maximal_combos(vals, v_lo, v_hi, l, cap, sizes, desc):
    """``(owner [m], tiles [m, D])``: the maximal fitting level-``l`` tile combos of each node
    (:func:`_enumerate`; nodes with too many choices or none that fit are absent)."""
    size = max(1024, 4 * len(v_lo))
    while True:
        owner = np.empty(size, np.int64)
        tiles = np.empty((size, v_lo.shape[1]), np.int64)
        m = _enumerate(vals, v_lo, v_hi, l, float(cap), sizes, desc, MAX_COMBOS, owner, tiles)
        if m >= 0:
            return owner[:m], tiles[:m]
        size *= 4
