"""The pruned, bounded search equals brute force over the unpruned declared space."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilewise as tw
from tilewise.search.optimize import search
from tilewise.search.space import Space, canonical_orders, iter_mappings, signatures, tile_values

from .helpers import brute_force, energy_by_hand, small_aie, small_held

CASES = [
    # brute force evaluates every mapping one by one (~0.25 ms each): spaces of <= ~20k mappings
    (tw.gemm(16, 8, 32), small_aie(rows=2, cols=1, memtile=False), {"orders": ["mnk", "kmn"]}),
    (tw.gemm(24, 16, 20, dtype="i16"), small_aie(rows=1, cols=2, alignment={"m": 8, "n": 8}, memtile=False),
     {"double_buffer": "none"}),
    (tw.gemm(16, 8, 32), small_aie(rows=2, cols=1),
     {"double_buffer": "none", "tiles": {"memtile": {"n": 8, "k": 16}}, "orders": ["mnk", "kmn"]}),
    (tw.batched_gemm(2, 8, 8, 16), small_aie(rows=2, cols=1, memtile=False),
     {"double_buffer": "all", "orders": ["bmnk", "bkmn"]}),
    (tw.gemm_chain(8, 8, 16, 8), small_aie(rows=2, cols=1, core_bytes=8192, memtile=False),
     {"double_buffer": "none", "orders": ["mlkn", "mkln", "lmkn", "kmln"]}),
    # seed 004's orders that diverge above shared loops (the panel decides the fit), two
    # levels and three (m split over the rows; a core so small that C's panel binds: the
    # search's panel floor, ChainRules.panel_floor, prunes there)
    (tw.gemm_chain(8, 8, 16, 8), small_aie(rows=2, cols=1, core_bytes=8192, memtile=False),
     {"double_buffer": "none", "orders": ["mnkl", "nlkm", "kmnl", "lkmn"]}),
    (tw.gemm_chain(4, 4, 8, 4), small_aie(rows=2, cols=1, core_bytes=128, bank=16),
     {"double_buffer": "none", "orders": ["mnkl", "nlkm"], "tiles": {"memtile": {"k": 4}}}),
    # n split at the memtile: its DDR loop is a real private loop, so C's panel covers one
    # core's share of the memtile's m and l whatever the core tiles (the panel floor's share
    # term prunes nodes with those still open)
    (tw.gemm_chain(8, 4, 8, 8), small_aie(rows=2, cols=1, core_bytes=192, bank=16),
     {"double_buffer": "none", "orders": ["nmlk", "lmkn"],
      "tiles": {"memtile": {"m": 8, "k": 4, "l": 8, "n": 4}}}),
    (tw.layernorm(16, 12, dtype="i16"), small_aie(rows=2, cols=1), {"double_buffer": "none"}),
    (tw.conv2d(1, 2, 4, 4, 4, 3, 3, padding=1), small_aie(rows=2, cols=1, core_bytes=8192, memtile=False),
     {"double_buffer": "none", "spatial": ["none", "rows=k2"], "orders": ["nkcpqrs", "nkpqcrs", "cnkpqrs"]}),
    (tw.mha(8, 8, 4, dtype="i16"), small_aie(rows=2, cols=1, core_bytes=8192, memtile=False),
     {"double_buffer": "none", "spatial": ["none", "rows=m2"], "orders": ["hmnke", "hnmke", "hmkne"]}),
    # three levels with k split at the memtile: its DDR loop is a real private loop, so the
    # spine loops below may not iterate (the chain-forced footprint stand-ins)
    (tw.mha(8, 8, 4, dtype="i16"), small_aie(rows=2, cols=1, core_bytes=8192),
     {"double_buffer": "none", "spatial": ["none", "rows=m2"], "orders": ["hmnke", "hnmke", "khmne"],
      "tiles": {"memtile": {"k": 2, "e": 4}, "core": {"k": 2, "e": 4}}}),
]


def _ids(case):
    return case[0].name


def assert_top_matches(got, brute_values):
    """The search's top values are the smallest of brute force. Brute force lists loop orders
    that the search drops as provably equivalent (same cost, e.g. orders of loops that iterate
    once), so compare distinct values: the search's distinct values must be the first distinct
    values of brute force, and its best the brute-force minimum."""
    want = sorted(set(brute_values))
    have = sorted(set(got))
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    assert got == sorted(got)
    assert have == pytest.approx(want[:len(have)], rel=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c[0].name + str(i) for i, c in enumerate(CASES)])
def test_latency_optimum_and_top_k_equal_brute_force(case):
    w, arch, cons = case
    brute = brute_force(w, arch, lambda c: c.latency_s, **cons)
    assert brute, "the small space must have valid mappings"
    values = sorted(v for v, _, _ in brute)
    r = search(w, arch, objective="latency", top=4, **cons)
    got = [s.latency_s for s in r.top]
    assert_top_matches(got, values)
    assert len(got) == min(4, len(values)) or len(set(got)) == len(set(values))
    # each reported solution is a real mapping of the space whose model cost is what we report
    for s in r.top:
        assert tw.evaluate(w, arch, s.mapping).latency_s == s.latency_s
        assert s.xslowdown >= 1 - 1e-12


@pytest.mark.parametrize("case", CASES[:4], ids=["gemm", "gemm-i16", "gemm-3level", "bgemm"])
def test_traffic_optimum_equals_brute_force(case):
    w, arch, cons = case
    brute = brute_force(w, arch, lambda c: c.offchip_bytes, **cons)
    r = search(w, arch, objective="traffic", top=1, **cons)
    assert r.best.offchip_bytes == min(v for v, _, _ in brute)


def test_pareto_front_equals_brute_force():
    w, arch, cons = CASES[1]
    brute = brute_force(w, arch, lambda c: (c.offchip_bytes, c.latency_s), **cons)
    pts = sorted({v for v, _, _ in brute})
    front, best_y = [], np.inf
    for x, y in pts:
        if y < best_y - 1e-18:
            front.append((x, y))
            best_y = y
    r = search(w, arch, top=1, **cons)
    got = [(s.offchip_bytes, s.latency_s) for s in r.pareto("traffic", "latency")]
    assert [g[0] for g in got] == [f[0] for f in front]
    assert [g[1] for g in got] == pytest.approx([f[1] for f in front], rel=1e-12)


def test_energy_and_edp_equal_brute_force():
    w = tw.gemm(32, 16, 16)
    arch = small_aie(energy=True, memtile=False)
    cons = {"double_buffer": "none", "spatial": ["none", "rows=m2", "cols=n2"]}

    def energy(c):
        return energy_by_hand(w, arch, c)

    brute = brute_force(w, arch, lambda c: (energy(c), energy(c) * c.latency_s), **cons)
    r = search(w, arch, objective="energy", top=1, **cons)
    assert r.best.energy_j == pytest.approx(min(v[0] for v, _, _ in brute), rel=1e-12)
    r = search(w, arch, objective="edp", top=1, **cons)
    assert r.best.edp == pytest.approx(min(v[1] for v, _, _ in brute), rel=1e-12)


@pytest.mark.parametrize("db", ["none", {"core": ["A", "E"]}], ids=["single", "db-A-E"])
def test_memory_max_chain_equals_brute_force(db):
    """Chimera's ``memory="max"`` (a level fits when the buffers each op touches fit): the
    search prunes by buffer sums against ops x capacity (:meth:`.Problem.summed_levels`) and
    fits its leaves by the model's rule, so its top-k and least footprint are brute force's.
    The 96 B core holds mappings that the sum of live buffers does not (with A and E
    double-buffered, none at all)."""
    arch = small_aie(rows=2, cols=1, core_bytes=96, bank=16, memtile=False)
    cons = {"orders": ["mnkl", "mlkn"], "double_buffer": db}
    w = tw.gemm_chain(8, 4, 8, 4, memory="max")
    brute = brute_force(w, arch, lambda c: (c.latency_s, sum(list(c.footprint.values())[1:])),
                        **cons)
    r = search(w, arch, top=4, **cons)
    assert_top_matches([s.latency_s for s in r.top], [v[0] for v, _, _ in brute])
    for s in r.top:
        assert tw.evaluate(w, arch, s.mapping).latency_s == s.latency_s
    space = search(w, arch, objective="space", top=1, **cons)
    assert space.best.space_bytes == min(v[1] for v, _, _ in brute)
    summed = tw.gemm_chain(8, 4, 8, 4)   # the sum of live buffers: less fits
    if db == "none":
        assert search(summed, arch, top=1, **cons).best.latency_s > r.best.latency_s
    else:
        with pytest.raises(tw.CapacityError):
            search(summed, arch, top=1, **cons)


@settings(max_examples=12, deadline=None)
@given(st.integers(1, 24), st.integers(1, 12), st.integers(1, 24), st.sampled_from(["i8", "i16"]))
def test_random_gemms_equal_brute_force(M, N, K, dt):
    w = tw.gemm(M, N, K, dtype=dt)
    arch = small_aie(rows=2, cols=1, alignment={"m": 4, "k": 8}, memtile=False)
    cons = {"double_buffer": "none"}
    brute = brute_force(w, arch, lambda c: c.latency_s, **cons)
    r = search(w, arch, top=2, **cons)
    assert_top_matches([s.latency_s for s in r.top], [v for v, _, _ in brute])


def test_tile_values_are_divisors_and_aligned_balanced_tiles():
    assert tile_values(512, 1, 16, True) == [512, 256, 176, 128, 112, 96, 80, 64, 48, 32, 16]
    # split 4 ways: per-core extent 10 of a dim of 40; alignment 4 pads 10 -> 12
    assert tile_values(40, 4, 4, True) == [12, 8, 4]
    assert tile_values(40, 1, 4, False) == [40, 20, 16, 12, 8, 4]


def test_canonical_orders_drop_only_equivalent_permutations():
    w = tw.conv2d(1, 4, 8, 8, 4, 3, 3)
    arch = small_aie()
    sig = signatures(Space.build(w, arch).st)
    dims = list(w.sizes)
    real = tuple(d in ("k", "c", "r", "s") for d in dims)
    got = canonical_orders(real, sig)
    # c, r, s index the same tensors (I, W); only *adjacent* equal-signature loops commute (k
    # between them changes O's reloads), so the classes of the 4! orders under adjacent swaps
    # of equal-signature dims are: k first or last (1 each), k second or third (3 each) = 8
    idx = [dims.index(d) for d in ("k", "c", "r", "s")]
    seen, classes = set(), 0
    for p in itertools.permutations(idx):
        if p in seen:
            continue
        classes += 1
        todo = [p]
        seen.add(p)
        while todo:
            q = todo.pop()
            for i in range(len(q) - 1):
                if sig[q[i]] == sig[q[i + 1]]:
                    r = q[:i] + (q[i + 1], q[i]) + q[i + 2:]
                    if r not in seen:
                        seen.add(r)
                        todo.append(r)
    assert classes == 8 and len(got) == classes
    assert len({tuple(o) for o in got}) == len(got)
    assert all(list(o[-3:]) == [dims.index(d) for d in ("n", "p", "q")] for o in got)


def test_space_brute_force_counts_every_permutation():
    w = tw.gemm(8, 4, 8)
    arch = small_aie(rows=1, cols=1)
    sp = Space.build(w, arch, double_buffer="none")
    ms = list(iter_mappings(sp))
    ladders = 1
    for j in range(3):
        ladders *= len(sp.dim_ladders(0, j).tiles)
    assert len(ms) == ladders * 6 * 6


@pytest.mark.parametrize("case", CASES, ids=[c[0].name + str(i) for i, c in enumerate(CASES)])
def test_many_threshold_passes_resume_without_loss_or_duplicates(case, monkeypatch):
    """With a tiny first threshold and slow growth the walk runs many passes, each resuming
    from the nodes and partial loop orders the previous one deferred: the top-k is the same
    as brute force's, and no mapping appears twice."""
    from tilewise.search import walk

    monkeypatch.setattr(walk, "_THETA0", 1e-9)
    monkeypatch.setattr(walk, "_THETA_GROWTH", 1.5)
    w, arch, cons = case
    brute = brute_force(w, arch, lambda c: c.latency_s, **cons)
    r = search(w, arch, objective="latency", top=8, **cons)
    assert r.stats["passes"] > 1 or r.top[-1].latency_s == r.top[0].latency_s  # ties: one
    assert_top_matches([s.latency_s for s in r.top], sorted(v for v, _, _ in brute))
    texts = [str(s.mapping) for s in r.top]
    assert len(set(texts)) == len(texts)


def test_threshold_passes_give_the_same_top_k_on_a_real_problem(monkeypatch):
    from tilewise.search import walk

    w = tw.gemm(512, 768, 768, dtype="i16")
    want = search(w, "aie-4x2", top=5)
    monkeypatch.setattr(walk, "_THETA0", 1e-7)
    monkeypatch.setattr(walk, "_THETA_GROWTH", 1.5)
    got = search(w, "aie-4x2", top=5)
    assert got.stats["passes"] > want.stats["passes"]
    # the same mappings in the same order: ties are broken by the mapping, not the walk
    assert [str(s.mapping) for s in got.top] == [str(s.mapping) for s in want.top]
    assert len({str(s.mapping) for s in got.top}) == 5


HELD_CASES = [
    # output-only registers per core (ZigZag's gemm_l1_l3): A and B stream from L1
    (tw.gemm(8, 4, 8), small_held("out-reg"),
     {"orders": ["mnk", "kmn", "nkm"], "double_buffer": {"l1": ["A"]}, "tiles": {"l1": {"n": 4, "m": 8}}}),
    # tpu_like: the weights B bypass the SRAM into registers with bytes of their own, across
    # two links (double-buffered at the registers: hidden on both)
    (tw.gemm(8, 4, 8), small_held("tpu"),
     {"orders": ["mnk", "kmn", "nkm"], "double_buffer": "all", "tiles": {"sram": {"n": 4, "m": 8}}}),
    (tw.conv2d(1, 2, 4, 4, 2, 3, 3, padding=1), small_held("tpu"),
     {"orders": ["nkcpqrs", "cnkpqrs"], "double_buffer": "none", "spatial": ["none", "rows=c2"],
      "tiles": {"sram": {"p": 4, "q": 4, "k": 2}, "reg": {"r": 3, "s": 3}}}),
]


@pytest.mark.parametrize("case", HELD_CASES, ids=["out-reg-gemm", "tpu-gemm", "tpu-conv"])
def test_levels_holding_some_tensors_equal_brute_force(case):
    """Per-operand memories (Level.holds, reserved bytes): the search's latency, traffic and
    energy optima and top values are brute force's, and what it reports is the model's."""
    w, arch, cons = case
    brute = [c for _, _, c in brute_force(w, arch, lambda c: c, **cons)]
    assert brute
    for objective, metric in (("latency", "latency_s"), ("traffic", "offchip_bytes"),
                              ("energy", "energy_j")):
        values = sorted(getattr(c, metric) for c in brute)
        r = search(w, arch, objective=objective, top=3, **cons)
        assert_top_matches([getattr(s, metric) for s in r.top], values)
        for s in r.top:
            cost = tw.evaluate(w, arch, s.mapping)
            assert (cost.latency_s, cost.offchip_bytes) == (s.latency_s, s.offchip_bytes)
            assert "bypass:" in str(s.mapping)  # the text says where tensors live
