"""IncrementalAttention (seed 003 §II.A caching): streamed blocks equal a full recompute."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tilewise.tiles.attention as attention_module
from tilewise.tiles.attention import IncrementalAttention, blocked_attention, naive_attention
from tilewise.errors import DTypeError, WorkloadError

TOL = {np.float16: 2e-3, np.float32: 2e-5}
BLOCK = st.one_of(st.sampled_from([1, 2, 3, 5, 7, 11, 13, 31]), st.integers(1, 40))


@given(st.sampled_from([np.float16, np.float32]), st.booleans(),
       st.sampled_from([None, 0.125]), st.integers(1, 12), st.integers(1, 9),
       st.lists(st.tuples(BLOCK, st.one_of(st.none(), BLOCK)), min_size=1, max_size=6),
       st.integers(1, 50), st.integers(1, 50), st.integers(0, 2**32 - 1))
def test_stream_equals_full_recompute_after_every_step(dt, causal, scale, dk, dv, blocks, qt, kt, seed):
    rng = np.random.default_rng(seed)
    inc = IncrementalAttention(causal=causal, scale=scale, q_tile=qt, kv_tile=kt)
    Qs, Ks, Vs = np.zeros((0, dk), dt), np.zeros((0, dk), dt), np.zeros((0, dv), dt)
    for bk, bq in blocks:
        K, V = rng.standard_normal((bk, dk)).astype(dt), rng.standard_normal((bk, dv)).astype(dt)
        Q = None if bq is None else rng.standard_normal((bq, dk)).astype(dt)
        # divide by zero raises; "invalid" is checked on the results instead (finite below):
        # OpenBLAS set the invalid flag once in CI on the score matmul of finite f16 inputs
        # (2026-11-29; hypothesis: "failed on the first call but not on a subsequent one",
        # not reproduced in 10 fresh runs), which cannot come from the inputs
        with np.errstate(divide="raise"):
            R = inc.append(K, V, Q)
        assert np.isfinite(R).all()
        Ks, Vs = np.concatenate([Ks, K]), np.concatenate([Vs, V])
        if Q is not None:
            Qs = np.concatenate([Qs, Q])
        full = naive_attention(Qs, Ks, Vs, causal=causal, scale=scale, compute_dtype=np.float64)
        assert R.dtype == dt and R.shape == (len(Qs), dv)
        np.testing.assert_allclose(R.astype(np.float64), full.astype(np.float64),
                                   atol=TOL[dt] * np.abs(Vs.astype(np.float64)).max(), rtol=0)
    np.testing.assert_array_equal(inc.keys, Ks)
    np.testing.assert_array_equal(inc.values, Vs)
    np.testing.assert_array_equal(inc.queries, Qs)


def _count_scores(monkeypatch):
    """Spy on the tile kernel: total query x key scores evaluated."""
    seen = [0]
    real = attention_module.attention_tile

    def spy(state, q, k, v, **kw):
        seen[0] += q.shape[-2] * k.shape[-2]
        return real(state, q, k, v, **kw)

    monkeypatch.setattr(attention_module, "attention_tile", spy)
    return seen


def test_old_blocks_are_never_recomputed(monkeypatch):
    seen = _count_scores(monkeypatch)
    rng = np.random.default_rng(1)
    inc = IncrementalAttention(q_tile=8, kv_tile=5)
    lq = lk = 0
    for bk, bq in [(7, 3), (1, 1), (13, 0), (4, 11), (2, 2)]:
        K, V = rng.standard_normal((bk, 16)), rng.standard_normal((bk, 4))
        Q = rng.standard_normal((bq, 16)) if bq else None
        before = seen[0]
        inc.append(K, V, Q)
        # old rows x new keys, then new rows x all keys: nothing else
        assert seen[0] - before == lq * bk + bq * (lk + bk)
        lq, lk = lq + bq, lk + bk


def test_causal_old_rows_untouched_when_queries_and_keys_arrive_together(monkeypatch):
    seen = _count_scores(monkeypatch)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 8)).astype(np.float32)
    inc = IncrementalAttention(causal=True, q_tile=64, kv_tile=64)
    done = 0
    for b in (5, 1, 13, 21):
        old = inc.result.copy() if done else None
        before = seen[0]
        R = inc.append(X[done:done + b], X[done:done + b], X[done:done + b])
        if old is not None:
            np.testing.assert_array_equal(R[:done], old)       # bitwise unchanged
        assert seen[0] - before == b * (done + b)               # only the new rows' scores
        done += b
    np.testing.assert_allclose(R, blocked_attention(X, X, X, 7, 9, causal=True), atol=1e-6)


def test_keys_before_queries_and_heads():
    rng = np.random.default_rng(3)
    K, V, Q = (rng.standard_normal((2, 30, 8)).astype(np.float32) for _ in range(3))
    inc = IncrementalAttention(causal=True, scale=8 ** -0.5)
    inc.append(K[:, :20], V[:, :20])                          # a prefix of keys, no queries yet
    assert inc.result.shape == (2, 0, 8)
    inc.append(K[:, 20:], V[:, 20:], Q[:, :25])              # queries 0..24 see keys 0..i
    ref = naive_attention(Q[:, :25], K, V, causal=True, scale=8 ** -0.5, compute_dtype=np.float64)
    np.testing.assert_allclose(inc.result, ref, atol=2e-6)
    assert inc.state.max.shape == (2, 25) and inc.state.numer.shape == (2, 25, 8)


def test_result_is_read_only_and_errors():
    inc = IncrementalAttention()
    with pytest.raises(WorkloadError, match="nothing appended yet"):
        inc.result
    x = np.ones((3, 4), np.float32)
    R = inc.append(x, x, x)
    with pytest.raises(ValueError, match="read-only"):
        R[0, 0] = 1
    with pytest.raises(WorkloadError, match=r"K_new is f32 of shape \(2, 5\); earlier blocks fix it "
                                            r"to f32 of shape \(rows, 4\)"):
        inc.append(np.ones((2, 5), np.float32), np.ones((2, 4), np.float32))
    with pytest.raises(DTypeError, match="Q, K, V are f16, f32, f32; need one float type"):
        inc.append(x, x, x.astype(np.float16))
    with pytest.raises(WorkloadError, match=r"K_new is f16 of shape \(3, 4\); earlier blocks fix it to f32"):
        inc.append(*(x.astype(np.float16),) * 3)
    with pytest.raises(WorkloadError, match="need the same number of rows"):
        inc.append(x, x[:2])
    with pytest.raises(WorkloadError, match="same leading dims"):
        inc.append(x[None], x[None], x)
