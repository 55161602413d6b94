"""The pack/unpack kernel paths, each bit-exact against the numpy reference: plain and
streaming stores, every unit width, clipped (padded) nests, register transposes with
remainders, column-chunked gathers, and the cached fast path of repeated calls."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given

from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import kernels
from tilewise.layout.pack import _nest, unpack_packing, verify

from .test_pack_properties import problems


def _run(packing, src, dst, packed_is_src, pad, *, streaming, max_unit):
    nest = _nest(packing, src.dtype.itemsize, max_unit, packed_is_src)
    pattern = nest.pad_pattern(pad.tobytes())
    status = kernels.run(nest, kernels.byte_view(src), kernels.byte_view(dst), pattern,
                         streaming)
    assert status == kernels.OK


def _check_both_ways(x, pos, tiles, perm, pad_value):
    packing = verify(x.shape, pos, tiles, perm)
    pad = np.array(pad_value, dtype=x.dtype)
    ref = pack_reference(x, pos, tiles, perm, padding_value=pad_value)
    for streaming in (False, True):
        for max_unit in (8, 2, 1):
            packed = np.full(ref.shape, 7, dtype=x.dtype)
            _run(packing, x, packed, False, pad, streaming=streaming, max_unit=max_unit)
            assert packed.tobytes() == ref.tobytes(), (streaming, max_unit)
            back = np.full(x.shape, 5, dtype=x.dtype)
            _run(packing, ref, back, True, pad, streaming=streaming, max_unit=max_unit)
            assert back.tobytes() == x.tobytes(), (streaming, max_unit)


@given(problems())
def test_every_store_kind_and_unit_is_bit_exact(problem):
    x, pos, tiles, perm = problem
    _check_both_ways(x, pos, tiles, perm, {np.dtype(np.int8): -128}.get(x.dtype, -3.5))


@pytest.mark.parametrize("shape, tiles, dt", [
    ((64, 1030), (16, 2), np.float32),  # unpack: 16 rows gather 515 tiles: column chunks
    ((61, 1027), (16, 2), np.float32),  # the same with clipped last tiles (padding)
    ((40, 300), (8, 1), np.float64),  # 8x8 transposes of 8-byte units, no remainder
    ((45, 37), (9, 3), np.int16),  # transposes with row and column remainders
    ((100, 90), (32, 4), np.int8),  # 1-byte units
    ((33, 70), (16, 2), ml_dtypes.bfloat16),
])
def test_gathers_transposes_and_chunks(shape, tiles, dt):
    x = (np.random.default_rng(7).standard_normal(shape) * 50).astype(dt)
    _check_both_ways(x, (0, 1), tiles, (), 1)
    _check_both_ways(x, (1, 0), tiles[::-1], (1, 0), 1)


def test_documented_nest_and_stream_split():
    # Module doc: f32[4096, 4096] with tiles (16, 2) is a transpose of 8-byte words.
    nest = _nest(verify((4096, 4096), (0, 1), (16, 2)), 4, 8, False)
    assert nest.unit == 8
    assert nest.table[:, :3].tolist() == [[256, 32768, 32768], [2048, 1, 16], [16, 2048, 1]]
    # Runs of 512 bytes a page apart are read 8 at a time (4 KiB of destination per pass).
    nest = _nest(verify((1024, 1024), (0, 1), (128, 128)), 4, 8, True)
    assert nest.table[-2].tolist() == [8, 8192, 64, -1, 0]
    # A partial tile clips the inner loop at its partner's last index.
    nest = _nest(verify((500, 1000), (0, 1), (32, 32)), 4, 8, False)
    assert nest.table.tolist() == [[16, 16000, 16384, -1, 0], [32, 16, 512, -1, 0],
                                   [32, 500, 16, 0, 20], [16, 1, 1, 1, 4]]


def test_kernel_reports_overlap_and_misalignment():
    buf = np.zeros(4096 + 8, np.uint8)
    nest = _nest(verify((32, 32), (0, 1), (8, 8)), 1, 8, False)
    pad = nest.pad_pattern(b"\0")
    view = kernels.byte_view
    assert kernels.run(nest, view(buf[:1024]), view(buf[512:1536]), pad, False) == \
        kernels.OVERLAP
    assert kernels.run(nest, view(buf[1:1025]), view(buf[2048:3072]), pad, False) == \
        kernels.MISALIGNED


def test_large_streaming_destinations():
    # Over kernels.STREAMING_BYTES: the non-temporal paths of the public functions.
    x = np.random.default_rng(5).integers(-100, 100, (1030, 1100)).astype(np.float32)
    assert x.nbytes >= kernels.STREAMING_BYTES
    for tiles in [(32, 32), (16, 2), (128, 128), (8, 128)]:
        p = pack(x, (0, 1), tiles, padding_value=-1.0)
        assert np.array_equal(p, pack_reference(x, (0, 1), tiles, padding_value=-1.0))
        assert np.array_equal(unpack(p, (0, 1), tiles, shape=x.shape), x)


def test_repeated_calls_reuse_the_plan_and_still_check_everything():
    x = np.arange(40 * 24, dtype=np.float32).reshape(40, 24)
    out = np.empty((5, 3, 8, 8), np.float32)
    for _ in range(3):  # the first call plans, the others hit the cache
        assert pack(x, [0, 1], (8, 8), out=out) is out
        assert np.array_equal(out, pack_reference(x, (0, 1), (8, 8)))
    x2 = x + 1
    assert np.array_equal(pack(x2, (0, 1), (8, 8)), pack_reference(x2, (0, 1), (8, 8)))
    with pytest.raises(PackError, match="expected 'tensor<5x3x8x8xf32>' for the packed domain"):
        pack(x, (0, 1), (8, 8), out=np.empty((5, 3, 8, 9), np.float32))
    with pytest.raises(PackError, match="out= overlaps the source"):
        pack(x, (0, 1), (8, 8), out=x.reshape(5, 3, 8, 8))
    with pytest.raises(PackError, match="must be a list of integers"):
        pack(x, (0.0, 1), (8, 8))
    raw = np.zeros(x.nbytes + 4, np.uint8)
    shifted = raw[4:].view(np.float32).reshape(out.shape)  # 4-byte aligned only
    assert pack(x, (0, 1), (8, 8), out=shifted) is shifted
    assert np.array_equal(shifted, out)
    # unpack: the cache is keyed by the unpacked shape too
    for shape in [(40, 24), (37, 20), (37, 20)]:
        got = unpack(out, (0, 1), (8, 8), shape=shape)
        assert np.array_equal(got, x[:shape[0], :shape[1]])
        assert np.array_equal(got, unpack_reference(out, (0, 1), (8, 8), shape=shape))
    with pytest.raises(PackError, match="expected 'tensor<6x3x8x8>' for the packed domain "
                                        "value, got 'tensor<5x3x8x8>'"):
        unpack(out, (0, 1), (8, 8), shape=(41, 24))


def test_nan_and_typed_paddings():
    x = np.ones((5, 6), np.float32)
    for _ in range(2):
        p = pack(x, (0, 1), (4, 4), padding_value=float("nan"))
        assert np.isnan(p[1, 1, 3, 3]) and p[0, 0, 0, 0] == 1
    assert pack(x, (0, 1), (4, 4), padding_value=2)[1, 1, 3, 3] == 2
    assert pack(x, (0, 1), (4, 4), padding_value=2.5)[1, 1, 3, 3] == 2.5
    with pytest.raises(PackError, match="expected padding_value has 'i8' but got: 2.5"):
        pack(x.astype(np.int8), (0, 1), (4, 4), padding_value=2.5)
    with pytest.raises(PackError, match="Only full tiles are supported"):
        pack(x, (0, 1), (4, 4))
    assert unpack_packing((2, 2, 4, 4), (0, 1), (4, 4), shape=(5, 6)).shape == (5, 6)
