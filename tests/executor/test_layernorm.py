"""LayerNorm with mergeable (Welford/Chan) statistics over column tiles."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tilewise.tiles.layernorm as ln
from tilewise.errors import DTypeError, MappingError, WorkloadError

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
TOL = {"f16": 4e-3, "bf16": 3e-2, "f32": 1e-5, "f64": 1e-12}   # output rounding, |y| ~ 4


@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 13), st.integers(1, 150),
       st.integers(1, 160), st.one_of(st.none(), st.integers(1, 14)),
       st.sampled_from([1e-5, 0.0, 0.5]), st.floats(-100, 100), st.integers(0, 2**32 - 1))
def test_blocked_layernorm_equals_numpy(name, rows, cols, col_tile, row_tile, eps, offset, seed):
    rng = np.random.default_rng(seed)
    dt = DTYPES[name]
    X = (offset + rng.standard_normal((rows, cols)) * rng.uniform(0.1, 3)).astype(dt)
    if eps == 0.0 and (np.ptp(X.astype(np.float64), axis=1) == 0).any():
        eps = 1e-5   # a constant row (one column, or every value rounded alike): var = 0, 0/0
    gamma, beta = rng.standard_normal(cols).astype(dt), rng.standard_normal(cols).astype(dt)
    got = ln.blocked_layernorm(X, gamma, beta, col_tile, row_tile, eps=eps)
    x = X.astype(np.float64)
    mean, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    ref = (x - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)
    assert got.dtype == dt and got.shape == X.shape
    scale = max(1.0, float(np.abs(ref).max()))
    # Rounding the mean in the accumulator costs ~ulp(mean)/std in y: the condition number.
    cond = 1 + float(np.abs(mean).max() / np.sqrt(var + eps).min())
    acc_eps = np.finfo(np.float64 if name == "f64" else np.float32).eps
    atol = (TOL[name] + 64 * acc_eps * cond) * scale
    np.testing.assert_allclose(got.astype(np.float64), ref, atol=atol, rtol=0)
    np.testing.assert_array_equal(ln.reference_layernorm(X, gamma, beta, eps), ref.astype(dt))


@given(st.integers(1, 6), st.lists(st.integers(0, 40), min_size=1, max_size=8), st.integers(0, 2**32 - 1))
def test_chan_merge_of_any_partition_equals_whole_row_statistics(rows, widths, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, sum(widths))) * 5 + 3
    parts, c0 = [], 0
    for w in widths:
        parts.append(ln.tile_moments(X[:, c0:c0 + w]))
        c0 += w
    order = rng.permutation(len(parts))              # merging is order independent
    m = parts[order[0]]
    for i in order[1:]:
        m = ln.merge_moments(m, parts[i])
    assert m.count == X.shape[1]
    if X.shape[1]:
        np.testing.assert_allclose(m.mean, X.mean(axis=1), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(m.variance, X.var(axis=1), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("noise, ours_tol", [(1.0, 1e-3), (0.01, 2e-2)])
def test_large_offset_f32_statistics_are_robust_where_naive_fails(noise, ours_tol):
    rng = np.random.default_rng(0)
    X = (np.float32(1e4) + rng.standard_normal((8, 4096)) * noise).astype(np.float32)
    var = X.astype(np.float64).var(axis=1)           # exact variance of the f32 data
    naive = (X * X).mean(axis=1) - X.mean(axis=1) ** 2   # E[x²] - E[x]² in f32
    assert np.abs(naive / var - 1).max() > 0.5       # cancellation: garbage (even < 0)
    m = ln.tile_moments(X[:, :0])
    for c0 in range(0, 4096, 100):                   # 41 column tiles, one streaming pass
        m = ln.merge_moments(m, ln.tile_moments(X[:, c0:c0 + 100]))
    assert m.mean.dtype == np.float32
    assert np.abs(m.variance / var - 1).max() < ours_tol
    Y = ln.blocked_layernorm(X, np.ones(4096, np.float32), np.zeros(4096, np.float32), 100, eps=0)
    np.testing.assert_allclose(Y.std(axis=1, dtype=np.float64), 1, rtol=ours_tol)


def test_statistics_read_each_column_tile_once(monkeypatch):
    calls = []
    real = ln.tile_moments
    monkeypatch.setattr(ln, "tile_moments", lambda x: calls.append(x.shape) or real(x))
    X = np.random.default_rng(1).standard_normal((10, 23)).astype(np.float32)
    ln.blocked_layernorm(X, np.ones(23, np.float32), np.zeros(23, np.float32), col_tile=5, row_tile=4)
    widths = [w for r, w in calls if w]              # the (r, 0) call is the empty start state
    assert widths == [5, 5, 5, 5, 3] * 3             # 3 row tiles x 5 column tiles, each once
    calls.clear()
    ln.blocked_layernorm(X, np.ones(23, np.float32), np.zeros(23, np.float32), col_tile=64)
    assert calls == [(10, 23)]                       # whole row resident: one read, one pass


def test_errors():
    X = np.ones((2, 3), np.float32)
    g = np.ones(3, np.float32)
    with pytest.raises(DTypeError, match="input is i8; need a float type"):
        ln.blocked_layernorm(X.astype(np.int8), g, g, 2)
    with pytest.raises(WorkloadError, match=r"gamma \(4,\) and beta \(3,\) must both be \(3,\)"):
        ln.blocked_layernorm(X, np.ones(4), g, 2)
    with pytest.raises(MappingError, match="col_tile 0 must be a positive integer"):
        ln.blocked_layernorm(X, g, g, 0)
    with pytest.raises(MappingError, match="row_tile -1 must be a positive integer"):
        ln.blocked_layernorm(X, g, g, 2, row_tile=-1)
    with pytest.raises(WorkloadError, match=r"X must be 2-d \(rows, cols\), got shape \(3,\)"):
        ln.blocked_layernorm(g, g, g, 2)
    with pytest.raises(WorkloadError, match="eps -1 must be a number >= 0"):
        ln.blocked_layernorm(X, g, g, 2, eps=-1)
    with pytest.raises(WorkloadError, match="cannot merge statistics of 2 rows with 1 rows"):
        ln.merge_moments(ln.tile_moments(X), ln.tile_moments(X[:1]))
