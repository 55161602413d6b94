"""Repeated pack/unpack calls (``tilewise.layout.hot``): the remembered plan runs through the
kernel's compiled entry point, equals the numpy reference, and still rejects every bad
argument the first call would."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given

from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import hot

from .test_pack_properties import problems


def _plan_for(op, x, pos, tiles, perm=(), extra=None):
    hit = hot.BY_ID.get((op, id(pos), id(tiles), id(perm), x.shape, x.dtype, extra))
    return None if hit is None else hit[0]


@pytest.mark.parametrize("dt", [np.float32, np.int8, ml_dtypes.bfloat16])
def test_second_call_runs_the_entry_point(dt):
    x = np.random.default_rng(0).integers(-99, 99, (64, 96)).astype(dt)
    pos, tiles = (0, 1), (16, 32)
    ref = pack_reference(x, pos, tiles)
    out = np.empty(ref.shape, dt)
    for _ in range(3):
        assert pack(x, pos, tiles, out=out) is out and out.tobytes() == ref.tobytes()
        back = unpack(ref, pos, tiles, shape=x.shape)
        assert back.tobytes() == x.tobytes()
    plan = _plan_for("pack", x, pos, tiles)
    assert plan is not None and plan.entry is not None  # no dispatcher on the hot path
    assert _plan_for("unpack", ref, pos, tiles, extra=x.shape).entry is not None


def test_hot_path_still_rejects_bad_destinations():
    x = np.arange(32 * 48, dtype=np.float32).reshape(32, 48)
    pos, tiles = (0, 1), (8, 16)
    ref = pack_reference(x, pos, tiles)
    for _ in range(2):  # plan, then hit the plan
        pack(x, pos, tiles, out=np.empty(ref.shape, np.float32))
    frozen = np.empty(ref.shape, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(PackError, match="not writeable"):
        pack(x, pos, tiles, out=frozen)
    strided = np.empty(ref.shape[:-1] + (32,), np.float32)[..., ::2]
    with pytest.raises(PackError, match="strided"):
        pack(x, pos, tiles, out=strided)
    with pytest.raises(PackError, match="packed domain"):
        pack(x, pos, tiles, out=np.empty(ref.shape, np.float64))
    with pytest.raises(PackError, match="overlaps the source"):  # the kernel's status
        pack(x, pos, tiles, out=x.reshape(ref.shape))
    with pytest.raises(PackError, match="must be a numpy array"):
        pack(x, pos, tiles, out=ref.tolist())


def test_hot_path_reads_any_source_layout():
    # A strided or Fortran-ordered source of the planned shape is read correctly.
    base = np.random.default_rng(1).standard_normal((32, 96)).astype(np.float32)
    pos, tiles = (0, 1), (8, 16)
    x = np.ascontiguousarray(base[:, :48])
    for _ in range(2):
        pack(x, pos, tiles)
    for src in (base[:, :48], base[:, ::2], np.asfortranarray(x)):
        assert np.array_equal(pack(src, pos, tiles), pack_reference(src, pos, tiles))


def test_unpack_shapes_must_be_exact_ints_when_hot():
    p = pack_reference(np.ones((16, 16), np.int8), (0, 1), (8, 8))
    shape = (16, 16)
    for _ in range(2):
        unpack(p, (0, 1), (8, 8), shape=shape)
    with pytest.raises(PackError, match="shape must be a list of integers"):
        unpack(p, (0, 1), (8, 8), shape=(16.0, 16))
    with pytest.raises(PackError, match="shape must be a list of integers"):
        unpack(p, (0, 1), (8, 8), shape=(True, 16))


def test_equal_paddings_with_other_bytes_are_not_confused():
    # -0.0 == 0.0 (and hashes alike) but is another bit pattern: each gets its own plan.
    x = np.ones((5, 6), np.float32)
    for _ in range(2):
        pos = pack(x, (0, 1), (4, 4), padding_value=0.0)
        neg = pack(x, (0, 1), (4, 4), padding_value=-0.0)
        assert not np.signbit(pos[1, 1, 3, 3]) and np.signbit(neg[1, 1, 3, 3])


def test_the_cache_is_bounded_and_keeps_its_keys_alive():
    x = np.ones((8, 8), np.float32)
    for i in range(hot.SIZE + 5):
        tiles = (2, (1, 2, 4)[i % 3])  # a new tuple object every call
        pack(x, (0, 1), tiles)
    assert len(hot.BY_ID) <= hot.SIZE and len(hot.BY_VALUE) <= hot.SIZE
    for plan, *attrs in hot.BY_ID.values():
        assert all(type(a) is tuple for a in attrs)


@given(problems())
def test_repeated_calls_equal_the_reference(problem):
    x, pos, tiles, perm = problem
    pad = -3.5 if x.dtype != np.int8 else -128
    ref = pack_reference(x, pos, tiles, perm, padding_value=pad)
    out = np.empty(ref.shape, x.dtype)
    back = np.empty(x.shape, x.dtype)
    for _ in range(3):  # plan; the hot path compiles the lean entry; the lean entry
        assert pack(x, pos, tiles, perm, padding_value=pad, out=out).tobytes() == ref.tobytes()
        assert unpack(ref, pos, tiles, perm, out=back).tobytes() == x.tobytes()
        again = unpack(ref, pos, tiles, perm, shape=x.shape)
        assert again.tobytes() == unpack_reference(ref, pos, tiles, perm, x.shape).tobytes()


def test_plans_of_the_same_shape_and_tuples_but_other_dtypes_stay_hot():
    # The sweep's i8 64 KiB and f32 256 KiB NCHW16c packs share shape and tuples: each
    # dtype keeps its own plan (a shared key sent one of them down the slow path every call).
    pos, tiles = (1,), (16,)
    xs = [np.ones((1, 64, 4, 4), dt) for dt in (np.int8, np.float32, ml_dtypes.bfloat16)]
    for _ in range(2):
        for x in xs:
            assert np.array_equal(pack(x, pos, tiles), pack_reference(x, pos, tiles))
    for x in xs:
        plan = _plan_for("pack", x, pos, tiles)
        assert plan is not None and plan.dtype == x.dtype and plan.entry is not None


def test_the_previous_call_is_reused_only_with_the_same_objects():
    # LAST_PACK / LAST_UNPACK: identity tests; an equal list, a mutated list or another
    # padding object goes the checked way.
    x = np.arange(16 * 16, dtype=np.int16).reshape(16, 16)
    pos, tiles = (0, 1), (4, 8)
    ref = pack_reference(x, pos, tiles)
    for _ in range(3):
        assert np.array_equal(pack(x, pos, tiles), ref)
        assert np.array_equal(unpack(ref, pos, tiles, shape=x.shape), x)
    assert hot.LAST_PACK[0][hot.L_PLAN] is _plan_for("pack", x, pos, tiles)
    listed = [4, 8]
    assert np.array_equal(pack(x, pos, listed), ref)
    listed[1] = 4  # a list is mutable: never remembered by identity
    assert np.array_equal(pack(x, pos, listed), pack_reference(x, pos, listed))
    y = x.astype(np.int32)  # same objects, another dtype
    assert np.array_equal(pack(y, pos, tiles), pack_reference(y, pos, tiles))
    with pytest.raises(PackError, match="shape must be a list of integers"):
        unpack(ref, pos, tiles, shape=(16.0, 16))
