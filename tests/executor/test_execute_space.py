"""Mappings drawn from the search's own declared space (:class:`tilewise.search.space.Space`:
its spatial splits, its tile candidates per level and dim, any loop order, its double-buffer
levels) on the shipped presets execute to the reference for every constructor; and the
executor follows exactly the walk that ``simulate`` counts, moving exactly the bytes it counts."""

from tilewise.arch.loader import load_arch
from collections import Counter
from math import ceil

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from tilewise.model.legality import validate
import tilewise as tw
from tilewise import Arch, Mapping
from tilewise.executor import interpreter
from tilewise.executor.interpreter import _Executor, verify
from tilewise.executor.reference import random_inputs
from tilewise.simulation.trace import simulate
from tilewise.simulation.walker import Transfer, walk
from tilewise.errors import CapacityError, MappingError
from tilewise.mapping import LevelMapping, Spatial
from tilewise.search.space import Space

from ..model.archs import aie_like, four_level
from .test_execute_properties import _over_capacity
from .workloads import KINDS, attention, constructor

PRESETS = {name: load_arch(name) for name in ("aie-4x2", "ascend-vec", "cpu-6core", "npu1", "npu2")}


@st.composite
def space_mappings(draw, workload, arch):
    """A mapping of the search's declared space: a split of ``Space.splits``, per level and dim a
    tile of ``Space.values`` that fits its parent (the rule of ``iter_mappings``), loop orders
    (spine loops outside private ones for a chain, any permutation otherwise) and a subset of
    the moved tensors double-buffered at each level that can. Illegal draws are rejected."""
    space = Space.build(workload, arch)
    s_i = draw(st.integers(0, len(space.splits) - 1))
    split = space.splits[s_i]
    dims, n = space.st.dims, space.st.n_levels
    ways = dict(zip(dims, (int(x) for x in split.ways(len(dims)))))
    tiles = [dict(workload.sizes)]
    for k in range(1, n):
        lv, t = arch.levels[k], {}
        for d in dims:
            w = ways[d] if k == space.st.array_level else 1
            a = workload.alignment(arch.alignment)[d]
            parent = tiles[-1][d]
            limit = -(-ceil(parent / w) // a) * a if k == n - 1 else parent // w
            cands = [v for v in space.values[s_i][lv.name][d] if v <= limit]
            assume(cands)
            t[d] = draw(st.sampled_from(cands))
        tiles.append(t)
    chain = len(workload.ops) > 1
    spine = [d for d in dims if d in space.st.spine]
    private = [d for d in dims if d not in space.st.spine]
    names = [space.st.tensors[i].name for i in space.moved]
    levels = []
    for k, lv in enumerate(arch.levels):
        if k == n - 1:
            order = ()
        elif chain:
            order = tuple(draw(st.permutations(spine))) + tuple(draw(st.permutations(private)))
        else:
            order = tuple(draw(st.permutations(dims)))
        db = frozenset(draw(st.sets(st.sampled_from(names)))) if k in space.db_levels else frozenset()
        levels.append(LevelMapping(lv.name, tuple((d, tiles[k][d]) for d in dims), order,
                                   frozenset(), db))
    rows = Spatial(dims[split.rows[0]], split.rows[1]) if split.rows else None
    cols = Spatial(dims[split.cols[0]], split.cols[1]) if split.cols else None
    mapping = Mapping(tuple(levels), rows, cols)
    try:
        validate(workload, arch, mapping)
    except MappingError:
        assume(False)
    return mapping


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_space_mappings_on_presets_execute_to_the_reference(kind, data):
    workload = data.draw(constructor(kind))
    name = data.draw(st.sampled_from(sorted(PRESETS)))
    arch = PRESETS[name]
    mapping = data.draw(space_mappings(workload, arch))
    seed = data.draw(st.integers(0, 2**16))
    try:
        with np.errstate(invalid="raise", divide="raise"):
            report = verify(workload, mapping, seed=seed, arch=arch)
    except CapacityError as e:  # the declared space has no capacity filter: the error names
        over = _over_capacity(workload, arch, mapping)  # a level the simulation finds too full
        assert over and str(e).split()[1] in over and " bytes but it holds " in str(e), str(e)
        return
    assert report.passed, f"{workload}\n{name}: {mapping}\n{report}"


def test_prime_sizes_on_the_aie_preset_with_padded_core_tiles():
    """Prime sizes, none divisible by the 16/8/16 alignment: partial and padded tiles everywhere."""
    w = tw.gemm(37, 29, 41, dtype="i16")
    m = ("ddr[m37 n29 k41] nkm | memtile[m37 n29 k41] kmn db:A,B | core[m16 n8 k16] db:A,B,C "
         "; rows=k3 cols=m2")
    report = verify(w, m, seed=11, arch="aie-4x2")
    assert report.passed and report.outputs[0].max_abs == 0


# --------------------------------------------------------------------------- one walker


CASES = [
    (tw.gemm(10, 12, 29, dtype="i16"), aie_like(broadcast=False, reduce_cols=False),
     "ddr[m10 n12 k29] kmn | memtile[m10 n12 k16] mnk db:A | core[m5 n6 k3] db:B ; cols=n2"),
    (tw.gemm_chain(13, 6, 11, 7, dtype="bf16"), four_level(),
     "dram[m13 k6 l11 n7] mlkn | l2[m8 k6 l6 n7] mlkn | l1[m8 k6 l6 n7] lmkn | rf[m2 k6 l3 n7] ; rows=m2"),
    (attention(13, 17, 5, heads=2, dtype="f32", causal=True), four_level(),
     "dram[h2 m13 n17 k5 e5] nhmke | l2[h1 m8 n8 k5 e5] hmnke | l1[h1 m8 n8 k5 e5] hmnke "
     "| rf[h1 m4 n5 k5 e5] ; rows=m2"),
    (tw.conv2d(1, 3, 9, 7, 2, 3, 3, stride=2, padding=1, dtype="i8"),
     aie_like(broadcast=False, reduce_cols=False),
     "ddr[n1 k2 c3 p5 q4 r3 s3] nkcpqrs | memtile[n1 k2 c3 p3 q4 r3 s3] pqnkcrs "
     "| core[n1 k2 c2 p2 q2 r2 s3] ; rows=p2"),
]


@pytest.fixture
def exact_links(monkeypatch):
    """Links of one-byte granules: the executor moves each tile's exact box, which the model and
    the simulation count when no run is rounded (runs: tests/model/test_contiguity.py)."""
    from tilewise.model import problem
    from tilewise.simulation import runs

    ones = lambda arch: np.ones(len(arch.levels), np.int64)
    monkeypatch.setattr(problem, "link_granules", ones)
    monkeypatch.setattr(runs, "link_granules", ones)


@pytest.mark.parametrize("workload, arch, text", CASES, ids=[c[0].name for c in CASES])
def test_execute_replays_the_walk_simulate_counts_and_moves_those_bytes(workload, arch, text,
                                                                        monkeypatch, exact_links):
    mapping = Mapping.parse(text)
    seen, moved = [], Counter()
    real_walk, real_transfer = interpreter.walk, _Executor._transfer

    def recording_walk(*args):
        for ev in real_walk(*args):
            seen.append(ev)
            yield ev

    def measuring_transfer(self, ev):
        real_transfer(self, ev)
        if ev.kind in ("load", "reload"):  # bytes that really arrived, in the tensor's dtype
            data = self.buffers[(ev.level, ev.core, ev.tensor)].data
            moved[("read", ev.level, ev.tensor)] += data.size * self.w.tensor(ev.tensor).dtype.bytes
        elif ev.kind == "store":
            moved[("write", ev.level, ev.tensor)] += ev.nbytes

    monkeypatch.setattr(interpreter, "walk", recording_walk)
    monkeypatch.setattr(_Executor, "_transfer", measuring_transfer)
    assert verify(workload, mapping, seed=2, arch=arch).passed
    assert seen == list(walk(workload, arch, mapping))  # the very events, in the same order
    trace = simulate(workload, arch, mapping)           # no broadcast: every transfer counts
    names = [lv.name for lv in arch.levels]
    reads = {(names[lv], t): b for (kind, lv, t), b in moved.items() if kind == "read" and b}
    writes = {(names[lv], t): b for (kind, lv, t), b in moved.items() if kind == "write" and b}
    assert reads == {(lv, t): b for lv, row in trace.reads.items() for t, b in row.items()}
    assert writes == {(lv, t): b for lv, row in trace.writes.items() for t, b in row.items()}


# --------------------------------------------------------------------------- LayerNorm


def test_layernorm_column_tiles_merge_welford_statistics_and_read_dram_once(monkeypatch,
                                                                             exact_links):
    """LayerNorm with its normalized dim c split at the core: statistics of each column tile
    merged with Chan's rule, then a second sweep over the column tiles that reads X from the
    on-chip level above, never again from DRAM; the model counts the same two passes."""
    w = tw.layernorm(11, 13, dtype="f32")
    arch = four_level()
    m = Mapping.parse("dram[r11 c13] rc | l2[r4 c13] rc | l1[r4 c13] rc | rf[r2 c5]")
    rng = np.random.default_rng(0)
    x = {"X": (1e3 + rng.standard_normal((11, 13))).astype(np.float32),  # offset 1000, std 1
         "gamma": rng.standard_normal(13).astype(np.float32),
         "beta": rng.standard_normal(13).astype(np.float32)}
    merges = []
    real_merge = interpreter.merge_moments
    monkeypatch.setattr(interpreter, "merge_moments",
                        lambda a, b: merges.append((a.count, b.count)) or real_merge(a, b))
    report = verify(w, m, x, arch=arch)
    assert report.passed and report.outputs[0].max_rel < 4e-7, report  # f32 precision
    assert (5, 5) in merges and (10, 3) in merges  # c = 13 in tiles of 5, 5, 3
    loads = Counter()
    for ev in walk(w, arch, m):
        if isinstance(ev, Transfer) and ev.tensor == "X" and ev.kind == "load":
            loads[arch.levels[ev.level].name] += ev.nbytes
    assert loads == {"l2": 11 * 13 * 4, "l1": 11 * 13 * 4, "rf": 2 * 11 * 13 * 4}
    assert {lv: row["X"] for lv, row in tw.evaluate(w, arch, m).reads.items()} == loads


@pytest.mark.parametrize("workload,preset,text", [
    (tw.mha(128, 48, 16, dtype="bf16"), "npu1",
     "ddr[h1 m128 n48 k16 e16] mnhke | memtile[h1 m128 n16 k16 e16] hmnke | core[h1 m16 n16 k16 e16] ; rows=m4 cols=m2"),
    (tw.gemm(40, 24, 32, dtype="i8"), "aie-4x2",
     "ddr[m40 n24 k32] mnk | memtile[m40 n24 k32] kmn | core[m16 n8 k16] ; rows=m2 cols=m2"),
])
def test_one_dim_over_both_array_axes_executes_to_the_reference(workload, preset, text):
    """A dim split over rows and cols (cut rows x cols ways: core (r, c) takes slice
    r x cols + c; m=40 over 4 cores of 16 leaves one idle) executes to the reference, and the
    model's counts equal the walk's."""
    arch = load_arch(preset)
    m = Mapping.parse(text)
    assert verify(workload, m, seed=3, arch=arch).passed
    cost, trace = tw.evaluate(workload, arch, m), simulate(workload, arch, m)
    assert (cost.reads, cost.writes, cost.fills, cost.drains) == (
        trace.reads, trace.writes, trace.fills, trace.drains)
    assert cost.steps == trace.steps
