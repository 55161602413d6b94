"""Levels that hold only some tensors (``holds``) and bytes reserved per tensor: the forced
bypass, per-part capacity, model == simulation == executor, and the errors."""

import pytest
from hypothesis import given, settings, strategies as st

from tilewise import Mapping, evaluate, gemm, simulate
from tilewise.errors import CapacityError, MappingError, SpecError
from tilewise.executor.interpreter import verify
from tilewise.ir import library as lib
from tilewise.model.batch import MappingBatch

from ..executor.workloads import KINDS, constructor
from .archs import output_registers, per_operand
from .strategies import mappings, workloads
from .test_model_vs_simulation import _compare

HELD = st.sampled_from([per_operand(), output_registers(), per_operand(2, 1),
                        output_registers(1, 2)])


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_model_equals_simulation_with_held_subsets(data):
    workload = data.draw(workloads())
    arch = data.draw(HELD)
    _compare(workload, arch, data.draw(mappings(workload, arch)))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_executor_equals_reference_with_held_subsets(data):
    workload = data.draw(constructor(data.draw(st.sampled_from(KINDS))))
    arch = data.draw(HELD)
    mapping = data.draw(mappings(workload, arch))
    if not evaluate(workload, arch, mapping, check_capacity=False).fits:
        with pytest.raises(CapacityError):
            verify(workload, mapping, seed=1, arch=arch)
        return
    report = verify(workload, mapping, seed=1, arch=arch)
    assert report.passed, f"{arch.name}: {mapping}\n{report}"


def test_output_registers_hand_counted():
    """GEMM 8x8x8 i8 on L3 -> L1 -> output registers, one core: A and B never enter the
    registers (the core reads them from L1); C's 2x2 register tile is zeroed, accumulated
    over k there, stored once to L1 (i32 sums, 16 tiles x 16 B), and L1 gets each of A, B, C
    once from L3 / back to L3."""
    arch = output_registers(1, 1)
    w = gemm(8, 8, 8)
    m = Mapping.parse("l3[m8 n8 k8] mnk | l1[m8 n8 k8] mnk | reg[m2 n2 k8]")
    cost = evaluate(w, arch, m)
    assert cost.reads == {"l1": {"A": 64, "B": 64}, "reg": {}}
    assert cost.writes == {"l1": {"C": 256}, "reg": {"C": 256}}
    assert cost.footprint["reg"] == 16 and cost.footprint["l1"] == 64 + 64 + 256
    trace = simulate(w, arch, m)
    assert (trace.reads, trace.writes) == (cost.reads, cost.writes)
    assert verify(w, m, seed=3, arch=arch).passed


def test_mapping_text_states_the_forced_bypass():
    """A mapping that omits the bypass the arch forces costs the same, and a mapping read back
    from a batch (as the search reports it) states it."""
    arch = per_operand()
    w = gemm(8, 8, 8)
    text = "dram[m8 n8 k8] mnk | sram[m8 n8 k8] kmn | reg[m4 n2 k2] ; cols=n2"
    m = Mapping.parse(text)
    back = MappingBatch.from_mappings(w, arch, [m]).mapping(0, w, arch)
    assert str(back) == ("dram[m8 n8 k8] mnk | sram[m8 n8 k8] kmn bypass:B | "
                         "reg[m4 n2 k2] bypass:A ; cols=n2")
    assert evaluate(w, arch, back) == evaluate(w, arch, m)
    assert back.to_dict()["levels"][2]["bypass"] == ["A"]


def test_errors_name_the_culprit():
    w = lib.conv2d(1, 2, 4, 4, 2, 3, 3, padding=1)
    arch = output_registers(1, 1)
    named = arch.__class__(**{**arch.__dict__, "levels": arch.levels[:2] + (
        arch.levels[2].__class__(**{**arch.levels[2].__dict__, "holds": ("C",)}),)})
    m = Mapping.parse("l3[n1 k2 c2 p4 q4 r3 s3] nkcpqrs | l1[n1 k2 c2 p4 q4 r3 s3] nkcpqrs | "
                      "reg[n1 k2 c2 p4 q4 r3 s3]")
    with pytest.raises(SpecError, match="holds 'C', but workload conv2d has no tensor or role "
                                        "of that name; tensors: I, W, O; roles: in1, in2, in3, out"):
        evaluate(w, named, m)
    g = gemm(8, 8, 8)
    with pytest.raises(MappingError, match="level reg does not hold A .*cannot double-buffer"):
        evaluate(g, per_operand(1, 1), "dram[m8 n8 k8] mnk | sram[m8 n8 k8] mnk | reg[m1 n1 k1] db:A")
    with pytest.raises(MappingError, match="innermost: compute reads its operands there, so B "
                                           "cannot be bypassed"):
        evaluate(g, per_operand(1, 1), "dram[m8 n8 k8] mnk | sram[m8 n8 k8] mnk | reg[m1 n1 k1] bypass:B")
    # B's register part is 128 B: a 16 x 16 i8 tile of B needs 256
    g = gemm(16, 16, 16)
    with pytest.raises(CapacityError, match="level reg \\(the part reserved for in2\\): the tiles "
                                            "need 256 bytes per instance but it holds 128"):
        evaluate(g, per_operand(1, 1), "dram[m16 n16 k16] mnk | sram[m16 n16 k16] mnk | reg[m1 n16 k16]")
