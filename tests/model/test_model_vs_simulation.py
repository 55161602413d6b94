"""The vectorized model equals the tile-by-tile simulation exactly, for every constructor."""

import numpy as np
import pytest
from hypothesis import given, reject, settings, strategies as st

from tilewise.model.legality import validate
from tilewise.errors import MappingError, WorkloadError
from tilewise.simulation.trace import simulate
from tilewise.model.batch import MappingBatch
from tilewise.model.cost import evaluate, evaluate_batch
from tilewise.model.problem import Problem
from tilewise.errors import SpecError

from .strategies import ARCHS, CONSTRUCTORS, mappings, workloads


def _compare(workload, arch, mapping):
    trace = simulate(workload, arch, mapping)
    cost = evaluate_batch(workload, arch, MappingBatch.from_mappings(workload, arch, [mapping]))
    assert cost.legal[0]
    c = cost.item(0)
    for level in trace.reads:
        assert c.reads[level] == trace.reads[level], (level, "reads", str(mapping))
        assert c.writes[level] == trace.writes[level], (level, "writes", str(mapping))
        assert c.reloads[level] == trace.reloads[level], (level, "reloads", str(mapping))
        assert c.fills[level] == trace.fills[level], (level, "fills", str(mapping))
        assert c.drains[level] == trace.drains[level], (level, "drains", str(mapping))
    nonempty = lambda t: {lv: row for lv, row in t.items() if row}
    assert (c.fill_bds, c.drain_bds) == (nonempty(trace.fill_bds), nonempty(trace.drain_bds)), \
        str(mapping)
    assert c.footprint == trace.peak, str(mapping)
    assert c.steps == trace.steps, str(mapping)
    assert c.padded_points == trace.padded_points, str(mapping)
    assert trace.useful_points == c.useful_points
    return c, trace


@settings(max_examples=200)
@given(st.data())
def test_model_traffic_and_footprint_equal_simulation(data):
    workload = data.draw(workloads())
    arch = data.draw(ARCHS)
    mapping = data.draw(mappings(workload, arch))
    _compare(workload, arch, mapping)


@pytest.mark.parametrize("kind", CONSTRUCTORS)
@settings(max_examples=40)
@given(data=st.data())
def test_evaluate_equals_simulate_for_every_constructor(kind, data):
    """``tilewise.evaluate`` (not only the batch path) against ``simulate``, each constructor
    drawn on its own: traffic per level and tensor, reloads, peak residency, steps, points."""
    workload = data.draw(workloads(kinds=(kind,)))
    arch = data.draw(ARCHS)
    mapping = data.draw(mappings(workload, arch))
    trace = simulate(workload, arch, mapping)
    cost = evaluate(workload, arch, mapping, check_capacity=False)
    assert (cost.reads, cost.writes, cost.reloads) == (trace.reads, trace.writes, trace.reloads), str(mapping)
    assert (cost.fills, cost.drains) == (trace.fills, trace.drains), str(mapping)
    assert cost.footprint == trace.peak, str(mapping)
    assert (cost.steps, cost.padded_points, cost.useful_points) == (
        trace.steps, trace.padded_points, trace.useful_points), str(mapping)


@settings(max_examples=150)
@given(st.data())
def test_batch_of_many_equals_one_by_one(data):
    workload = data.draw(workloads())
    arch = data.draw(ARCHS)
    ms = [data.draw(mappings(workload, arch)) for _ in range(data.draw(st.integers(2, 5)))]
    batch = evaluate_batch(workload, arch, MappingBatch.from_mappings(workload, arch, ms))
    for i, m in enumerate(ms):
        one = evaluate_batch(workload, arch, MappingBatch.from_mappings(workload, arch, [m]))
        assert batch.item(i) == one.item(0)


@settings(max_examples=200)
@given(st.data())
def test_vectorized_legality_agrees_with_validate(data):
    workload = data.draw(workloads())
    arch = data.draw(ARCHS)
    mapping = data.draw(mappings(workload, arch, legal_only=False))
    try:
        validate(workload, arch, mapping)
        expected = True
    except MappingError:
        expected = False
    batch = MappingBatch.from_mappings(workload, arch, [mapping], validate=False)
    assert bool(evaluate_batch(workload, arch, batch).legal[0]) == expected, str(mapping)


def test_partial_tiles_padding_and_idle_cores_hand_counted():
    from tilewise import Mapping, gemm

    from .archs import aie_like

    # m: memtile tiles 6+4, core tiles 3,3 | 3,1 -> 4; n: one array tile of 7 = slices 2,2,2,1
    m = Mapping.parse("ddr[m10 n7 k5] mnk | memtile[m6 n7 k5] nmk | core[m3 n2 k5] ; rows=n4")
    c, _ = _compare(gemm(10, 7, 5), aie_like(), m)
    assert c.useful_points == {"C": 350}
    assert c.padded_points == {"C": 4 * 4 * 3 * 2 * 5}
    assert c.steps == {"C": 4}


@st.composite
def _convs(draw):
    from tilewise import conv2d

    R, S = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    stride, dil, pad = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 3))
    H = draw(st.integers(max(1, dil * (R - 1) + 1 - 2 * pad), 14))
    pw = draw(st.integers(0, 1))
    W = draw(st.integers(max(1, S - 2 * pw), 6))
    try:
        return conv2d(1, 1, H, W, draw(st.integers(1, 2)), R, S, stride=(stride, 1),
                      padding=(pad, pw), dilation=(dil, 1))
    except WorkloadError:  # a window row that touches only padding (e.g. H=1, R=1, pad=1)
        reject()


@settings(max_examples=150)
@given(st.data())
def test_convolution_borders_on_larger_images(data):
    """Windows clipped by padding at both borders, partial tiles at every level."""
    workload = data.draw(_convs())
    arch = data.draw(ARCHS)
    _compare(workload, arch, data.draw(mappings(workload, arch)))


@st.composite
def _coupled_windows(draw):
    """A tensor whose two affine axes share a dim: X[p + r - 1, p*2 + s], dims coupled in one group."""
    from tilewise import Chain, Dim, Op, Tensor

    P, R, S = draw(st.integers(1, 6)), draw(st.integers(2, 3)), draw(st.integers(1, 3))
    X = Tensor("X", "i8", ("p + r - 1", "p*2 + s"), (draw(st.integers(1, P + R)), 2 * P + S - 1))
    W = Tensor("W", "i8", ("r", "s"), (R, S))
    Y = Tensor("Y", "i32", ("p",), (P,))
    return Chain("coupled", (Dim("p", P), Dim("r", R), Dim("s", S)),
                 (Op("Y", "mac", Y, (X, W), "i8"),))


@settings(max_examples=60)
@given(st.data())
def test_several_affine_axes_sharing_dims(data):
    workload = data.draw(_coupled_windows())
    arch = data.draw(ARCHS)
    _compare(workload, arch, data.draw(mappings(workload, arch)))


@st.composite
def _layernorm_split_rows(draw):
    """LayerNorm with its normalized dim ``c`` cut at a random level ``kc`` (whole above it,
    any tile at and below it) and the rows ``r`` cut only at or above ``kc`` (a real spine loop
    below a real private one is illegal); rows split over the array or not."""
    from tilewise import Mapping, layernorm
    from tilewise.mapping import LevelMapping, Spatial

    from .archs import aie_like, four_level, two_level

    arch = draw(st.sampled_from([aie_like(), four_level(), two_level(block_bytes=32),
                                             aie_like(2, 3, broadcast=False, reduce_cols=False)]))
    R, C = draw(st.integers(1, 9)), draw(st.integers(2, 14))
    w = layernorm(R, C, dtype=draw(st.sampled_from(["i16", "bf16", "f32"])))
    n = len(arch.levels)
    kc = draw(st.integers(1, n - 1))
    a = [lv.name for lv in arch.levels].index(arch.array.level) if arch.array else None
    ways = draw(st.integers(1, arch.array.rows)) if a == n - 1 else 1
    tiles = [{"r": R, "c": C}]
    for k in range(1, n):
        p, wk = tiles[-1], ways if k == a else 1
        r = draw(st.integers(1, -(-p["r"] // wk))) if k <= kc else -(-p["r"] // wk)
        c = p["c"] if k < kc else draw(st.integers(1, p["c"] if k > kc else p["c"] - 1))
        tiles.append({"r": r, "c": c})
    levels = [LevelMapping(lv.name, tuple(tiles[k].items()), ("r", "c") if k < n - 1 else (),
                           frozenset(), frozenset(draw(st.sets(st.sampled_from(["X", "Y"])))
                                                  if k and lv.double_buffer else ()))
              for k, lv in enumerate(arch.levels)]
    return w, arch, Mapping(tuple(levels), Spatial("r", ways) if ways > 1 else None, None)


@settings(max_examples=120)
@given(_layernorm_split_rows())
def test_layernorm_with_its_normalized_dim_tiled_reads_x_once_per_pass(case):
    """The statistics pass and the normalize pass each walk X below the first level whose c
    loop iterates (the model's two passes), once above it; the model equals the walk."""
    w, arch, mapping = case
    validate(w, arch, mapping)
    c, _ = _compare(w, arch, mapping)
    names = [lv.name for lv in arch.levels]
    kc = next(k for k in range(1, len(names)) if mapping.levels[k].sizes["c"] < w.sizes["c"])
    one_pass = w.sizes["r"] * w.sizes["c"] * w.tensor("X").element_bytes
    assert c.reads[names[kc]]["X"] >= 2 * one_pass  # below the split: at least two passes
    if kc > 1:
        assert c.reads[names[kc - 1]]["X"] >= one_pass


# ----- buffer descriptors per transfer on archs with DMA limits (issue 17)


def _tight_aie():
    """aie-4x2 with DMA limits tight enough that most small tiles need several BDs: 2 dims
    on every DMA, wraps of 3 words or steps, strides of 40 words, 24 words per BD, a repeat
    of 2 on the shim."""
    from tilewise.arch.loader import arch_from_dict, arch_to_dict, load_arch

    spec = arch_to_dict(load_arch("aie-4x2"))
    for i, lv in enumerate(spec["levels"]):
        lv["dma"].update(dims=2, max_wrap=3, max_stride=40, repeat=2 if i == 0 else 1)
        lv["dma"]["max_length"] = 24
    spec["name"] = "aie-4x2-tight"
    return arch_from_dict(spec)


def _dma_archs():
    from tilewise import load_arch

    return [load_arch("aie-4x2"), load_arch("npu1"), _tight_aie()]


DMA_ARCHS = st.sampled_from(_dma_archs())
_BD_KINDS = ("gemm", "batched_gemm", "conv2d", "mha", "layernorm", "gemm_chain")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_model_bds_equal_simulation_on_dma_archs(data):
    """The kernel's BDs per level and tensor (fills and drains) equal simulate's (random
    small workloads on aie-4x2, npu1 and a variant whose limits split most tiles)."""
    workload = data.draw(workloads(kinds=_BD_KINDS))
    arch = data.draw(DMA_ARCHS)
    try:
        Problem.build(workload, arch).require_rates()
    except SpecError:  # no compute rate for its dtype on this arch
        reject()
    mapping = data.draw(mappings(workload, arch))
    _compare(workload, arch, mapping)


def test_bds_are_counted_where_border_tiles_take_fewer():
    """The dma.md example: only the border tile 2x4x4x4 of I needs 2 BDs on the core's 3-D
    DMA (9 BDs for 8 transfers), and the model counts the same."""
    import tilewise

    w = tilewise.conv2d(2, 12, 8, 8, 8, 3, 3, dtype="i8")
    m = tilewise.Mapping.parse("ddr[n2 k8 c12 p6 q6 r3 s3] nkcpqrs | memtile[n2 k8 c12 p6 q6 r3 s3]"
                               " nkcpqrs | core[n2 k8 c8 p4 q4 r3 s3]")
    c, trace = _compare(w, tilewise.load_arch("aie-4x2"), m)
    assert c.fills["core"]["I"] == 8 and c.fill_bds["core"]["I"] == 9


def test_bds_of_every_tensor_are_counted_after_a_checked_one():
    """Regression (CI, stop 26): the kernel's per-level check of one tensor's shapes must not
    change which tensors the BD counts cover. Attention's output O (i32) has a border tile
    2x2x2 in a 2x3x2 memtile buffer that takes 2 BDs on the tight DMA (4 contiguous words,
    over the 3-word wrap), so its 2 drains from the memtile are 3 BDs, as the walk counts."""
    import tilewise

    w = tilewise.mha(5, 1, 2, heads=2, dtype="i8")
    m = tilewise.Mapping.parse("ddr[h2 m5 n1 k2 e2] hmnke | memtile[h2 m3 n1 k2 e2] hmnke"
                               " | core[h1 m16 n8 k16 e1]")
    c, trace = _compare(w, _tight_aie(), m)
    assert c.drains["memtile"]["O"] == 2 and c.drain_bds["memtile"]["O"] == 3


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_bds_in_a_batch_of_reordered_tiles_equal_one_by_one(data):
    """The kernel memoizes BD sums per tile combo and prefix levels (the loop orders of one
    combo share them): a batch of a few tile combos, each under several loop orders, gives
    every candidate the cost it gets alone (DMA archs, random small workloads)."""
    import dataclasses

    workload = data.draw(workloads(kinds=_BD_KINDS))
    arch = data.draw(DMA_ARCHS)
    try:
        Problem.build(workload, arch).require_rates()
    except SpecError:
        reject()
    ms = []
    for _ in range(data.draw(st.integers(1, 3))):
        base = data.draw(mappings(workload, arch))
        for _ in range(data.draw(st.integers(1, 4))):
            levels = tuple(dataclasses.replace(lv, order=tuple(data.draw(st.permutations(lv.order))))
                           for lv in base.levels)
            m = dataclasses.replace(base, levels=levels)
            try:
                validate(workload, arch, m)
            except MappingError:
                continue
            ms.append(m)
    if not ms:
        reject()
    batch = evaluate_batch(workload, arch, MappingBatch.from_mappings(workload, arch, ms))
    nonempty = lambda t: {lv: row for lv, row in t.items() if row}
    for i, m in enumerate(ms):
        one = evaluate_batch(workload, arch, MappingBatch.from_mappings(workload, arch, [m]))
        assert batch.item(i) == one.item(0), str(m)
        trace = simulate(workload, arch, m)
        assert (one.item(0).fill_bds, one.item(0).drain_bds) == (
            nonempty(trace.fill_bds), nonempty(trace.drain_bds)), str(m)


def test_bds_of_one_conv_tile_combo_under_every_order_equal_one_by_one():
    """A convolution whose input tiles take several BDs on the tight DMA, under 24 loop orders
    at the outermost level, in one batch: the memoized BD sums give each order its own count,
    the walk's."""
    import itertools

    import tilewise

    w = tilewise.conv2d(2, 12, 8, 8, 16, 3, 3, dtype="i8")
    arch = _tight_aie()
    ms = [tilewise.Mapping.parse(f"ddr[n2 k16 c12 p6 q6 r3 s3] {''.join(o)}qrs"
                                 " | memtile[n1 k8 c12 p3 q6 r3 s3] nkcpqrs | core[n1 k8 c8 p3 q2 r3 s3]")
          for o in itertools.permutations("nkcp")]
    batch = evaluate_batch(w, arch, MappingBatch.from_mappings(w, arch, ms))
    counts = set()
    for i, m in enumerate(ms):
        c, trace = batch.item(i), simulate(w, arch, m)
        assert (c.fill_bds, c.drain_bds) == (trace.fill_bds, trace.drain_bds), str(m)
        counts.add((c.fills["memtile"]["I"], c.fill_bds["memtile"]["I"]))
    assert len(counts) > 1, counts  # the orders do move different numbers of BDs


def test_bds_in_a_batch_whose_tiles_change_one_dim_at_a_time():
    """Each tensor keeps its buffers, checks and BD sums while the tiles of its own dims stand
    (its own epoch): in a batch where consecutive candidates change only n, then only m, A's
    counts (dims m, k) must be kept across the n changes and renewed at the m changes; every
    candidate gets the walk's BDs."""
    import tilewise

    w = tilewise.gemm(40, 24, 36, dtype="i8")
    arch = _tight_aie()
    ms = [tilewise.Mapping.parse(f"ddr[m40 n24 k36] mnk | memtile[m{m} n{n} k36] kmn"
                                 f" | core[m16 n8 k16]")
          for m in (40, 32, 16) for n in (24, 16, 8)]
    batch = evaluate_batch(w, arch, MappingBatch.from_mappings(w, arch, ms))
    seen = set()
    for i, m in enumerate(ms):
        c, trace = batch.item(i), simulate(w, arch, m)
        assert (c.fill_bds, c.drain_bds) == (trace.fill_bds, trace.drain_bds), str(m)
        seen.add(c.fill_bds["memtile"]["A"] - c.fills["memtile"]["A"])
    assert max(seen) > 0  # A's tiles do take more than one BD here
