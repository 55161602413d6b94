"""The branch and bound's node bounds never exceed the exact cost of a mapping below the node.

For random full mappings of small spaces (every operator kind, three levels, splits), each
node on the path from the root to the mapping is built and bounded; its bound must be <= the
mapping's exact least latency over double buffering (and off-chip traffic, energy), costed
one by one with ``tilewise.evaluate``. A bound above that would let the search drop the
optimum, so this is the search's exactness in miniature (the brute-force tests check it end
to end).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilewise.model.legality import validate
import tilewise as tw
from tilewise.model.cost import evaluate
from tilewise.search.bound import favorable_orders
from tilewise.search.engine import Engine
from tilewise.search.expand import partial_order_bound
from tilewise.search.nodes import Nodes
from tilewise.search.space import iter_mappings

from .helpers import energy_by_hand, small_aie

ARCH = small_aie(rows=2, cols=2, core_bytes=8192, mem_bytes=32768, energy=True)
WORKLOADS = [
    tw.gemm(32, 16, 48),
    tw.gemm(24, 20, 40, dtype="i16"),
    tw.conv2d(1, 4, 6, 6, 4, 3, 3, padding=1),
    tw.conv2d(1, 2, 7, 7, 2, 3, 3, stride=2),
    tw.mha(16, 16, 8, dtype="i16"),
    tw.layernorm(16, 24, dtype="i16"),
    tw.gemm_chain(8, 16, 16, 8),
]
_MAPPINGS: dict = {}


def _mappings(w):
    if w.name not in _MAPPINGS:
        eng = Engine(w, ARCH, {"double_buffer": "none"})
        _MAPPINGS[w.name] = (eng, list(itertools.islice(iter_mappings(eng.space), 0, 200000, 7)))
    return _MAPPINGS[w.name]


def _node(eng, m, stage):
    """The node at ``stage`` on the path to mapping ``m``."""
    st = eng.st
    D = len(st.dims)
    gid = np.zeros((1, D), np.int64)
    s = [i for i, sp in enumerate(eng.space.splits)
         if sp.text(st.dims) == " ".join(f"{a}={x.dim}{x.ways}" for a, x in (("rows", m.rows), ("cols", m.cols)) if x)
         or (sp.text(st.dims) == "none" and not m.rows and not m.cols)][0]
    for j, d in enumerate(st.dims):
        g = eng.groups[j][eng.depth[stage, j]]
        deep = eng.groups[j][st.n_levels - 1]
        tiles = [lv.sizes[d] for lv in m.levels]
        top = eng.groups[j][0]  # depth 0: one group per split, a range of deep groups
        row = [r for r in range(len(deep.lo)) if top.lo[s] <= deep.lo[r] < top.hi[s]
               and (deep.whole[r] == tiles).all()][0]
        gid[0, j] = (s if eng.depth[stage, j] == 0   # depth 0: the split's own group
                     else np.searchsorted(g.lo, deep.lo[row], side="right") - 1)
    ords = np.full((1, st.n_levels - 1, D), -1, np.int64)
    nfix = sum(1 for kind, _, _ in eng.stages[:stage] if kind == "order")
    for k in range(nfix):
        ords[0, k] = [st.dims.index(d) for d in m.levels[k].order]
    return Nodes(split=np.array([s]), group=gid, orders=ords, weight=np.ones(1))


def _exact(eng, w, m):
    """Least latency over the declared double-buffer choices that fit, traffic, energy."""
    names = [eng.st.tensors[t].name for t in eng.space.moved]
    best = np.inf
    cost = None
    for v in eng.dbm:
        levels = tuple(lv.__class__(lv.level, lv.tiles, lv.order, lv.bypass,
                                    frozenset(n for i, n in enumerate(names) if v[k, i]))
                       for k, lv in enumerate(m.levels))
        c = evaluate(w, ARCH, m.__class__(levels, m.rows, m.cols), check_capacity=False)
        if c.fits:
            best = min(best, c.latency_s)
            cost = c
    return best, cost


def _inv_ratio(eng, cost):
    """1/𝔽 as the search ranks it: the slowest link's seconds over the compute-bound time."""
    return max(cost.transfer_s.values(), default=0.0) / eng.min_time_s


@pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: w.name)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_node_bounds_never_exceed_the_exact_cost_below(w, data):
    eng, ms = _mappings(w)
    eng.space.db_mode = "any"  # bound over every double-buffer choice
    eng.set_db_variants(eng.space.db_variants())
    run = eng.config(("latency", "traffic", "energy", "ratio"))
    m = data.draw(st.sampled_from(ms))
    try:
        validate(w, ARCH, m)
    except tw.MappingError:
        return  # illegal chain order: no cost to bound
    lat, cost = _exact(eng, w, m)
    if cost is None:
        return  # nothing fits: every bound may be inf
    energy = energy_by_hand(w, ARCH, cost)
    stats = eng.new_stats()
    for stage in range(len(eng.stages) + 1):
        nd = _node(eng, m, stage)
        lb = eng.bound(nd, stage, run, stats)[0]
        assert lb[0] <= lat * (1 + 1e-12), (stage, eng.stages[stage - 1] if stage else "root")
        assert lb[1] <= cost.offchip_bytes * (1 + 1e-12)
        assert lb[2] <= energy * (1 + 1e-12)
        assert lb[3] <= _inv_ratio(eng, cost)  # bit for bit: the search trusts it without slack
    assert lb[0] == pytest.approx(lat, rel=1e-12)  # a leaf's bound is its exact least latency
    assert lb[3] == _inv_ratio(eng, cost)  # and its 1/𝔽, the same float


@pytest.mark.parametrize("w", WORKLOADS[:5], ids=lambda w: w.name)
@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_bounds_with_floors_never_exceed_the_exact_cost_below(w, data):
    """The floors of the bytes into a node's first open level (the least over its maximal
    fitting tile combos, or over the loop orders of the level being fixed: search.floors)
    keep every bound at or below the exact cost of the mapping below."""
    from dataclasses import replace

    eng, ms = _mappings(w)
    eng.space.db_mode = "any"
    eng.set_db_variants(eng.space.db_variants())
    run = replace(eng.config(("latency", "traffic", "energy", "ratio")),
                  floor_levels=(True,) * eng.L)
    m = data.draw(st.sampled_from(ms))
    try:
        validate(w, ARCH, m)
    except tw.MappingError:
        return
    lat, cost = _exact(eng, w, m)
    if cost is None:
        return
    stats = eng.new_stats()
    refine = lambda lb: np.ones(len(lb), bool)  # every node gets its floors
    for stage in range(len(eng.stages) + 1):
        lb = eng.bound(_node(eng, m, stage), stage, run, stats, refine=refine)[0]
        assert lb[0] <= lat * (1 + 1e-12), (stage, eng.stages[stage - 1] if stage else "root")
        assert lb[1] <= cost.offchip_bytes * (1 + 1e-12)
        assert lb[2] <= cost.energy_j * (1 + 1e-12)
        assert lb[3] <= _inv_ratio(eng, cost)


def test_favorable_orders_put_each_tensors_dims_outermost():
    eng = Engine(tw.gemm(32, 16, 48), ARCH, {})
    names = [eng.st.tensors[t].name for t in eng.space.moved]
    fav = {n: "".join(eng.st.dims[j] for j in o) for n, o in zip(names, favorable_orders(eng.st, eng.space.moved))}
    assert fav == {"A": "mkn", "B": "nkm", "C": "mnk"}


# --- the aie-4x2 preset: full-size link and capacity numbers, where transfers can dominate ---

PRESET_CASES = [tw.gemm(64, 64, 64), tw.conv2d(1, 8, 8, 8, 16, 3, 3, padding=1),
                tw.mha(64, 64, 16, dtype="i16"),
                tw.gemm(256, 1024, 384, dtype="i8"),  # the core's banks bind: capped stand-ins
                tw.gemm(200, 360, 520, dtype="i8"),  # ragged: padding and calls together
                tw.mha(96, 80, 24, dtype="i16")]     # ... for several ops
_PRESET: dict = {}


def _preset_engine(w):
    if w.name not in _PRESET:
        from tilewise.arch.loader import load_arch

        _PRESET[w.name] = Engine(w, load_arch("aie-4x2"), {})
    return _PRESET[w.name]


def _random_mapping(eng, rng):
    """A random full mapping of the declared space: split, one tile ladder per dim, any
    permutation per level (illegal chain orders included: the caller skips them)."""
    from tilewise.model.batch import MappingBatch

    L, D = eng.L, eng.D
    s = int(rng.choice(np.nonzero((eng.n_ladders > 0).all(1))[0]))
    tiles = np.empty((1, L, D), np.int64)
    for j in range(D):
        top, deep = eng.groups[j][0], eng.groups[j][L - 1]
        lo, hi = np.searchsorted(deep.lo, top.lo[s]), np.searchsorted(deep.lo, top.hi[s])
        tiles[0, :, j] = deep.whole[rng.integers(lo, hi)]
    ords = np.array([rng.permutation(D) for _ in range(L - 1)])[None]
    sp = eng.split_arr[s:s + 1]
    z = np.zeros((1, L, eng.T), bool)
    return MappingBatch(tiles, ords, z, z, sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3]).mapping(
        0, eng.workload, eng.arch)


@pytest.mark.parametrize("w", PRESET_CASES, ids=lambda w: w.name)
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_node_and_partial_order_bounds_on_the_aie_preset(w, seed):
    """Every node on the path to a random mapping, and every partial loop order of the
    order trie (innermost loops fixed, outer ones free), bounds its least latency."""
    eng = _preset_engine(w)
    rng = np.random.default_rng(seed)
    names = [eng.st.tensors[t].name for t in eng.space.moved]
    for _ in range(50):  # a legal mapping that fits (most random ones of large problems do not)
        m = _random_mapping(eng, rng)
        try:
            validate(w, eng.arch, m)
        except tw.MappingError:
            continue
        lat = np.inf
        one_bd = True  # every transfer of the best double-buffer choice takes one BD
        for v in eng.dbm:
            levels = tuple(lv.__class__(lv.level, lv.tiles, lv.order, lv.bypass,
                                        frozenset(n for i, n in enumerate(names) if v[k, i]))
                           for k, lv in enumerate(m.levels))
            c = evaluate(w, eng.arch, m.__class__(levels, m.rows, m.cols), check_capacity=False)
            if c.fits and c.latency_s < lat:
                lat = c.latency_s
                one_bd = all(c.fill_bds[lv][t] == c.fills[lv][t] for lv in c.fill_bds
                             for t in c.fill_bds[lv]) and all(
                    c.drain_bds[lv][t] == c.drains[lv][t] for lv in c.drain_bds
                    for t in c.drain_bds[lv])
        if np.isfinite(lat):
            break
    else:
        return
    run = eng.config(("latency", "ratio"))
    inv = _inv_ratio(eng, c)  # 1/𝔽 does not depend on double buffering
    stats = eng.new_stats()
    for stage in range(len(eng.stages) + 1):
        nd = _node(eng, m, stage)
        lb = eng.bound(nd, stage, run, stats)[0]
        assert lb[0] <= lat * (1 + 1e-12), stage
        assert lb[1] <= inv, stage  # bit for bit
        if stage < len(eng.stages) and eng.stages[stage][0] == "order":
            k = eng.stages[stage][1]
            tt = eng.assemble(nd.group, stage)[0]
            real = eng.space.real_loops(tt, eng.ways[nd.split])[0, k]
            order = [eng.st.dims.index(d) for d in m.levels[k].order]
            rep = np.array([[j for j in order if real[j]] + [j for j in range(eng.D) if not real[j]]])
            for n_free in range(int(real.sum())):
                lb = partial_order_bound(eng, nd, stage, rep, n_free, run, stats)[0]
                assert lb[0] <= lat * (1 + 1e-12), (stage, n_free)
                assert lb[1] <= inv, (stage, n_free)
    leaf = eng.bound(nd, len(eng.stages), run, stats)[0, 0]
    # tight at the leaf where every transfer is one BD; the bound counts transfers, the cost
    # charges a transfer of several BDs for each (the search ranks its leaves by the cost)
    if one_bd:
        assert leaf == pytest.approx(lat, rel=1e-12)
    else:
        assert leaf <= lat * (1 + 1e-12)
