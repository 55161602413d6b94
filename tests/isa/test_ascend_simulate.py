"""The simulator against the seed's and Ascend's published examples, and a naive reference."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from tilewise.dtypes import dtype
from tilewise.errors import ISAError
from tilewise.isa.ascend import (BinaryRepeatParams, BitMask, CounterMask, UnaryRepeatParams,
                                 VectorInstr, lanes, simulate)

A5 = 0x5555555555555555


def _ub_with(dt, *arrays, size=16384):
    ub = np.zeros(size, np.uint8)
    v = ub.view(dt)
    for k, a in enumerate(arrays):
        v[k * 1024: k * 1024 + len(a)] = a
    return ub


def _out(ub, dt, start_elem, n):
    return ub.view(dt)[start_elem:start_elem + n]


@pytest.mark.parametrize("dt, n, mask, expect", [
    # seed: int16, mask 64 of 128 lanes -> [2 4 ... 128 undefined...]
    (np.int16, 128, 64, lambda a: np.where(np.arange(128) < 64, 2 * a, 0)),
    # seed: int32, mask 64 = all 64 lanes -> [2 4 ... 128]
    (np.int32, 64, 64, lambda a: 2 * a),
    # seed: bitwise {0x5555.., 0x5555..} on int16 -> even lanes only
    (np.int16, 128, (A5, A5), lambda a: np.where(np.arange(128) % 2 == 0, 2 * a, 0)),
    # seed: bitwise {0x5555.., 0} on int32
    (np.int32, 64, (A5, 0), lambda a: np.where(np.arange(64) % 2 == 0, 2 * a, 0)),
])
def test_seed_examples(dt, n, mask, expect):
    a = np.arange(1, n + 1, dtype=dt)
    ub = _ub_with(dt, a, a)
    simulate([VectorInstr("Add", dtype(np.dtype(dt).name), 8192, (0, 1024 * a.itemsize), mask)],
             ub)
    np.testing.assert_array_equal(_out(ub, dt, 8192 // a.itemsize, n), expect(a))


SRC0, SRC1 = np.arange(1, 513), np.arange(513, 1025)


def _ascend_add(mask, repeat, params):
    ub = _ub_with(np.float16, SRC0, SRC1)
    simulate([VectorInstr("Add", "f16", 8192, (0, 2048), mask, repeat, params)], ub)
    return _out(ub, np.float16, 4096, 512).astype(np.int64)


def test_ascend_add_example_contiguous():
    np.testing.assert_array_equal(_ascend_add(128, 4, BinaryRepeatParams()), SRC0 + SRC1)
    assert _ascend_add(128, 4, BinaryRepeatParams())[[0, -1]].tolist() == [514, 1536]
    full = _ascend_add((2**64 - 1, 2**64 - 1), 4, BinaryRepeatParams())
    np.testing.assert_array_equal(full, SRC0 + SRC1)


def test_ascend_add_example_src0_repeat_stride_16():
    out = _ascend_add(128, 2, BinaryRepeatParams(1, 1, 1, 8, 16, 8))
    assert out[:3].tolist() == [514, 516, 518] and out[127] == 768
    assert out[128:131].tolist() == [898, 900, 902] and out[254:256].tolist() == [1150, 1152]
    assert not out[256:].any()


def test_ascend_add_example_src0_block_stride_2():
    out = _ascend_add(128, 2, BinaryRepeatParams(1, 2, 1, 8, 16, 8))
    firsts = out[0:256:16].tolist()
    assert firsts == [514, 562, 610, 658, 706, 754, 802, 850,
                      898, 946, 994, 1042, 1090, 1138, 1186, 1234]
    assert out[15] == 544 and out[255] == 1264 and not out[256:].any()


@pytest.mark.parametrize("mask", [64, (2**64 - 1, 0)])
def test_ascend_add_example_half_mask(mask):
    out = _ascend_add(mask, 4, BinaryRepeatParams())
    for r, (first, last) in enumerate([(514, 640), (770, 896), (1026, 1152), (1282, 1408)]):
        assert (out[128 * r], out[128 * r + 63]) == (first, last)
        assert not out[128 * r + 64: 128 * (r + 1)].any()


def test_counter_mode_ignores_repeat_and_infers_repeats():
    ub = _ub_with(np.float32, np.arange(1, 201), np.ones(200))
    ins = VectorInstr("Add", "f32", 8192, (0, 4096), CounterMask(150), repeat=0)
    assert ins.repeats() == 3
    simulate([ins], ub)
    out = _out(ub, np.float32, 2048, 200)
    np.testing.assert_array_equal(out[:150], np.arange(2, 152))
    assert not out[150:].any()


def test_repeat_zero_is_a_no_op_and_poison_marks_masked_lanes():
    ub = _ub_with(np.float16, np.ones(128), np.ones(128))
    before = ub.copy()
    simulate([VectorInstr("Add", "f16", 8192, (0, 2048), 128, 0)], ub, poison=True)
    np.testing.assert_array_equal(ub, before)
    simulate([VectorInstr("Add", "f16", 8192, (0, 2048), 100, 1)], ub, poison=True)
    out = _out(ub, np.float16, 4096, 128)
    assert (out[:100] == 2).all() and np.isnan(out[100:]).all()
    ub2 = _ub_with(np.int32, np.ones(64))
    simulate([VectorInstr("Adds", "i32", 8192, (0,), 10, 1, scalar=1)], ub2, poison=True)
    assert (_out(ub2, np.int32, 2048, 64)[10:] == 0x5A5A5A5A).all()


def test_scalar_unary_and_duplicate_ops():
    x = np.linspace(-2, 2, 64).astype(np.float32)
    ub = _ub_with(np.float32, x)
    simulate([VectorInstr("Exp", "f32", 4096, (0,), 64),
              VectorInstr("Maxs", "f32", 8192, (0,), 64, scalar=0.5),
              VectorInstr("Duplicate", "f32", 12288, (), 64, 1, scalar=7)], ub)
    np.testing.assert_array_equal(_out(ub, np.float32, 1024, 64), np.exp(x))
    np.testing.assert_array_equal(_out(ub, np.float32, 2048, 64), np.maximum(x, 0.5))
    assert (_out(ub, np.float32, 3072, 64) == 7).all()


def test_in_place_is_allowed_and_later_repeat_wins_on_shared_dst():
    ub = _ub_with(np.int32, np.arange(128), np.full(128, 10))
    simulate([VectorInstr("Add", "i32", 0, (0, 4096), 64, 2)], ub)  # dst == src0, lane for lane
    np.testing.assert_array_equal(_out(ub, np.int32, 0, 128), np.arange(128) + 10)
    ub = _ub_with(np.int32, np.arange(128))
    simulate([VectorInstr("Adds", "i32", 8192, (0,), 64, 2, UnaryRepeatParams(1, 1, 0, 8),
                          scalar=0)], ub)  # both repeats write the same 64 elements
    np.testing.assert_array_equal(_out(ub, np.int32, 2048, 64), np.arange(64, 128))


@pytest.mark.parametrize("ins, msg", [
    # dst of repeat 0 is src0 of repeat 1 (a forbidden read-after-write across repeats)
    (VectorInstr("Add", "f16", 256, (0, 4096), 128, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 8)),
     "dst lane of repeat 0 overlaps src0 lane of repeat 1 at UB byte 256"),
    # partial overlap inside one repeat
    (VectorInstr("Add", "f16", 0, (0, 4096), 128, 1, BinaryRepeatParams(1, 2, 1, 8, 8, 8)),
     "overlaps src0 lane of repeat 0|overlaps dst only partly"),
    (VectorInstr("Add", "f16", 16384, (0, 4096), 128, 1),
     r"dst dst\[0\] touches UB bytes 16384\.\.16639, outside the unified buffer of 16384 bytes"),
])
def test_hazards_and_bounds_raise(ins, msg):
    with pytest.raises(ISAError, match=msg):
        simulate([ins], np.zeros(16384, np.uint8))


def _naive(ins: VectorInstr, ub: np.ndarray) -> np.ndarray:
    """Element-by-element reference of the documented formula (no overlap in these tests)."""
    d = ins.dtype
    view, out = ub.view(d.numpy), ub.copy()
    out_view = out.view(d.numpy)
    n_lanes, per_block = lanes(d), 32 // d.bytes
    count = ins.mask.count if ins.counter else None
    bits = None if ins.counter else ins.mask.lane_bits(d)
    for r in range(ins.repeats()):
        for lane in range(n_lanes):
            if (count is not None and r * n_lanes + lane >= count) or \
                    (bits is not None and not bits[lane]):
                continue
            b, j = divmod(lane, per_block)
            addrs = [o.addr(d.bytes) + 32 * (r * rep + b * blk) + j * d.bytes
                     for (_, o), (blk, rep) in zip(ins.operands(), ins.strides())]
            vals = [view[a // d.bytes] for a in addrs[1:]]
            with np.errstate(all="ignore"):
                out_view[addrs[0] // d.bytes] = ins.spec.fn(*vals)
    return out


@given(dt=st.sampled_from(["f16", "f32", "i16", "i32"]), op=st.sampled_from(["Add", "Mul", "Max"]),
       repeat=st.integers(0, 6), strides=st.lists(st.integers(1, 4), min_size=3, max_size=3),
       reps=st.lists(st.integers(0, 24), min_size=3, max_size=3),
       mask=st.one_of(st.integers(1, 64), st.tuples(st.integers(1, 2**32 - 1), st.just(0)),
                      st.integers(1, 400).map(CounterMask)),
       seed=st.integers(0, 2**16))
def test_simulator_matches_naive_reference(dt, op, repeat, strides, reps, mask, seed):
    """dst lives in its own third of the buffer, so no overlap rule applies."""
    rng = np.random.default_rng(seed)
    ub = rng.integers(0, 50, 3 * 65536, dtype=np.uint8)
    params = BinaryRepeatParams(strides[0], strides[1], strides[2], reps[0] or 8, reps[1], reps[2])
    ins = VectorInstr(op, dt, 2 * 65536, (0, 65536), mask, repeat, params)
    want = _naive(ins, ub)
    got = simulate([ins], ub.copy())
    np.testing.assert_array_equal(got.view(dtype(dt).numpy), want.view(dtype(dt).numpy))


def test_default_unified_buffer_is_192_kib():
    ub = simulate([VectorInstr("Duplicate", "f16", 192 * 1024 - 256, (), 128, 1, scalar=1)])
    assert ub.size == 192 * 1024 and (ub.view(np.float16)[-128:] == 1).all()
    with pytest.raises(ISAError, match="outside the unified buffer of 196608 bytes"):
        simulate([VectorInstr("Duplicate", "f16", 192 * 1024, (), 128, 1, scalar=1)])
