"""Issue 13's shortcuts give the same tables as the plain computations they replace.

- :func:`tilewise.search.groups.prefix_groups` groups each shared ladder set once;
- :meth:`tilewise.search.calls.CallFloors.steps` stops a scan at points / volume.
"""

import numpy as np
import pytest

import tilewise as tw
from tilewise.arch.loader import load_arch
from tilewise.search.engine import Engine
from tilewise.search.groups import prefix_groups
from tilewise.search.space import TileLadders

_FIELDS = ("lo", "hi", "n_ladders", "child_lo", "child_hi", "whole", "small", "max_counts",
           "min_padded", "min_padded_all")


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
                        min_padded_all=red(np.minimum, padded_all)))
    return out


@pytest.mark.parametrize("workload, arch", [
    (tw.gemm(512, 512, 1024, dtype="f32"), "cpu-6core"),
    (tw.gemm(64, 96, 80, dtype="i8"), "aie-4x2"),
    (tw.gemm_chain(M=256, K=64, L=256, N=64, dtype="i8"), "aie-4x2"),
])
def test_prefix_groups_equal_the_grouping_of_the_concatenation(workload, arch):
    eng = Engine(workload, load_arch(arch), {})
    S = len(eng.space.splits)
    for j in range(eng.D):
        ladders = [eng.ladders[s][j] for s in range(S)]
        t = ladders[0]   # a split with no ladder of this dim, between shared sets
        empty = TileLadders(t.tiles[:0], t.counts[:0], t.padded[:0], t.padded_all[:0])
        for lad in (ladders, [ladders[0], empty] + ladders):
            got_all, want_all = prefix_groups(lad, eng.L), reference_groups(lad, eng.L)
            for got, want in zip(got_all, want_all):
                for f in _FIELDS:
                    g, w = getattr(got, f), want[f]
                    assert (g is None) == (w is None), f
                    if g is not None:
                        assert g.dtype == w.dtype and np.array_equal(g, w), f


def test_call_floors_equal_the_least_over_every_combo():
    """The fewest calls per node and double-buffer set, by a scan of every listed combo."""
    eng = Engine(tw.gemm(4096, 4096, 4096, dtype="i8"), load_arch("aie-4x2"), {})
    cf = eng.call_floors()
    rng = np.random.default_rng(0)
    n, D = 400, eng.D
    s = rng.integers(0, len(eng.space.splits), n)
    cf._ensure(*np.unique(s, return_counts=True))
    vals = [np.unique(cf.values[cf.value_lo[d]:cf.value_lo[d + 1]]) for d in range(D)]
    small = np.stack([rng.choice(v[: max(1, len(v) // 2)], n) for v in vals], 1)
    whole = np.maximum(small, np.stack([rng.choice(v, n) for v in vals], 1))
    padded = whole * rng.integers(1, 2000, (n, D))
    mask = eng.problem.compute.op_mask
    got = cf.steps(s, padded, small, whole, mask)
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
