import numpy as np
import pytest

from tilewise.errors import ISAError
from tilewise.isa.ascend import (BinaryRepeatParams, BitMask, ContinuousMask, CounterMask,
                                 DuplicateParams, Operand, UnaryRepeatParams, VectorInstr, lanes,
                                 to_ascend_c)


def test_lanes_per_repeat():
    assert (lanes("f16"), lanes("i32"), lanes("f32"), lanes("i64")) == (128, 64, 64, 32)
    with pytest.raises(ISAError, match="8-bit type i8"):
        lanes("i8")


@pytest.mark.parametrize("mask, dt, msg", [
    (ContinuousMask(0), "f16", r"continuous mask 0 out of range for f16: valid 1\.\.128"),
    (ContinuousMask(65), "f32", r"valid 1\.\.64"),
    (BitMask(0, 0), "i16", "must not both be 0"),
    (BitMask(1, 1), "i32", r"mask\[1\] \(high\) = 0x1 must be 0 for 32-bit"),
    (BitMask(1 << 32, 0), "i64", r"out of range for i64: valid \(0, 0xffffffff\]"),
    (BitMask(1 << 64, 0), "f16", "is not a uint64"),
    (CounterMask(0), "f16", r"count 0 out of range: valid 1\.\."),
])
def test_mask_ranges(mask, dt, msg):
    with pytest.raises(ISAError, match=msg):
        mask.validate(dt)


def test_bitmask_lanes_follow_bit_order():
    # mask[0] = 8 = 0b1000 selects only the 4th element (Add.md)
    assert np.flatnonzero(BitMask(8, 0).lane_bits("f16")).tolist() == [3]
    assert np.flatnonzero(BitMask(0, 1).lane_bits("f16")).tolist() == [64]
    assert BitMask(0x5555555555555555, 0).lane_bits("i32").sum() == 32


@pytest.mark.parametrize("kwargs, msg", [
    (dict(params=BinaryRepeatParams(0, 1, 1, 8, 8, 8)), "dstBlkStride = 0 is invalid"),
    (dict(repeat=256), r"repeatTime = 256 out of range: uint8_t, valid 0\.\.255"),
    (dict(dst=16), "UB byte 16, which is not 32-byte aligned"),
    (dict(dst=Operand("dst", 0, 8)), r"dst\[8\] starts at UB byte 16"),
    (dict(dtype="i8"), "Add does not support element type i8; supported: f16, f32, i16, i32"),
    (dict(op="Fma"), "unknown vector op 'Fma'; valid: Add, Sub"),
    (dict(srcs=(64,)), r"Add takes 2 source operand\(s\), got 1"),
    (dict(params=UnaryRepeatParams()), "Add takes BinaryRepeatParams, got UnaryRepeatParams"),
    (dict(scalar=2), "Add takes no scalar"),
    (dict(mask=129), "continuous mask 129 out of range"),
])
def test_instruction_errors_name_field_value_and_range(kwargs, msg):
    base = dict(op="Add", dtype="f16", dst=0, srcs=(256, 512), mask=128, repeat=1)
    with pytest.raises(ISAError, match=msg):
        VectorInstr(**{**base, **kwargs})


@pytest.mark.parametrize("make, msg", [
    (lambda: BinaryRepeatParams(1, 1, 1, 256, 8, 8),
     r"BinaryRepeatParams.dstRepStride = 256 out of range: uint8_t, valid 0\.\.255"),
    (lambda: BinaryRepeatParams(1, 300, 1, 8, 8, 8), r"src0BlkStride = 300 out of range: uint8_t"),
    (lambda: UnaryRepeatParams(65536, 1, 8, 8), r"dstBlkStride = 65536 out of range: uint16_t"),
    (lambda: UnaryRepeatParams(1, 1, 8, 256), r"srcRepStride = 256 out of range: uint8_t"),
    (lambda: DuplicateParams(1, 300), r"Duplicate.dstRepeatStride = 300 out of range: uint8_t"),
])
def test_param_struct_widths(make, msg):
    with pytest.raises(ISAError, match=msg):
        make()


def test_unary_block_stride_is_uint16():
    assert UnaryRepeatParams(300, 1000, 8, 8).dst_blk_stride == 300


def test_scalar_checks():
    with pytest.raises(ISAError, match="scalar 70000 is not representable in i16"):
        VectorInstr("Adds", "i16", 0, (256,), 128, 1, scalar=70000)
    with pytest.raises(ISAError, match="overflows f16"):
        VectorInstr("Muls", "f16", 0, (256,), 128, 1, scalar=1e6)
    with pytest.raises(ISAError, match="needs a scalar"):
        VectorInstr("Duplicate", "f16", 0, (), 128, 1)


def test_ascend_c_text():
    add = VectorInstr("Add", "f16", 0, (1024, 2048), 128, 4)
    assert add.ascend_c() == ["Add(dst[0], src0[0], src1[0], 128, 4, {1, 1, 1, 8, 8, 8});"]
    bits = VectorInstr("Add", "i16", Operand("z", 0, 16), (64, 128), (6148914691236517205,) * 2)
    assert bits.ascend_c() == [
        "uint64_t mask[2] = {0x5555555555555555, 0x5555555555555555};",
        "Add(z[16], src0[0], src1[0], mask, 1, {1, 1, 1, 8, 8, 8});"]
    dup = VectorInstr("Duplicate", "f32", 0, (), CounterMask(1000), scalar=1.5)
    muls = VectorInstr("Muls", "f32", 0, (4096,), 64, 2, UnaryRepeatParams(1, 2, 8, 16), 3)
    assert to_ascend_c([dup, dup, muls]).splitlines() == [
        "SetMaskCount();",
        "SetVectorMask<float, MaskMode::COUNTER>(1000);",
        "Duplicate<float, false>(dst[0], static_cast<float>(1.5), MASK_PLACEHOLDER, 1, 1, 8);",
        "SetVectorMask<float, MaskMode::COUNTER>(1000);",
        "Duplicate<float, false>(dst[0], static_cast<float>(1.5), MASK_PLACEHOLDER, 1, 1, 8);",
        "SetMaskNorm();",
        "ResetMask();",
        "Muls(dst[0], src[0], static_cast<float>(3.0), 64, 2, {1, 2, 8, 16});"]
