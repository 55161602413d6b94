"""Blocked online-softmax attention against a plain per-row softmax reference."""

import tracemalloc

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tilewise.tiles.attention import blocked_attention, naive_attention
from tilewise.errors import DTypeError, MappingError, WorkloadError
from tilewise.tiles.kernels import SoftmaxState, attention_tile, finalize_attention, online_softmax

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
# Output rounding of the result (|R| <= max|V|) plus f32 accumulation.
TOL = {"f16": 2e-3, "bf16": 1.6e-2, "f32": 2e-5, "f64": 1e-12}


def softmax_reference(Q, K, V, visible, scale):
    """Row by row in float64: softmax over the visible keys, 0 for a row that sees none."""
    Q, K, V = (np.asarray(x, np.float64) for x in (Q, K, V))
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Q, K, V = (np.broadcast_to(x, lead + x.shape[-2:]) for x in (Q, K, V))
    vis = np.broadcast_to(visible, lead + (Q.shape[-2], K.shape[-2]))
    out = np.zeros(lead + (Q.shape[-2], V.shape[-1]))
    for idx in np.ndindex(*lead, Q.shape[-2]):
        h, i = idx[:-1], idx[-1]
        keep = vis[h + (i,)]
        if keep.any():
            s = scale * (K[h][keep] @ Q[h + (i,)])
            w = np.exp(s - s.max())
            out[h + (i,)] = (w / w.sum()) @ V[h][keep]
    return out


def _visible(Lq, Lkv, mask, causal):
    v = np.ones((Lq, Lkv), bool) if mask is None else mask
    return v & (np.arange(Lkv)[None, :] <= np.arange(Lq)[:, None]) if causal else v


@st.composite
def problems(draw):
    name = draw(st.sampled_from(sorted(DTYPES)))
    lead = draw(st.sampled_from([(), (2,), (2, 3)]))
    Lq, Lkv = draw(st.integers(1, 41)), draw(st.integers(1, 53))
    dk, dv = draw(st.integers(1, 17)), draw(st.integers(1, 13))
    qt, kt = draw(st.integers(1, 45)), draw(st.integers(1, 60))
    causal = draw(st.booleans())
    mask_kind = draw(st.sampled_from(["none", "random", "sparse"]))
    scale = draw(st.sampled_from([None, 1.0, "sqrt", 0.37]))
    seed = draw(st.integers(0, 2**32 - 1))
    return name, lead, Lq, Lkv, dk, dv, qt, kt, causal, mask_kind, scale, seed


@given(problems())
def test_blocked_equals_reference(problem):
    name, lead, Lq, Lkv, dk, dv, qt, kt, causal, mask_kind, scale, seed = problem
    rng = np.random.default_rng(seed)
    dt = DTYPES[name]
    Q = (rng.standard_normal(lead + (Lq, dk)) * 2).astype(dt)
    K = (rng.standard_normal(lead[-1:] + (Lkv, dk)) * 2).astype(dt)   # heads broadcast
    V = rng.standard_normal((Lkv, dv)).astype(dt)
    mask = None if mask_kind == "none" else rng.random((Lq, Lkv)) < (0.7 if mask_kind == "random" else 0.08)
    sc = 1 / np.sqrt(dk) if scale == "sqrt" else scale
    with np.errstate(invalid="raise", divide="raise"):     # no (-inf) - (-inf), no 0/0
        got = blocked_attention(Q, K, V, qt, kt, mask=mask, causal=causal, scale=sc)
        naive = naive_attention(Q, K, V, mask=mask, causal=causal, scale=sc,
                                compute_dtype=np.float64)
    ref = softmax_reference(Q, K, V, _visible(Lq, Lkv, mask, causal), 1.0 if sc is None else sc)
    assert got.dtype == dt and got.shape == ref.shape
    atol = TOL[name] * max(1.0, float(np.abs(V.astype(np.float64)).max()))
    np.testing.assert_allclose(got.astype(np.float64), ref, atol=atol, rtol=0)
    np.testing.assert_allclose(naive.astype(np.float64), ref, atol=atol, rtol=0)


def test_fully_masked_rows_are_zero_not_nan():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((9, 4), dtype=np.float32) for _ in range(3))
    mask = rng.random((9, 9)) < 0.5
    mask[2] = False                      # row 2 sees nothing
    mask[5] = False
    mask[5, 8] = True                    # row 5 sees only the last key: M = -inf for 2 tiles
    with np.errstate(invalid="raise", divide="raise"):
        got = blocked_attention(Q, K, V, q_tile=4, kv_tile=3, mask=mask)
    assert not np.isnan(got).any()
    assert np.all(got[2] == 0)
    np.testing.assert_allclose(got[5], V[8], rtol=1e-6)
    np.testing.assert_allclose(got, softmax_reference(Q, K, V, mask, 1.0), atol=1e-6)


def test_online_softmax_row_without_visible_key_keeps_minus_inf_state():
    row_max, denom = np.full(2, -np.inf, np.float32), np.zeros(2, np.float32)
    scores = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    mask = np.array([[False, False], [True, False]])
    with np.errstate(invalid="raise"):
        alpha = online_softmax(row_max, denom, scores, mask)
    assert row_max.tolist() == [-np.inf, 3.0] and denom.tolist() == [0.0, 1.0]
    assert alpha.tolist() == [0.0, 0.0]
    assert scores.tolist() == [[0.0, 0.0], [1.0, 0.0]]     # overwritten with E = exp(S - M')


def test_f16_inputs_whose_naive_f16_softmax_overflows():
    rng = np.random.default_rng(7)
    L, d = 50, 64
    Q = (rng.standard_normal((L, d)) * 100).astype(np.float16)    # scores ~ 1e5 > 65504
    K = (rng.standard_normal((L, d)) * 100).astype(np.float16)
    V = rng.standard_normal((L, d)).astype(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):    # the naive all-f16 way: inf and NaN
        S16 = Q @ K.T
        E16 = np.exp(S16 - S16.max(axis=1, keepdims=True))
        naive16 = (E16 / E16.sum(axis=1, keepdims=True)) @ V
    assert np.isinf(S16).any() and np.isnan(naive16).any()
    got = blocked_attention(Q, K, V, q_tile=16, kv_tile=7)
    ref = softmax_reference(Q, K, V, np.ones((L, L), bool), 1.0)
    assert got.dtype == np.float16 and np.isfinite(got).all()
    np.testing.assert_allclose(got.astype(np.float64), ref, atol=2e-3 * np.abs(ref).max())


def test_padded_key_tile_ignores_padding_even_if_garbage():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((5, 8)).astype(np.float32)
    k = rng.standard_normal((7, 8)).astype(np.float32)
    v = rng.standard_normal((7, 3)).astype(np.float32)
    kp, vp = np.full((12, 8), np.nan, np.float32), np.full((12, 3), np.inf, np.float32)
    kp[:7], vp[:7] = k, v                 # a 12-key tile of which 7 are real (L = 7)
    a, b = SoftmaxState.empty(5, 3), SoftmaxState.empty(5, 3)
    attention_tile(a, q, k, v)
    attention_tile(b, q, kp, vp, keys=7)
    np.testing.assert_array_equal(finalize_attention(a), finalize_attention(b))


def test_scale_none_is_the_seed_unscaled_softmax():
    rng = np.random.default_rng(4)
    Q, K, V = (rng.standard_normal((6, 16), dtype=np.float32) for _ in range(3))
    unscaled = blocked_attention(Q, K, V, 4, 4)
    np.testing.assert_array_equal(unscaled, blocked_attention(Q, K, V, 4, 4, scale=1.0))
    ref = softmax_reference(Q, K, V, np.ones((6, 6), bool), 1.0)
    np.testing.assert_allclose(unscaled, ref, atol=2e-6)
    scaled = blocked_attention(Q, K, V, 4, 4, scale=0.25)
    np.testing.assert_allclose(scaled, softmax_reference(Q, K, V, np.ones((6, 6), bool), 0.25), atol=2e-6)


def test_memory_is_tiles_not_l_squared():
    L, d, t = 2048, 32, 256
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((L, d), dtype=np.float32) for _ in range(3))
    scores_bytes = L * L * 4                                  # 16 MiB of f32 scores
    tracemalloc.start()
    try:
        blocked_attention(Q, K, V, q_tile=t, kv_tile=t)
        blocked_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        naive_attention(Q, K, V)
        naive_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert naive_peak >= scores_bytes
    # result (L*d) + one query tile, its state and one t x t score tile, with slack: < L²/8
    assert blocked_peak < scores_bytes / 8


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((np.ones((4, 2), np.int8),) * 3, {}, DTypeError, "Q, K, V are i8, i8, i8; need one float type"),
    ((np.ones((4, 2), np.float32), np.ones((4, 2), np.float16), np.ones((4, 2), np.float32)), {},
     DTypeError, "f32, f16, f32"),
    ((np.ones((4, 2)), np.ones((4, 3)), np.ones((4, 2))), {}, WorkloadError,
     r"Q \(4, 2\) and K \(4, 3\) differ in the last \(contraction\) dim 2 != 3"),
    ((np.ones((4, 2)), np.ones((4, 2)), np.ones((5, 2))), {}, WorkloadError,
     "need the same number of rows"),
    ((np.ones(4),) * 3, {}, WorkloadError, r"Q has shape \(4,\); need \(..., rows, dim\)"),
    ((np.ones((2, 4, 2)), np.ones((3, 4, 2)), np.ones((3, 4, 2))), {}, WorkloadError,
     "do not broadcast"),
    ((np.ones((4, 2)),) * 3, {"mask": np.ones((4, 4))}, WorkloadError, "mask has dtype float64; need bool"),
    ((np.ones((4, 2)),) * 3, {"mask": np.ones((3, 4), bool)}, WorkloadError,
     r"mask of shape \(3, 4\) does not broadcast to the score shape \(4, 4\)"),
    ((np.ones((4, 2)),) * 3, {"scale": float("nan")}, WorkloadError, "scale nan must be a finite number"),
])
def test_errors(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        blocked_attention(*args, q_tile=2, kv_tile=2, **kwargs)


def test_tile_size_errors():
    x = np.ones((4, 2), np.float32)
    with pytest.raises(MappingError, match="q_tile 0 must be a positive integer"):
        blocked_attention(x, x, x, q_tile=0, kv_tile=2)
    with pytest.raises(MappingError, match="kv_tile 2.5 must be a positive integer"):
        blocked_attention(x, x, x, q_tile=2, kv_tile=2.5)


def test_all_scores_very_negative_is_not_0_over_0():
    # seed 003 starts the running max at 0: exp(-400 - 0) underflows and D = 0. Ours starts at -inf.
    Q = np.full((3, 4), -10, np.float32)
    K = np.full((5, 4), 10, np.float32)                   # every score is -400
    V = np.arange(20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_array_equal(blocked_attention(Q, K, V, 2, 2), np.tile(V.mean(axis=0), (3, 1)))
