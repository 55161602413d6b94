"""Issue 13's shortcuts give the same tables as the plain computations they replace.

- :func:`tilewise.search.groups.prefix_groups` groups (and stores) each shared ladder set once;
- :meth:`tilewise.search.calls.CallFloors.steps` stops a scan at points / volume, and its
  floor of padding and calls together never passes the least over every completion.
"""

import numpy as np
import pytest

import tilewise as tw
from tilewise.arch.loader import load_arch
from tilewise.search.engine import Engine
from tilewise.search.groups import prefix_groups
from tilewise.search.space import TileLadders

from .helpers import random_call_nodes

_FIELDS = ("lo", "hi", "n_ladders", "child_lo", "child_hi", "whole", "small", "max_counts",
           "min_padded", "min_padded_all", "inner", "padded")


def reference_groups(ladders, L):
    """The grouping before it worked per ladder set: every split's ladders sorted and
    concatenated, groups found on the concatenation (depth 0: one per split)."""
    tiles, counts, padded, padded_all, split = [], [], [], [], []
    for s, ch in enumerate(ladders):
        order = np.lexsort(tuple(ch.tiles[:, k] for k in range(L - 1, 0, -1)))
        tiles.append(ch.tiles[order])
        counts.append(ch.counts[order])
        padded.append(ch.padded[order])
        padded_all.append(ch.padded_all[order])
        split.append(np.full(len(ch.padded), s, np.int64))
    tiles, counts, padded = np.concatenate(tiles), np.concatenate(counts), np.concatenate(padded)
    padded_all = np.concatenate(padded_all)
    key = np.concatenate([np.concatenate(split)[:, None], tiles[:, 1:]], 1)
    n = len(key)
    ranges = []
    for d in range(L):
        new = np.ones(n, bool)
        new[1:] = (key[1:, :d + 1] != key[:-1, :d + 1]).any(1)
        lo = np.nonzero(new)[0]
        if d == 0:
            lo = np.searchsorted(key[:, 0], np.arange(len(ladders)))
            hi = np.searchsorted(key[:, 0], np.arange(len(ladders)), "right")
        else:
            hi = np.append(lo[1:], n)
        ranges.append((lo, hi))
    out = []
    for d, (lo, hi) in enumerate(ranges):
        ne = hi > lo
        red = lambda f, a: np.where(ne[:, None] if a.ndim > 1 else ne,
                                    f.reduceat(a, np.minimum(lo, n - 1)), 1)
        deeper = ranges[d + 1][0] if d + 1 < L else None
        out.append(dict(lo=lo, hi=hi, n_ladders=(hi - lo).astype(float),
                        child_lo=None if deeper is None else np.searchsorted(deeper, lo),
                        child_hi=None if deeper is None else np.searchsorted(deeper, hi),
                        whole=red(np.maximum, tiles), small=red(np.minimum, tiles),
                        max_counts=red(np.maximum, counts), min_padded=red(np.minimum, padded),
                        min_padded_all=red(np.minimum, padded_all), inner=tiles[:, L - 1],
                        padded=padded))
    return out


@pytest.mark.parametrize("workload, arch", [
    (tw.gemm(512, 512, 1024, dtype="f32"), "cpu-6core"),
    (tw.gemm(64, 96, 80, dtype="i8"), "aie-4x2"),
    (tw.gemm_chain(M=256, K=64, L=256, N=64, dtype="i8"), "aie-4x2"),
])
def test_prefix_groups_equal_the_grouping_of_the_concatenation(workload, arch):
    """Split by split, the groups below each split's depth-0 group (its ladder set's, shared
    with the splits of the same set) equal the reference's groups of that split: the same
    ranges (from the split's first ladder and first group of each depth) and stand-ins."""
    eng = Engine(workload, load_arch(arch), {})
    S = len(eng.space.splits)
    for j in range(eng.D):
        ladders = [eng.ladders[s][j] for s in range(S)]
        t = ladders[0]   # a split with no ladder of this dim, between shared sets
        empty = TileLadders(t.tiles[:0], t.counts[:0], t.padded[:0], t.padded_all[:0])
        for lad in (ladders, [ladders[0], empty] + ladders):
            got, want = prefix_groups(lad, eng.L), reference_groups(lad, eng.L)
            for s in range(len(lad)):
                _assert_same_split_groups(got, want, s, eng.L)
        sets = {id(x): x for x in ladders}   # each shared set's ladders stored once
        assert len(prefix_groups(ladders, eng.L)[-1].lo) == sum(len(x.padded)
                                                                for x in sets.values())


def _split_range(groups, s, d):
    """Split ``s``'s groups at depth ``d``: ``[a, b)`` (depth 0: the split's own one)."""
    if d == 0:
        return s, s + 1
    lo, hi = groups[0]["lo"][s], groups[0]["hi"][s]
    at = groups[d]["lo"]
    return int(np.searchsorted(at, lo)), int(np.searchsorted(at, hi))


def _assert_same_split_groups(got, want, s, L):
    got = [{f: getattr(g, f) for f in _FIELDS} for g in got]
    base_g, base_w = got[0]["lo"][s], want[0]["lo"][s]
    for d in range(L):
        (ga, gb), (wa, wb) = _split_range(got, s, d), _split_range(want, s, d)
        assert gb - ga == wb - wa, (s, d)
        for f in _FIELDS:
            g, w = got[d][f], want[d][f]
            assert (g is None) == (w is None), f
            if g is None:
                continue
            assert g.dtype == w.dtype, f
            if f in ("inner", "padded"):   # per ladder: the split's own
                n = want[0]["hi"][s] - want[0]["lo"][s]
                g, w = g[base_g:base_g + n], w[base_w:base_w + n]
            else:
                g, w = g[ga:gb], w[wa:wb]
                if f in ("lo", "hi"):
                    g, w = g - base_g, w - base_w
                elif f in ("child_lo", "child_hi"):
                    g = g - _split_range(got, s, d + 1)[0]
                    w = w - _split_range(want, s, d + 1)[0]
            assert np.array_equal(g, w), (s, d, f)


def test_call_floors_equal_the_least_over_every_combo():
    """The fewest calls per node and double-buffer set, by a scan of every listed combo."""
    eng = Engine(tw.gemm(4096, 4096, 4096, dtype="i8"), load_arch("aie-4x2"), {})
    n = 400
    cf, s, padded, small, whole = random_call_nodes(eng, n, seed=0)
    mask = eng.problem.compute.op_mask
    got = cf.steps(s, padded, small, whole, mask).calls
    assert np.isfinite(got).mean() > 0.2 and (got > 1).any()   # floors found, not trivial
    for b in range(n):
        for u in range(cf.lo.shape[1]):
            c = cf.combos[cf.lo[s[b], u]:cf.hi[s[b], u]]
            if not cf.floored[s[b]]:
                assert got[b, u, 0] == 0.0
                continue
            t = np.minimum(c, whole[b])
            calls = np.where(c >= small[b], -(-padded[b] // t), 0).astype(float)
            v = np.prod(np.where(c >= small[b], calls, np.inf)[:, mask[0]], axis=1)
            assert got[b, u, 0] == (v.min() if len(v) else np.inf)


def test_op_points_equal_numpys_products():
    """:func:`tilewise.search.bound.op_points` (compiled) against the numpy products it
    replaced in the bound: per op the int64 product of padded extents and of calls per dim
    ``ceil(padded / inner)``, converted to float once (equal bit for bit, sizes up to 10^6)."""
    from tilewise.search.bound import op_points

    rng = np.random.default_rng(3)
    n, D = 500, 5
    padded = rng.integers(1, 10**6, (n, D))
    inner = np.minimum(padded, rng.integers(0, 5000, (n, D)))   # 0 counts as 1
    mask = np.array([[1, 1, 0, 1, 0], [1, 1, 1, 0, 0], [0, 0, 1, 1, 1]], bool)
    points, steps = np.empty((n, 3)), np.empty((n, 3))
    op_points(padded, inner, mask, points, steps)
    for o in range(3):
        ix = np.nonzero(mask[o])[0]
        assert np.array_equal(points[:, o], np.prod(padded[:, ix], axis=1).astype(float))
        calls = -(-padded // np.maximum(inner, 1))
        assert np.array_equal(steps[:, o], np.prod(calls[:, ix], axis=1).astype(float))


def _ladders_under(eng, m, j, levels):
    """Dim ``j``'s ladders of mapping ``m``'s split whose tiles at levels ``1 .. levels`` are
    ``m``'s (``Engine.ladders``, not the groups' tables): their innermost tiles and padded
    extents."""
    from .test_bound import _node

    lad = eng.ladders[int(_node(eng, m, 0).split[0])][j]
    want = [lv.sizes[eng.st.dims[j]] for lv in m.levels][1:levels + 1]
    keep = (lad.tiles[:, 1:levels + 1] == want).all(1)
    return lad.tiles[keep, -1], lad.padded[keep]


@pytest.mark.parametrize("workload", [tw.gemm(200, 360, 520, dtype="i8"),
                                      tw.mha(96, 80, 24, dtype="i16")], ids=lambda w: w.name)
def test_coupled_call_floors_stay_under_every_completion(workload):
    """Nodes with only the innermost tiles open (ragged dims, aie-4x2): the floor of padding
    and calls together (search.calls) lies between the plain fewest calls and the least,
    over every combo of the node's own ladders (:func:`_ladders_under`; no smaller than the
    chain rules let a tile be) that fits the core with each double-buffer set, of ``k
    (points - P) + calls`` per op, ``k`` the model's cycles per point over its cycles per
    call and ``P`` the node's least padded extents; that quantity is checked against the
    model's own compute cycles on a legal full mapping; and some floor is raised above the
    plain one."""
    from tilewise.model.cost import evaluate
    from tilewise.model.legality import validate
    from tilewise.search.calls import _inner_bytes

    from .test_bound import _node, _random_mapping

    eng = Engine(workload, load_arch("aie-4x2"), {})
    run, L, D = eng.config(("latency",)), eng.L, eng.D
    stage = next(i for i, st in enumerate(eng.stages) if st.kind == "order" and st.level == 0)
    assert (eng.depth[stage] >= L - 2).all()   # every tile fixed but the innermost
    cf, comp = eng.call_floors(), eng.problem.compute
    k = comp.op_pp / comp.op_rate / comp.call
    subs, nsub, _ = eng.db_subs
    cap = float(eng.problem.summed_levels().capacity[L - 1])
    perm, nat = np.arange(D, dtype=np.int64), np.empty(D, np.int64)
    rng = np.random.default_rng(1)
    raised = checked = 0
    for _ in range(12):
        m = _random_mapping(eng, rng)
        nd = _node(eng, m, stage)
        si = eng.with_capped(eng.stand_ins(nd, stage), nd.split, stage)
        plain = eng._calls(run, nd.split, si, si.capped[:, -1, :], coupled=False).calls[0]
        coupled = eng._calls(run, nd.split, si, si.capped[:, -1, :]).calls[0]
        assert (coupled >= plain).all()
        raised += int((coupled > plain).any())
        own = [_ladders_under(eng, m, j, L - 2) for j in range(D)]
        own = [(t[t >= si.small[0, -1, j]], p[t >= si.small[0, -1, j]])
               for j, (t, p) in enumerate(own)]
        P = si.padded[0]   # the node's least padded extents: what the excess is over
        assert (P <= [p.min() for _, p in own]).all()
        grid = np.stack(np.meshgrid(*[np.arange(len(t)) for t, _ in own], indexing="ij"),
                        -1).reshape(-1, D)
        t = np.stack([own[j][0][grid[:, j]] for j in range(D)], 1)
        p = np.stack([own[j][1][grid[:, j]] for j in range(D)], 1)
        if not cf.floored[nd.split[0]]:
            continue
        for u in range(nsub[L - 1]):
            fits = np.array([_inner_bytes(row, perm, nat, eng.problem.dims.sizes,
                                          eng.problem.buffers, eng.buf.slot, subs[L - 1, u])
                             <= cap for row in t])
            for o, mask in enumerate(comp.op_mask):
                excess = (k[o] * (np.prod(p[fits][:, mask], 1) - np.prod(P[mask]))
                          + np.prod(p[fits][:, mask] // t[fits][:, mask], 1))
                assert coupled[u, o] <= excess.min(initial=np.inf) * (1 + 1e-12), (u, o)
                checked += fits.any()
    assert checked > 20 and raised > 0
    while True:   # the quantity is the model's: a legal mapping's compute cycles / call
        try:
            validate(workload, eng.arch, m)
            break
        except tw.MappingError:
            m = _random_mapping(eng, rng)
    tile, pad = np.array([_ladders_under(eng, m, j, L - 1) for j in range(D)])[:, :, 0].T
    c = evaluate(workload, eng.arch, m, check_capacity=False)
    assert c.compute_cycles / comp.call == pytest.approx(
        sum(k[o] * np.prod(pad[mask]) + np.prod((pad // tile)[mask])
            for o, mask in enumerate(comp.op_mask)), rel=1e-9)
