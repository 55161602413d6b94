"""The lean entry of repeated pack/unpack calls (``lean.lean``, ``hot.Plan.fast``, the
inline test in ``pack``/``unpack``): one compiled call on the objects as given, which reads
their fields itself and checks types, dtypes, shapes, contiguity, writeability and an
unpack's ``shape``. It must equal the reference, and every object it does not fit must still
get the checked path's result or error."""

import itertools

import ml_dtypes
import numpy as np
import pytest

from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import hot, kernels, lean as lean_mod

POS, TILES = (0, 1), (8, 16)


def _hot_pack(x, out):
    """Three calls with the same objects: plan, compile the lean entry, take it."""
    for _ in range(3):
        assert pack(x, POS, TILES, out=out) is out
    last = hot.LAST_PACK[0]
    assert last is not None and last[hot.L_ENTRY] is not None  # the inline test saw it
    return last


def test_object_fields_are_found_where_cpython_and_numpy_keep_them():
    lay = lean_mod.LAYOUT  # CPython 64-bit (not free-threaded), numpy's PyArrayObject_fields
    assert lay == lean_mod.ObjectLayout(type_at=8, data_at=16, nd_at=24, dims_at=32,
                                        descr_at=56, flags_at=64, size_at=16, items_at=24)
    assert lean_mod._probe(lay)
    assert not lean_mod._probe(lean_mod.ObjectLayout(8, 16, 24, 32, 48, 64, 16, 24))


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
        assert hot.LAST_UNPACK[0] is not None and hot.LAST_UNPACK[0][hot.L_EXTRA] is None


def test_lean_entry_rejects_what_does_not_fit():
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    ref = pack_reference(x, POS, TILES)
    last = _hot_pack(x, np.empty(ref.shape, np.float32))
    lean, record = last[hot.L_ENTRY], last[hot.L_RECORD]
    good = np.empty(ref.shape, np.float32)
    assert lean(x, good, None, record) == kernels.OK and good.tobytes() == ref.tobytes()
    frozen = np.empty(ref.shape, np.float32)
    frozen.flags.writeable = False
    strided = np.empty(ref.shape[:-1] + (32,), np.float32)[..., ::2]
    other = np.empty((4, 3, 8, 8), np.float32)  # same rank, other dims

    class Sub(np.ndarray):
        pass

    for dst in (frozen, strided, other, np.empty(ref.shape, np.int32),  # same itemsize
                np.empty(ref.shape[:-1], np.float32), np.empty(ref.shape, np.float32).view(Sub),
                None, [0.0] * 4, 3):
        assert lean(x, dst, None, record) == kernels.MISFIT
    for src in (np.asfortranarray(x), x.astype(np.int32), x.reshape(-1), x.view(Sub), None,
                "x", x.tolist()):
        assert lean(src, good, None, record) == kernels.MISFIT
    assert lean(x, x.reshape(ref.shape), None, record) == kernels.OVERLAP
    # the shape, when not None, must be a tuple of exact ints equal to the destination's dims
    assert lean(x, good, ref.shape, record) == kernels.OK
    for shape in (ref.shape[:-1], ref.shape + (1,), list(ref.shape), (4.0,) + ref.shape[1:],
                  (np.int64(4),) + ref.shape[1:], (5,) + ref.shape[1:], (1 << 70,) + ref.shape[1:],
                  (-1 << 70,) + ref.shape[1:], np.array(ref.shape), "shape"):
        assert lean(x, good, shape, record) == kernels.MISFIT, shape


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
    record = hot.LAST_UNPACK[0][hot.L_RECORD]
    assert hot.LAST_UNPACK[0][hot.L_ENTRY](p, out, tuple([32, 48]), record) == kernels.OK
    assert unpack(p, POS, TILES, shape=(32, 48), out=out).tobytes() == \
        unpack_reference(p, POS, TILES, shape=(32, 48)).tobytes()
    for bad in ((32.0, 48), (32, 48.0)):
        with pytest.raises(PackError, match="shape must be a list of integers"):
            unpack(p, POS, TILES, shape=bad, out=out)
    with pytest.raises(PackError, match="unpacked domain"):  # shape and out disagree
        unpack(p, POS, TILES, shape=(30, 48), out=out)
    assert unpack(p, POS, TILES, shape=[32, 48], out=out) is out  # a list: the checked path


def test_unpack_shape_with_unit_dims_rejects_bools():
    # True == 1: NCHW's N = 1, passed as a new ``x.shape`` each call, matches by value, but
    # (True, ...) must still get the checked path's error.
    x = np.arange(64 * 8, dtype=np.float32).reshape(1, 64, 8)
    pos, tiles = (1,), (16,)
    p = pack_reference(x, pos, tiles)
    out = np.empty(x.shape, np.float32)
    for _ in range(3):
        assert unpack(p, pos, tiles, shape=tuple([1, 64, 8]), out=out).tobytes() == x.tobytes()
    last = hot.LAST_UNPACK[0]
    assert last[hot.L_ENTRY](p, out, tuple([1, 64, 8]), last[hot.L_RECORD]) == kernels.OK
    for bad in ((True, 64, 8), (1.0, 64, 8)):
        assert last[hot.L_ENTRY](p, out, bad, last[hot.L_RECORD]) == kernels.MISFIT
        with pytest.raises(PackError, match="shape must be a list of integers"):
            unpack(p, pos, tiles, shape=bad, out=out)


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


KINDS = ("array", "frozen", "strided", "fortran", "other_dtype", "other_dims", "rank",
         "subclass", "list", "none", "int", "tuple")


def _object(kind: str, like: np.ndarray):
    """Something passed where the lean entry expects an array like ``like``."""
    if kind == "array":
        return np.empty_like(like)
    if kind == "frozen":
        a = np.empty_like(like)
        a.flags.writeable = False
        return a
    if kind == "strided":
        return np.empty(like.shape[:-1] + (2 * like.shape[-1],), like.dtype)[..., ::2]
    if kind == "fortran":
        return np.asfortranarray(np.empty_like(like))
    if kind == "other_dtype":
        return np.empty(like.shape, np.int32 if like.dtype != np.int32 else np.float32)
    if kind == "other_dims":
        return np.empty(like.shape[:-1] + (like.shape[-1] + 1,), like.dtype)
    if kind == "rank":
        return np.empty(like.size, like.dtype)
    if kind == "subclass":
        return np.empty_like(like).view(np.recarray) if like.dtype.names else \
            np.empty_like(like).view(type("Sub", (np.ndarray,), {}))
    return {"list": [1, 2], "none": None, "int": 7, "tuple": like.shape}[kind]


@pytest.mark.parametrize("op", ["pack", "unpack"])
def test_lean_entry_on_any_objects_moves_only_what_fits(op):
    # The entry reads raw object fields: whatever it is given, it must either move exactly
    # the planned bytes (both arrays fit; the source may be read-only) or return MISFIT
    # having written nothing.
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    ref = pack_reference(x, POS, TILES)
    if op == "pack":
        last = _hot_pack(x, np.empty(ref.shape, np.float32))
        src_like, dst_like, want = x, ref, ref
    else:
        out = np.empty_like(x)
        for _ in range(3):
            unpack(ref, POS, TILES, out=out)
        last = hot.LAST_UNPACK[0]
        src_like, dst_like, want = ref, x, x
    for src_kind, dst_kind in itertools.product(KINDS, KINDS):
        src = _object(src_kind, src_like)
        if src_kind in ("array", "frozen"):   # a read-only source fits: only out= is written
            src = src_like.copy()
            src.flags.writeable = src_kind == "array"
        dst = _object(dst_kind, dst_like)
        if isinstance(dst, np.ndarray) and dst.flags.writeable:
            dst[...] = 0
        before = dst.tobytes() if isinstance(dst, np.ndarray) else None
        status = last[hot.L_ENTRY](src, dst, None, last[hot.L_RECORD])
        if src_kind in ("array", "frozen") and dst_kind == "array":
            assert status == kernels.OK and dst.tobytes() == want.tobytes(), (src_kind, dst_kind)
        else:
            assert status == kernels.MISFIT, (src_kind, dst_kind)
            if before is not None:
                assert dst.tobytes() == before
