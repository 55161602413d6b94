"""Contiguous runs and packed layouts (:mod:`tilewise.model.contiguity`): the model's sums over
tile lists equal the simulation's run-by-run count, and both equal counts by hand."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilewise import Mapping, gemm
from tilewise.arch.loader import load_arch
from tilewise.errors import MappingError
from tilewise.model.batch import MappingBatch
from tilewise.model.contiguity import run_axes
from tilewise.model.cost import evaluate, evaluate_batch
from tilewise.model.structure import Structure
from tilewise.simulation.trace import simulate

from .strategies import ARCHS, mappings, workloads
from .test_kernel_vs_numpy_reference import CASES, search_shaped
from .test_model_vs_simulation import _compare

CPU = "dram[m64 n64 k64] {o0} {pack}| l3[m64 n{n3} k64] mnk | l2[m16 n8 k64] mnk | l1[m16 n8 k8]"


def test_row_major_tiles_move_whole_cache_lines_hand_counted():
    """GEMM 64x64x64 f32 on cpu-6core (64 B lines). L2 tile A 16x64: its rows span A's rows,
    so the tile is one 4 KiB run, loaded once per m (4 x 4096). B 64x8: 64 rows of 32 B, each a
    64 B line: 4096 B per tile (exact: 2048), reloaded for each of the 4 x 8 (m, n) tiles.
    L1 tiles A 16x8 and B 8x8: 16 and 8 lines, 8 k steps in each of the 32 L2 tiles. C 16x8:
    16 lines per store, once per L2 tile at both levels."""
    c = evaluate(gemm(64, 64, 64, dtype="f32"), load_arch("cpu-6core"),
                 Mapping.parse(CPU.format(o0="mnk", pack="", n3=64)))
    assert c.reads == {"l3": {"A": 16384, "B": 16384},
                       "l2": {"A": 4 * 4096, "B": 32 * 64 * 64},
                       "l1": {"A": 256 * 16 * 64, "B": 256 * 8 * 64}}
    assert c.writes == {"l3": {"C": 16384}, "l2": {"C": 32 * 16 * 64}, "l1": {"C": 32 * 16 * 64}}


def test_packed_operand_moves_one_run_per_tile_and_pays_its_pass():
    """B packed by its L3 tile 64x8 (inner_tiles [64, 8]): each of the 8 L3 tiles is one
    2048 B run (row-major: 64 lines, 4096 B). The pack pass reads B (16 KiB) and writes it
    packed (16 KiB) over the DRAM link, 42.656 GB/s, before the GEMM."""
    w, arch = gemm(64, 64, 64, dtype="f32"), load_arch("cpu-6core")
    plain = evaluate(w, arch, Mapping.parse(CPU.format(o0="nmk", pack="", n3=8)))
    packed = evaluate(w, arch, Mapping.parse(CPU.format(o0="nmk", pack="pack:B ", n3=8)))
    assert plain.reads["l3"]["B"] == 8 * 64 * 64
    assert packed.reads["l3"]["B"] == 8 * 2048
    assert packed.reads["l2"] == plain.reads["l2"]  # inner levels read the pack tile's rows
    assert packed.pack == {"B": {"bytes": 32768, "s": pytest.approx(32768 / 42.656e9),
                                 "j": None}}
    assert packed.offchip_bytes == plain.offchip_bytes - 8 * 2048 + 32768
    assert packed.latency_s == pytest.approx(plain.latency_s - 8 * 2048 / 42.656e9
                                             + 32768 / 42.656e9, rel=1e-9)


def test_a_partial_pack_tile_moves_its_padding():
    """n = 60 packed by tiles of 8: 8 pack tiles of 64 x 8, the last padded (4 of 8 columns
    real); each moves whole (2048 B); the pass writes 64 x 64 x 4 B and reads 64 x 60 x 4 B."""
    w, arch = gemm(64, 60, 64, dtype="f32"), load_arch("cpu-6core")
    m = Mapping.parse(CPU.format(o0="nmk", pack="pack:B ", n3=8).replace("n64", "n60"))
    c = evaluate(w, arch, m)
    assert c.reads["l3"]["B"] == 8 * 2048
    assert c.pack["B"]["bytes"] == 64 * 60 * 4 + 64 * 64 * 4
    _compare(w, arch, m)


def test_packed_output_pays_an_unpack_pass_and_stores_one_run_per_tile():
    w, arch = gemm(64, 64, 64, dtype="f32"), load_arch("cpu-6core")
    c = evaluate(w, arch, Mapping.parse(CPU.format(o0="nmk", pack="pack:C ", n3=8)))
    assert c.writes["l3"]["C"] == 8 * 64 * 8 * 4  # 8 tiles of 64x8, one 2 KiB run each
    assert c.pack["C"]["bytes"] == 2 * 64 * 64 * 4


def with_pack(workload, arch, mapping, draw) -> Mapping:
    """``mapping`` with a random subset of the tensors that can be packed packed."""
    s = Structure(workload, arch)
    can = sorted(t.name for t in s.moved if run_axes(t, s.dims) is not None)
    chosen = draw(st.sets(st.sampled_from(can))) if can else set()
    first = mapping.levels[0]
    level0 = type(first)(first.level, first.tiles, first.order, first.bypass,
                         first.double_buffer, frozenset(chosen))
    return Mapping((level0,) + mapping.levels[1:], mapping.rows, mapping.cols)


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_model_equals_simulation_with_runs_and_packing(data):
    """Random workloads, archs with 4, 32 and 64 B granules, mappings and packed subsets."""
    workload = data.draw(workloads())
    arch = data.draw(ARCHS)
    mapping = with_pack(workload, arch, data.draw(mappings(workload, arch)), data.draw)
    _compare(workload, arch, mapping)


@pytest.mark.parametrize("name,make_workload,make_arch", CASES[:2] + CASES[-1:],
                         ids=[c[0] for c in CASES[:2] + CASES[-1:]])
def test_run_tables_kept_across_candidates_equal_one_by_one(name, make_workload, make_arch):
    """The run sums are kept while tiles, granules and packing repeat: a search-shaped batch
    with random pack flags gives each candidate's numbers evaluated alone."""
    workload, arch = make_workload(), make_arch()
    rng = np.random.default_rng(3)
    b = search_shaped(workload, arch, 120, rng)
    s = Structure(workload, arch)
    can = np.array([run_axes(t, s.dims) is not None for t in s.tensors])
    pack = (rng.random((len(b), len(s.tensors))) < 0.5) & can
    b = MappingBatch(b.tiles, b.orders, b.bypass, b.double_buffer, b.rows_dim, b.rows_ways,
                     b.cols_dim, b.cols_ways, pack)
    got = evaluate_batch(workload, arch, b)
    arrays = list(b.__dict__.values())
    for i in rng.choice(len(b), 25, replace=False):
        one = evaluate_batch(workload, arch, MappingBatch(*(x[i:i + 1] for x in arrays)))
        assert one.item(0) == got.item(i)


def test_pack_text_and_json_round_trip():
    m = Mapping.parse("dram[m64 n64 k64] mnk pack:B,A | l3[m64 n8 k64] mnk | l2[m16 n8 k64] mnk"
                      " | l1[m16 n8 k8]")
    assert str(m).startswith("dram[m64 n64 k64] mnk pack:A,B | ")
    assert Mapping.parse(str(m)) == m and Mapping.from_json(m.to_json()) == m


@pytest.mark.parametrize("text,message", [
    ("dram[m64 n64 k64] mnk | l3[m64 n8 k64] mnk pack:A | l2[m16 n8 k64] mnk | l1[m16 n8 k8]",
     "pack:A is a layout of the outermost level"),
    ("dram[m64 n64 k64] mnk pack:X | l3[m64 n8 k64] mnk | l2[m16 n8 k64] mnk | l1[m16 n8 k8]",
     "pack names 'X'"),
])
def test_pack_errors_name_the_tensor(text, message):
    with pytest.raises(MappingError, match=message):
        evaluate(gemm(64, 64, 64, dtype="f32"), load_arch("cpu-6core"), Mapping.parse(text))


def test_a_window_indexed_input_cannot_be_packed():
    from tilewise import conv2d

    w = conv2d(1, 4, 8, 8, 4, 3, 3, padding=1)
    arch = load_arch("cpu-6core")
    dims = " ".join(f"{d}{s}" for d, s in w.sizes.items())
    order = ",".join(w.sizes) if any(len(d) > 1 for d in w.sizes) else "".join(w.sizes)
    lv = " | ".join(f"{name}[{dims}]" + (f" {order}" if i < 3 else "")
                    for i, name in enumerate(("l3", "l2", "l1")))
    with pytest.raises(MappingError, match="not one plain dim"):
        evaluate(w, arch, Mapping.parse(f"dram[{dims}] {order} pack:I | {lv}"))


def test_simulation_counts_the_hand_count_too():
    w, arch = gemm(64, 64, 64, dtype="f32"), load_arch("cpu-6core")
    m = Mapping.parse(CPU.format(o0="nmk", pack="pack:B ", n3=8))
    t = simulate(w, arch, m)
    assert t.reads["l3"]["B"] == 8 * 2048 and t.writes["l3"]["C"] == 8 * 64 * 64


def test_a_granule_of_partial_elements_rounds_to_whole_granules_and_elements():
    """A 6 B block under f32 rows: runs round to 3 elements (12 B, two granules); the model
    and the simulation agree."""
    import dataclasses

    arch = load_arch("cpu-6core")
    levels = tuple(dataclasses.replace(lv, block_bytes=6) if lv.name == "l2" else lv
                   for lv in arch.levels)
    arch = dataclasses.replace(arch, levels=levels)
    m = Mapping.parse(CPU.format(o0="mnk", pack="", n3=64).replace(
        "n8 k64] mnk | l1[m16 n8", "n7 k64] mnk | l1[m16 n7"))
    c, _ = _compare(gemm(64, 64, 64, dtype="f32"), arch, m)
    # per m tile: 9 B tiles of 64 rows of 7 floats (9 moved) and one of 1 float (3 moved)
    assert c.reads["l2"]["B"] == 4 * (9 * 64 * 9 + 64 * 3) * 4


def test_window_rows_round_out_to_whole_dma_words_hand_counted():
    """A 3x3 i8 convolution (8 columns, padding 1) on aie-4x2, q in two tiles of 4: the
    windows' rows are columns [-1, 5) and [3, 9) clipped to [0, 5) and [3, 8), 5 B each; the
    DMA moves whole 4-byte words around them, [0, 8) both: 3 rows x 8 B per tile, 48 B in all
    (30 B exact). The model and the simulation agree; where no DMA is described (4-byte words
    made 1-byte) the windows move their exact bytes."""
    import dataclasses

    from tilewise import conv2d
    from tilewise.model.contiguity import aligned_extent, aligned_range

    assert aligned_range(3, 8, 4) == (0, 8) and aligned_extent(3, 8, 4) == 8
    assert aligned_range(5, 5, 4) == (5, 5) and aligned_extent(5, 5, 4) == 0
    w = conv2d(1, 1, 3, 8, 8, 3, 3, padding=1, dtype="i8")
    m = Mapping.parse("ddr[n1 k8 c1 p3 q8 r3 s3] qpcnkrs | memtile[n1 k8 c1 p3 q4 r3 s3] "
                      "nkcpqrs | core[n1 k8 c8 p3 q4 r3 s3]")
    arch = load_arch("aie-4x2")
    assert evaluate(w, arch, m).reads["memtile"]["I"] == 2 * 3 * 8
    assert simulate(w, arch, m).reads["memtile"]["I"] == 2 * 3 * 8
    bytewise = dataclasses.replace(arch, levels=tuple(
        dataclasses.replace(lv, dma=dataclasses.replace(lv.dma, word_bytes=1)) for lv in arch.levels))
    assert evaluate(w, bytewise, m).reads["memtile"]["I"] == 2 * 3 * 5
    assert simulate(w, bytewise, m).reads["memtile"]["I"] == 2 * 3 * 5


def test_padded_rows_hand_counted_for_an_output_border_row():
    """A bf16 GEMM result of 9 columns on npu1 (4-byte DMA words). In n tiles of 8 its rows
    are padded to 10 columns and the border row of 1 element (2 B) moves one word (4 B): 8
    rows x (16 + 4) B = 160 B stored per level, not the 144 B of its elements. Tiles spanning
    the whole row keep the tensor's pitch: runs of 4 x 9 elements (72 B), 144 B. The f32
    partial sums (whole words) keep their exact rows."""
    from tilewise.model.contiguity import padded_row, row_word

    arch = load_arch("npu1")
    assert row_word(arch) == 4 and row_word(load_arch("cpu-6core")) == 1
    assert padded_row(9, 2) == 10 and padded_row(1, 2) == 2 and padded_row(7, 1) == 7
    w = gemm(8, 9, 8, dtype="bf16", out_dtype="bf16")
    for text, stored in (("ddr[m8 n9 k8] mnk | memtile[m8 n8 k8] mnk | core[m8 n8 k8]", 160),
                         ("ddr[m8 n9 k8] mnk | memtile[m4 n9 k8] mnk | core[m4 n16 k8]", 144)):
        m = Mapping.parse(text)
        c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
        for level in ("memtile", "core"):
            assert c.writes[level]["C"] == t.writes[level]["C"] == stored, (text, level)
    # k outermost above the cores: the first visit's f32 partial sums leave at whole words,
    # exact (8 x 9 x 4 B), the finished bf16 tiles padded (160 B)
    w = gemm(8, 9, 16, dtype="bf16", out_dtype="bf16")
    m = Mapping.parse("ddr[m8 n9 k16] mnk | memtile[m8 n9 k16] knm | core[m8 n8 k8]")
    c, t = evaluate(w, arch, m, check_capacity=False), simulate(w, arch, m)
    assert c.writes["core"]["C"] == t.writes["core"]["C"] == 8 * 9 * 4 + 160
    assert c.reloads["core"]["C"] == 8 * 9 * 4
