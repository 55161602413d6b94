"""Every BD the emitter writes passes mlir-aie's own verifier, restated here from its source.

A peer check of the program (issue 17): the limits below are not read from the preset YAMLs or
from ``tilewise.model.descriptors`` (the rule the emitter splits by), but from mlir-aie's
verifiers of a BD's access pattern, as its source states them:

- ``AIEX::verifyStridesWraps`` (lib/Dialect/AIEX/IR/AIEXDialect.cpp): wrap fields of 10 bits
  on shim (NOC) and memory tiles, 8 bits on core tiles ("Size 0/1 exceeds the [0:1023]
  range"), step fields of 20 / 17 / 13 bits ("Stride i exceeds the [1:2^bits] range"), an
  iteration (repeat) of 6 bits ("Size 3 exceeds the [1:64] range"); sizes positive; a stride
  of a dimension that runs more than once positive; the innermost size and every stride whole
  32-bit granules; a linear transfer (one contiguous dimension) skips the wrap check, its
  ``buffer_length`` register having 32 / 17 / 14 bits;
- ``DMABDOp::verify`` (lib/Dialect/AIE/IR/AIEDialect.cpp and its tests
  ``bad-iteration-too-many-dims.mlir``, ``dma_task_iteration_invalid.mlir``): at most 3 data
  dimensions on shim and core tiles, 4 on memory tiles, 3 there when the iteration is set;
  the outermost dimension of a full-rank pattern has no wrap field (its count follows from the
  length).

The emitter's records carry sizes and strides in 32-bit words (innermost last), so the
granule rules hold when every field is a whole number, which the records' types guarantee;
what is checked is the field widths and dimension counts.
"""

from __future__ import annotations

from typing import NamedTuple

from hypothesis import HealthCheck, given, reject, settings

from tilewise import gemm, load_arch, mha
from tilewise.emit.dma.listing import to_records
from tilewise.emit.dma.program import build_program
from tilewise.errors import DmaError
from tilewise.mapping import Mapping

from .test_dma import _cases


class TileRules(NamedTuple):
    """One tile type's BD fields in mlir-aie (bits; dims counts data dimensions)."""

    dims: int
    wrap_bits: int
    step_bits: int
    iteration_bits: int
    length_bits: int


MLIR_AIE = {
    "shim": TileRules(dims=3, wrap_bits=10, step_bits=20, iteration_bits=6, length_bits=32),
    "memtile": TileRules(dims=4, wrap_bits=10, step_bits=17, iteration_bits=6, length_bits=17),
    "core": TileRules(dims=3, wrap_bits=8, step_bits=13, iteration_bits=6, length_bits=14),
}


def _kind(tile: str) -> str:
    """The tile type of a record's ``tile`` (``ddr`` is addressed by the shim's DMA)."""
    return "shim" if tile == "ddr" else "core" if tile.startswith("core") else "memtile"


def violations(record: dict) -> list[str]:
    """What mlir-aie's verifiers would refuse in one emitted BD (empty: accepted)."""
    rules = MLIR_AIE[_kind(record["tile"])]
    sizes, strides = record["sizes"], record["strides_words"]
    n, repeat = len(sizes), record["repeat"]
    bad = []
    dims = rules.dims - 1 if rules.dims == 4 and repeat > 1 else rules.dims
    if n > dims:
        bad.append(f"{n} dimensions > {dims}")
    if any(s < 1 for s in sizes):
        bad.append(f"sizes {sizes} not positive")
    if any(size > 1 and stride < 1 for size, stride in zip(sizes, strides)):
        bad.append(f"strides {strides} not positive where the size runs")
    words = 1
    for s in sizes:
        words *= s
    linear = n == 1 and strides[0] == 1
    if linear:
        if words * repeat >= 1 << rules.length_bits:
            bad.append(f"length {words} words over {rules.length_bits} bits")
    else:
        wrapped = sizes[1:] if n == rules.dims else sizes  # a full-rank outermost dim: no field
        if any(s > (1 << rules.wrap_bits) - 1 for s in wrapped):
            bad.append(f"sizes {sizes} over the {rules.wrap_bits}-bit wrap")
    if any(st > 1 << rules.step_bits for size, st in zip(sizes, strides) if size > 1):
        bad.append(f"strides {strides} over the {rules.step_bits}-bit step")
    if repeat > 1 << rules.iteration_bits:
        bad.append(f"repeat {repeat} over {1 << rules.iteration_bits}")
    if repeat > 1 and record["repeat_stride_words"] > 1 << rules.step_bits:
        bad.append(f"repeat stride {record['repeat_stride_words']} over the step field")
    return bad


def _refused(records: list[dict]) -> list[str]:
    return [f"{r['tile']} {r['direction']} {r['tensor']} bd {r['bd']}: {v}"
            for r in records for v in violations(r)]


def test_the_rules_refuse_what_mlir_aie_refuses():
    """The restatement itself, on patterns mlir-aie's own tests refuse and accept."""
    base = {"tile": "ddr", "repeat": 1, "repeat_stride_words": 0}
    assert _refused([{**base, "sizes": [4, 1024], "strides_words": [2048, 1], "tensor": "A",
                      "direction": "MM2S", "bd": 0}])  # d0 wrap 1024 > 1023
    assert not _refused([{**base, "sizes": [1 << 20], "strides_words": [1], "tensor": "A",
                          "direction": "MM2S", "bd": 0}])  # linear: the length register
    core = {**base, "tile": "core[0,0]", "tensor": "B", "direction": "S2MM", "bd": 0}
    assert _refused([{**core, "sizes": [2, 2, 2, 8], "strides_words": [32, 16, 8, 1]}])
    assert _refused([{**core, "sizes": [256, 4], "strides_words": [8, 1]}])  # 8-bit d1 wrap
    assert not _refused([{**core, "sizes": [300, 4, 4], "strides_words": [16, 4, 1]}])
    mem = {**base, "tile": "memtile", "tensor": "B", "direction": "MM2S", "bd": 0}
    assert not _refused([{**mem, "sizes": [2, 2, 2, 8], "strides_words": [256, 64, 8, 1]}])
    assert _refused([{**mem, "sizes": [2, 2, 2, 8], "strides_words": [1, 16, 64, 128],
                      "repeat": 2, "repeat_stride_words": 8}])
    assert _refused([{**base, "sizes": [8], "strides_words": [2], "repeat": 65,
                      "repeat_stride_words": 1, "tensor": "A", "direction": "MM2S", "bd": 0}])


def test_seed_003_gemm_and_attention_programs_pass_mlir_aie_rules():
    arch = load_arch("aie-4x2")
    cases = [
        (gemm(512, 768, 768, dtype="i8"), "ddr[m512 n768 k768] knm | memtile[m512 n32 k256] mnk"
         " db:A,B,C | core[m64 n32 k256] db:B,C ; rows=m4 cols=m2"),
        (mha(512, 512, 64, dtype="i16"), "ddr[h1 m512 n512 k64 e64] mnhke | memtile[h1 m256 n64"
         " k64 e64] hmnke db:K,O,Q,V | core[h1 m32 n64 k64 e64] ; rows=m4 cols=m2"),
    ]
    for w, text in cases:
        records = to_records(build_program(w, arch, Mapping.parse(text)))
        assert records and not _refused(records), _refused(records)[:5]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_random_programs_on_aie_presets_pass_mlir_aie_rules(case):
    w, arch, m = case
    try:
        program = build_program(w, arch, m)
    except DmaError:  # refused with a message (test_dma checks which)
        reject()
    records = to_records(program)
    assert not _refused(records), (str(m), _refused(records)[:5])
