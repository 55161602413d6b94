"""mac_tile / einsum_tile: exact integer accumulation in int32, 16-bit floats in f32."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

from tilewise.errors import DTypeError, WorkloadError
from tilewise.tiles.kernels import einsum_tile, mac_tile

ACC = {"i8": np.int32, "i16": np.int32, "i32": np.int32, "u8": np.int32,
       "f16": np.float32, "bf16": np.float32, "f32": np.float32, "f64": np.float64}
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "u8": np.uint8, "f16": np.float16,
      "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
FLOAT_TOL = {"f16": 1e-5, "bf16": 1e-5, "f32": 1e-5, "f64": 1e-12}  # relative to sum |a||b|


def _data(rng, name, shape):
    t = np.dtype(NP[name])
    if t.kind in "iu":
        info = np.iinfo(t)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=t)
    return rng.standard_normal(shape).astype(t)


def _wrap32(x):
    """Exact Python-int values reduced to a two's-complement int32."""
    return ((np.asarray(x, dtype=object) + 2**31) % 2**32 - 2**31).astype(np.int64)


def _exact_matmul(a, b):
    """Arbitrary-precision reference (Python ints)."""
    return np.matmul(a.astype(object), b.astype(object))


@given(st.sampled_from(sorted(ACC)), st.integers(1, 23), st.integers(1, 29), st.integers(1, 31),
       st.sampled_from([(), (3,), (2, 1)]), st.lists(st.integers(1, 30), max_size=3),
       st.integers(0, 2**32 - 1))
def test_mac_tile_k_split_equals_reference(name, m, n, k, batch, cuts, seed):
    rng = np.random.default_rng(seed)
    a, b = _data(rng, name, batch + (m, k)), _data(rng, name, batch[:1] + (k, n))
    lead = np.broadcast_shapes(batch, batch[:1])
    acc = np.zeros(lead + (m, n), ACC[name])
    bounds = sorted({0, k, *(c for c in cuts if c < k)})
    for k0, k1 in zip(bounds, bounds[1:]):      # the K loop: partial sums into one accumulator
        assert mac_tile(acc, a[..., k0:k1], b[..., k0:k1, :]) is acc
    assert acc.dtype == ACC[name] and acc.shape == lead + (m, n)
    if np.dtype(NP[name]).kind in "iu":
        np.testing.assert_array_equal(acc.astype(np.int64), _wrap32(_exact_matmul(a, b)))
    else:
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        scale = np.abs(a64) @ np.abs(b64) + 1e-30
        assert np.all(np.abs(acc - a64 @ b64) <= FLOAT_TOL[name] * scale)


def test_int8_result_equals_int64_reference_when_it_fits():
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 127, (64, 4096), endpoint=True, dtype=np.int8)
    b = rng.integers(-128, 127, (4096, 48), endpoint=True, dtype=np.int8)
    a[0] = -128
    b[:, 0] = -128                              # one extreme: 4096 * 2**14 = 2**26
    acc = mac_tile(np.zeros((64, 48), np.int32), a, b)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    assert acc.dtype == np.int32 and ref[0, 0] == 2**26
    np.testing.assert_array_equal(acc, ref)


def test_int16_overflow_wraps_like_an_int32_accumulator():
    a = np.full((2, 4), -32768, np.int16)       # 4 * 2**30 = 2**32: wraps to 0
    b = np.full((4, 3), -32768, np.int16)
    b[0, 1] = 32767                              # 3 * 2**30 - 32768 * 32767: wraps negative
    acc = mac_tile(np.zeros((2, 3), np.int32), a, b)
    np.testing.assert_array_equal(acc, _wrap32(_exact_matmul(a, b)))
    assert acc[0, 0] == 0 and acc[0, 1] == 3 * 2**30 - 32768 * 32767 - 2**32 == -2147450880


def test_int32_inputs_wrap_modulo_2_32():
    a = np.array([[2**31 - 1, -2**31, 12345]], np.int32)
    b = np.array([[2**31 - 1], [-2**31], [-7]], np.int32)
    acc = mac_tile(np.zeros((1, 1), np.int32), a, b)
    assert acc[0, 0] == _wrap32(_exact_matmul(a, b))[0, 0]


def test_chain_intermediate_i32_times_i8_accumulates_in_i32():
    c = np.array([[70000, -3]], np.int32)       # a finished i32 GEMM tile feeding the next GEMM
    d = np.array([[2], [5]], np.int8)
    assert mac_tile(np.zeros((1, 1), np.int32), c, d)[0, 0] == 139985


def test_bf16_accumulates_in_f32_not_bf16():
    a = np.ones((1, 512), ml_dtypes.bfloat16)
    b = np.ones((512, 1), ml_dtypes.bfloat16)
    b[:256] = 1 / 256                            # a bf16 running sum would stall at 256 + ...
    acc = mac_tile(np.zeros((1, 1), np.float32), a, b)
    assert acc[0, 0] == 257.0


@pytest.mark.parametrize("acc_dtype, operands, word", [
    (np.float32, (np.int8, np.int8), "i32"),
    (np.int32, (np.float16, np.float16), "f32"),
    (np.int32, (np.int8, np.float16), "f32"),
    (np.float16, (np.float16, np.float16), "f32"),
])
def test_wrong_accumulator_is_a_dtype_error(acc_dtype, operands, word):
    a, b = np.ones((2, 3), operands[0]), np.ones((3, 2), operands[1])
    with pytest.raises(DTypeError, match=f"accumulates in {word}.*pass a {word} accumulator"):
        mac_tile(np.zeros((2, 2), acc_dtype), a, b)


def test_shape_errors_name_the_shapes():
    with pytest.raises(WorkloadError, match=r"A \(2, 3\) @ B \(4, 2\) needs .* same k"):
        mac_tile(np.zeros((2, 2), np.int32), np.ones((2, 3), np.int8), np.ones((4, 2), np.int8))
    with pytest.raises(WorkloadError, match=r"gives \(2, 5\), but the accumulator tile is \(2, 2\)"):
        mac_tile(np.zeros((2, 2), np.int32), np.ones((2, 3), np.int8), np.ones((3, 5), np.int8))


@given(st.sampled_from(["i8", "i16", "bf16", "f32"]), st.integers(1, 4), st.integers(1, 9),
       st.integers(1, 9), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_einsum_tile_batched_gemm(name, b, m, n, k, seed):
    rng = np.random.default_rng(seed)
    x, y = _data(rng, name, (b, m, k)), _data(rng, name, (b, k, n))
    acc = np.zeros((b, m, n), ACC[name])
    einsum_tile("bmk,bkn->bmn", acc, x[..., : k // 2], y[:, : k // 2])
    einsum_tile("bmk,bkn->bmn", acc, x[..., k // 2:], y[:, k // 2:])
    if np.dtype(NP[name]).kind in "iu":
        np.testing.assert_array_equal(acc, _wrap32(_exact_matmul(x, y)))
    else:
        ref = np.einsum("bmk,bkn->bmn", x.astype(np.float64), y.astype(np.float64))
        scale = np.einsum("bmk,bkn->bmn", np.abs(x.astype(np.float64)), np.abs(y.astype(np.float64)))
        assert np.all(np.abs(acc - ref) <= 1e-5 * scale + 1e-30)


def test_einsum_tile_three_operands_and_errors():
    rng = np.random.default_rng(3)
    a, b, c = (rng.integers(-100, 100, s, dtype=np.int16) for s in ((3, 4), (4, 5), (5, 2)))
    acc = einsum_tile("ij,jk,kl->il", np.zeros((3, 2), np.int32), a, b, c)
    np.testing.assert_array_equal(acc, a.astype(np.int64) @ b.astype(np.int64) @ c.astype(np.int64))
    with pytest.raises(WorkloadError, match=r"einsum tile 'ij,jk->ik' does not fit operands \(3, 4\), \(5, 2\)"):
        einsum_tile("ij,jk->ik", np.zeros((3, 2), np.int32), a, c)
    with pytest.raises(WorkloadError, match=r"gives \(3, 5\), but the accumulator tile is \(5, 3\)"):
        einsum_tile("ij,jk->ik", np.zeros((5, 3), np.int32), a, b)


SPECS = ["ik,kj->ij", "ik,jk->ji", "bik,bkj->bij", "kbi,jbk->jib", "bi,bj->bij", "ik,k->i",
         "ij,jk", "abc,c->ab", "ij->ji", "ii->i", "ij,ij->i", "bik,bkj->ij"]


@given(st.sampled_from(SPECS), st.sampled_from(["i8", "i16", "i32", "bf16", "f32"]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_einsum_tile_every_spec_form_matches_exact_einsum(spec, name, overwrite, seed):
    """Batched-GEMM specs (any letter order, transposed outputs) run as one matmul, others
    through np.einsum; integers are exact modulo 2**32 on either side of the float64-BLAS
    bound (i32 operands go through int64); ``overwrite`` replaces instead of adding."""
    rng = np.random.default_rng(seed)
    ins = spec.split("->")[0].split(",")
    sizes = {c: int(rng.integers(1, 6)) for c in "".join(ins)}
    xs = [_data(rng, name, tuple(sizes[c] for c in s)) for s in ins]
    exact = np.einsum(spec, *(x.astype(object) if NP[name] != ml_dtypes.bfloat16 else
                              x.astype(np.float64) for x in xs))
    exact = np.asarray(exact)
    acc0 = _data(rng, name if name in ("i8", "i16", "i32") else "f32", exact.shape).astype(ACC[name])
    acc = acc0.copy()
    einsum_tile(spec, acc, *xs, overwrite=overwrite)
    want = exact if overwrite else exact + acc0.astype(exact.dtype)
    if np.dtype(ACC[name]).kind == "i":
        np.testing.assert_array_equal(acc.astype(np.int64), _wrap32(want))
    else:
        scale = np.einsum(spec, *(np.abs(x.astype(np.float64)) for x in xs)) + np.abs(
            0 if overwrite else acc0)
        assert np.all(np.abs(acc - want.astype(np.float64)) <= 1e-5 * scale + 1e-30)


def test_einsum_tile_int16_long_reduction_wraps_like_int32():
    """2**15 * 2**15 * 4096 = 2**42 < 2**53: summed through float64 BLAS, exact, then wrapped."""
    a = np.full((3, 4096), -32768, np.int16)
    b = np.full((4096, 2), -32768, np.int16)
    acc = einsum_tile("ik,kj->ij", np.zeros((3, 2), np.int32), a, b)
    assert acc.dtype == np.int32
    np.testing.assert_array_equal(acc.astype(np.int64), _wrap32(np.full((3, 2), 2**30 * 4096)))
