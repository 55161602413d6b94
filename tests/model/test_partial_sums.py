"""Partial sums at the accumulator width (issue 13), against hand counts.

An i8 GEMM with an i8 output accumulates in i32. When K is split above the level where its
C tile lives, the tile is written back partial and reloaded: those bytes are i32; only each
tile's last write-back, where the reduction completes, is converted to i8. The counts below
are worked by hand from the mapping, not from the model's formulas; the simulation (which
counts stores tile by tile) must agree, and the executor must give the int32 accumulation
saturated to i8.
"""

import numpy as np
import pytest

import tilewise as tw
from tilewise.arch.loader import arch_from_dict

DRAM_SRAM = arch_from_dict({
    "name": "dram-sram", "compute": {"clock": "1 GHz", "macs_per_cycle": {"i8": 256}},
    "levels": [{"name": "dram", "capacity": "unbounded"},
               {"name": "sram", "capacity": "256 KiB", "read_bandwidth": "8 GiB/s",
                "write_bandwidth": "8 GiB/s", "double_buffer": True}]})
GEMM_I8 = tw.gemm(512, 768, 768, dtype="i8", out_dtype="i8")
K_OUTER = "dram[m512 n768 k768] kmn | sram[m128 n128 k64] db:A,B,C"


def test_k_split_partial_sums_move_at_int32_by_hand():
    cost = tw.evaluate(GEMM_I8, DRAM_SRAM, K_OUTER)
    elements = 512 * 768            # C, every tile once per k step of 64: 12 visits per tile
    spills = 768 // 64 - 1          # 11 partial write-backs and reloads per tile
    assert cost.reloads["sram"]["C"] == spills * elements * 4 == 17_301_504
    assert cost.writes["sram"]["C"] == spills * elements * 4 + elements * 1
    # the sram C buffer accumulates (i32) and is double-buffered: 2 x 128 x 128 x 4 B
    assert cost.footprint["sram"] == 2 * (128 * 64 + 64 * 128) + 2 * 128 * 128 * 4
    trace = tw.simulate(GEMM_I8, DRAM_SRAM, K_OUTER)
    assert trace.reloads == cost.reloads and trace.writes == cost.writes


def test_k_inside_writes_each_tile_once_at_int8():
    cost = tw.evaluate(GEMM_I8, DRAM_SRAM, "dram[m512 n768 k768] mnk | sram[m128 n128 k64]")
    assert "C" not in cost.reloads.get("sram", {})
    assert cost.writes["sram"]["C"] == 512 * 768 * 1


def test_partial_sums_that_do_not_fit_the_memtile_are_refused():
    """The memtile holds C whole while K is split at DDR: i32 partial sums, 512 x 768 x 4 B,
    beside A (512 x 384) and B (384 x 768) i8 tiles: 2,064,384 B of 1,048,576."""
    need = 512 * 768 * 4 + 512 * 384 + 384 * 768
    with pytest.raises(tw.CapacityError, match=f"need {need} bytes .* holds 1048576"):
        tw.evaluate(GEMM_I8, "aie-4x2", "ddr[m512 n768 k768] kmn | memtile[m512 n768 k384] mkn | "
                                        "core[m64 n64 k256] ; rows=m4")


def test_execute_saturates_the_int32_accumulation_once():
    rng = np.random.default_rng(0)
    w = tw.gemm(64, 48, 96, dtype="i8", out_dtype="i8")
    x = {"A": rng.integers(-128, 128, (64, 96)).astype(np.int8),
         "B": rng.integers(-128, 128, (96, 48)).astype(np.int8)}
    exact = x["A"].astype(np.int64) @ x["B"].astype(np.int64)
    assert np.abs(exact).max() > 127  # saturation is exercised
    for m in ("ddr[m64 n48 k96] kmn | memtile[m32 n48 k32] kmn | core[m16 n16 k16] ; rows=m2",
              "ddr[m64 n48 k96] mnk | memtile[m64 n48 k96] mnk | core[m16 n16 k16] ; rows=k4"):
        got = tw.execute(w, m, x, arch="aie-4x2")["C"]
        assert got.dtype == np.int8
        assert (got == np.minimum(np.maximum(exact, -128), 127)).all()


def test_integer_inputs_outside_the_declared_type_are_refused():
    w = tw.gemm(16, 16, 16, dtype="i8")
    big = {"A": np.full((16, 16), 1000, np.int16), "B": np.ones((16, 16), np.int8)}
    with pytest.raises(tw.DTypeError, match=r"input A holds values in \[1000, 1000\].*\[-128, 127\]"):
        tw.execute(w, "ddr[m16 n16 k16] mnk | memtile[m16 n16 k16] mnk | core[m16 n16 k16]", big,
                   arch="aie-4x2")
