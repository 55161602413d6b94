"""The lean entry of repeated pack/unpack calls (``kernels.lean``, ``hot.Plan.fast``, the
inline test in ``pack``/``unpack``): one compiled call on the arrays as given, which checks
shapes, contiguity and writeability itself. It must equal the reference, and every array it
does not fit must still get the checked path's result or error."""

import ml_dtypes
import numpy as np
import pytest

from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import hot, kernels

POS, TILES = (0, 1), (8, 16)


def _hot_pack(x, out):
    """Three calls with the same objects: plan, compile the lean entry, take it."""
    for _ in range(3):
        assert pack(x, POS, TILES, out=out) is out
    last = hot.LAST_PACK[0]
    assert last is not None and last[7] is not None  # the inline test saw the lean entry
    return last


def test_flags_are_found_where_numpy_keeps_them():
    assert hot.FLAGS_AT == 64  # CPython 64-bit, numpy's PyArrayObject_fields


@pytest.mark.parametrize("dt", [np.float32, np.int8, ml_dtypes.bfloat16, np.float64])
def test_lean_entry_equals_the_reference(dt):
    x = np.random.default_rng(0).integers(-99, 99, (32, 48)).astype(dt)
    ref = pack_reference(x, POS, TILES)
    out = np.empty(ref.shape, dt)
    _hot_pack(x, out)
    for _ in range(2):
        out[...] = 0
        assert pack(x, POS, TILES, out=out).tobytes() == ref.tobytes()
        back = np.zeros_like(x)
        for _ in range(3):
            assert unpack(ref, POS, TILES, out=back).tobytes() == x.tobytes()
        assert hot.LAST_UNPACK[0] is not None and hot.LAST_UNPACK[0][3] is None


def test_lean_entry_rejects_what_does_not_fit():
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    ref = pack_reference(x, POS, TILES)
    last = _hot_pack(x, np.empty(ref.shape, np.float32))
    lean, record = last[7], last[8]
    good = np.empty(ref.shape, np.float32)
    assert lean(x, good, record) == kernels.OK and good.tobytes() == ref.tobytes()
    frozen = np.empty(ref.shape, np.float32)
    frozen.flags.writeable = False
    strided = np.empty(ref.shape[:-1] + (32,), np.float32)[..., ::2]
    other = np.empty((4, 3, 8, 8), np.float32)  # same rank, other dims
    for dst in (frozen, strided, other):
        assert lean(x, dst, record) == kernels.MISFIT
    assert lean(np.asfortranarray(x), good, record) == kernels.MISFIT
    assert lean(x, x.reshape(ref.shape), record) == kernels.OVERLAP


def test_hot_calls_still_raise_the_checked_errors():
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    ref = pack_reference(x, POS, TILES)
    _hot_pack(x, np.empty(ref.shape, np.float32))
    frozen = np.empty(ref.shape, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(PackError, match="not writeable"):
        pack(x, POS, TILES, out=frozen)
    with pytest.raises(PackError, match="strided"):
        pack(x, POS, TILES, out=np.empty(ref.shape[:-1] + (32,), np.float32)[..., ::2])
    with pytest.raises(PackError, match="packed domain"):
        pack(x, POS, TILES, out=np.empty((4, 3, 16, 8), np.float32))
    with pytest.raises(PackError, match="overlaps the source"):
        pack(x, POS, TILES, out=x.reshape(ref.shape))


def test_hot_calls_with_other_sources_of_the_same_rank():
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    out = np.empty(pack_reference(x, POS, TILES).shape, np.float32)
    _hot_pack(x, out)
    y = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)  # other dims: replanned
    assert np.array_equal(pack(y, POS, TILES), pack_reference(y, POS, TILES))
    _hot_pack(x, out)
    for src in (np.asfortranarray(x), x[::-1], np.ascontiguousarray(x.T).T):
        assert pack(src, POS, TILES, out=out).tobytes() == pack_reference(src, POS, TILES).tobytes()
    with pytest.raises(PackError, match="packed domain"):
        pack(y, POS, TILES, out=out)


def test_unpack_shape_by_value_keeps_the_exact_int_rule():
    p = pack_reference(np.arange(32 * 48, dtype=np.int16).reshape(32, 48), POS, TILES)
    out = np.empty((32, 48), np.int16)
    for _ in range(3):  # a new equal tuple each call, as shape=x.shape passes it
        unpack(p, POS, TILES, shape=tuple([32, 48]), out=out)
    assert hot.LAST_UNPACK[0][10]  # matched by value
    assert unpack(p, POS, TILES, shape=(32, 48), out=out).tobytes() == \
        unpack_reference(p, POS, TILES, shape=(32, 48)).tobytes()
    for bad in ((32.0, 48), (32, 48.0)):
        with pytest.raises(PackError, match="shape must be a list of integers"):
            unpack(p, POS, TILES, shape=bad, out=out)
    with pytest.raises(PackError, match="unpacked domain"):  # shape and out disagree
        unpack(p, POS, TILES, shape=(30, 48), out=out)


def test_unpack_shape_with_unit_dims_is_matched_by_value_and_type():
    # True == 1: a shape holding a 1 is matched by value only with every dim's type tested
    # (NCHW's N = 1, passed as a new ``x.shape`` each call), so (True, ...) is rejected.
    x = np.arange(64 * 8, dtype=np.float32).reshape(1, 64, 8)
    pos, tiles = (1,), (16,)
    p = pack_reference(x, pos, tiles)
    out = np.empty(x.shape, np.float32)
    for _ in range(3):
        assert unpack(p, pos, tiles, shape=tuple([1, 64, 8]), out=out).tobytes() == x.tobytes()
    assert hot.LAST_UNPACK[0][10] == hot.BY_TYPES
    for bad in ((True, 64, 8), (1.0, 64, 8)):
        with pytest.raises(PackError, match="shape must be a list of integers"):
            unpack(p, pos, tiles, shape=bad, out=out)
    assert hot.shape_match((32, 48)) == hot.BY_SUM and hot.shape_match(None) == hot.BY_IDENTITY


@pytest.mark.parametrize("unit_dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_lean_entry_moves_every_unit(unit_dtype):
    # Source and destination aligned to 8 bytes take the 8-byte move; odd offsets force the
    # narrower units (the plan's unit is the widest dividing every stride and address).
    base = np.arange(40 * 64 + 8, dtype=np.uint8)
    x = base[1:1 + 40 * 64].view(np.uint8).reshape(40, 64) if unit_dtype is np.uint8 \
        else np.arange(40 * 64, dtype=unit_dtype).reshape(40, 64)
    for _ in range(3):
        got = pack(x, POS, TILES, padding_value=0)
        assert got.tobytes() == pack_reference(x, POS, TILES, padding_value=0).tobytes()
