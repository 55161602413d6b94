"""Spatial splits on an arch whose cores own levels below the array (cpu-6core: shared L3,
per-core L2 at the array, per-core L1): each core walks its own slice through its private
levels. Hand counts, model == simulation on random cases (cpu-6core and toy archs), the
executor against the numpy reference, and the search against brute force."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tilewise as tw
from tilewise.arch.loader import load_arch
from tilewise.executor.interpreter import verify
from tilewise.model.rules import rates
from tilewise.search.optimize import search

from ..consistency.cases import arch, level
from ..executor.workloads import constructor
from ..search.helpers import brute_force
from ..search.test_exact import assert_top_matches
from .archs import array_above_innermost, array_in_the_middle
from .strategies import mappings, workloads
from .test_model_vs_simulation import _compare

CPU = load_arch("cpu-6core")


def _lines_in_l1(block_bytes: int = 32):
    """:func:`array_above_innermost` whose per-core L1 fills lines of ``block_bytes``: the
    transfers below the array move in rounded runs (:mod:`tilewise.model.contiguity`)."""
    a = array_above_innermost()
    return replace(a, levels=a.levels[:2] + (replace(a.levels[2], block_bytes=block_bytes),))


def _edge_case():
    """GEMM 10x4x4 f32 split ``cols=m2`` with core tile m4 and L1 tiles m3: edge slices."""
    return (tw.gemm(10, 4, 4, dtype="f32"),
            tw.Mapping.parse("l3[m10 n4 k4] mnk | l2[m4 n4 k4] mnk | l1[m3 n2 k4] ; cols=m2"))


def test_edge_slices_hand_counted():
    """GEMM 10x4x4 f32 (4 B) on l3 -> l2 (array, 2 cores) -> l1, m split 2 ways, core tile m4:
    array tiles m[0,8) and m[8,10); core 0 takes m[0,4) then m[8,10), core 1 m[4,8) then
    nothing. L1 tiles m3 n2 k4 in l2 order m, n, k:
    core 0 walks m[0,3) m[3,4) | m[8,10), core 1 m[4,7) m[7,8), each m tile under 2 n tiles.
    - A (m x k): one L1 load per m tile (n does not index A): 4 x 4 B x (3+1+2+3+1) = 160 B.
    - B (k x n, 32 B a tile): reloaded per (m tile, n tile), core 0 3 x 2 + core 1 2 x 2 = 10
      loads, 320 B.
    - C: each of its 40 elements stored once from L1, 160 B; nothing reloaded.
    - at L2: A's slices 160 B; B (64 B, not indexed by m) sent to both cores for the first
      array tile; core 0 keeps it for the second, core 1 is idle there: 128 B.
    Busiest core: core 0, 6 kernel calls; padded points 10 tiles x (3 x 2 x 4)."""
    w, m = _edge_case()
    c, _ = _compare(w, array_above_innermost(), m)
    assert c.reads["l1"] == {"A": 160, "B": 320}
    assert c.fills["l1"] == {"A": 5, "B": 10}
    assert c.writes["l1"] == {"C": 160} and c.reloads["l1"] == {}
    assert c.reads["l2"] == {"A": 160, "B": 128}
    assert c.steps == {"C": 6} and c.padded_points == {"C": 240}


def test_edge_slices_in_rounded_runs_hand_counted():
    """The mapping of :func:`test_edge_slices_hand_counted` with 32 B lines in L1: each core's
    tiles are counted (its own slices) and each of their runs rounded to 32 B.
    - A (m x k, rows of 16 B): an L1 tile spans k, so it is one run of m x 16 B; core 0's
      m3 m1 m2, core 1's m3 m1 move 64 + 32 + 32 + 64 + 32 = 224 B (exact: 160 B).
    - B (k4 x n2 tiles): 4 runs of 8 B, 128 B a load, 10 loads: 1280 B.
    - C (m x n2 tiles): rows of 8 B, 20 rows over both cores' tiles stored once: 640 B.
    - L2 has no lines: its bytes are exact (A 160 B, B 128 B)."""
    w, m = _edge_case()
    c, _ = _compare(w, _lines_in_l1(), m)
    assert c.reads["l1"] == {"A": 224, "B": 1280}
    assert c.fills["l1"] == {"A": 5, "B": 10}
    assert c.writes["l1"] == {"C": 640} and c.reloads["l1"] == {}
    assert c.reads["l2"] == {"A": 160, "B": 128}


def test_idle_core_keeps_its_rounded_tile_hand_counted():
    """GEMM 10x4x3 f32, 64 B lines in L1, ``cols=m2`` (core tile m4), l3 order n then m: core 0
    walks m[0,4) m[8,10) under each of the 2 n tiles, core 1 has m[4,8) only, so it keeps its
    A tile across n (the once-rule per core). A's L1 tiles span k (rows of 12 B): one run each,
    m4 48 B and m2 24 B, each one 64 B line: core 0 4 loads, core 1 one, 320 B (exact 192 B).
    Counting the rounded runs with the array's once-rule instead (no core keeps A) fails."""
    w = tw.gemm(10, 4, 3, dtype="f32")
    m = tw.Mapping.parse("l3[m10 n4 k3] nmk | l2[m4 n2 k3] mnk | l1[m4 n2 k3] ; cols=m2")
    c, _ = _compare(w, _lines_in_l1(64), m)
    assert c.reads["l1"]["A"] == 320 and c.fills["l1"]["A"] == 5


def test_reduction_split_through_the_parent_hand_counted():
    """GEMM 4x4x10 f32 with K over the 2 cores (merged through l3), core tile k4: core 0 takes
    k[0,4) then k[8,10), core 1 k[4,8) then idles (C does not have k: it keeps its tiles).
    L1 tiles m4 n2 k3, l2 order m, n, k.
    - C (m4 n2, 32 B a tile): core 0 stores n[0,2) n[2,4) in the first array tile and again in
      the second (reloading both: 64 B), core 1 stores its two once: 6 stores, 192 B.
    - A (m4 x k): k inside n, so once per n tile: core 0 (48 + 16) x 2 + 32 (k[8,10) is one
      tile, kept across n) = 160 B, core 1 (48 + 16) x 2 = 128 B: 288 B.
    - B (k x n): each tile once, 160 B.
    Busiest core: core 0, 2 x 2 + 2 x 1 = 6 kernel calls."""
    w = tw.gemm(4, 4, 10, dtype="f32")
    m = tw.Mapping.parse("l3[m4 n4 k10] kmn | l2[m4 n4 k4] mnk | l1[m4 n2 k3] ; cols=k2")
    c, _ = _compare(w, array_above_innermost(), m)
    assert c.writes["l1"] == {"C": 192} and c.reloads["l1"] == {"C": 64}
    assert c.reads["l1"] == {"A": 288, "B": 160, "C": 64}
    assert c.steps == {"C": 6}
    assert verify(w, m, arch=array_above_innermost()).passed


def test_cpu_6core_gemm_uses_six_cores_and_their_links():
    """On cpu-6core a split over the 6 cores runs the busiest core's sixth of the steps, and
    the per-core links (L3 -> L2, L2 -> L1) serve 6 cores at once."""
    w = tw.gemm(96, 64, 32, dtype="f32")
    one = tw.Mapping.parse("dram[m96 n64 k32] mnk | l3[m96 n64 k32] mnk | l2[m96 n64 k32] mnk "
                           "| l1[m16 n16 k32]")
    six = tw.Mapping.parse("dram[m96 n64 k32] mnk | l3[m96 n64 k32] mnk | l2[m16 n64 k32] mnk "
                           "| l1[m16 n16 k32] ; cols=m6")
    c1, c6 = tw.evaluate(w, CPU, one), tw.evaluate(w, CPU, six)
    assert c1.steps["C"] == 6 * c6.steps["C"] == 24
    assert c6.reads["l1"] == c1.reads["l1"]  # the same L1 tiles, spread over the cores
    assert c6.transfer_s["l1"] == pytest.approx(c1.transfer_s["l1"] / 6)
    assert c6.latency_s < c1.latency_s / 3


_ARCHS = st.sampled_from([array_above_innermost(), _lines_in_l1(), array_in_the_middle(), CPU])


def _rated(w, a) -> bool:
    """Whether ``a`` gives a rate for every op of ``w`` (cpu-6core has no bf16 MACs and no
    f16 vector ops)."""
    return not np.isnan(rates(a, w)).any()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_model_equals_simulation_below_the_array(data):
    """Bytes, transfers, steps and points per level and tensor, with splits (edge slices,
    reductions through the parent, chains) on archs whose cores own the innermost levels."""
    w = data.draw(workloads())
    a = data.draw(_ARCHS)
    assume(_rated(w, a))
    _compare(w, a, data.draw(mappings(w, a, through=True)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_execute_equals_reference_below_the_array(data):
    kind = data.draw(st.sampled_from(["gemm", "batched_gemm", "gemm_chain", "einsum", "layernorm"]))
    w = data.draw(constructor(kind))
    a = data.draw(_ARCHS)
    assume(_rated(w, a))
    m = data.draw(mappings(w, a, through=True))
    if not tw.evaluate(w, a, m, check_capacity=False).fits:
        return
    with np.errstate(invalid="raise", divide="raise"):
        report = verify(w, m, seed=data.draw(st.integers(0, 99)), arch=a)
    assert report.passed, f"{a.name}: {m}\n{report}"


def test_search_equals_brute_force_below_the_array():
    """ddr -> l2 (the array, 2 cores) -> l1 of 256 B: the L1 tiles bind; the search's optimum
    and top values equal brute force over the declared space (splits included)."""
    a = arch("toy-mid", [level("l2", 4096, instances=2, double_buffer=False),
                         level("l1", 256, instances=2, bandwidth=32e9, double_buffer=False)],
             array={"level": "l2", "rows": 1, "cols": 2, "broadcast": [], "reduce_cols": False})
    w = tw.gemm(10, 4, 6, dtype="f32")
    cons = {"orders": ["mnk", "kmn"], "tiles": {"l2": {"k": 6, "n": 4}}}
    brute = brute_force(w, a, lambda c: c.latency_s, **cons)
    assert any(m.cols for _, m, _ in brute)
    r = search(w, a, objective="latency", top=4, **cons)
    assert_top_matches([s.latency_s for s in r.top], [v for v, _, _ in brute])
    assert r.best.mapping.cols is not None  # both cores
    traffic = search(w, a, objective="traffic", top=1, **cons)
    assert traffic.best.offchip_bytes == min(c.offchip_bytes for _, _, c in brute)
