"""Attention with its key dim split over the cores of a column (seed 003 §V.B): each core keeps
a partial (max, denominator, numerator) over its keys, merged by Eq. 12. The executor equals a
float64 softmax-attention reference, the model equals the walk, and the rule is one rule."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tilewise as tw
from tilewise.errors import MappingError
from tilewise.executor.interpreter import execute
from tilewise.executor.reference import random_inputs
from tilewise.model.cost import evaluate
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


def test_key_split_refused_where_partials_cannot_merge():
    w = tw.mha(32, 64, 16, dtype="f32")
    base = "ddr[h1 m32 n64 k16 e16] mnhke | memtile[h1 m32 n64 k16 e16] hmnke | core[h1 m32 n16 k16 e16]"
    with pytest.raises(MappingError, match="put it on rows"):
        evaluate(w, aie_like(), tw.Mapping.parse(base + " ; cols=n2"), check_capacity=False)
    with pytest.raises(MappingError, match="cannot reduce_cols"):
        evaluate(w, aie_like(reduce_cols=False), tw.Mapping.parse(base + " ; rows=n4"),
                 check_capacity=False)
    chain = tw.gemm_chain(16, 16, 16, 16, dtype="f32")  # its first GEMM's k: no merge rule
    assert "k" not in __import__("tilewise.model.structure", fromlist=["Structure"]).Structure(
        chain, aie_like()).mergeable
