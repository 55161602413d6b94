"""Floors of the kernel calls of a node: the fewest that innermost tiles which fit can make.

The latency bound (:mod:`.bound`, fact 3) counts ``call`` cycles per innermost kernel
invocation. With the innermost tiles open it took, per dim, the largest tile of the node that
fits the innermost level *with every other dim at its smallest* (:meth:`.BufferTable.cap_tiles`),
so it credited a GEMM node on aie-4x2 with m512 n256 k2048-like calls that no 48 KiB core holds
together: the bound sat at the compute-bound minimum while the optimum pays ~1.7 % in calls,
and every memtile tiling within that 1.7 % was expanded down to its core tiles.

The floor is joint, per double-buffer choice of the innermost level. Per split and per set
``u`` of moved tensors double-buffered there (:func:`.bound.level_subsets`), the *maximal*
innermost tile combos ``c`` whose buffers fit the innermost capacity (single buffers at the
final widths, the tensors of ``u`` twice: the model's :func:`~tilewise.model.rules.buffer_bytes`,
a lower bound of any mapping's bytes) are listed once per engine (:func:`maximal_inner`: the
declared innermost candidates, all but the last dim enumerated while they fit with the rest at
their smallest, the last at its largest that fits, then the dominated ones dropped). A mapping
below a node, with double-buffer set ``u`` at the innermost level, has innermost tiles ``t``
that fit, so ``t <= c`` for some listed ``c`` and ``t <= w`` (the node's largest innermost
tiles) and ``t >= s`` (its smallest); its padded extent per dim is at least the node's least
``P``, so its calls per op are at least

    min over listed c with c >= s of  prod_{d in op} ceil(P_d / min(c_d, w_d))

(calls per dim = padded extent / tile, which only falls as the tile grows). Per op the least
is taken separately: a bound of the sum of the ops' call cycles. A choice ``u`` with no listed
combo above ``s`` cannot fit: its bound is ``inf`` for that choice.

Only where calls cost something (``compute.call > 0``) and the objective counts latency; an
split whose enumeration would exceed :data:`MAX_PREFIXES` fitting prefixes keeps
the per-dim bound (still valid).

**Padding and calls together.** The compute term is ``k_pt * points + k_call * calls`` per
op, and the bound took the least padded points (from the node's smallest tiles, which pad
least where a ladder's last slice is ragged) and the fewest calls (from its largest tiles)
apart. Per dim ``d`` a tile ``t`` has its own padded extent ``p(t)`` and ``p(t) / t`` calls
(the ladders below the node, :attr:`.groups.TileGroups.inner`). For a mapping with tiles
``t <= c`` (a listed combo), ``k`` the calls one padded point costs and ``P`` the node's
least padded extents,

    points * k + calls - k prod P  >=  k (p(t_d) - P_d) prod_{e != d} P_e
                                       + p(t_d) / t_d * prod_{e != d} ceil(P_e / min(c_e, w_e))

for every dim ``d``, so the least over the tiles ``t_d <= min(c_d, w_d)`` of the right side
(the largest :data:`COUPLED_EXACT` one by one, the smaller ones together: their least
padding with their fewest calls), the most over the dims, and the least over the combos
bound the calls *in excess of padding*, which the compute term adds to the least padded
points as it adds the plain calls (never fewer than those). A GEMM of 10^6 x 10^6 x 10^6 on
aie-4x2 pads ``k`` under a ragged memtile slice by up to 448 elements with 256-wide core
tiles and by none with 16-wide ones: apart, the two floors left every node with a core tile
open 3 x 10^-4 under its optimum, inside the ties of its top five (151,006 nodes); together,
61,998. Where a dim has more than :data:`MAX_COUPLED` ladders below a node (shallow nodes),
or a node's padding does not vary, the plain floor stands; a tile stage's first filter uses
the plain floor and only the children it keeps get the coupled one.

**Calls and exposed bytes together** (:mod:`.exposure`): :meth:`CallFloors.steps` also scans
each double-buffer set's combos for the least call time plus a floor of the exposed link
time of the same combo, so a set that buffers nothing is not credited with the calls of its
large tiles and the few exposed bytes of the node's largest ones at once (the 10^6 GEMM:
61,998 -> 9,540 nodes).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..model.rules import buffer_bytes
from .exposure import Exposure, joint_floor, no_exposure, per_point_table
from .rows import unique_rows

MAX_PREFIXES = 1 << 15   # fitting prefixes per (split, double-buffer set); beyond: no floor
MAX_COUPLED = 64         # ladders of a dim below a node that the coupled floor scans; more: none
COUPLED_EXACT = 4        # tiles under a combo's value taken one by one; the rest together
OWN_AFTER = 64           # nodes a split bounds on the union's lists before it gets its own


@njit(cache=True)
def _inner_bytes(tl, perm, nat, sizes, desc, slot, dbl):
    """Bytes of the innermost level for tiles ``tl [D]`` (dim ``perm[j]`` at ``j``; ``nat``
    scratch for them in dim order): every buffer it keeps, the moved tensors in ``dbl`` (by
    slot) twice."""
    for j in range(tl.shape[0]):
        nat[perm[j]] = tl[j]
    k = desc.level.shape[1] - 1
    tot = 0
    for f in range(desc.level.shape[0]):
        if desc.level[f, k]:
            nb = buffer_bytes(f, k, nat, sizes, desc)
            tot += nb * 2 if slot[f] >= 0 and dbl[slot[f]] else nb
    return tot


@njit(cache=True, inline="always")
def _dominates_previous(prev, tl):
    """Whether combo ``tl`` dominates ``prev``, the one listed just before it: the same
    values but in dim ``D-2`` (which the enumeration advances fastest, so ``tl``'s is not
    smaller there) — then ``prev`` need not be listed."""
    D = tl.shape[0]
    if D < 2 or prev[D - 1] != tl[D - 1]:
        return False
    for j in range(D - 2):
        if prev[j] != tl[j]:
            return False
    return True


@njit(cache=True)
def _enumerate(vals, lo, hi, perm, cap, sizes, desc, slot, dbl, out):
    """The fitting innermost combos (dims in the order ``perm``: position ``j`` holds dim
    ``perm[j]``) with the last dim at its largest fitting value, every
    prefix (dims ``0 .. D-2``) that fits with the rest at their smallest, less a combo that
    the next one listed dominates (:func:`_dominates_previous`); candidates of dim ``j`` are
    ``vals[lo[j]:hi[j]]`` ascending. Writes ``out [m, D]``; returns ``m`` (-1: more
    than ``out`` holds)."""
    D = lo.shape[0]
    idx = lo.copy()
    tl = np.empty(D, np.int64)
    nat = np.empty(D, np.int64)
    m = 0
    last = D - 1
    while True:
        for j in range(D):
            tl[j] = vals[idx[j]] if j < last else vals[lo[j]]
        ok = _inner_bytes(tl, perm, nat, sizes, desc, slot, dbl) <= cap
        if ok:
            a, z = lo[last], hi[last]   # the largest last value that fits
            while a < z:
                mid = (a + z) // 2
                tl[last] = vals[mid]
                if _inner_bytes(tl, perm, nat, sizes, desc, slot, dbl) <= cap:
                    a = mid + 1
                else:
                    z = mid
            tl[last] = vals[a - 1]
            if m and _dominates_previous(out[m - 1], tl):
                out[m - 1] = tl   # same outer prefix and last value, a larger dim D-2
            elif m >= out.shape[0]:
                return -1
            else:
                out[m] = tl
                m += 1
        # next prefix: advance dim last-1; where a prefix does not fit, larger values of its
        # deepest advanced dim cannot either: reset it and carry
        j = last - 1
        if not ok:
            while j >= 0 and idx[j] == lo[j]:
                j -= 1
            if j < 0:
                return m
            idx[j] = lo[j]
            j -= 1
        while j >= 0:
            idx[j] += 1
            if idx[j] < hi[j]:
                break
            idx[j] = lo[j]
            j -= 1
        if j < 0:
            return m


@njit(cache=True)
def _maximal(c):
    """The rows of ``c [m, D]`` no other row dominates (>= in every dim, > in one)."""
    order = np.argsort(-c.sum(1))   # a dominating row has a larger sum: it comes first
    keep = np.empty(c.shape[0], np.int64)
    n = 0
    D = c.shape[1]
    for i in order:
        dom = False
        for q in range(n):
            r = keep[q]
            ge = True
            for d in range(D):
                if c[r, d] < c[i, d]:
                    ge = False
                    break
            if ge:
                dom = True
                break
        if not dom:
            keep[n] = i
            n += 1
    return c[keep[:n]]


def maximal_inner(values: list[np.ndarray], cap: float, sizes, desc, slot,
                  dbl: np.ndarray) -> np.ndarray | None:
    """``[m, D]`` the maximal innermost tile combos from the candidates ``values[j]`` whose
    buffers fit ``cap`` bytes with the moved tensors ``dbl [Tm]`` double-buffered (module
    doc); None when the enumeration is over :data:`MAX_PREFIXES`."""
    # the dims with the most candidates last: the last is binary searched and dim D-2
    # advanced fastest (its dominated combos dropped as listed), so the prefixes
    # enumerated are the product of the other dims' counts
    perm = np.argsort([len(v) for v in values], kind="stable")
    vals = np.concatenate([np.sort(np.asarray(values[j], np.int64)) for j in perm])
    n = np.array([len(values[j]) for j in perm], np.int64)
    hi = np.cumsum(n)
    lo = hi - n
    out = np.empty((MAX_PREFIXES, len(values)), np.int64)
    m = _enumerate(vals, lo, hi, perm.astype(np.int64), float(cap), sizes, desc, slot,
                   np.asarray(dbl, np.bool_), out)
    if m < 0:
        return None
    inv = np.argsort(perm)
    return (_maximal(out[:m]) if m else out[:0])[:, inv]


class CallFloors:
    """Per split and innermost double-buffer set the maximal fitting innermost combos
    (:func:`maximal_inner`, concatenated: ``combos [M, D]``, ``lo/hi [S, U]`` ranges), and
    :meth:`steps`, the fewest calls per op of nodes (module doc)."""

    def __init__(self, space, problem, slot, subs: np.ndarray, nsub: int,
                 exposure: Exposure | None = None):
        st = space.st
        self.exposure = exposure   # the joint floor's tables (:mod:`.exposure`; None: none)
        L = st.n_levels
        self.space, self.problem, self.slot, self.subs = space, problem, slot, subs
        self.cap = float(problem.summed_levels().capacity[L - 1])  # sums of buffers
        self.name = st.arch.levels[L - 1].name
        S, U = len(space.splits), nsub
        # the sets in order of size, and which are strict subsets of which: a set that
        # double-buffers more fits fewer combos, so its fewest calls are at least a subset's
        sets = np.asarray(subs[:U], bool)
        self.u_order = np.argsort(sets.sum(1), kind="stable").astype(np.int64)
        self.sub_of = ((sets[:, None, :] >= sets[None, :, :]).all(2)
                       & (sets.sum(1)[:, None] > sets.sum(1)[None, :]))  # [u, u2]: u2 < u
        self.lo = np.zeros((S, U), np.int64)
        self.hi = np.zeros((S, U), np.int64)
        self.own = np.zeros(S, bool)      # splits whose own combos are listed (or tried)
        self.used = np.zeros(S, np.int64)  # nodes bounded per split (on the union's lists)
        self.floored = np.zeros(S, bool)  # splits with a list (not over MAX_PREFIXES)
        self._union_ok: bool | None = None
        self.ok = np.isfinite(self.cap)
        self._parts: list[np.ndarray] = []
        self._seen: dict = {}
        self._pos = 0
        self._per_parts: list[np.ndarray] = []   # per part, its per_point_table (exposure)
        # without the joint floor, tables that floor nothing (what _steps reads then)
        self._no_xp = (no_exposure(len(st.dims), subs.shape[1], nsub, S) if exposure is None
                       else None)
        self._tables(np.zeros((0, len(st.dims)), np.int64))

    def _ensure(self, splits: np.ndarray, counts: np.ndarray) -> None:
        """Lists for the ``splits`` about to bound ``counts`` nodes each: first the union's
        (:meth:`_union`: one enumeration per set for every split), then a split's own, shorter
        and tighter, once it has bounded :data:`OWN_AFTER` nodes; without the union, a
        split's own on first use."""
        if self._union_ok is None:
            self._union_ok = self._union()
        if self._union_ok:
            self.used[splits] += counts
            new = splits[(self.used[splits] >= OWN_AFTER) & ~self.own[splits]]
        else:
            new = splits[~self.own[splits]]
        if not len(new):
            return
        U = self.lo.shape[1]
        dims = self.space.st.dims
        for s in (int(x) for x in new):
            self.own[s] = True
            values = tuple(tuple(self.space.values[s][self.name][d]) for d in dims)
            ranges = [self._own(values, u) for u in range(U)]
            if any(r is None for r in ranges):
                continue   # over MAX_PREFIXES: the union's lists, or no floor without them
            for u, (a, b) in enumerate(ranges):
                self.lo[s, u], self.hi[s, u] = a, b
            self.floored[s] = True
        self._tables(np.concatenate(self._parts) if self._parts else self.combos)

    def _own(self, values: tuple, u: int) -> tuple[int, int] | None:
        """The range of the maximal fitting combos of ``values`` (per dim) under set ``u``,
        listed on first use (splits with the same values share them); None when over
        :data:`MAX_PREFIXES`."""
        key = (values, u)
        if key not in self._seen:
            c = maximal_inner([np.array(v) for v in values], self.cap, self.problem.dims.sizes,
                              self.problem.buffers, self.slot, self.subs[u])
            self._seen[key] = None if c is None else (self._pos, self._pos + len(c))
            if c is not None:
                self._add_part(c, u)
                self._pos += len(c)
        return self._seen[key]

    def _union(self) -> bool:
        """List, per double-buffer set, the maximal fitting combos of every split's values at
        once (per dim the union of the splits' candidates): they cover every fitting combo of
        each split, so one list bounds them all (a little looser than the split's own, since
        a listed value may not be one of its candidates) at the cost of one enumeration per
        set instead of one per split and set. False (nothing listed) when the union is over
        :data:`MAX_PREFIXES`."""
        U = self.lo.shape[1]
        dims = self.space.st.dims
        union = [np.unique(np.concatenate([np.asarray(v[self.name][d], np.int64)
                                           for v in self.space.values])) for d in dims]
        parts = []
        for u in range(U):
            c = maximal_inner(union, self.cap, self.problem.dims.sizes, self.problem.buffers,
                              self.slot, self.subs[u])
            if c is None:
                return False
            parts.append(c)
        for u, c in enumerate(parts):
            self._add_part(c, u)
        hi = np.cumsum([len(c) for c in parts])
        self.lo[:] = (hi - [len(c) for c in parts])[None, :]
        self.hi[:] = hi[None, :]
        self.floored[:] = True
        self._pos = int(hi[-1]) if len(hi) else 0
        self._tables(np.concatenate(self._parts))
        return True

    def _add_part(self, combos: np.ndarray, u: int) -> None:
        """List ``combos`` (set ``u``'s) after the others, largest first (a small call count
        found early cuts the others short), with their :func:`.exposure.per_point_table`
        where the joint floor applies."""
        combos = combos[np.argsort(-np.prod(combos.astype(float), axis=1), kind="stable")]
        self._parts.append(combos)
        if self.exposure is not None:
            self._per_parts.append(per_point_table(self.exposure, combos, u))

    def _tables(self, combos: np.ndarray) -> None:
        """``combos [M, D]`` as indices into each dim's distinct values (few: a node's calls
        per value are then worked out once per dim, not once per combo and set), and the
        joint floor's per-combo table ``per [4, M]`` (empty without it)."""
        self.combos = combos
        self.per = (np.concatenate(self._per_parts, axis=1) if self._per_parts
                    else np.zeros((4, 0)))
        # each combo's volume (elements): a node's calls there are at least its padded
        # points over it, and the lists run largest first (:meth:`_own`, :meth:`_union`)
        self.volume = np.prod(combos.astype(float), axis=1)
        D = combos.shape[1]
        uv = [np.unique(combos[:, d]) for d in range(D)]
        self.value_lo = np.concatenate([[0], np.cumsum([len(v) for v in uv])]).astype(np.int64)
        self.values = np.concatenate(uv).astype(np.int64) if D else np.zeros(0, np.int64)
        self.combo_idx = np.empty_like(combos)
        for d in range(D):
            self.combo_idx[:, d] = self.value_lo[d] + np.searchsorted(uv[d], combos[:, d])

    def steps(self, s, padded, small, whole, op_mask, coupling: "Coupling | None" = None
              ) -> "CallFloor":
        """The fewest kernel calls per op ``[n, U, O]`` of nodes of splits ``s [n]`` with least
        padded extents ``padded [n, D]`` and smallest / largest innermost tiles ``small,
        whole [n, D]`` under each innermost double-buffer set (``inf``: none fits; 0 for a split
        whose combos are too many to list: no floor). With ``coupling`` (:class:`Coupling`),
        the calls *in excess of padding*: per op, the least of ``k (points - P) + calls`` over
        the innermost tiles below each node (module doc, "padding and calls together"). Where
        :attr:`exposure` is set, also the joint floor of the calls and exposed bytes per set
        ``[n, U]`` (seconds, :mod:`.exposure`; 0: none)."""
        n, U = len(s), self.lo.shape[1]
        self._ensure(*np.unique(np.asarray(s, np.int64), return_counts=True))
        cols = [np.asarray(s, np.int64)[:, None], padded, small, whole]
        if coupling is not None:
            cols.append(coupling.ladders.reshape(n, -1))
        key = np.ascontiguousarray(np.concatenate(cols, 1).astype(np.int64))
        # nodes that differ only in their loop orders (an order stage's children) share it
        first, inv = unique_rows(key)
        D = padded.shape[1]
        uk = key[first]
        out = np.empty((len(first), U, op_mask.shape[0]))
        joint = np.zeros((len(first), U))
        xp = self.exposure if self.exposure is not None else self._no_xp
        if coupling is None:
            lad = np.zeros((len(first), D, 2), np.int64)
            inner = lpad = loff = np.zeros(D + 1, np.int64)
            kpp = np.zeros(op_mask.shape[0])
        else:
            lad = np.ascontiguousarray(coupling.ladders[first], np.int64)
            inner, lpad, loff, kpp = coupling.inner, coupling.padded, coupling.offset, coupling.k
        _steps(uk[:, 0].copy(), uk[:, 1:1 + D].copy(), uk[:, 1 + D:1 + 2 * D].copy(),
               uk[:, 1 + 2 * D:1 + 3 * D].copy(), op_mask, self.combo_idx, self.values,
               self.value_lo, self.lo, self.hi, self.u_order, self.sub_of, self.volume,
               lad, inner, lpad, loff, kpp, xp, self.per, out, joint)
        out, joint = out[inv], joint[inv]
        none = ~self.floored[np.asarray(s)]   # over MAX_PREFIXES: no floor (0 raises nothing)
        out[none] = 0.0
        joint[none] = 0.0
        return CallFloor(out, joint if self.exposure is not None else None)


class CallFloor(NamedTuple):
    """A node batch's floors (:meth:`CallFloors.steps`): the fewest kernel calls per op
    ``calls [n, U, O]`` and the joint floor of calls and exposed bytes ``joint [n, U]``
    (seconds, :mod:`.exposure`; None where it does not apply)."""

    calls: np.ndarray
    joint: np.ndarray | None


class Coupling(NamedTuple):
    """What couples a node's padding with its calls (:meth:`CallFloors.steps`): per node and
    dim the range of its ladders ``ladders [n, D, 2]`` (indices into dim ``d``'s part of
    ``inner`` and ``padded``, which starts at ``offset[d]``): each ladder's innermost tile and
    the padded extent one core computes with it (elements); ``k [O]`` the kernel calls one
    padded point of each op costs (cycles per point / cycles per call)."""

    ladders: np.ndarray
    inner: np.ndarray
    padded: np.ndarray
    offset: np.ndarray
    k: np.ndarray


# rows of the per-node ladder table (:func:`_ladder_tables`): per dim and tile, ascending
_PAD, _CALLS, _LEAST_PAD, _FEWEST = 0, 1, 2, 3


@njit(cache=True)
def _ladder_tables(b, lad, inner, lpad, loff, padded, whole, tab_t, tab, tab_n, var):
    """Node ``b``'s ladders per dim ``d`` (``lad [n, D, 2]``, at most ``tab_t.shape[1]`` of
    them; more: none listed) as innermost tiles ``t`` no larger than ``whole[b, d]``,
    ascending (``tab_t [D, Q]``, ``tab_n [D]`` of them; a run of one tile kept once, with
    its least padded extent ``p``), and in ``tab [4, D, Q]``: ``p - P_d`` (``_PAD``; ``P_d =
    padded[b, d]`` the node's least), the calls ``p / t`` (``_CALLS``), the least ``p - P_d``
    of the tiles up to ``t`` (``_LEAST_PAD``) and ``ceil(P_d / t)`` (``_FEWEST``: at most the
    calls of any of them). ``var[d]``: some ``p`` is over ``P_d`` (else the coupling adds
    nothing there)."""
    D = padded.shape[1]
    for d in range(D):
        tab_n[d] = 0
        var[d] = False
        a, z = lad[b, d, 0], lad[b, d, 1]
        if z - a > tab_t.shape[1]:
            continue
        P = padded[b, d]
        for i in range(loff[d] + a, loff[d] + z):
            t, p = inner[i], lpad[i]
            if t > whole[b, d]:
                continue
            q = tab_n[d]   # insert by tile (a group's ladders already run by it where only
            while q > 0 and tab_t[d, q - 1] > t:   # the innermost tile is open)
                q -= 1
            if q > 0 and tab_t[d, q - 1] == t:
                if p - P < tab[_PAD, d, q - 1]:
                    tab[_PAD, d, q - 1], tab[_CALLS, d, q - 1] = p - P, p // t
                continue
            for r in range(tab_n[d], q, -1):
                tab_t[d, r] = tab_t[d, r - 1]
                tab[_PAD, d, r], tab[_CALLS, d, r] = tab[_PAD, d, r - 1], tab[_CALLS, d, r - 1]
            tab_t[d, q], tab[_PAD, d, q], tab[_CALLS, d, q] = t, p - P, p // t
            tab_n[d] += 1
        least = np.inf
        for q in range(tab_n[d]):
            var[d] |= tab[_PAD, d, q] > 0
            least = min(least, tab[_PAD, d, q])
            tab[_LEAST_PAD, d, q] = least
            tab[_FEWEST, d, q] = (P + tab_t[d, q] - 1) // tab_t[d, q]


@njit(cache=True)
def _value_tiles(b, values, value_lo, whole, tab_t, tab_n, var, jv):
    """``jv[v]``: per combo value of a dim whose padding varies, the last tile of node
    ``b``'s table (:func:`_ladder_tables`) under ``min(value, whole[b, d])`` (-1: none)."""
    for d in range(var.shape[0]):
        if var[d]:
            for v in range(value_lo[d], value_lo[d + 1]):
                x = min(values[v], whole[b, d])
                j = tab_n[d] - 1
                while j >= 0 and tab_t[d, j] > x:
                    j -= 1
                jv[v] = j


@njit(cache=True, inline="always")
def _coupled(i, cidx, jv, calls, mask, padded, tab, var, k, v):
    """The calls in excess of padding of one op (dims ``mask``) over the tiles below combo
    ``i``, at least its plain calls ``v``: per dim ``d`` with a padding that varies, the least
    over its tiles ``t <= min(c_d, w_d)`` (the first ``jv[value] + 1`` of its table) of
    ``k (p(t) - P_d) prod_{e != d} P_e + p(t) / t prod_{e != d} calls_e`` (module doc), the
    largest :data:`COUPLED_EXACT` tiles one by one and the smaller ones together (their least
    padding with their fewest calls); the most of those over the dims."""
    D = cidx.shape[1]
    e = v
    for d in range(D):
        if not (mask[d] and var[d]):
            continue
        prest = k
        crest = 1.0
        for f in range(D):
            if f != d and mask[f]:
                prest *= padded[f]
                crest *= calls[cidx[i, f]]
        bd = np.inf
        j = jv[cidx[i, d]]
        stop = max(j - COUPLED_EXACT, -1)
        for q in range(j, stop, -1):
            bd = min(bd, prest * tab[_PAD, d, q] + tab[_CALLS, d, q] * crest)
            if tab[_PAD, d, q] == 0:   # pads no more than the least: fewer calls and no
                stop = -1              # more padding than any smaller tile
                break
        if stop >= 0:
            bd = min(bd, prest * tab[_LEAST_PAD, d, stop] + tab[_FEWEST, d, stop] * crest)
        if bd < np.inf:
            e = max(e, bd)
    return e


@njit(cache=True, inline="always")
def _least_calls(calls, cidx, lo, hi, mask, least, volume, points, jv, padded, tab, var, k,
                 coupled):
    """One op's fewest calls over the combos ``lo .. hi``: the product of each combo's calls
    per dim of the op (``inf`` where a dim's value is under the node's smallest), each
    product cut short once it reaches the best so far, the scan once that is ``least`` or,
    where the op has every dim (``points`` its padded points, else 0), once ``points`` over
    the combo's ``volume`` is above it: the combos come largest first, and a combo's calls
    are at least that quotient, so none after it makes fewer (a margin of 1e-9 covers the
    rounding of the float products). Where ``coupled``, raised (:func:`_raise`)."""
    best, at = _scan(calls, cidx, lo, hi, mask, least, volume, points, np.inf, jv, padded,
                     tab, var, k, False)
    if not coupled:
        return best
    return _raise(best, at, calls, cidx, lo, hi, mask, least, volume, points, jv, padded, tab,
                  var, k)


@njit(cache=True, inline="always")
def _raise(best, at, calls, cidx, lo, hi, mask, least, volume, points, jv, padded, tab, var,
           k):
    """One op's fewest calls ``best`` (made by combo ``at``; -1: none) raised to its least
    calls in excess of padding (:func:`_coupled`, never below a combo's calls): that combo's
    excess, then a second scan (:func:`_scan`) that raises only the combos whose calls are
    under the least excess so far."""
    if at < 0:
        return best
    e = _coupled(at, cidx, jv, calls, mask, padded, tab, var, k, best)
    if e == best:
        return best
    return _scan(calls, cidx, lo, hi, mask, least, volume, points, e, jv, padded, tab, var, k,
                 True)[0]


@njit(cache=True, inline="always")
def _scan(calls, cidx, lo, hi, mask, least, volume, points, best, jv, padded, tab, var, k,
          coupled):
    """:func:`_least_calls`' scan from ``best`` down: the least and the combo giving it
    (-1: none under ``best``)."""
    at = -1
    D = cidx.shape[1]
    for i in range(lo, hi):
        if points > best * (1.0 + 1e-9) * volume[i]:
            break
        v = 1.0
        for d in range(D):
            x = calls[cidx[i, d]]
            if x == np.inf:
                v = np.inf
            elif mask[d]:
                v *= x
            if v >= best:
                break
        if v < best and coupled:
            v = _coupled(i, cidx, jv, calls, mask, padded, tab, var, k, v)
        if v < best:
            best, at = v, i
            if best <= least:
                break
    return best, at


@njit(cache=True)
def _steps(s, padded, small, whole, op_mask, cidx, values, value_lo, lo, hi, u_order, sub_of,
           volume, lad, inner, lpad, loff, kpp, xp, per, out, joint):
    """Fill ``out [n, U, O]`` (:meth:`CallFloors.steps`). Per node, first the calls per dim
    of each distinct combo value ``calls[v] = ceil(P_d / min(value, w_d))`` (``inf`` where
    the value is under the node's smallest tile ``s_d``: such a combo holds no mapping
    below the node), then per combo the product over the op's dims of looked-up counts,
    stopping once every op is at the calls of the node's largest tiles (none fewer) or, for
    one op, at the fewest of a set of tensors double-buffered that is a subset of this one
    (those fit every combo this one fits: ``sub_of [u, u2]``, sets in ``u_order`` by size).
    With ladder ranges ``lad`` (:class:`Coupling`; empty ranges: none), each op's fewest calls
    are raised to its least calls in excess of padding (:func:`_coupled`). Where ``xp``
    (:class:`.exposure.Exposure`) marks a set active and one op spans every dim, ``joint [n,
    U]`` gets the joint floor of calls and exposed bytes (:func:`.exposure.joint_floor`; ``per``
    the listed combos' bytes per point, :func:`.exposure.per_point_table`)."""
    n, U, O = out.shape
    D = padded.shape[1]
    calls = np.empty(values.shape[0])
    least = np.empty(O)
    tab_t = np.empty((D, MAX_COUPLED), np.int64)
    tab = np.empty((4, D, MAX_COUPLED))
    tab_n = np.zeros(D, np.int64)
    var = np.zeros(D, np.bool_)
    at = np.empty(O, np.int64)
    jv = np.empty(values.shape[0], np.int64)
    every = O == 1   # one op over every dim: a node's calls are at least points / volume
    for d in range(D):
        every &= op_mask[0, d]
    for b in range(n):
        _ladder_tables(b, lad, inner, lpad, loff, padded, whole, tab_t, tab, tab_n, var)
        coupled = var.any()
        if coupled:
            _value_tiles(b, values, value_lo, whole, tab_t, tab_n, var, jv)
        points = 0.0
        if every:
            points = 1.0
            for d in range(D):
                points *= padded[b, d]
        for d in range(D):
            for v in range(value_lo[d], value_lo[d + 1]):
                c = values[v]
                if c < small[b, d]:
                    calls[v] = np.inf
                else:
                    t = min(c, whole[b, d])
                    calls[v] = (padded[b, d] + t - 1) // t
        for o in range(O):  # no combo makes fewer calls than the node's largest tiles
            least[o] = 1.0
            for d in range(D):
                if op_mask[o, d]:
                    least[o] *= (padded[b, d] + whole[b, d] - 1) // whole[b, d]
        for u in u_order:
            for o in range(O):
                out[b, u, o] = np.inf
                at[o] = -1
            if O == 1:
                floor = least[0]
                for u2 in range(U):   # subsets come earlier in u_order
                    if sub_of[u, u2]:
                        floor = max(floor, out[b, u2, 0])
                out[b, u, 0] = _least_calls(calls, cidx, lo[s[b], u], hi[s[b], u], op_mask[0],
                                            floor, volume, points, jv, padded[b], tab, var,
                                            kpp[0], coupled)
                if every and xp.active[u]:
                    joint[b, u] = joint_floor(calls, cidx, values, lo[s[b], u], hi[s[b], u],
                                              volume, points, whole[b], xp, per, u, s[b])
                continue
            for i in range(lo[s[b], u], hi[s[b], u]):
                ok = True
                for d in range(D):
                    if calls[cidx[i, d]] == np.inf:
                        ok = False
                        break
                if not ok:
                    continue
                at_least = 0
                for o in range(O):
                    v = 1.0
                    for d in range(D):
                        if op_mask[o, d]:
                            v *= calls[cidx[i, d]]
                    if v < out[b, u, o]:
                        out[b, u, o] = v
                        at[o] = i
                    at_least += out[b, u, o] <= least[o]
                if at_least == O:
                    break
            if coupled:
                for o in range(O):
                    out[b, u, o] = _raise(out[b, u, o], at[o], calls, cidx, lo[s[b], u],
                                          hi[s[b], u], op_mask[o], least[o], volume, 0.0, jv,
                                          padded[b], tab, var, kpp[o])
