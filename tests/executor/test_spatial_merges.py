"""Reductions of fused chains split over the cores of a column, merged exactly.

Attention (seed 003 §V.B): each core keeps a partial (max, denominator, numerator) over its
keys, merged by Eq. 12. LayerNorm (§V.C): each core's Welford moments over its columns,
merged by Chan's formula before the normalize pass. The executor equals float64 references
and the model equals the walk."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tilewise as tw
from tilewise.errors import MappingError
from tilewise.executor.interpreter import execute
from tilewise.executor.reference import random_inputs
from tilewise.model.cost import evaluate
from tilewise.model.structure import Structure
from tilewise.simulation.trace import simulate
from tilewise.tiles.kernels import SoftmaxState, attention_tile, merge_softmax

from ..model.archs import aie_like, four_level
from ..model.strategies import mappings
from .workloads import attention


def _float64_attention(data, causal=False, mask=None):
    """softmax(Q Kᵀ) V per head in float64, from scratch (no tilewise code)."""
    q, k, v = (data[n].astype(np.float64) for n in "QKV")
    s = np.einsum("hmk,hnk->hmn", q, k)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0, top)
    e = np.exp(s - top)
    den = e.sum(axis=-1, keepdims=True)
    return np.divide(np.einsum("hmn,hne->hme", e, v), den, out=np.zeros(q.shape[:2] + v.shape[2:]),
                     where=den > 0)


def test_merge_of_two_key_halves_equals_one_pass():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(10, 4)) * 4, rng.normal(size=(10, 5))
    whole = attention_tile(SoftmaxState.empty(3, 5, np.float64), q, k, v)
    a = attention_tile(SoftmaxState.empty(3, 5, np.float64), q, k[:6], v[:6])
    b = attention_tile(SoftmaxState.empty(3, 5, np.float64), q, k[6:], v[6:])
    empty = SoftmaxState.empty(3, 5, np.float64)  # a core that saw no key
    merge_softmax(a.max, a.denom, a.numer, empty.max, empty.denom, empty.numer)
    merge_softmax(a.max, a.denom, a.numer, b.max, b.denom, b.numer)
    np.testing.assert_allclose(a.max, whole.max)
    np.testing.assert_allclose(a.denom, whole.denom, rtol=1e-12)
    np.testing.assert_allclose(a.numer, whole.numer, rtol=1e-12)


@pytest.mark.parametrize("text", [
    # keys over the 4 rows, queries over the 2 columns; the memtile keeps every key
    "ddr[h1 m32 n64 k16 e16] mnhke | memtile[h1 m32 n64 k16 e16] hmnke | core[h1 m16 n16 k16 e16] ; rows=n4 cols=m2",
    # the key loop outside the query loop at DDR: partial states stored and merged twice
    "ddr[h1 m32 n64 k16 e16] nmhke | memtile[h1 m16 n32 k16 e16] hmnke | core[h1 m16 n8 k16 e8] ; rows=n4",
    # 40 keys in array tiles of 32: the second leaves three cores of each column idle
    "ddr[h1 m32 n40 k16 e16] mnhke | memtile[h1 m32 n40 k16 e16] hmnke | core[h1 m16 n8 k16 e16] ; rows=n4 cols=m2",
])
def test_key_split_executes_to_float64_attention_and_model_equals_walk(text):
    n = 40 if "n40" in text else 64
    w, arch = tw.mha(32, n, 16, dtype="f32"), aie_like()
    m = tw.Mapping.parse(text)
    data = random_inputs(w, 3)
    got = execute(w, m, data, arch=arch)["O"]
    np.testing.assert_allclose(got, _float64_attention(data), rtol=1e-5, atol=1e-6)
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.fills, c.drains) == (t.reads, t.writes, t.fills, t.drains)
    assert (c.footprint, c.steps, c.padded_points) == (t.peak, t.steps, t.padded_points)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.data())
def test_random_key_splits_with_causal_masks(data):
    Lq, Lkv, d = (data.draw(st.integers(1, 9)) for _ in range(3))
    w = attention(Lq, Lkv, d, heads=data.draw(st.integers(1, 2)), dtype="f32",
                  causal=data.draw(st.booleans()))
    arch = aie_like(4, 2, alignment={"m": 2, "k": 2})
    m = data.draw(mappings(w, arch).filter(
        lambda m: any(sp and sp.dim == "n" for sp in (m.rows, m.cols))))
    assume(evaluate(w, arch, m, check_capacity=False).fits)
    inputs = random_inputs(w, data.draw(st.integers(0, 99)))
    with np.errstate(invalid="raise", divide="raise"):
        got = execute(w, m, inputs, arch=arch)["O"]
    want = _float64_attention(inputs, causal=w.ops[1].attrs["causal"])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=str(m))
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.fills, c.drains, c.steps) == (
        t.reads, t.writes, t.fills, t.drains, t.steps), str(m)


def test_splits_refused_where_partials_cannot_merge():
    chain = tw.gemm_chain(16, 16, 16, 16, dtype="f32")  # its first GEMM's k: no merge rule
    assert "k" not in Structure(chain, aie_like()).mergeable
    ln = tw.layernorm(8, 64, dtype="f32")  # fused statistics: only along the reduction path
    base = "ddr[r8 c64] rc | memtile[r8 c64] rc | core[r8 c32]"
    assert Structure(ln, aie_like()).parent_mergeable == frozenset()
    with pytest.raises(MappingError, match="put it on rows"):
        evaluate(ln, aie_like(), tw.Mapping.parse(base + " ; cols=c2"), check_capacity=False)
    with pytest.raises(MappingError, match="cannot reduce_cols"):
        evaluate(ln, aie_like(reduce_cols=False),
                 tw.Mapping.parse(base.replace("c32]", "c16]") + " ; rows=c4"),
                 check_capacity=False)


# ----- partials merged through the parent level (no reduction path on that axis) ------------

THROUGH = [
    # keys over all 8 cores: 4 rows merge along the column, the 2 columns through the memtile
    (aie_like(), "mha", "ddr[h1 m32 n64 k16 e16] mnhke | memtile[h1 m32 n64 k16 e16] hmnke | core[h1 m16 n8 k16 e16] ; rows=n4 cols=n2"),
    # the key loop outside the query loop, the value dim tiled, keys over the columns only
    (aie_like(), "mha", "ddr[h1 m32 n64 k16 e16] nmhke | memtile[h1 m32 n32 k16 e16] hmnke | core[h1 m16 n8 k16 e8] ; rows=m2 cols=n2"),
    # an array that cannot reduce along its columns: the rows' partials go through the memtile
    (aie_like(reduce_cols=False), "gemm", "ddr[m32 n16 k64] kmn | memtile[m32 n16 k32] mnk | core[m8 n16 k8] ; rows=k4 cols=m2"),
    (aie_like(), "gemm", "ddr[m32 n16 k64] mnk | memtile[m32 n16 k32] mnk | core[m16 n16 k8] ; rows=k2 cols=k2"),
]


@pytest.mark.parametrize("arch,kind,text", THROUGH)
def test_partials_through_the_parent_execute_and_model_equals_walk(arch, kind, text):
    w = tw.mha(32, 64, 16, dtype="f32") if kind == "mha" else tw.gemm(32, 16, 64, dtype="i8")
    m = tw.Mapping.parse(text)
    data = random_inputs(w, 11)
    got = execute(w, m, data, arch=arch)
    if kind == "mha":
        np.testing.assert_allclose(got["O"], _float64_attention(data), rtol=1e-5, atol=1e-6)
    else:
        want = data["A"].astype(np.int64) @ data["B"].astype(np.int64)
        np.testing.assert_array_equal(got["C"], want)
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.reloads) == (t.reads, t.writes, t.reloads)
    assert (c.fills, c.drains, c.footprint) == (t.fills, t.drains, t.peak)


def test_partials_through_the_parent_hand_counted():
    """K of a 16x16x32 GEMM over the 2 columns: the second column writes its 16x16 i32
    partial to the memtile, the first reads it back, merges and writes the i8 result."""
    w = tw.gemm(16, 16, 32, dtype="i8", out_dtype="i8")
    m = tw.Mapping.parse("ddr[m16 n16 k32] mnk | memtile[m16 n16 k32] mnk | core[m16 n16 k16] ; cols=k2")
    c = evaluate(w, aie_like(), m, check_capacity=False)
    assert c.writes["core"]["C"] == 16 * 16 * 4 + 16 * 16 * 1
    assert c.reloads["core"]["C"] == 16 * 16 * 4
    assert (c.drains["core"]["C"], c.fills["core"]["C"]) == (2, 1)
    assert c.writes["memtile"]["C"] == 16 * 16 * 1  # one converted store to DDR
    np.testing.assert_array_equal(
        execute(w, m, seed=2, arch=aie_like())["C"],
        tw.reference(w, random_inputs(w, 2))["C"])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.data())
def test_random_splits_through_the_parent(data):
    arch = data.draw(st.sampled_from([aie_like(4, 2, alignment={"m": 2, "k": 2}),
                                      aie_like(2, 3, broadcast=False, reduce_cols=False)]))
    if data.draw(st.booleans()):
        w = attention(*(data.draw(st.integers(1, 9)) for _ in range(3)), dtype="f32",
                      causal=data.draw(st.booleans()))
    else:
        w = tw.gemm(*(data.draw(st.integers(1, 9)) for _ in range(3)),
                    dtype=data.draw(st.sampled_from(["i8", "f32"])))
    red = set(w.ops[-1].reduction_dims)
    through = lambda m: (m.cols is not None and m.cols.dim in red) or (
        m.rows is not None and m.rows.dim in red and not arch.array.reduce_cols)
    m = data.draw(mappings(w, arch, through=True).filter(through))
    assume(evaluate(w, arch, m, check_capacity=False).fits)
    with np.errstate(invalid="raise", divide="raise"):
        report = tw.verify(w, m, seed=data.draw(st.integers(0, 99)), arch=arch)
    assert report.passed, f"{m}\n{report}"
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.reloads, c.fills, c.drains, c.footprint) == (
        t.reads, t.writes, t.reloads, t.fills, t.drains, t.peak), str(m)


# ----- LayerNorm: the normalized dim c split over the cores of a column ---------------------

def _float64_layernorm(data, eps=1e-5):
    x = data["X"].astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * data["gamma"].astype(np.float64) + data["beta"]


@pytest.mark.parametrize("text", [
    # each core a quarter of every row: one pass over X (the column holds whole rows)
    "ddr[r8 c64] rc | memtile[r8 c64] rc | core[r2 c16] ; rows=c4 cols=r2",
    # a real c loop above the cores: the statistics pass and the normalize pass each read X
    "ddr[r8 c64] rc | memtile[r8 c64] rc | core[r2 c8] ; rows=c4",
    # 60 columns in array tiles of 32: the second tile's last core holds 4 columns
    "ddr[r8 c60] rc | memtile[r8 c60] rc | core[r2 c8] ; rows=c4",
])
def test_layernorm_column_split_merges_statistics_with_chan(text):
    w, arch = tw.layernorm(8, 60 if "c60" in text else 64, dtype="f32"), aie_like()
    m = tw.Mapping.parse(text)
    data = random_inputs(w, 5)
    np.testing.assert_allclose(execute(w, m, data, arch=arch)["Y"], _float64_layernorm(data),
                               rtol=1e-5, atol=1e-5)
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.fills, c.drains) == (t.reads, t.writes, t.fills, t.drains)
    assert (c.footprint, c.steps, c.padded_points) == (t.peak, t.steps, t.padded_points)
    one_pass = w.sizes["r"] * w.sizes["c"] * 4
    assert c.reads["core"]["X"] == (one_pass if "c16" in text else 2 * one_pass)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(st.data())
def test_random_layernorm_column_splits(data):
    w = tw.layernorm(data.draw(st.integers(1, 9)), data.draw(st.integers(1, 40)),
                     dtype=data.draw(st.sampled_from(["f32", "bf16"])))
    arch = aie_like(4, 2)
    m = data.draw(mappings(w, arch).filter(lambda m: m.rows is not None and m.rows.dim == "c"))
    assume(evaluate(w, arch, m, check_capacity=False).fits)
    report = tw.verify(w, m, seed=data.draw(st.integers(0, 99)), arch=arch)
    assert report.passed, f"{m}\n{report}"
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert (c.reads, c.writes, c.fills, c.drains, c.steps) == (
        t.reads, t.writes, t.fills, t.drains, t.steps), str(m)
