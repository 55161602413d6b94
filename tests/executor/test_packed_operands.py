"""A mapping's ``pack:`` layouts are executed for real: the operands are packed with
:func:`tilewise.layout.pack.pack`, tiles are read from the packed array, a packed output is
unpacked at the end, and the result equals the numpy reference."""

import numpy as np
import pytest

from tilewise import Mapping, gemm
from tilewise.arch.loader import load_arch
from tilewise.executor.interpreter import _Executor, verify
from tilewise.executor.reference import random_inputs

CPU = "dram[m64 n60 k40] nmk {p}| l3[m64 n8 k40] mnk | l2[m16 n8 k24] mnk | l1[m16 n8 k8]"


@pytest.mark.parametrize("packed", ["pack:A ", "pack:B ", "pack:A,B,C "])
def test_packed_gemm_equals_the_reference(packed):
    """n = 60 by pack tiles of 8: the last B and C tiles are padded."""
    w = gemm(64, 60, 40, dtype="f32")
    assert verify(w, Mapping.parse(CPU.format(p=packed)), seed=1, arch="cpu-6core").passed


def test_packed_output_with_partial_sums_on_the_aie_array():
    """K split at the memtile: C's partial sums are stored into and reloaded from its packed
    slots; A and B packed by the memtile tile."""
    m = Mapping.parse("ddr[m40 n48 k32] mnk pack:A,B,C | memtile[m32 n32 k16] kmn db:A | "
                      "core[m16 n8 k16] db:A,B ; rows=n4 cols=m2")
    assert verify(gemm(40, 48, 32), m, seed=1, arch="aie-4x2").passed


def test_the_outermost_level_really_holds_the_packed_array():
    w = gemm(64, 60, 40, dtype="f32")
    inputs = random_inputs(w, 0)
    ex = _Executor(w, load_arch("cpu-6core"), Mapping.parse(CPU.format(p="pack:B ")), inputs)
    b = ex.buffers[(0, None, "B")].data
    assert b.shape == (1, 8, 40, 8)  # B[k40, n60] by tiles [40, 8]: 1 x 8 tiles, padded
    np.testing.assert_array_equal(b[0, 2], inputs["B"][:, 16:24])
    assert not b[0, 7, :, 4:].any()  # the padding of the last tile


def test_the_dma_emitter_refuses_a_packed_layout_with_one_line():
    from tilewise.emit.dma.program import build_program
    from tilewise.errors import DmaError

    m = Mapping.parse("ddr[m40 n48 k32] mnk pack:B | memtile[m32 n32 k16] kmn | "
                      "core[m16 n8 k16] ; rows=n4 cols=m2")
    with pytest.raises(DmaError, match="mapping packs B at ddr"):
        build_program(gemm(40, 48, 32), load_arch("aie-4x2"), m)
