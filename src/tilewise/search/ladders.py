"""Every tile ladder of one dim, compiled: the enumeration behind :meth:`.Space.dim_ladders`.

A ladder is one tile per level (level 0: the dim's size), each at most its parent's tile
(divided by the ways at the array level; the innermost rounded up to the alignment). Along a
ladder the parent's extents are tracked as (extent, multiplicity) pairs: a level-``k`` loop of
step ``t x ways`` cuts each extent ``e`` into ``e // step`` full steps and a border ``e % step``
(the model's border tiles). At the array level a full step is ``ways`` tiles of ``t`` and a
border step gives ``min(e // t, ways)`` full tiles and one partial. Per ladder: the tiles
visited per level (the pairs' multiplicities over non-empty extents) and the elements all
cores compute (innermost tiles x the innermost tile).

The depth-first walk keeps one row of pairs per level (at most ``2 L + 4`` pairs: each level
adds at most two), so it runs without Python objects; a 10^6-sized dim has 12,000 ladders
(0.12 s in Python, the largest part of building a search engine for it).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List


@njit(cache=True)
def ladders(size, ways, align, n_levels, array_level, vals, v_lo, v_hi):
    """``(tiles [n, L], counts [n, L], padded_all [n])`` of every ladder of a dim of ``size``
    cut ``ways`` ways at ``array_level``, alignment ``align`` at the innermost level, with the
    candidates of level ``k`` (``1 .. L-1``) ``vals[v_lo[k-1]:v_hi[k-1]]`` in the order they are
    listed (the rows come out in the recursive enumeration's order)."""
    L = n_levels
    P = 2 * L + 4
    E = np.zeros((L + 1, P), np.int64)    # extents (and multiplicities) entering level k
    M = np.zeros((L + 1, P), np.int64)
    C = np.zeros(L + 1, np.int64)
    ie = np.zeros(P, np.int64)
    im = np.zeros(P, np.int64)
    ladder = np.zeros(L, np.int64)
    counts = np.zeros(L, np.int64)
    parent = np.zeros(L + 1, np.int64)
    nxt = np.zeros(L + 1, np.int64)       # the next candidate to try per level
    out = List()
    E[1, 0], M[1, 0], C[1] = size, 1, 1
    ladder[0], counts[0], parent[1] = size, 1, size
    k = 1
    nxt[1] = v_lo[0] if L > 1 else 0
    if L == 1:
        out.append(size)
        out.append(1)
        out.append(size)
    while 1 <= k < L:
        if nxt[k] >= v_hi[k - 1]:
            k -= 1
            continue
        t = vals[nxt[k]]
        nxt[k] += 1
        ww = ways if k == array_level else 1
        par = parent[k]
        lim = -(-(-(-par // ww)) // align) * align if k == L - 1 else -(-par // ww)
        if t > lim:
            continue
        step = t * ww
        # the loop cuts every extent into full steps and a border
        full = 0
        for q in range(C[k]):
            full += M[k, q] * (E[k, q] // step)
        n = 1
        ie[0], im[0] = step, full
        for q in range(C[k]):
            if E[k, q] % step:
                ie[n], im[n] = E[k, q] % step, M[k, q]
                n += 1
        visited = 0
        for q in range(n):
            if ie[q]:
                visited += im[q]
        c = 0
        if k == array_level and ww > 1:   # a step is ways tiles of t; a border, fewer
            tiles = 0
            for q in range(n):
                tiles += im[q] * min(ie[q] // t, ww)
            if tiles and t:
                E[k + 1, c], M[k + 1, c] = t, tiles
                c += 1
            for q in range(n):
                rest = ie[q] - min(ie[q] // t, ww) * t
                if rest > 0 and im[q]:
                    E[k + 1, c], M[k + 1, c] = rest, im[q]
                    c += 1
        else:
            for q in range(n):
                if im[q] and ie[q]:
                    E[k + 1, c], M[k + 1, c] = ie[q], im[q]
                    c += 1
        C[k + 1] = c
        ladder[k], counts[k], parent[k + 1] = t, visited, t
        if k + 1 == L:   # a full ladder
            total = 0
            for q in range(c):
                total += M[L, q]
            for x in range(L):
                out.append(ladder[x])
            for x in range(L):
                out.append(counts[x])
            out.append(total * ladder[L - 1])
        else:
            k += 1
            nxt[k] = v_lo[k - 1]
    flat = np.empty(len(out), np.int64)
    for i in range(len(out)):
        flat[i] = out[i]
    rows = flat.reshape(-1, 2 * L + 1)
    return rows[:, :L].copy(), rows[:, L:2 * L].copy(), rows[:, 2 * L].copy()


@njit(cache=True)
def core0_padded(size, tiles, ways, array_level):
    """``[n]``: the padded extent core 0 computes (its innermost tiles x the innermost tile)
    for each ladder ``tiles [n, L]`` of a dim of ``size`` cut ``ways`` ways at
    ``array_level``. Core 0 takes the first (largest) slice of every array tile, so it is the
    busiest core; below the array it walks its own slices (the model's ``steps``), which
    ``counts`` (summed over the cores) overstates."""
    n, L = tiles.shape
    out = np.zeros(n, np.int64)
    E = np.zeros(2 * L + 2, np.int64)
    M = np.zeros(2 * L + 2, np.int64)
    for r in range(n):
        E[0], M[0], c = size, 1, 1
        for k in range(1, L):
            t = tiles[r, k]
            step = t * ways if k == array_level else t
            full = 0
            for q in range(c - 1, -1, -1):
                full += M[q] * (E[q] // step)
                E[q + 1], M[q + 1] = E[q] % step, M[q] * (E[q] % step > 0)
            E[0], M[0] = step, full
            c += 1
            if k == array_level:
                for q in range(c):
                    E[q] = min(E[q], t)
        total = 0
        for q in range(c):
            total += M[q]
        out[r] = total * tiles[r, L - 1]
    return out
