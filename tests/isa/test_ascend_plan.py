"""Planner: simulated result equals numpy on the tile, nothing outside is touched, every lane
keeps the footprint rule, and the plan length equals the exhaustive minimum over the planner's
instruction family on small tiles (W out of place, F_row in place)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilewise.dtypes import dtype
from tilewise.errors import ISAError
from tilewise.isa.ascend import (Tile, lane_addresses, min_plan_length, op_spec, plan, simulate,
                                 tile_of_shape, to_ascend_c)
from tilewise.isa.ascend.cover import REACH
from tilewise.isa.ascend.plan import EXACT_BLOCKS

E = {"f16": 16, "i16": 16, "f32": 8, "i32": 8}


@st.composite
def tiles(draw, max_rows=300, max_cols=300):
    dt = draw(st.sampled_from(sorted(E)))
    rows = draw(st.integers(1, max_rows))
    cols = draw(st.integers(1, max_cols))
    aligned = -(-cols // E[dt]) * E[dt]
    pitch = draw(st.sampled_from([cols, aligned, aligned + E[dt] * draw(st.integers(0, 6))]))
    if rows > 1 and pitch != cols and pitch % E[dt]:
        pitch = aligned
    return dt, rows, cols, max(pitch, cols)


def _check_reach(instrs, dst, size):
    """Every dst lane (active or masked off) of every executed repeat lies in the tile's blocks
    or at most REACH blocks past its last one."""
    first = dst.base // 32
    last = (dst.base + ((dst.rows - 1) * dst.pitch + dst.cols) * size - 1) // 32
    for ins in instrs:
        if ins.repeats():
            blocks = lane_addresses(ins)[0][0] // 32
            assert first <= blocks.min() and blocks.max() <= last + REACH


def _run(op, dt, rows, cols, pitch, counter, poison, seed, scalar=None, inplace=False):
    d = dtype(dt)
    spec = op_spec(op)
    n_src = {"binary": 2, "unary": 1, "scalar": 1, "duplicate": 0}[spec.kind]
    foot = -(-((rows - 1) * pitch + cols) * d.bytes // 32) * 32
    # masked-off lanes may reach 7 blocks (224 B) past a tile: keep 256 B between operands
    ts = [Tile(k * (foot + 256), rows, cols, pitch) for k in range(n_src + 1)]
    if inplace:
        ts[1] = ts[0]
    # a UB just large enough for the operands (some cases exceed the 192 KiB default)
    ub_bytes = (n_src + 1) * (foot + 256)
    instrs = plan(op, dt, ts[0], ts[1:], scalar=scalar, counter=counter, ub_bytes=ub_bytes)
    _check_reach(instrs, ts[0], d.bytes)
    rng = np.random.default_rng(seed)
    ub = rng.integers(0, 256, ub_bytes, dtype=np.uint8)
    view = ub.view(d.numpy)
    idx = [t.base // d.bytes + t.element_offsets() for t in ts]
    for i in idx[int(inplace):]:
        view[i] = rng.integers(1, 9, i.shape).astype(d.numpy)
    before = ub.copy()
    simulate(instrs, ub, poison=poison)
    args = [before.view(d.numpy)[i] for i in idx[1:]]
    if scalar is not None:
        args.append(d.numpy.type(scalar))
    want = (np.full(idx[0].shape, scalar, d.numpy) if spec.kind == "duplicate"
            else np.asarray(spec.fn(*args), d.numpy))
    np.testing.assert_array_equal(ub.view(d.numpy)[idx[0]], want)
    if not poison:  # masked-off lanes are untouched: every byte outside dst keeps its value
        inside = np.zeros(ub.size, bool)
        inside[(idx[0][..., None] * d.bytes + np.arange(d.bytes)).ravel()] = True
        np.testing.assert_array_equal(ub[~inside], before[~inside])
    return instrs


@settings(max_examples=60, deadline=None)
@given(t=tiles(), op=st.sampled_from(["Add", "Max", "Muls", "Relu", "Duplicate"]),
       counter=st.booleans(), poison=st.booleans(), seed=st.integers(0, 1000))
def test_plan_computes_exactly_the_tile(t, op, counter, poison, seed):
    dt, rows, cols, pitch = t
    if op == "Relu" and dt == "i16":
        dt = "i32"
    scalar = 3 if op in ("Muls", "Duplicate") else None
    _run(op, dt, rows, cols, pitch, counter, poison, seed, scalar)


@settings(max_examples=40, deadline=None)
@given(t=tiles(max_rows=120, max_cols=300), op=st.sampled_from(["Add", "Muls", "Relu"]),
       counter=st.booleans(), seed=st.integers(0, 1000))
def test_in_place_plan_computes_exactly_the_tile(t, op, counter, seed):
    """dst is src(0): every element must be computed once (the simulator rejects a repeat that
    reads an element an earlier repeat wrote)."""
    dt, rows, cols, pitch = t
    if op == "Relu" and dt == "i16":
        dt = "i32"
    scalar = 3 if op == "Muls" else None
    instrs = _run(op, dt, rows, cols, pitch, counter, False, seed, scalar, inplace=True)
    written = np.concatenate([a[0][m] for a, m in map(lane_addresses, instrs)])
    assert np.unique(written).size == written.size


@settings(max_examples=80, deadline=None)
@given(t=tiles(max_rows=4, max_cols=150), counter=st.booleans(), inplace=st.booleans())
def test_plan_length_is_the_brute_force_minimum(t, counter, inplace):
    dt, rows, cols, pitch = t
    size = dtype(dt).bytes
    if ((rows - 1) * pitch + cols) * size > 32 * EXACT_BLOCKS:
        cols = min(cols, 32 * EXACT_BLOCKS // size)
        rows, pitch = 1, cols
    dst = Tile(0, rows, cols, pitch)
    srcs = [dst if inplace else Tile(8192, rows, cols, pitch), Tile(16384, rows, cols, pitch)]
    instrs = plan("Add", dt, dst, srcs, counter=counter)
    assert len(instrs) == min_plan_length(dt, rows, cols, pitch, counter=counter, inplace=inplace)


@pytest.mark.parametrize("dt, rows, cols, pitch, counter, inplace, n, reps", [
    ("f16", 30, 100, 128, True, False, 1, 30),  # row gap folded into the repeat stride (8 blocks)
    ("f16", 1, 1000, None, True, False, 1, 8),  # counter mode, 8 repeats (beats 56 overlapping)
    ("f16", 1, 1000, None, False, False, 1, 56),  # repeat stride 1: 56 overlapping repeats
    ("f16", 1, 1000, None, False, True, 2, 12),  # in place: 11 x 80 + masked tail of 120
    ("f32", 1, 320, None, False, False, 1, 5),  # 40 blocks = 5 repeats of 8 blocks
    ("f32", 2, 259, 264, False, False, 2, 52),  # a row run of 26 overlapping repeats per row
    ("f32", 2, 259, 264, False, True, 3, 12),  # in place: two row runs + a strip for the tails
    ("f32", 8, 224, 256, False, False, 1, 28),  # block stride = pitch: 8 rows per repeat
    ("f32", 16, 192, 256, False, False, 2, 48),  # repeat stride 16: columns 0..63 and 128..191
    ("f32", 600, 64, 72, False, False, 3, 600),  # 255 + 255 + 90 rows
    ("f32", 600, 64, 72, True, False, 1, 600),  # full-width strip of 600 rows in counter mode
])
def test_known_plans(dt, rows, cols, pitch, counter, inplace, n, reps):
    instrs = _run("Add", dt, rows, cols, pitch or cols, counter, not inplace, 0, inplace=inplace)
    assert (len(instrs), sum(i.repeats() for i in instrs)) == (n, reps)


def test_overlapping_repeats_only_out_of_place():
    t = [Tile(b, 1, 1000) for b in (0, 4096, 8192)]
    (ins,) = plan("Add", "f16", t[0], t[1:], counter=False)
    assert ins.ascend_c() == ["Add(dst[0], src0[0], src1[0], 120, 56, {1, 1, 1, 1, 1, 1});"]
    in_place = plan("Add", "f16", t[0], [t[0], t[2]], counter=False)
    assert to_ascend_c(in_place).splitlines() == [
        "Add(dst[0], src0[0], src1[0], 80, 11, {1, 1, 1, 5, 5, 5});",
        "Add(dst[880], src0[880], src1[880], 120, 1, {1, 1, 1, 8, 8, 8});"]


def test_cli_example_plan_text():
    t = [Tile(b, 30, 100, 128) for b in (0, 8192, 16384)]
    (ins,) = plan("add", "f16", t[0], t[1:])
    assert ins.ascend_c() == ["Add(dst[0], src0[0], src1[0], 100, 30, {1, 1, 1, 8, 8, 8});"]


def test_pitch_beyond_255_blocks_uses_row_runs():
    instrs = _run("Add", "f32", 3, 64, 64 * 40, True, False, 0)
    assert len(instrs) == 3 and all(i.repeat == 1 for i in instrs)


@pytest.mark.parametrize("call, msg", [
    (lambda: plan("Add", "f16", Tile(0, 3, 30, 33), [Tile(0, 3, 30, 33)] * 2),
     "pitch 33 elements .66 bytes. do not start 32-byte aligned.*multiple of 16 elements"),
    (lambda: plan("Add", "f16", Tile(0, 2, 8), [Tile(0, 2, 9)] * 2), "src0 tile is 2x9 but dst is 2x8"),
    (lambda: plan("Add", "f16", Tile(16, 2, 8), [Tile(0, 2, 8)] * 2), "dst tile base 16 is not 32"),
    (lambda: plan("Exp", "i32", Tile(0, 2, 8), [Tile(0, 2, 8)]), "Exp does not support .* i32"),
    (lambda: plan("Add", "f16", Tile(0, 2, 8), [Tile(0, 2, 8)]), r"Add needs 2 source tile\(s\)"),
    (lambda: Tile(0, 2, 8, 4), "pitch 4 elements is smaller than its 8 columns"),
    (lambda: plan("Add", "f16", Tile(0, 2, 8, 16), [Tile(32, 2, 8, 16), Tile(4096, 2, 8, 16)]),
     r"src0 tile \(base 32, pitch 16\) overlaps the dst tile \(base 0, pitch 16\) without "
     "being it"),
])
def test_plan_errors(call, msg):
    with pytest.raises(ISAError, match=msg):
        call()


def test_brute_force_reports_uncoverable_tile():
    with pytest.raises(ISAError, match="cannot be covered"):
        min_plan_length("f16", 2, 10, 12)


def test_tile_of_xla_shape_is_its_physical_buffer():
    xla = pytest.importorskip("tilewise.layout.xla")
    shape = xla.Shape.parse("f32[3,5]{1,0:T(2,2)}") if hasattr(xla.Shape, "parse") else None
    if shape is None:
        pytest.skip("tilewise.layout.xla.Shape has no parse()")
    t = tile_of_shape(shape, 64)
    assert (t.base, t.rows, t.cols) == (64, 1, shape.size_in_elements)
    assert len(plan("Add", "f32", t, [t, t])) == 1
