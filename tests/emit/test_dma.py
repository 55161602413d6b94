"""The AIE data-movement program: DMA limits, descriptor splits, the byte-level simulator
against the numpy reference, and the bytes it moves against the model's per level and tensor."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings, strategies as st

from tilewise import conv2d, gemm, layernorm, load_arch, mha
from tilewise.arch.loader import arch_to_yaml, parse_arch
from tilewise.emit.dma.check import check_program
from tilewise.emit.dma.listing import listing, to_records
from tilewise.emit.dma.pattern import Access, descriptors
from tilewise.emit.dma.program import build_program
from tilewise.emit.dma.simulator import run_program
from tilewise.errors import DmaError, SpecError
from tilewise.executor.interpreter import compare, magnitude
from tilewise.executor.reference import random_inputs, reference
from tilewise.mapping import Mapping
from tilewise.model.cost import evaluate
from tilewise.simulation.trace import simulate

from ..model.strategies import mappings

AIE = ("aie-4x2", "npu1", "npu2")


def _program_matches(workload, arch, mapping, seed=1):
    """Run the program: outputs equal the reference, bytes per level and tensor the model's."""
    arch = load_arch(arch)
    program = build_program(workload, arch, mapping)
    check_program(program)
    data = random_inputs(workload, seed)
    done = run_program(program, data)
    report = compare(workload, done.outputs, reference(workload, data), magnitude(workload, data))
    assert report.passed, str(report)
    cost = evaluate(workload, arch, mapping, check_capacity=False)
    for level in program.levels[1:]:
        assert done.reads.get(level, {}) == {t: b for t, b in cost.reads[level].items() if b}, level
        assert done.writes.get(level, {}) == {t: b for t, b in cost.writes[level].items() if b}, level
    # one move per transfer the model charges a fixed cost for (fills in, drains out)
    moves = {(mv.link, mv.tensor): 0 for mv in program.moves}
    for mv in program.moves:
        moves[(mv.link, mv.tensor)] += 1
    for (link, tensor), n in moves.items():
        inner = max(link)
        table = cost.drains if link[0] == inner else cost.fills
        assert table[program.levels[inner]][tensor] == n, (link, tensor)
    _bds_match(program, workload, arch, mapping)
    return program


def _program_bds(program) -> tuple[dict, dict]:
    """BDs per level and tensor of the moves into (fills) and out of (drains) each level."""
    fills: dict = {}
    drains: dict = {}
    for mv in program.moves:
        inner = max(mv.link)
        table = drains if mv.link[0] == inner else fills
        row = table.setdefault(program.levels[inner], {})
        row[mv.tensor] = row.get(mv.tensor, 0) + mv.bds
    clean = lambda t: {lv: {k: v for k, v in row.items() if v} for lv, row in t.items()
                       if any(row.values())}
    return clean(fills), clean(drains)


def _bds_match(program, workload, arch, mapping) -> None:
    """The emitter's BDs per transfer, summed per level and tensor, equal the simulation's
    own count from the walk."""
    trace = simulate(workload, arch, mapping)
    rows = tuple({lv: row for lv, row in t.items() if row} for t in (trace.fill_bds, trace.drain_bds))
    assert _program_bds(program) == rows, str(mapping)
    cost = evaluate(workload, arch, mapping, check_capacity=False)  # and the model's (issue 17)
    assert (cost.fill_bds, cost.drain_bds) == rows, str(mapping)


# ----- limits in the arch spec


@pytest.mark.parametrize("name", AIE)
def test_presets_declare_dma_limits_with_sources(name):
    arch = load_arch(name)
    shim, memtile, core = (lv.dma for lv in arch.levels)
    assert (shim.dims, memtile.dims, core.dims) == (3, 4, 3)
    assert (shim.bds, memtile.bds, core.bds) == (16, 48, 16)
    assert (shim.max_wrap, memtile.max_wrap, core.max_wrap) == (1023, 1023, 255)
    assert memtile.zero_padding and not shim.zero_padding
    assert "AM025" in arch.sources["levels[2].dma.max_stride"]
    assert parse_arch(arch_to_yaml(arch)) == arch


def test_a_dma_limit_must_be_positive():
    text = arch_to_yaml(load_arch("aie-4x2")).replace("max_wrap: 255", "max_wrap: 0")
    with pytest.raises(SpecError, match=r"levels\[2\]\.dma\.max_wrap: 0 is not valid"):
        parse_arch(text, "x.yaml")


# ----- descriptors within the limits


def test_a_long_inner_dim_is_factored_and_a_huge_stride_unrolled():
    # 3 blocks of 2048 rows of 16 i32 elements: 2048 rows exceed the 1023 wrap of an inner dim
    shim = load_arch("npu1").level("ddr").dma
    (bd,) = descriptors(Access("ddr.A", 0, (3, 2048, 16), (2048 * 256 + 16, 256, 1), 4), shim, "t")
    assert (bd.repeat, bd.repeat_stride, bd.sizes, bd.strides) == (3, 2048 * 256 + 16, (2048, 16), (256, 1))
    memtile = load_arch("npu1").level("memtile").dma  # 4 dims: room to factor 2048 = 4 x 512 (the largest divisor within the wrap)
    (bd,) = descriptors(Access("m.A", 0, (2, 2048, 16), (2048 * 32 + 16, 32, 1), 4), memtile, "t")
    assert (bd.sizes, bd.strides) == ((2, 4, 512, 16), (2048 * 32 + 16, 512 * 32, 32, 1))
    core = load_arch("npu1").level("core").dma
    bds = descriptors(Access("c.A", 0, (3, 8), (10000, 1), 4), core, "t")
    assert [d.offset for d in bds] == [0, 10000, 20000]  # stride 10000 words > 8192: one BD per row


def test_sub_word_patterns_are_refused_naming_the_field():
    shim = load_arch("aie-4x2").level("ddr").dma
    with pytest.raises(DmaError, match=r"A load: ddr.A: field sizes\[-1\] = 6 B"):
        descriptors(Access("ddr.A", 0, (4, 6), (64, 1), 1), shim, "A load")
    with pytest.raises(DmaError, match="field offset = 2 B"):
        descriptors(Access("ddr.A", 2, (4, 8), (64, 1), 1), shim, "A load")


def test_check_program_names_the_descriptor_and_field_over_a_tighter_limit():
    w = gemm(64, 64, 64)
    m = "ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m16 n16 k64] ; rows=n4 cols=m2"
    arch = load_arch("aie-4x2")
    program = build_program(w, arch, Mapping.parse(m))
    # the memtile reads B's 64 x 16 core tile as 64 rows of 4 words: a wrap of 2 is too small
    tight = dataclasses.replace(arch.levels[1].dma, max_wrap=2)
    small = dataclasses.replace(arch, levels=(arch.levels[0], dataclasses.replace(arch.levels[1], dma=tight),
                                              arch.levels[2]))
    with pytest.raises(DmaError, match=r"move \d+ \(load B\): memtile.B descriptor 0: field sizes\[1\] = 4 \(wrap limit 2\)"):
        check_program(program, small)
    # built for the tighter DMA, the same moves take more descriptors, all within it
    again = build_program(w, small, Mapping.parse(m))
    assert check_program(again, small).descriptors >= check_program(program).descriptors


def test_a_border_tile_of_a_4d_window_takes_two_bds_on_the_cores_3d_dma():
    # I's core buffer is 2 x 8 x 6 x 8 (the largest window tile, rows rounded out to words);
    # the border tile c 8..12, h 4..8, w 4..8 of it is 4-D (no dims merge), and the core's
    # DMA has 3 dims and no repeat: one BD per image, 2 BDs for the transfer
    w = conv2d(2, 12, 8, 8, 8, 3, 3, dtype="i8")
    arch = load_arch("aie-4x2")
    m = Mapping.parse("ddr[n2 k8 c12 p6 q6 r3 s3] nkcpqrs | memtile[n2 k8 c12 p6 q6 r3 s3] nkcpqrs"
                      " | core[n2 k8 c8 p4 q4 r3 s3]")
    program = build_program(w, arch, m)
    two = [mv for mv in program.moves if mv.bds > 1]
    assert {(mv.tensor, mv.link, mv.bds) for mv in two} == {("I", (1, 2), 2)}
    assert [len(s.descriptors) for s in (two[0].source,) + two[0].destinations] == [1, 2]
    trace = simulate(w, arch, m)
    assert trace.fill_bds["core"]["I"] == trace.fills["core"]["I"] + len(two) == 9
    _bds_match(program, w, arch, m)


# ----- the simulator


def test_seed_003_gemm_executes_to_the_reference_and_moves_the_models_bytes():
    m = Mapping.parse("ddr[m512 n768 k768] knm | memtile[m512 n32 k256] mnk db:A,B,C | "
                      "core[m64 n32 k256] db:B,C ; rows=m4 cols=m2")  # the search's optimum
    program = _program_matches(gemm(512, 768, 768), "aie-4x2", m)
    text = listing(program)
    assert "ddr MM2S ch0 A (ddr.A): 3 BDs, 1 pattern" in text
    assert "sizes [512, 64] strides [192, 1] words" in text


def test_i8_output_partial_sums_cascade_and_saturate():
    # K split over the rows of a column (the cascade) and at DDR: i32 partial sums, i8 result
    m = Mapping.parse("ddr[m32 n48 k64] kmn | memtile[m32 n32 k32] kmn | core[m16 n8 k16] ; rows=k2 cols=m2")
    program = _program_matches(gemm(32, 48, 64, out_dtype="i8"), "aie-4x2", m)
    kinds = {(mv.kind, mv.final, bool(mv.combine), mv.convert) for mv in program.moves}
    assert ("store", True, True, "int64->int8") in kinds or ("store", True, True, "int32->int8") in kinds
    assert {b.name for b in program.buffers.values()} >= {"ddr.C", "ddr.C.acc", "memtile.C.acc"}


@pytest.mark.parametrize("dv", [64, 128])
def test_seed_003_attention_program_is_checked_and_executes(dv):
    """Seed 003's attention (i16, L0 = L1 = 512, d = 64, r = dv) on aie-4x2 at the search's
    optimum: the i16 program is within every limit; the executor has no integer softmax, so the
    same mapping runs with bf16 data, whose program is the i16 one record for record (same
    widths: 2-byte inputs, 4-byte accumulators)."""
    arch = load_arch("aie-4x2")
    m = Mapping.parse({64: "ddr[h1 m512 n512 k64 e64] mnhke | memtile[h1 m256 n64 k64 e64] hmnke db:K,O,Q,V | "
                           "core[h1 m32 n64 k64 e64] ; rows=m4 cols=m2",
                       128: "ddr[h1 m512 n512 k64 e128] mnhke | memtile[h1 m128 n32 k64 e128] hmnke db:K,O,Q,V | "
                            "core[h1 m16 n32 k64 e128] ; rows=m4 cols=m2"}[dv])
    program = build_program(mha(512, 512, 64, dtype="i16", dv=dv), arch, m)
    check_program(program)
    rates = dict(arch.compute.macs_per_cycle, bf16=64)
    vec = dict(arch.compute.vector_ops_per_cycle, bf16=128)
    bf16 = dataclasses.replace(arch, compute=dataclasses.replace(arch.compute, macs_per_cycle=rates,
                                                                  vector_ops_per_cycle=vec))
    same = _program_matches(mha(512, 512, 64, dtype="bf16", dv=dv), bf16, m)
    assert to_records(same) == to_records(program)


def test_attention_layernorm_and_conv_execute():
    _program_matches(mha(32, 32, 16, heads=1, dtype="bf16"), "npu1",
                     Mapping.parse("ddr[h1 m32 n32 k16 e16] hmnke | memtile[h1 m32 n32 k16 e16] hmnke | "
                                   "core[h1 m4 n32 k16 e16] db:K,O,Q,V ; rows=m4 cols=m5"))
    _program_matches(layernorm(32, 64, dtype="bf16"), "npu1",
                     Mapping.parse("ddr[r32 c64] rc | memtile[r32 c64] rc | core[r2 c64] db:beta,gamma ; rows=r4 cols=r5"))
    _program_matches(conv2d(1, 16, 8, 8, 16, 3, 3, padding=1, dtype="i8"), "aie-4x2",
                     Mapping.parse("ddr[n1 k16 c16 p8 q8 r3 s3] cnkpqrs | memtile[n1 k16 c8 p8 q8 r3 s3] nkcpqrs "
                                   "db:I,O,W | core[n1 k8 c8 p2 q8 r3 s3] db:I,O,W ; rows=p4 cols=k2"))


def test_window_rows_are_rounded_out_to_words_and_execute():
    """An i8 3x3 convolution whose windows are 10 B at odd offsets (q tiles of 8 in 16
    columns, padding 1): each row moves the whole words around its window, the DDR rows are
    padded host-side (18 -> 20 columns), and the program executes to the reference moving
    exactly the model's bytes."""
    w = conv2d(1, 8, 8, 18, 8, 3, 3, padding=1, stride=1, dtype="i8")
    m = Mapping.parse("ddr[n1 k8 c8 p8 q18 r3 s3] qcnkprs | memtile[n1 k8 c8 p8 q8 r3 s3] nkcpqrs "
                      "db:I,O,W | core[n1 k8 c8 p2 q8 r3 s3] db:I,O,W ; rows=p4")
    program = _program_matches(w, "aie-4x2", m)
    assert program.buffers["ddr.I"].shape == (1, 8, 8, 20)
    loads = [mv for mv in program.moves if mv.tensor == "I" and mv.link == (0, 1)]
    assert {mv.box[-1] for mv in loads} == {(0, 12), (4, 20), (12, 20)}  # [0, 9) [7, 17) [15, 18)
    # the model sizes the buffers for the rounded-out rows: each tile buffer fits its bytes
    from tilewise.model.legality import merged_ways
    from tilewise.model.problem import Problem

    arch = load_arch("aie-4x2")
    problem = Problem.build(w, arch)
    tiles = [lv.sizes for lv in m.levels]
    for b in program.buffers.values():
        if b.tensor == "I" and b.level:
            assert b.nbytes <= problem.buffer_bytes("I", b.level, tiles, merged_ways(m, arch), False)


def test_output_rows_are_padded_to_words_and_execute():
    """A bf16 GEMM result of 9 columns on npu1, in n tiles of 8: the DDR copy's rows are
    padded to 10 columns (cropped by the host), the border tile's row of 1 element is stored
    as one 4-byte word at each level, and the program executes to the reference moving exactly the model's bytes. A
    tile starting inside a word (n tiles of 3 bf16, 6 B: B's rows first) has no program: its offset is named."""
    w = gemm(8, 9, 16, dtype="bf16", out_dtype="bf16")
    program = _program_matches(w, "npu1", Mapping.parse(
        "ddr[m8 n9 k16] mnk | memtile[m8 n8 k16] mnk | core[m8 n8 k16]"))
    assert program.buffers["ddr.C"].shape == (8, 10)
    border = [mv for mv in program.moves if mv.kind == "store" and mv.box[-1][0] == 8]
    assert {mv.box[-1] for mv in border} == {(8, 10)} and {mv.nbytes for mv in border} == {8 * 4}
    spanning = _program_matches(w, "npu1", Mapping.parse(
        "ddr[m8 n9 k16] mnk | memtile[m4 n9 k16] mnk | core[m4 n16 k16]"))
    assert spanning.buffers["ddr.C"].shape == (8, 9)  # no tile splits a row: the tensor's pitch
    stores = [mv for mv in spanning.moves if mv.kind == "store" and mv.link == (1, 0)]
    assert [d.sizes for mv in stores for d in mv.destinations[0].descriptors] == [(18,), (18,)]
    with pytest.raises(DmaError, match=r"ddr.B: field offset = 6 B is not a multiple"):
        build_program(w, load_arch("npu1"), Mapping.parse(
            "ddr[m8 n9 k16] mnk | memtile[m8 n3 k16] mnk | core[m8 n8 k16]"))


def _tampered(program, index, side, **changes):
    items = list(program.items)
    mv = next(x for x in program.moves if x.index == index)
    s = mv.destinations[0] if side == "dest" else mv.source
    s = dataclasses.replace(s, descriptors=(dataclasses.replace(s.descriptors[0], **changes),) + s.descriptors[1:])
    mv = dataclasses.replace(mv, destinations=(s,) + mv.destinations[1:]) if side == "dest" else \
        dataclasses.replace(mv, source=s)
    items[items.index(next(x for x in program.moves if x.index == index))] = mv
    return dataclasses.replace(program, items=tuple(items))


def test_bad_descriptors_are_errors_naming_move_buffer_and_field():
    w = gemm(32, 32, 32)
    program = build_program(w, load_arch("aie-4x2"), Mapping.parse(
        "ddr[m32 n32 k32] mnk | memtile[m32 n32 k32] mnk | core[m16 n16 k32] ; rows=n2 cols=m2"))
    first = program.moves[0]
    d = first.source.descriptors[0]
    with pytest.raises(DmaError, match=rf"move {first.index} \(A\): ddr.A descriptor 0: field offset"):
        run_program(_tampered(program, first.index, "source", offset=d.offset + 4000))
    dd = first.destinations[0].descriptors[0]
    overlapping = _tampered(program, first.index, "dest", sizes=(2, dd.sizes[-1] // 2), strides=(0, 1))
    with pytest.raises(DmaError, match="destination descriptors take|write some bytes twice"):
        run_program(overlapping)


def test_json_has_one_record_per_descriptor():
    program = build_program(gemm(32, 32, 32), load_arch("npu1"), Mapping.parse(
        "ddr[m32 n32 k32] mnk | memtile[m32 n32 k32] mnk | core[m8 n16 k32] ; rows=m4 cols=n2"))
    records = to_records(program)
    assert len(records) == check_program(program).descriptors
    assert {"move", "tile", "direction", "channel", "offset_words", "sizes", "strides_words"} <= set(records[0])


# ----- property: random valid solutions on the AIE presets


@st.composite
def _cases(draw):
    arch = load_arch(draw(st.sampled_from(AIE)))
    kind = draw(st.sampled_from(["gemm", "mha", "layernorm", "conv2d"]))
    four = st.integers(1, 6).map(lambda x: 4 * x)
    float_dt = "bf16" if "bf16" in arch.compute.macs_per_cycle else None
    if kind == "conv2d":  # windows of any byte length: rows rounded out to whole words
        arch = load_arch("aie-4x2")
        r = draw(st.integers(1, 3))
        w = conv2d(1, draw(st.integers(1, 8)), draw(st.integers(r, 8)), draw(st.integers(r, 8)),
                   draw(st.integers(1, 8)), r, r, stride=draw(st.integers(1, 2)),
                   padding=draw(st.integers(0, 1)), dtype=draw(st.sampled_from(["i8", "i16", "i32"])))
    elif kind == "gemm" or float_dt is None:
        dt = draw(st.sampled_from(sorted(arch.compute.macs_per_cycle)))
        out = draw(st.sampled_from([None, "i8"])) if dt == "i8" else None
        w = gemm(draw(four), draw(four), draw(four), dtype=dt, out_dtype=out)
    elif kind == "mha":
        w = mha(draw(four), draw(four), draw(st.sampled_from([4, 8])), heads=draw(st.integers(1, 2)), dtype=float_dt)
    else:
        w = layernorm(draw(four), draw(four), dtype=float_dt)
    return w, arch, draw(mappings(w, arch))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_random_solutions_execute_to_the_reference_and_move_the_models_bytes(case):
    w, arch, m = case
    try:
        build_program(w, arch, m)
    except DmaError as e:  # a tile whose rows are not whole 32-bit words: no DMA can move it;
        # a chain's reduction split over cores (its merge is core code, not yet emitted)
        assert "32-bit" in str(e) or "-byte word" in str(e) or "merging its partial" in str(e)
        reject()
    _program_matches(w, arch, m)


# ----- the CLI


def test_cli_emit_dma_lists_writes_json_and_png_and_runs(tmp_path, capsys):
    import json

    from tilewise.cli import main
    from tilewise.executor.solution import SolutionFile

    sol = tmp_path / "s.json"
    sol.write_text(SolutionFile(gemm(64, 64, 64, out_dtype="i8"), "aie-4x2", Mapping.parse(
        "ddr[m64 n64 k64] kmn | memtile[m64 n64 k32] mnk | core[m16 n16 k32] ; rows=n4 cols=m2")).to_json())
    out_json, png = tmp_path / "bd.json", tmp_path / "b.png"
    assert main(["emit", "dma", str(sol), "--json", str(out_json), "--png", str(png), "--tensor", "B",
                 "--link", "memtile->core", "--run"]) == 0
    out = capsys.readouterr().out
    assert "memtile->core" in out and "C i8 (64, 64): max abs error 0" in out and "DIFFERENT" not in out
    assert json.loads(out_json.read_text())[0]["link"] == "ddr->memtile"
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["emit", "dma", str(sol), "--png", str(png), "--tensor", "B", "--link", "core->ddr"]) == 2
    assert "no move of B over link 'core->ddr'; its links: ddr->memtile, memtile->core" in capsys.readouterr().err


def test_a_chains_reduction_over_cores_is_refused_with_one_line():
    w = mha(32, 64, 16, dtype="bf16")
    m = Mapping.parse("ddr[h1 m32 n64 k16 e16] mnhke | memtile[h1 m32 n64 k16 e16] hmnke | "
                      "core[h1 m16 n16 k16 e16] ; rows=n4 cols=m2")
    with pytest.raises(DmaError, match="rows=n4: n is reduced inside the fused chain mha"):
        build_program(w, load_arch("aie-4x2"), m)
    g = Mapping.parse("ddr[m16 n16 k32] mnk | memtile[m16 n16 k32] mnk | core[m16 n16 k16] ; cols=k2")
    with pytest.raises(DmaError, match="cols=k2: partial sums merged through the parent"):
        build_program(gemm(16, 16, 32), load_arch("aie-4x2"), g)
