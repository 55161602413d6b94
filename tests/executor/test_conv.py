"""Convolution tiles with halos, stride, zero padding, dilation and C_in / filter-tap splits."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from numpy.lib.stride_tricks import sliding_window_view

from tilewise.errors import DTypeError, WorkloadError
from tilewise.tiles.kernels import conv_halo, conv_tile, read_tile

DTYPES = {"i8": (np.int8, np.int32), "i16": (np.int16, np.int32),
          "bf16": (ml_dtypes.bfloat16, np.float32), "f32": (np.float32, np.float32)}


def conv_reference(x, w, stride, padding, dilation):
    """Direct definition via sliding windows over the zero-padded input (int64 / float64)."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    big = np.int64 if x.dtype.kind in "iu" else np.float64
    xp = np.pad(x.astype(big), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    R, S = w.shape[2:]
    win = sliding_window_view(xp, ((R - 1) * dh + 1, (S - 1) * dw + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]                 # (n, c, P, Q, R, S)
    return np.einsum("ncpqrs,kcrs->nkpq", win, w.astype(big))


def _ranges(size, tile):
    return [(a, min(a + tile, size)) for a in range(0, size, tile)]


@st.composite
def convs(draw):
    name = draw(st.sampled_from(sorted(DTYPES)))
    N, C, K = draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 5))
    H, W = draw(st.integers(1, 13)), draw(st.integers(1, 11))
    R, S = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    dilation = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    P = (H + 2 * padding[0] - dilation[0] * (R - 1) - 1) // stride[0] + 1
    Q = (W + 2 * padding[1] - dilation[1] * (S - 1) - 1) // stride[1] + 1
    assume(P >= 1 and Q >= 1)
    tiles = {d: draw(st.integers(1, n)) for d, n in dict(k=K, c=C, p=P, q=Q, r=R, s=S).items()}
    return name, (N, C, H, W), (K, C, R, S), stride, padding, dilation, (P, Q), tiles, draw(st.integers(0, 2**32 - 1))


@given(convs())
def test_tiled_convolution_with_halos_equals_direct_reference(problem):
    name, xshape, wshape, stride, padding, dilation, (P, Q), t, seed = problem
    rng = np.random.default_rng(seed)
    dt, acc_t = DTYPES[name]
    if np.dtype(dt).kind == "i":
        info = np.iinfo(dt)
        x = rng.integers(info.min, info.max, xshape, endpoint=True, dtype=dt)
        w = rng.integers(info.min, info.max, wshape, endpoint=True, dtype=dt)
    else:
        x, w = rng.standard_normal(xshape).astype(dt), rng.standard_normal(wshape).astype(dt)
    N, C, K = xshape[0], xshape[1], wshape[0]
    out = np.zeros((N, K, P, Q), acc_t)
    for k0, k1 in _ranges(K, t["k"]):
        for p0, p1 in _ranges(P, t["p"]):
            for q0, q1 in _ranges(Q, t["q"]):
                acc = np.zeros((N, k1 - k0, p1 - p0, q1 - q0), acc_t)
                for c0, c1 in _ranges(C, t["c"]):               # C_in split: partial sums
                    for r0, r1 in _ranges(wshape[2], t["r"]):    # filter-tap splits too
                        for s0, s1 in _ranges(wshape[3], t["s"]):
                            hr = conv_halo(p0, p1 - p0, r0, r1 - r0, stride[0], padding[0], dilation[0])
                            hc = conv_halo(q0, q1 - q0, s0, s1 - s0, stride[1], padding[1], dilation[1])
                            xt = read_tile(x, (0, c0, hr[0], hc[0]), (N, c1 - c0, hr[1], hc[1]))
                            conv_tile(acc, xt, w[k0:k1, c0:c1, r0:r1, s0:s1], stride, dilation)
                out[:, k0:k1, p0:p1, q0:q1] = acc
    ref = conv_reference(x, w, stride, padding, dilation)
    if out.dtype.kind == "i":
        np.testing.assert_array_equal(out, ((ref + 2**31) % 2**32 - 2**31))
    else:
        mag = conv_reference(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), stride, padding, dilation)
        assert np.all(np.abs(out - ref) <= 1e-5 * mag + 1e-30)


def test_conv_halo_formula():
    # 4 output rows x 3 taps, stride 2, dilation 3, padding 1: rows -1 .. -1 + (3*2 + 2*3 + 1)
    assert conv_halo(0, 4, 0, 3, stride=2, padding=1, dilation=3) == (-1, 13)
    assert conv_halo(5, 2, 1, 1, stride=2, padding=1, dilation=3) == (5 * 2 + 3 - 1, 3)
    assert conv_halo(0, 1, 0, 1) == (0, 1)


@given(st.lists(st.integers(1, 6), min_size=1, max_size=3).flatmap(
    lambda shape: st.tuples(st.just(shape), st.lists(st.integers(-7, 9), min_size=len(shape), max_size=len(shape)),
                            st.lists(st.integers(0, 8), min_size=len(shape), max_size=len(shape)))))
def test_read_tile_fills_outside_the_tensor(args):
    shape, origin, tshape = args
    x = np.arange(1, np.prod(shape) + 1, dtype=np.int16).reshape(shape)
    got = read_tile(x, tuple(origin), tuple(tshape), fill=-1)
    assert got.shape == tuple(tshape) and got.dtype == x.dtype
    for idx in np.ndindex(*tshape):
        src = tuple(o + i for o, i in zip(origin, idx))
        inside = all(0 <= s < n for s, n in zip(src, shape))
        assert got[idx] == (x[src] if inside else -1)


def test_errors():
    acc = np.zeros((1, 2, 3, 3), np.int32)
    w = np.ones((2, 4, 3, 3), np.int8)
    with pytest.raises(WorkloadError, match=r"input tile 4x5 is smaller than the halo 5x5 .* "
                                            r"output tile 3x3, filter tile 3x3, stride \(1, 1\)"):
        conv_tile(acc, np.ones((1, 4, 4, 5), np.int8), w)
    with pytest.raises(WorkloadError, match="disagree on n, k or c"):
        conv_tile(acc, np.ones((1, 3, 5, 5), np.int8), w)
    with pytest.raises(WorkloadError, match="needs 4-d tiles"):
        conv_tile(acc, np.ones((4, 5, 5), np.int8), w)
    with pytest.raises(DTypeError, match="accumulates in i32"):
        conv_tile(acc.astype(np.float32), np.ones((1, 4, 5, 5), np.int8), w)
    with pytest.raises(WorkloadError, match=r"origin \(0, 0\) and shape \(1, 1\) need one entry per axis"):
        read_tile(np.ones((2, 2, 2)), (0, 0), (1, 1))


def test_non_contiguous_accumulator_is_updated_in_place():
    x = np.arange(2 * 1 * 4 * 4, dtype=np.int8).reshape(2, 1, 4, 4)
    w = np.ones((3, 1, 2, 2), np.int8)
    out = np.zeros((3, 2, 3, 3), np.int32).transpose(1, 0, 2, 3)   # (n, k, p, q) view
    conv_tile(out, x, w)
    np.testing.assert_array_equal(out, conv_reference(x, w, (1, 1), (0, 0), (1, 1)))
