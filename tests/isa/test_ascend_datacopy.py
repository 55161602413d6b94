import numpy as np
import pytest
from hypothesis import given, strategies as st

from tilewise.dtypes import dtype
from tilewise.errors import ISAError
from tilewise.isa.ascend import (DataCopyParams, GMTensor, UBTile, simulate_copies, tile_copies)


@given(dt=st.sampled_from(["i8", "f16", "f32", "i64"]), rows=st.integers(1, 40),
       cols=st.integers(1, 300), data=st.data())
def test_tile_round_trip_gm_ub_gm(dt, rows, cols, data):
    d = dtype(dt)
    r0 = data.draw(st.integers(0, rows - 1))
    c0 = data.draw(st.integers(0, cols - 1))
    tr = data.draw(st.integers(1, rows - r0))
    tc = data.draw(st.integers(1, cols - c0))
    per_block = 32 // d.bytes
    pitch = -(-tc // per_block) * per_block + per_block * data.draw(st.integers(0, 2))
    gm_base = data.draw(st.integers(0, 3)) * d.bytes
    gm_t = GMTensor((rows, cols), dt, gm_base)
    tile = UBTile((r0, c0), (tr, tc), 64, pitch)
    rng = np.random.default_rng(rows * cols)
    gm = rng.integers(0, 256, gm_base + rows * cols * d.bytes + 64, dtype=np.uint8)
    ub = rng.integers(0, 256, 64 + tr * pitch * d.bytes + 64, dtype=np.uint8)
    ub_before = ub.copy()
    simulate_copies(tile_copies(gm_t, tile, pad_value=0), gm, ub)
    a = gm[gm_base: gm_base + rows * cols * d.bytes].view(d.numpy).reshape(rows, cols)
    u = ub[64: 64 + tr * pitch * d.bytes].view(d.numpy).reshape(tr, pitch)
    np.testing.assert_array_equal(u[:, :tc], a[r0:r0 + tr, c0:c0 + tc])
    padded_end = -(-tc // per_block) * per_block
    assert not u[:, tc:padded_end].view(np.uint8).any()  # DataCopyPad fills the block with 0
    np.testing.assert_array_equal(u[:, padded_end:], ub_before[64:64 + tr * pitch * d.bytes]
                                  .view(d.numpy).reshape(tr, pitch)[:, padded_end:])
    # back to a fresh GM: only the tile's bytes change
    gm2 = np.zeros_like(gm)
    simulate_copies(tile_copies(gm_t, tile, to_ub=False), gm2, ub)
    b = gm2[gm_base: gm_base + rows * cols * d.bytes].view(d.numpy).reshape(rows, cols)
    np.testing.assert_array_equal(b[r0:r0 + tr, c0:c0 + tc], a[r0:r0 + tr, c0:c0 + tc])
    b[r0:r0 + tr, c0:c0 + tc] = 0
    assert not gm2.any()


def test_examples_and_splitting():
    gm = GMTensor((128, 256), "f16")
    (c,) = tile_copies(gm, UBTile((0, 64), (64, 64), 0, 64))
    assert c.ascend_c() == "DataCopy(ub[0], gm[64], {64, 4, 12, 0});"
    (c,) = tile_copies(gm, UBTile((0, 0), (128, 256), 0))
    assert c.params == DataCopyParams(1, 2048)  # contiguous on both sides: one burst
    # 5000 rows of 64 B (312 KiB, a UB larger than the 192 KiB default): split at 4095 rows
    calls = tile_copies(GMTensor((5000, 32), "f32"), UBTile((0, 0), (5000, 16), 0), ub_bytes=2**19)
    assert [c.params.block_count for c in calls] == [4095, 905]
    calls = tile_copies(GMTensor((4, 20), "f16"), UBTile((0, 2), (4, 16), 0))  # GM gap 8 bytes
    assert [c.params.block_count for c in calls] == [1, 1, 1, 1]
    (c,) = tile_copies(GMTensor((4, 20), "f16"), UBTile((1, 3), (3, 10), 0), to_ub=False)
    assert c.ascend_c() == "DataCopyPad(gm[23], ub[0], {3, 20, 0, 20, 0});"


@pytest.mark.parametrize("call, msg", [
    (lambda: DataCopyParams(4096, 1), r"blockCount = 4096 out of range: 12 bits, valid 1\.\.4095"),
    (lambda: DataCopyParams(1, 0), r"blockLen = 0 out of range: uint16_t, valid 1\.\.65535"),
    (lambda: tile_copies(GMTensor((4, 20), "f16"), UBTile((0, 0), (4, 10), 0), pad=False),
     "tile rows are 10 x 2 = 20 bytes, not a multiple of 32: DataCopy moves whole 32-byte"),
    (lambda: tile_copies(GMTensor((4, 20), "f16"), UBTile((2, 0), (4, 8), 0)),
     "is not inside the 4x20 GM tensor"),
    (lambda: tile_copies(GMTensor((4, 32), "f16"), UBTile((0, 0), (4, 16), 16)),
     "UB rows must start 32-byte aligned: ub_base 16"),
])
def test_datacopy_errors(call, msg):
    with pytest.raises(ISAError, match=msg):
        call()
