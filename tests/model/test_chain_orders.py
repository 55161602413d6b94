"""Seed 004's GEMM chain in every loop order: hand counts from the seed's formulas, the panel
the intermediate lives as, Chimera's ``memory="max"``, the model against the walk, and the
executor against numpy (issue 14)."""

import dataclasses
import itertools
import math

import numpy as np
import pytest

from tilewise import Mapping, evaluate, gemm_chain
from tilewise.arch.loader import load_arch
from tilewise.errors import MappingError, TilewiseError
from tilewise.executor.interpreter import verify
from tilewise.model.problem import Problem
from tilewise.search.optimize import search

from .archs import two_level
from .test_model_vs_simulation import _compare

ORDERS = ["".join(p) for p in itertools.permutations("mkln")]
ACCESS = {"A": "mk", "B": "kl", "D": "ln", "E": "mn"}
OP_LOOPS = {"A": "mkl", "B": "mkl", "D": "mln", "E": "mln"}


def seed004_dm(tensor: str, perm: str, sizes: dict, tiles: dict) -> int:
    """Seed 004's DM of a chain input or output (elements), its algorithm as written: DF (the
    tile), times the whole tensor over the tile (the loops accessing it), times the trips of
    every loop of the op (``op.allLoops()``: its projection) outside the innermost one that
    accesses the tensor ("keep_reuse" turns false there)."""
    dm = math.prod(tiles[d] for d in ACCESS[tensor])
    keep_reuse = True
    for lp in reversed(perm):
        if lp not in OP_LOOPS[tensor]:
            continue
        if lp in ACCESS[tensor]:
            keep_reuse = False
        if not keep_reuse:
            dm *= math.ceil(sizes[lp] / tiles[lp])
    return dm


def _elements(cost, tensor, wl, table="reads"):
    return getattr(cost, table)["ub"].get(tensor, 0) // wl.tensor(tensor).element_bytes


@pytest.mark.parametrize("order", ORDERS)
def test_seed004_traffic_per_tensor_in_every_order(order):
    """Every loop tiled (so every loop iterates and Chimera's formula is exact): A, B, D reads
    and E's write-backs equal seed 004's DM in each of the 24 orders, the walk agrees, and C
    moves nothing."""
    sizes = dict(m=8, k=6, l=10, n=4)
    tiles = dict(m=4, k=3, l=5, n=2)
    wl = gemm_chain(sizes["m"], sizes["k"], sizes["l"], sizes["n"])
    m = Mapping.parse(f"gm[m8 k6 l10 n4] {order} | ub[m4 k3 l5 n2]")
    cost, _ = _compare(wl, two_level(capacity=None), m)
    for t in "ABD":
        assert _elements(cost, t, wl) == seed004_dm(t, order, sizes, tiles), t
    assert _elements(cost, "E", wl, "writes") == seed004_dm("E", order, sizes, tiles)
    assert "C" not in cost.reads["ub"] and "C" not in cost.writes["ub"]


def test_seed004_example_order_mnkl_by_hand():
    """Seed 004's example ``mnkl``: only l is a reuse dim of A. Projected, C's nest is m k l
    and E's is m n l: A is read once (MK), B once per m tile (KL⌈M/T_M⌉), D once per m tile
    (LN⌈M/T_M⌉), E written once (MN: l, its reduction, is inside n, so no reloads). C lives
    as the panel T_M x L (E walks all of l for every n), 4 bytes per element (i32)."""
    M, K, L, N, TM, TK, TL, TN = 8, 6, 10, 4, 4, 3, 5, 2
    wl = gemm_chain(M, K, L, N)
    m = Mapping.parse(f"gm[m{M} k{K} l{L} n{N}] mnkl | ub[m{TM} k{TK} l{TL} n{TN}]")
    cost, trace = _compare(wl, two_level(capacity=None), m)
    cm = math.ceil(M / TM)
    assert _elements(cost, "A", wl) == M * K
    assert _elements(cost, "B", wl) == K * L * cm
    assert _elements(cost, "D", wl) == L * N * cm
    assert _elements(cost, "E", wl, "writes") == M * N
    assert _elements(cost, "E", wl, "reloads") == 0
    # footprint: A, B, D tiles (i8), E's tile (i32), C's panel T_M x L (i32)
    assert cost.footprint["ub"] == TM * TK + TK * TL + TL * TN + 4 * TM * TN + 4 * TM * L
    assert trace.peak["ub"] == cost.footprint["ub"]


def test_panel_rule_by_hand():
    """The panel over three levels: ``gm[...] mkln | l1[m4 k2 l6 n8] lnmk | ub[m2 k2 l4 n8]``.
    k at gm is the first real private loop: below it each op walks its own loops. Over l the
    panel covers gm's l tile (12, cut into 6 + 6 at l1, each into 4 + 2 at ub: 4 tiles of
    4), over m the l1 tile (4 = 2 + 2: 2 tiles of 2)."""
    wl = gemm_chain(8, 4, 12, 8)
    arch = dataclasses.replace(two_level(capacity=None), levels=(
        *two_level(capacity=None).levels[:1],
        dataclasses.replace(two_level(capacity=None).levels[1], name="l1"),
        dataclasses.replace(two_level(capacity=None).levels[1], name="ub")))
    m = Mapping.parse("gm[m8 k4 l12 n8] mkln | l1[m4 k2 l6 n8] lnmk | ub[m2 k2 l4 n8]")
    p = Problem.build(wl, arch)
    tiles = [lv.sizes for lv in m.levels]
    panel = dict(zip(p.st.dims, p.panel(tiles, [lv.order for lv in m.levels[:-1]], {})))
    assert (panel["m"], panel["l"]) == (2 * 2, 4 * 4)
    cost, trace = _compare(wl, arch, m)
    assert trace.peak == cost.footprint


def test_memory_max_is_chimeras_mu():
    """``memory="max"``: MU = max(GEMM1, GEMM2) of the buffers each touches (seed 004's
    formula when C's panel is its tile, a spine-first order such as ``mlkn``)."""
    TM, TK, TL, TN = 4, 3, 5, 2
    wl = gemm_chain(8, 6, 10, 4, memory="max")
    m = Mapping.parse(f"gm[m8 k6 l10 n4] mlkn | ub[m{TM} k{TK} l{TL} n{TN}]")
    cost, trace = _compare(wl, two_level(capacity=None), m)
    gemm1 = TM * TK + TK * TL + 4 * TM * TL      # A, B (i8), C (i32)
    gemm2 = 4 * TM * TL + TL * TN + 4 * TM * TN  # C, D, E (i32)
    assert cost.footprint["ub"] == max(gemm1, gemm2) == trace.peak["ub"]
    summed = evaluate(dataclasses.replace(wl, memory="sum"), two_level(capacity=None), m)
    assert summed.footprint["ub"] == gemm1 + gemm2 - 4 * TM * TL
    # a capacity between the two: fits with max, not with sum
    arch = two_level(capacity=max(gemm1, gemm2))
    assert evaluate(wl, arch, m).fits
    with pytest.raises(TilewiseError, match="need 149 bytes"):
        evaluate(dataclasses.replace(wl, memory="sum"), arch, m)
    # the search takes the same rule (its capacity pruning a relaxation of it)
    best = search(wl, arch).best
    assert evaluate(wl, arch, best.mapping).footprint["ub"] <= max(gemm1, gemm2)


def test_attention_keeps_spine_first_with_a_message_naming_it():
    """Attention (online state) still rejects a private loop outside a shared one, with a
    message that names the chain, not "the ops after E"."""
    from tilewise import mha
    wl = mha(16, 16, 4, dtype="f16", out_dtype="f16")
    m = Mapping.parse("gm[h1 m16 n16 k4 e4] hkmne | ub[h1 m8 n8 k2 e4]")
    with pytest.raises(MappingError, match="the ops of mha") as e:
        evaluate(wl, two_level(capacity=None), m)
    assert "after" not in str(e.value)


@pytest.mark.parametrize("order", ["mnkl", "lnkm", "kmln", "nlmk"])
def test_executor_equals_reference_in_orders_that_diverge_early(order):
    """Real numbers: the chain executed in the order at both levels of aie-4x2, with m split
    over the rows (partial tiles everywhere), equals numpy's."""
    wl = gemm_chain(72, 48, 80, 32)
    m = Mapping.parse(f"ddr[m72 k48 l80 n32] {order} | memtile[m48 k32 l48 n32] {order} | "
                      "core[m16 k16 l16 n16] ; rows=m2")
    report = verify(wl, m, seed=3, arch=load_arch("aie-4x2"))
    assert report.passed, str(report)


def test_memory_option_round_trips_and_names_the_valid_values():
    from tilewise.errors import WorkloadError
    from tilewise.ir.kinds import build, params_of
    w = gemm_chain(8, 6, 10, 4, memory="max")
    name, params = params_of(w)
    assert params["memory"] == "max" and build(name, params) == w
    assert "memory" not in params_of(gemm_chain(8, 6, 10, 4))[1]
    with pytest.raises(WorkloadError, match="memory='avg'; valid: sum"):
        gemm_chain(8, 6, 10, 4, memory="avg")
