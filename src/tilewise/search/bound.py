"""Lower bounds of the objective over a *part* of the space, from the one cost model.

A node of the search fixes the spatial split, the tile ladders of some dims and the loop orders
of some levels; the rest is open. Its bound must not exceed the objective of any mapping below
it. Three facts of the model make one cheap to compute:

1. *Per-tensor optimal orders.* The traffic of tensor ``t`` into level ``l`` is
   ``D + sum_{k<l} (c_N(k+1) - c_N(k)) * (D - prod_I P_j(k+1, l))`` per byte (kernel module
   doc), with ``I`` the dims indexing ``t``, ``N`` the other dims of its op, ``c_N(k)`` their
   iterations down to level ``k`` and ``P_j`` the extents of tiles whose loops iterate once.
   The level-``k`` term depends on that level's order only, and each of its summands is largest
   with every ``I`` loop outside every ``N`` loop, where the ``N`` sum telescopes whatever their
   order. So "``I`` loops outermost" (:func:`favorable_orders`) gives ``t``'s least traffic at
   *every* level at once, over *all* permutations; summing the per-tensor least traffic
   (one model call per tensor) bounds every order of the open levels. The same swap argument
   (an indexing loop moved outward past a non-indexing one never adds traffic) gives the
   least traffic over orders with constraints: in a fused chain, where real spine loops must
   enclose real private ones, spine dims first and ``I`` first within each block; for a
   level whose innermost loops are already fixed (:mod:`.order_trie`), the free outer loops
   sorted the same way.
2. *Open dims.* Every count ``c`` only grows and every ``P`` only shrinks when a dim is cut
   finer, so an open dim kept whole (its largest tile at every level: the chain
   ``whole``) bounds the traffic from below; its smallest tile at every level bounds the
   footprint; its least padded extent the compute time; its most iterations per level the
   pipeline-fill term. Two tightenings keep those stand-ins valid:
   - *capacity*: an open innermost tile under fixed parents is at most the largest candidate
     that fits the level with every other dim at its smallest (:mod:`.buffers`); a larger
     innermost tile with the same parents never moves more bytes. (Capping a deeper tile under
     an *open* parent is not a bound: it makes the parent's loop real inside every loop of the
     levels above, where a smaller parent would have put it outside them.)
   - *kept whole*: below a dim's first open level the stand-ins are the largest tiles legal
     under the stand-in above (:meth:`.Engine.assemble`), not the group's largest: the space
     leaves out tiles that cannot fit a level (:func:`.space.fit_limits`), so a core's
     largest n (512 on aie-4x2) can be under a whole memtile n / ways; that real loop
     dropped the reuse of the loops above and bounded a 4096^3 GEMM optimum out.
   - *chain rules*: below a level with a real private loop, spine loops may not iterate, so
     their next tiles are at least ``ceil(tile / ways)``: the footprint stand-ins take that,
     and a node whose forced tile exceeds its group's largest has no legal mapping.
3. *The latency formula is monotone*: ``max(T_c + sum E_l, max T_l) + sum O_l / it_l`` grows
   with each tensor's bytes (``T_l``, ``E_l``, ``O_l`` are link times of all, of the exposed,
   of the double-buffered bytes) and with ``T_c``, and falls with ``it_l``. Evaluating it
   with the bounds above for every double-buffer choice that fits the (smallest) buffers,
   and taking the least, bounds every mapping below the node (:func:`best_variant`); with
   every choice fixed it *is* the least latency of that mapping over double buffering. (The
   model's fill was ``(T_l - E_l) / it_l`` before, which is not monotone: fewer bytes of a
   tensor that is not double buffered could raise it. A GEMM node on aie-4x2 then got a bound
   above the latency of a mapping below it; :mod:`tilewise.model.cost` has the fix.)

4. *Other objectives.* Off-chip bytes and energy grow with the bytes (both independent of
   double buffering); ``space`` (the on-chip footprint, levels 1 .. L-1 summed) grows with
   every tile, so the smallest stand-ins' buffers at their final widths, each choice's double
   buffers counted twice, give the least over the choices that fit; the ratio's inverse
   ``1/𝔽 = max_l T_l / T_u`` (``T_u`` the useful compute, a constant of the problem) grows
   with the bytes, so the link times of the bounded bytes bound it. Each bound column of a node is a lower bound of its
   metric on its own (a top-k walk bounds the objective and every secondary key). Energy
   counts the padded points of *all* cores (the model's), so its compute term takes each
   dim's least padded extent over all cores (:attr:`.space.TileLadders.padded_all`), not the
   busiest core's (that was 8x low on aie-4x2: a GEMM energy bound 26 % under the optimum).
5. *Floors* (:mod:`.floors`). Facts 1 and 2 give each tensor its own best orders and tiles;
   the bytes into a level summed over tensors can be floored jointly: at the stage fixing
   the level ``k-1`` order, by the least over that level's orders of the bytes into level
   ``k`` with every tensor under the one order; at a tile stage, by the least over the
   maximal level-``l`` tile combos that fit of the per-tensor least bytes into ``l``. Both
   floor the per-level read and write sums (``rfl, wfl``) that the link times, traffic and
   :func:`~tilewise.model.rules.energy` take, which all grow with those sums; the per-tensor
   exposed and double-buffered shares keep facts 1-2. They cost a model call per node, so the
   walk asks for them only for the nodes it would keep, and only where the objective counts
   those bytes (:meth:`.Engine.floor_levels`).

6. *Kernel calls* (:mod:`.calls`). The compute time counts a fixed cost per innermost call;
   with the innermost tiles open, the fewest calls come from the maximal innermost combos that
   fit the innermost level under each double-buffer set there (jointly, not one dim at a time),
   raising the compute term of the choices with that set (4096^3 GEMM on aie-4x2: root bound
   1.000x -> 1.015x the compute bound, the optimum 1.017x; 137 K -> 15 K nodes). Where a
   dim's last slice is ragged, its padding and its calls are floored together (a small tile
   pads least, a large one calls least; :mod:`.calls`, "padding and calls together").
7. *Calls and exposed bytes together* (:mod:`.exposure`). A double-buffer set that leaves
   tensors exposed at the innermost level fits larger tiles (fewer calls) but moves their
   bytes on the critical path; taken apart, the fewest calls and the fewest exposed bytes
   came from different tiles. Per set, the least over the listed combos of the call time plus
   a floor of the exposed link time of that combo (each step changes the tiles of the tensors
   the advancing dim indexes) bounds the compute time plus the innermost exposed time
   (GEMM 10^6 x 10^6 x 10^6 on aie-4x2: 61,998 -> 9,540 nodes, the same top 5).

The tests check bound <= exact cost for random nodes and completions (property test), and the
search against brute force.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.rules import compute_cycles, compute_energy, latency, link_time, transfer_energy

OBJ_CODE = {"latency": 0, "traffic": 1, "energy": 2, "edp": 3, "space": 4, "ratio": 5}


def favorable_orders(st, moved: list[int], spine=None) -> np.ndarray:
    """``[len(moved), D]``: per moved tensor, a loop order (dim indices, outermost first) with
    the dims indexing it outermost: its least traffic at every level (module doc). With the
    chain rules' ``spine [D]`` (bool; fused chains), the spine dims come first (each block with
    the tensor's dims outermost): the least traffic over the *legal* orders, which put every
    real spine loop outside every real private one."""
    out = []
    block = (lambda j: 0) if spine is None else (lambda j: 0 if spine[j] else 1)
    for ti in moved:
        idx = set(st.dims.index(d) for d in st.tensors[ti].dims)
        out.append(sorted(range(len(st.dims)), key=lambda j: (block(j), j not in idx, j)))
    return np.array(out, np.int64).reshape(len(moved), len(st.dims))


def level_subsets(dbm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The double-buffer choices ``dbm [V, L, Tm]`` per level: ``subs [L, U, Tm]`` the distinct
    sets of double-buffered tensors at each level, ``nsub [L]`` how many, ``var_sub [V, L]``
    which one each choice takes. A choice's latency terms and fit are sums and checks per
    level, so :func:`best_variant` computes them once per level set, not once per choice."""
    V, L, Tm = dbm.shape
    per = [np.unique(dbm[:, l, :], axis=0, return_inverse=True) for l in range(L)]
    U = max(len(u) for u, _ in per)
    subs = np.zeros((L, U, Tm), np.bool_)
    nsub = np.zeros(L, np.int64)
    var_sub = np.zeros((V, L), np.int64)
    for l, (u, inv) in enumerate(per):
        subs[l, :len(u)] = u
        nsub[l] = len(u)
        var_sub[:, l] = inv.ravel()
    return subs, nsub, var_sub


class Traffic(NamedTuple):
    """Per node and level and tensor ``[n, L, T]`` (float): bytes read into (``R``) and
    written out of (``W``) each level, and the transfers that move them (``NR`` fills, ``NW``
    stores); bounds or, at a leaf, exact counts (the model's ``reads``/``writes``/``fills``/
    ``drains``). Counts, like bytes, only grow when a dim is cut finer and are least with
    the favourable orders (the same sums with every tile weighing 1), so they bound alike."""

    R: np.ndarray
    W: np.ndarray
    NR: np.ndarray
    NW: np.ndarray

    @classmethod
    def of(cls, cb, bds: bool = False) -> "Traffic":
        """The exact traffic of a :class:`~tilewise.model.cost.CostBatch`; with ``bds`` the
        counts are what the fixed per-transfer cost is charged for (``fill_fixed``/
        ``drain_fixed``: one per buffer descriptor, at least one per transfer; a leaf's exact
        latency). Bounds keep the transfers, never more than the charges."""
        nr, nw = (cb.fill_fixed, cb.drain_fixed) if bds else (cb.fills, cb.drains)
        return cls(cb.reads.astype(float), cb.writes.astype(float), nr.astype(float),
                   nw.astype(float))

    def take(self, idx) -> "Traffic":
        return Traffic(self.R[idx], self.W[idx], self.NR[idx], self.NW[idx])


def variant_latencies(compute_s, tr: Traffic, rbw, wbw, xfs, it, db):
    """Latency ``[n, V]`` (seconds) of each mapping under each double-buffer choice ``db
    [V, L, T]`` (nothing bypassed), from compute seconds ``compute_s [n]``, its traffic
    ``tr``, link bandwidths ``rbw, wbw [n, L]`` (B/s), seconds per transfer ``xfs [n, L]``
    and tiles visited ``it [n, L]``: the model's :func:`~tilewise.model.rules.latency` over
    :func:`~tilewise.model.rules.link_time` of all, exposed and double-buffered transfers."""
    out = np.empty((tr.R.shape[0], db.shape[0]))
    _variant_latencies(np.ascontiguousarray(compute_s, np.float64), tr, rbw, wbw, xfs, it, db,
                       out)
    return out


@njit(cache=True, inline="always")
def _link_sums(tr, b, l, sel):
    """Bytes and transfers over link ``l`` of node ``b``: all of them, then those of the
    tensors ``t`` with ``sel[t]`` False (the exposed ones), as eight numbers."""
    r = w = nr = nw = rx = wx = nrx = nwx = 0.0
    for t in range(tr.R.shape[2]):
        r += tr.R[b, l, t]
        w += tr.W[b, l, t]
        nr += tr.NR[b, l, t]
        nw += tr.NW[b, l, t]
        if not sel[t]:
            rx += tr.R[b, l, t]
            wx += tr.W[b, l, t]
            nrx += tr.NR[b, l, t]
            nwx += tr.NW[b, l, t]
    return r, w, nr, nw, rx, wx, nrx, nwx


@njit(cache=True)
def _variant_latencies(cs, tr, rbw, wbw, xfs, it, db, out):
    n, L, T = tr.R.shape
    for b in range(n):
        for v in range(db.shape[0]):
            tmax = 0.0
            ex_sum = 0.0
            fill = 0.0
            for l in range(1, L):
                r, w, nr, nw, rx, wx, nrx, nwx = _link_sums(tr, b, l, db[v, l])
                rb, wb, xs = rbw[b, l], wbw[b, l], xfs[b, l]
                tmax = max(tmax, link_time(r, w, rb, wb, nr, nw, xs))
                ex_sum += link_time(rx, wx, rb, wb, nrx, nwx, xs)
                fill += link_time(r - rx, w - wx, rb, wb, nr - nrx, nw - nwx, xs) / max(it[b, l], 1.0)
            out[b, v] = latency(cs[b], ex_sum, tmax, fill)


@njit(cache=True)
def op_points(padded, inner, mask, points, steps):
    """Per node and op (``mask [O, D]`` its dims) into ``points, steps [n, O]``: the product
    of the op's padded extents ``padded [n, D]`` and of its calls per dim ``ceil(padded /
    inner)`` (``inner [n, D]`` the innermost tiles, at least 1), each an int64 product
    converted once (numpy's ``prod`` then ``astype(float)``)."""
    n, D = padded.shape
    for i in range(n):
        for o in range(mask.shape[0]):
            p = 1
            c = 1
            for d in range(D):
                if mask[o, d]:
                    p *= padded[i, d]
                    c *= -(-padded[i, d] // max(inner[i, d], 1))
            points[i, o] = float(p)
            steps[i, o] = float(c)


@njit(cache=True)
def best_variant(objs, points, steps, points_all, tr, rfl, wfl, rbw, wbw, xfs, it, bufs, fixed,
                 subs, nsub, var_sub, moved, levels, compute, out, nfit, calls=None, joint=None):
    """Per node ``b`` and objective ``objs[k]`` (codes, :data:`OBJ_CODE`), into ``out [n,
    K]``: the least objective over the double-buffer choices (per level the set
    ``subs[l, var_sub[v, l]]``, :func:`level_subsets`) whose buffers fit (``bufs [n, L, Tm]``
    single-buffer bytes of the moved tensors, ``fixed [n, L]`` the other buffers, against
    ``levels.capacity``), with padded points and kernel calls per op of the busiest core
    ``points, steps [n, O]`` and padded points per op over all cores ``points_all [n, O]``
    (the compute energy), bytes and transfers into / out of each level ``tr``
    (:class:`Traffic`) and floors of the bytes summed over tensors ``rfl, wfl [n, L]``
    (:mod:`.floors`; 0: none), link bandwidths ``rbw, wbw [n, L]`` (B/s), seconds per
    transfer ``xfs [n, L]`` and iterations ``it [n, L]``; every formula is the model's
    (:mod:`tilewise.model.rules`). One pass serves every objective: the per-level sums and the
    fit of each choice are the same for all of them. Codes: 0 latency (s), 1 off-chip bytes, 2 energy (J), 3
    energy x latency, 4 space: bytes of the on-chip buffers summed over levels 1 .. L-1
    (each buffer doubled where double-buffered; the least over the choices that fit), 5 the
    inverse of seed 003's ratio, ``1/𝔽 = max_l T_l / T_u`` with ``T_u`` the useful compute
    ``compute.ideal`` (the link times only grow with the bytes). ``inf`` when nothing fits. ``nfit [n]``: how many
    choices fit. ``calls [n, U, O]`` (optional): the fewest kernel calls per op under each
    double-buffer set of the innermost level (:mod:`.calls`; ``inf``: that set cannot fit),
    raising ``steps`` for the compute time of the choices with that set. ``joint [n, U]``
    (optional, with ``calls``): per set the joint floor of the call and exposed link times
    of the innermost level (:mod:`.exposure`, seconds over the least padded points' compute;
    0: none), which the compute time plus that level's exposed time of the choices with that
    set is raised to."""
    R, W, NR, NW = tr.R, tr.W, tr.NR, tr.NW
    n, L, T = R.shape
    V = var_sub.shape[0]
    U = subs.shape[1]
    Tm = moved.shape[0]
    rs = np.zeros(L)
    ws = np.zeros(L)
    fit = np.zeros((L, U), np.bool_)
    ex = np.zeros((L, U))
    fl = np.zeros((L, U))
    fp = np.zeros((L, U))
    cs_u = np.zeros(U)
    st_u = np.zeros(steps.shape[1])
    no_calls = np.zeros(steps.shape[1])
    t_pts = 0.0
    for b in range(n):
        tmax = 0.0
        for l in range(1, L):
            r = w = nr = nw = 0.0
            for t in range(T):
                r += R[b, l, t]
                w += W[b, l, t]
                nr += NR[b, l, t]
                nw += NW[b, l, t]
            rs[l] = max(r, rfl[b, l])
            ws[l] = max(w, wfl[b, l])
            rb, wb, xs = rbw[b, l], wbw[b, l], xfs[b, l]
            tmax = max(tmax, link_time(rs[l], ws[l], rb, wb, nr, nw, xs))
            for u in range(nsub[l]):
                tot = fixed[b, l]
                rx = wx = nrx = nwx = rdb = wdb = 0.0
                n_db = 0
                for i in range(Tm):
                    tot += bufs[b, l, i] * (1 + subs[l, u, i])
                    if not subs[l, u, i]:
                        rx += R[b, l, moved[i]]
                        wx += W[b, l, moved[i]]
                        nrx += NR[b, l, moved[i]]
                        nwx += NW[b, l, moved[i]]
                    else:
                        rdb += R[b, l, moved[i]]
                        wdb += W[b, l, moved[i]]
                        n_db += 1
                fit[l, u] = tot <= levels.capacity[l]
                fp[l, u] = tot
                rd, wd = r - rx, w - wx
                if rx + rdb == r and wx + wdb == w:  # the moved tensors carry every byte
                    if n_db == 0:      # all exposed: the floors of the sums bound them
                        rx, wx = rs[l], ws[l]
                    elif n_db == Tm:   # all overlapped
                        rd, wd = rs[l], ws[l]
                ex[l, u] = link_time(rx, wx, rb, wb, nrx, nwx, xs)
                fl[l, u] = link_time(rd, wd, rb, wb, nr - nrx, nw - nwx, xs) / max(it[b, l], 1.0)
        if joint is not None:   # the least padded points' compute alone (no calls)
            t_pts = compute_cycles(points[b], no_calls, compute.op_pp, compute.op_rate,
                                   compute.call) / compute.clock
        for u in range(nsub[L - 1]):
            if calls is None:
                cs_u[u] = compute_cycles(points[b], steps[b], compute.op_pp, compute.op_rate,
                                         compute.call) / compute.clock
            else:
                for o in range(steps.shape[1]):
                    st_u[o] = max(steps[b, o], calls[b, u, o])
                cs_u[u] = compute_cycles(points[b], st_u, compute.op_pp, compute.op_rate,
                                         compute.call) / compute.clock
                if joint is not None and joint[b, u] > 0:   # T_c + E_inner >= T_points + joint
                    cs_u[u] = max(cs_u[u], t_pts + joint[b, u] - ex[L - 1, u])
        best = np.inf
        least_space = np.inf
        nf = 0
        for v in range(V):
            ex_sum = 0.0
            fill = 0.0
            space = 0.0
            cs = cs_u[var_sub[v, L - 1]]
            ok = not np.isinf(cs)
            for l in range(1, L):
                u = var_sub[v, l]
                if not fit[l, u]:
                    ok = False
                    break
                ex_sum += ex[l, u]
                fill += fl[l, u]
                space += fp[l, u]
            if not ok:
                continue
            nf += 1
            best = min(best, latency(cs, ex_sum, tmax, fill))
            least_space = min(least_space, space)
        nfit[b] = nf
        for k in range(objs.shape[0]):
            obj = objs[k]
            if nf == 0:
                out[b, k] = np.inf
            elif obj == 1:  # independent of double buffering
                out[b, k] = rs[1] + ws[1] if L > 1 else 0.0
            elif obj == 5:  # independent of double buffering
                out[b, k] = tmax / compute.ideal
            elif obj == 2 or obj == 3:
                e = _energy_bound(rs, ws, levels, points_all[b], compute.e_point)
                out[b, k] = e if obj == 2 else best * e
            elif obj == 4:
                out[b, k] = least_space
            else:
                out[b, k] = best


@njit(cache=True, inline="always")
def _energy_bound(rs, ws, levels, points, e_point):
    """Least energy of the bytes ``rs``/``ws [L]`` moved into / out of each level: each charged
    as moved to or from the cheapest level above (a bypass may skip the parent), with the
    model's rule (:func:`tilewise.model.rules.transfer_energy`)."""
    e = 0.0
    for l in range(1, rs.shape[0]):
        sr = np.inf
        sw = np.inf
        for s in range(l):
            sr = min(sr, levels.e_read[s])
            sw = min(sw, levels.e_write[s])
        e += transfer_energy(rs[l], ws[l], sr, sw, levels.e_read[l], levels.e_write[l],
                             levels.e_link[l])
    return e + compute_energy(points, e_point)
