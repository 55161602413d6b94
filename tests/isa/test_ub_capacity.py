"""The planner and DataCopy keep every operand inside the unified buffer (issue 18: they placed
operands past the 192 KiB UB and `--check` still "matched")."""

import pytest

import tilewise as tw
from tilewise.isa.ascend import UB_BYTES, GMTensor, Tile, UBTile, plan, tile_copies


def test_the_default_capacity_is_the_presets_ub():
    ub = next(lv for lv in tw.load_arch("ascend-vec").levels if lv.name == "ub")
    assert UB_BYTES == ub.capacity_bytes == 192 * 1024


def test_a_tile_ending_at_the_last_byte_fits_one_past_does_not():
    rows = UB_BYTES // 256  # f16 rows of 128 elements = 256 bytes: the dst fills the UB
    plan("Relu", "f16", Tile(0, rows, 128), [Tile(0, rows, 128)])
    with pytest.raises(tw.ISAError, match="ends at byte 196864, past the unified buffer"):
        plan("Relu", "f16", Tile(0, rows + 1, 128), [Tile(0, rows + 1, 128)])
    tile_copies(GMTensor((rows, 128), "f16"), UBTile((0, 0), (rows, 128), 0))
    with pytest.raises(tw.ISAError, match="past the unified buffer of 196608 bytes"):
        tile_copies(GMTensor((rows, 128), "f16"), UBTile((0, 0), (rows, 128), 32))
