"""The compiled model equals the former numpy model on large random batches.

The simulation (test_model_vs_simulation) can only walk small problems; here full-size
workloads on the presets, with random tiles (non-divisible, up to their parent and beyond),
orders, bypass, double buffering and splits, are compared field by field against the frozen
numpy implementation in ``tests/model/numpy_reference``: integers exactly, seconds to 1e-12.
"""

import dataclasses

from tilewise.arch.loader import load_arch
import numpy as np
import pytest

from tilewise import Arch, Mapping, conv2d, gemm, gemm_chain, layernorm, mha
from tilewise.ir import library as lib
from tilewise.model.batch import MappingBatch
from tilewise.model.cost import evaluate_batch
from tilewise.model import problem as problem_module
from tilewise.model.structure import Structure

from .archs import aie_like, four_level, two_level
from .numpy_reference.cost import evaluate_batch as reference


def random_batch(workload, arch, n: int, rng: np.random.Generator) -> MappingBatch:
    """``n`` random candidates: log-uniform tiles in [1, parent] (one in ten up to 2x the parent,
    illegal), random orders (spine first for chains other than GEMM chains), flags and
    splits."""
    st = Structure(workload, arch)
    L, D, T = st.n_levels, len(st.dims), len(st.tensors)
    tiles = np.empty((n, L, D), np.int64)
    tiles[:, 0] = st.sizes
    for k in range(1, L):
        top = tiles[:, k - 1] * np.where(rng.random((n, D)) < 0.1, 2, 1)
        tiles[:, k] = np.clip(np.exp(rng.random((n, D)) * np.log(top + 1)).astype(np.int64), 1, top)
    keys = rng.random((n, L - 1, D))
    if len(workload.ops) > 1 and not st.projected:
        keys += np.array([0.0 if d in st.spine else 1.0 for d in st.dims])
    orders = np.argsort(keys, axis=2)
    bypass = np.zeros((n, L, T), bool)
    bypass[:, 1:L - 1] = rng.random((n, L - 2, T)) < 0.2
    moved = np.array([t.name not in st.intermediate_names for t in st.tensors])
    bypass &= moved
    db = (rng.random((n, L, T)) < 0.5) & ~bypass & moved
    db[:, 0] = False
    rows = np.full((4, n), -1, np.int64)
    rows[1] = rows[3] = 1
    if arch.array is not None and st.array_level == L - 1:
        pick = rng.integers(0, D, (n, 2))
        distinct = pick[:, 0] != pick[:, 1]
        rows[0] = np.where(distinct, pick[:, 0], -1)
        rows[2] = np.where(distinct, pick[:, 1], -1)
        rows[1] = np.where(distinct, rng.integers(1, arch.array.rows + 1, n), 1)
        rows[3] = np.where(distinct, rng.integers(1, arch.array.cols + 1, n), 1)
        # no reduction split whose partials merge through the parent: the frozen reference
        # predates that rule (test_spatial_merges checks it against the walk and by hand)
        red = np.array([any(d in op.reduction_dims for op in workload.ops) for d in st.dims])
        rows_through = (rows[0] >= 0) & red[rows[0]] & (not arch.array.reduce_cols)
        cols_through = (rows[2] >= 0) & red[rows[2]]
        rows[0] = np.where(rows_through, -1, rows[0])
        rows[1] = np.where(rows_through, 1, rows[1])
        rows[2] = np.where(cols_through, -1, rows[2])
        rows[3] = np.where(cols_through, 1, rows[3])
    align = np.array([st.workload.alignment(arch.alignment)[d] for d in st.dims], np.int64)
    tiles[:, L - 1] = -(-tiles[:, L - 1] // align) * align
    return MappingBatch(tiles, orders, bypass, db, *rows)


CASES = [
    ("gemm aie-4x2", lambda: gemm(512, 768, 768, dtype="i8"), lambda: load_arch("aie-4x2")),
    ("gemm odd npu1", lambda: gemm(100, 37, 250, dtype="bf16"), lambda: load_arch("npu1")),
    ("conv2d aie-4x2", lambda: conv2d(1, 16, 28, 28, 32, 3, 3, stride=2, padding=1),
     lambda: load_arch("aie-4x2")),
    ("conv2d dilated", lambda: conv2d(2, 3, 17, 13, 4, 3, 2, stride=(1, 2), padding=(2, 0),
                                      dilation=(2, 1)), aie_like),
    ("mha npu1", lambda: mha(512, 384, 64, heads=2, dtype="bf16"), lambda: load_arch("npu1")),
    ("gemm chain", lambda: gemm_chain(96, 40, 72, 24), lambda: aie_like(2, 3, broadcast=False,
                                                                         reduce_cols=False)),
    ("layernorm ascend", lambda: layernorm(96, 768, dtype="f16"), lambda: load_arch("ascend-vec")),
    ("layernorm 4-level", lambda: layernorm(40, 300, dtype="f32"), four_level),
    ("batched gemm 4-level", lambda: lib.batched_gemm(3, 40, 56, 24, dtype="i16"), four_level),
    ("einsum 2-level", lambda: lib.einsum("abc,c->ab", a=12, b=20, c=33), lambda: two_level(None, 32)),
    ("gemm cpu-6core", lambda: gemm(96, 80, 64, dtype="f32"), lambda: load_arch("cpu-6core")),
]


def without_transfer_costs(arch: Arch) -> Arch:
    """``arch`` with no per-transfer cost: the frozen reference predates them (the transfer
    counts are checked against the simulation, the link times with them against hand counts
    in test_fixed_overheads)."""
    levels = tuple(dataclasses.replace(lv, transfer_overhead_cycles=0.0) for lv in arch.levels)
    return dataclasses.replace(arch, levels=levels)


@pytest.fixture
def exact_bytes(monkeypatch):
    """Links move exact bytes (granules of one byte, windows not rounded out to DMA words, rows
    not padded): the frozen reference predates contiguous runs
    (:mod:`tilewise.model.contiguity`, checked against the simulation and by hand in
    test_contiguity)."""
    for rule in ("link_granules", "window_granules"):
        monkeypatch.setattr(problem_module, rule, lambda arch: np.ones(len(arch.levels), np.int64))
    monkeypatch.setattr(problem_module, "row_word", lambda arch: 1)


@pytest.mark.parametrize("name,make_workload,make_arch", CASES, ids=[c[0] for c in CASES])
def test_compiled_model_equals_numpy_reference(name, make_workload, make_arch, exact_bytes):
    workload, arch = make_workload(), without_transfer_costs(make_arch())
    batch = random_batch(workload, arch, 3000, np.random.default_rng(len(name)))
    got, want = evaluate_batch(workload, arch, batch), reference(workload, arch, batch)
    assert want.legal.any() and want.valid.any() and not want.legal.all()
    for field in ("legal", "fits", "footprint", "reads", "writes", "reloads", "offchip_bytes",
                  "steps", "padded_points", "useful_points"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    for field in ("compute_cycles", "compute_s", "transfer_s", "latency_s", "utilization",
                  "ratio", "capacity", "energy_j"):
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-12,
                                   err_msg=field)


def search_shaped(workload, arch, n_combos: int, rng: np.random.Generator) -> MappingBatch:
    """Consecutive candidates sharing their tiles, as the search sends them: each random combo
    under several random orders and flags, then variants changing one dim's tiles only, and
    combos coming back after others (A A B B A ...)."""
    c = random_batch(workload, arch, n_combos, rng)
    L, D = c.tiles.shape[1:]
    rows = []
    for i in range(n_combos):
        rows += [i] * int(rng.integers(1, 6))
        if i and rng.random() < 0.3:
            rows += [i - 1, i]
    rows = np.array(rows)
    other = random_batch(workload, arch, len(rows), rng)  # fresh orders, flags
    tiles = c.tiles[rows].copy()
    one_dim = rng.random(len(rows)) < 0.2  # swap one dim's tiles with the previous combo's
    for b in np.nonzero(one_dim)[0]:
        j = rng.integers(D)
        tiles[b, 1:, j] = c.tiles[max(rows[b] - 1, 0), 1:, j]
    return MappingBatch(tiles, other.orders, other.bypass, other.double_buffer, c.rows_dim[rows],
                        c.rows_ways[rows], c.cols_dim[rows], c.cols_ways[rows])


@pytest.mark.parametrize("name,make_workload,make_arch", CASES, ids=[c[0] for c in CASES])
def test_consecutive_candidates_sharing_tiles(name, make_workload, make_arch, exact_bytes):
    """The kernel keeps a dim's tile lists (and the tile-only results) while the tiles repeat:
    search-shaped batches give the reference's numbers and those of candidates one by one."""
    workload, arch = make_workload(), without_transfer_costs(make_arch())
    batch = search_shaped(workload, arch, 150, np.random.default_rng(7 + len(name)))
    got, want = evaluate_batch(workload, arch, batch), reference(workload, arch, batch)
    for field in ("legal", "fits", "footprint", "reads", "writes", "reloads", "offchip_bytes",
                  "steps", "padded_points"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    for field in ("compute_cycles", "transfer_s", "latency_s", "utilization", "ratio", "energy_j"):
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-12,
                                   err_msg=field)
    arrays = list(batch.__dict__.values())
    for i in np.random.default_rng(0).choice(len(batch), 12, replace=False):
        one = evaluate_batch(workload, arch, MappingBatch(*(x[i:i + 1] for x in arrays)))
        assert one.item(0) == got.item(i)


@pytest.mark.parametrize("name,make_workload,make_arch", CASES, ids=[c[0] for c in CASES])
def test_every_result_element_is_written(name, make_workload, make_arch, monkeypatch):
    """The result arrays are allocated uninitialized: filled with junk first (NaN, True, a
    large int), they must come out exactly as from fresh memory, for every kind of candidate
    (non-positive tiles, bypass, unmoved intermediates, illegal ones)."""
    workload, arch = make_workload(), make_arch()
    batch = random_batch(workload, arch, 400, np.random.default_rng(11))
    batch.tiles[::37, -1, 0] = 0                        # non-positive: every field zero
    batch.rows_ways[5::41] = 0
    clean = evaluate_batch(workload, arch, batch)
    empty = np.empty

    def junk(shape, dtype=float, *args, **kwargs):
        a = empty(shape, dtype, *args, **kwargs)
        a.fill(np.nan if np.dtype(dtype).kind == "f" else True if np.dtype(dtype) == bool else 0x5A5A5A5A)
        return a

    monkeypatch.setattr(np, "empty", junk)
    dirty = evaluate_batch(workload, arch, batch)
    monkeypatch.undo()
    for field in clean.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(dirty, field), getattr(clean, field), err_msg=field)


def test_exact_floor_division_by_reciprocal():
    from tilewise.model.kernel import _div

    rng = np.random.default_rng(3)
    for e, s in [(0, 1), (7, 7), (2**53 + 1, 3), (2**62 - 1, 1), (2**62 - 1, 2**31 - 1),
                 *zip(rng.integers(0, 2**40, 200).tolist(), rng.integers(1, 2**20, 200).tolist())]:
        assert _div(e, s, 1.0 / s) == e // s, (e, s)


def test_non_positive_tiles_and_ways_are_illegal_and_zero():
    workload, arch = gemm(64, 64, 64), load_arch("aie-4x2")
    batch = random_batch(workload, arch, 4, np.random.default_rng(1))
    batch.tiles[0, 2, 1] = 0
    batch.tiles[1, 1, 0] = -16
    batch.rows_dim[2], batch.rows_ways[2] = 0, 0
    cost = evaluate_batch(workload, arch, batch)
    assert not cost.legal[:3].any() and not cost.valid[:3].any()
    assert not cost.reads[:3].any() and not cost.footprint[:3].any()
    one = evaluate_batch(workload, arch, MappingBatch(*(x[3:] for x in batch.__dict__.values())))
    assert one.item(0) == cost.item(3)


def test_batch_of_the_wrong_shape_is_an_error():
    from tilewise.errors import MappingError

    workload = gemm(64, 64, 64)
    batch = random_batch(workload, two_level(), 2, np.random.default_rng(0))
    with pytest.raises(MappingError, match=r"batch tiles have shape \(2, 3\) per candidate; "
                       r"gemm on aie-4x2 needs \(3, 3\) \(levels, dims\)"):
        evaluate_batch(workload, load_arch("aie-4x2"), batch)


def test_byte_counts_past_int64_are_an_error():
    from tilewise.errors import TilewiseError

    workload, arch = gemm(2**21, 2**21, 2**21, dtype="f32"), two_level(None)
    batch = MappingBatch.from_mappings(workload, arch, [
        Mapping.parse(
            "gm[m2097152 n2097152 k2097152] mnk | ub[m1 n1 k1]")])
    with pytest.raises(TilewiseError, match="traffic of A overflows int64 bytes"):
        evaluate_batch(workload, arch, batch)


def test_a_level_that_moves_data_without_bandwidth_is_an_error():
    from tilewise.arch.spec import Compute, Level
    from tilewise.errors import SpecError

    arch = Arch("no-bw", (Level("gm", None), Level("ub", None)), Compute(1e9, {"i8": 1}))
    workload = gemm(8, 8, 8)
    batch = MappingBatch.from_mappings(workload, arch, [
        Mapping.parse("gm[m8 n8 k8] mnk | ub[m4 n8 k8]")])
    with pytest.raises(SpecError, match="arch no-bw: level ub moves data but has no bandwidth"):
        evaluate_batch(workload, arch, batch)


def test_out_of_range_orders_and_split_dims_are_errors():
    from tilewise.errors import MappingError

    workload, arch = gemm(64, 64, 64), load_arch("aie-4x2")
    batch = random_batch(workload, arch, 3, np.random.default_rng(0))
    batch.orders[1, 0, 2] = 3
    with pytest.raises(MappingError, match=r"orders and split dims must be dim indices in \[0, 3\)"):
        evaluate_batch(workload, arch, batch)
    batch = random_batch(workload, arch, 3, np.random.default_rng(0))
    batch.cols_dim[0] = 7
    with pytest.raises(MappingError, match="split dims must be dim indices"):
        evaluate_batch(workload, arch, batch)
    batch = random_batch(workload, arch, 3, np.random.default_rng(0))
    with pytest.raises(MappingError, match=r"batch bypass has shape \(3, 2, 3\); expected \(3, 3, 3\)"):
        evaluate_batch(workload, arch, MappingBatch(batch.tiles, batch.orders, batch.bypass[:, :2],
                                                    *list(batch.__dict__.values())[3:]))
