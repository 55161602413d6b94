"""The joint floor of kernel calls and exposed bytes (:mod:`tilewise.search.exposure`).

Its lemma is checked against the model itself: for random full mappings, the bytes the model
moves into the innermost level (reads of inputs, write-backs of outputs, summed over cores)
are at least ``V * min_d sum_{t ∋ d} e_t / prod_{f not in t} c_f`` for every exposed set,
with ``c`` the mapping's innermost tiles and ``V`` the points over the cores — worked out here
from the workload's dims and dtypes, not from the search's tables. Then the floors
:meth:`CallFloors.steps` returns equal the least over every listed combo (a numpy scan), and
the search keeps its answers while the GEMM 10^6 x 10^6 x 10^6 expands a sixth of the nodes.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilewise as tw
from tilewise.arch.loader import load_arch
from tilewise.dtypes import dtype as get_dtype
from tilewise.model.cost import evaluate
from tilewise.model.legality import validate
from tilewise.search.engine import Engine

from .helpers import random_call_nodes, small_aie
from .test_bound import _random_mapping

CASES = [
    (tw.gemm(200, 360, 520, dtype="i8"), "aie-4x2"),            # ragged, core splits
    (tw.gemm(256, 1024, 384, dtype="i8", out_dtype="i8"), "aie-4x2"),  # i32 partial sums
    (tw.gemm(96, 64, 80, dtype="i16"), "small"),
    (tw.einsum("bmk,bkn->bmn", b=3, m=24, n=16, k=40, dtype="i8"), "small"),
    (tw.einsum("mk,kn->mkn", m=24, n=16, k=24, dtype="i8"), "small"),  # no reduction: writes
    (tw.gemm(128, 96, 160, dtype="f32"), "cpu-6core"),          # levels below the array
]
_ENG: dict = {}


def _engine(w, arch):
    key = (w.name, str(w.sizes), arch)
    if key not in _ENG:
        a = small_aie(rows=2, cols=2, core_bytes=8192, mem_bytes=65536) if arch == "small" \
            else load_arch(arch)
        _ENG[key] = Engine(w, a, {})
    return _ENG[key]


def _by_hand(w, tiles, exposed: set[str]) -> tuple[float, float]:
    """``(read, write)`` bytes per point of the busiest core for innermost ``tiles`` (dim ->
    extent) with the tensors ``exposed`` (names): the lemma's right side over ``V``."""
    op = w.ops[0]
    out = op.output
    acc = get_dtype(op.dtype.accumulator).bytes   # partial sums leave at the accumulator's
    wb = min(out.dtype.bytes, acc) if op.reduction_dims else out.dtype.bytes   # width
    fr = fw = np.inf
    for d in op.dims:
        r = wr = 0.0
        for t in (*op.inputs, out):
            if t.name not in exposed or d not in t.dims:
                continue
            den = float(np.prod([tiles[f] for f in op.dims if f not in t.dims]))
            if t is out:
                wr += wb / den
            else:
                r += t.dtype.bytes / den
        fr, fw = min(fr, r), min(fw, wr)
    return fr, fw


@pytest.mark.parametrize("w,arch", CASES, ids=lambda x: getattr(x, "name", x))
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_model_moves_at_least_the_floor_into_the_innermost_level(w, arch, seed):
    eng = _engine(w, arch)
    # one op, plain dims: the floor applies where calls cost something (not on cpu-6core,
    # whose levels below the array still check the lemma)
    assert (eng.exposure() is not None) == (eng.problem.compute.call > 0)
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m = _random_mapping(eng, rng)
        try:
            validate(w, eng.arch, m)
            break
        except tw.MappingError:
            continue
    else:
        return
    c = evaluate(w, eng.arch, m, check_capacity=False)
    inner = eng.arch.levels[-1].name
    tiles = dict(m.levels[-1].tiles)
    ways = (m.rows.ways if m.rows else 1) * (m.cols.ways if m.cols else 1)
    V = float(np.prod([w.sizes[d] for d in w.ops[0].dims])) / ways
    red_split = any(x and x.dim in w.ops[0].reduction_dims for x in (m.rows, m.cols))
    names = [t.name for t in (*w.ops[0].inputs, w.ops[0].output)]
    for k in range(len(names) + 1):
        for exposed in itertools.combinations(names, k):
            fr, fw = _by_hand(w, tiles, set(exposed))
            reads = sum(c.reads[inner].get(n, 0) for n in exposed)
            writes = sum(c.writes[inner].get(n, 0) for n in exposed)
            assert reads >= V * fr * (1 - 1e-12), (exposed, reads, V * fr)
            if not red_split:   # partial sums may merge across cores: no write floor
                assert writes >= V * fw * (1 - 1e-12), (exposed, writes, V * fw)


def test_the_tables_match_the_lemma():
    """:func:`.exposure.exposure`'s per-split volume and the write floor's rule."""
    eng = _engine(*CASES[0])
    xp = eng.exposure()
    sizes = np.prod([200.0, 360.0, 520.0])
    assert np.allclose(xp.volume, sizes / eng.ways.prod(1))
    k = eng.st.dims.index("k")
    assert (np.isinf(xp.wbw) == (eng.ways[:, k] > 1)).all()
    assert xp.call_s == pytest.approx(64 / 1e9)


def test_joint_floors_equal_the_least_over_every_combo():
    """Per node and double-buffer set, by a numpy scan of every listed combo:
    ``calls(c) * call_s + max(V fr(c') / rb, V fw(c') / wb)`` with ``c'`` the combo clipped
    to the node's largest tiles."""
    eng = Engine(tw.gemm(4096, 4096, 4096, dtype="i8"), load_arch("aie-4x2"), {})
    xp, n = eng.exposure(), 300
    cf, s, padded, small, whole = random_call_nodes(eng, n, seed=1)
    got = cf.steps(s, padded, small, whole, eng.problem.compute.op_mask).joint
    assert (got > 0).any() and xp.active.sum() == 2   # no DB, or C alone: A and B exposed
    names = [eng.st.tensors[t].name for t in eng.space.moved]
    for b in range(n):
        for u in range(cf.lo.shape[1]):
            if not cf.floored[s[b]] or not xp.active[u]:
                assert got[b, u] == 0.0
                continue
            c = cf.combos[cf.lo[s[b], u]:cf.hi[s[b], u]]
            t = np.minimum(c, whole[b])
            calls = np.prod(np.where(c >= small[b], -(-padded[b] // t), np.inf), axis=1)
            exposed = {names[i] for i in range(len(names)) if xp.exposed[u, i]}
            per = np.array([_by_hand(eng.workload, dict(zip(eng.st.dims, row)), exposed)
                            for row in t]).reshape(-1, 2)
            e = np.maximum(xp.volume[s[b]] * per[:, 0] / xp.rbw[s[b]],
                           xp.volume[s[b]] * per[:, 1] / xp.wbw[s[b]])
            want = (calls * xp.call_s + e).min() if len(c) else np.inf
            assert got[b, u] == pytest.approx(want, rel=1e-9), (b, u)


def test_the_cube_expands_a_sixth_of_the_nodes_for_the_same_answer():
    """GEMM 10^6 x 10^6 x 10^6 i8 on aie-4x2: the optimum (m32 n64 k256 core tiles, A and C
    double-buffered: 1.6 % over the compute bound, its calls) with 9,540 nodes, where the
    floors apart expanded 61,998 (every node whose core could buffer nothing sat 0.8 % under
    it)."""
    r = tw.search(tw.gemm(10**6, 10**6, 10**6, dtype="i8"), load_arch("aie-4x2"), top=5)
    best = r.top[0]
    assert dict(best.mapping.levels[-1].tiles) == {"m": 32, "n": 64, "k": 256}
    assert best.xslowdown == pytest.approx(1.0159576047290977, rel=1e-12)
    assert r.stats["nodes"] <= 10_000 and r.stats["proven_optimal"]
