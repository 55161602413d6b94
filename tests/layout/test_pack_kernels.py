"""The pack/unpack kernel paths, each bit-exact against the numpy reference: plain and
streaming stores, every unit width, clipped (padded) nests, register transposes with
remainders, column-chunked gathers, and the cached fast path of repeated calls."""

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from numba import njit

from tilewise import PackError, pack, pack_reference, unpack, unpack_reference
from tilewise.layout import kernels
from tilewise.layout.kernels import _pairs, _panel_order
from tilewise.layout.pack import _nest, unpack_packing, verify

from .test_pack_properties import problems


def _run(packing, src, dst, packed_is_src, pad, *, streaming, max_unit):
    nest = _nest(packing, src.dtype.itemsize, max_unit, packed_is_src)
    pattern = nest.pad_pattern(pad.tobytes())
    status = kernels.run(nest, kernels.byte_view(src), kernels.byte_view(dst), pattern,
                         streaming)
    assert status == kernels.OK
    return nest


def _aligned(a, fill, offset=0):
    """A copy of ``a``'s shape and dtype filled with ``fill``, starting ``offset`` bytes past a
    64-byte line boundary (the line-store paths need line-aligned destinations)."""
    raw = np.empty(a.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = fill
    return out


def _check_both_ways(x, pos, tiles, perm, pad_value, offsets=(0,)):
    """Pack and unpack with every store kind and unit, into fresh arrays and into
    destinations ``offsets`` bytes past a line boundary; returns the streaming nests."""
    packing = verify(x.shape, pos, tiles, perm)
    pad = np.array(pad_value, dtype=x.dtype)
    ref = pack_reference(x, pos, tiles, perm, padding_value=pad_value)
    nests = []
    for streaming in (False, True):
        for max_unit in (8, 2, 1):
            packed = np.full(ref.shape, 7, dtype=x.dtype)
            _run(packing, x, packed, False, pad, streaming=streaming, max_unit=max_unit)
            assert packed.tobytes() == ref.tobytes(), (streaming, max_unit)
            back = np.full(x.shape, 5, dtype=x.dtype)
            _run(packing, ref, back, True, pad, streaming=streaming, max_unit=max_unit)
            assert back.tobytes() == x.tobytes(), (streaming, max_unit)
        for offset in offsets:
            packed = _aligned(ref, 7, offset)
            nests.append(_run(packing, _aligned(x, x, offset), packed, False, pad,
                              streaming=streaming, max_unit=8))
            assert packed.tobytes() == ref.tobytes(), (streaming, offset)
            back = _aligned(x, 5, offset)
            nests.append(_run(packing, _aligned(ref, ref, offset), back, True, pad,
                              streaming=streaming, max_unit=8))
            assert back.tobytes() == x.tobytes(), (streaming, offset)
    return nests


@given(problems())
def test_every_store_kind_and_unit_is_bit_exact(problem):
    x, pos, tiles, perm = problem
    _check_both_ways(x, pos, tiles, perm, {np.dtype(np.int8): -128}.get(x.dtype, -3.5))


@pytest.mark.parametrize("shape, tiles, dt", [
    ((64, 1030), (16, 2), np.float32),  # unpack: 16 rows gather 515 tiles: column chunks
    ((61, 1027), (16, 2), np.float32),  # the same with clipped last tiles (padding)
    ((40, 300), (8, 1), np.float64),  # 8x8 transposes of 8-byte units, no remainder
    ((61, 203), (8, 8), np.int8),  # unpack: tiles of 8 one-word rows, word by word (clipped)
    ((30, 99), (5, 2), np.float32),  # ... 5 rows of one word
    ((45, 37), (9, 3), np.int16),  # transposes with row and column remainders
    ((100, 90), (32, 4), np.int8),  # 1-byte units
    ((33, 70), (16, 2), ml_dtypes.bfloat16),
])
def test_gathers_transposes_and_chunks(shape, tiles, dt):
    x = (np.random.default_rng(7).standard_normal(shape) * 50).astype(dt)
    _check_both_ways(x, (0, 1), tiles, (), 1)
    _check_both_ways(x, (1, 0), tiles[::-1], (1, 0), 1)


@pytest.mark.parametrize("shape, tiles, dt", [
    ((48, 4096), (16, 2), np.float32),  # unpack: 8x8 transposes streamed as whole lines
    ((37, 1030), (16, 2), np.float32),  # ... with row and column remainders (and padding);
    # pack: 4 rows of 16 words at a time, shifted to the destination's lines
    ((24, 2000), (8, 1), np.float64),  # pack: 8 rows of 8 words make 512 bytes in a row
    ((64, 2048), (16, 32), np.int8),  # panels: 2 runs of 32 bytes a line
    ((48, 1024), (16, 32), ml_dtypes.bfloat16),  # runs of a whole line: no panel
    ((40, 1088), (8, 16), np.int8),  # 4 runs of 16 bytes a line
    ((24, 560), (3, 8), np.int8),  # 8 runs of 8 bytes a line; 70 runs: a ragged group
    ((32, 96), (16, 32), np.int8),  # 3 runs a row: one group and a ragged run
])
def test_line_transposes_and_panels(shape, tiles, dt):
    x = (np.random.default_rng(11).standard_normal(shape) * 50).astype(dt)
    nests = []
    for pos, t, perm in (((0, 1), tiles, ()), ((1, 0), tiles[::-1], (1, 0))):
        # Every phase of the destination's lines: the line stores shift the rows' units.
        nests += _check_both_ways(x, pos, t, perm, 1, offsets=range(0, 64, 8))
    if 8 < np.dtype(dt).itemsize * tiles[1] < 64:  # runs of 2 or 4 units: panels
        assert any(n.panel for n in nests)


def test_panel_plans():
    # Unpacking i8 T(16,32): rows of 32-byte runs, one from every 512-byte tile; as a panel,
    # two tiles are read in order and each of the 16 destination rows gets a whole line.
    nest = _nest(verify((4096, 4096), (0, 1), (16, 32)), 1, 8, True)
    assert nest.panel and nest.table[:, :3].tolist() == [[256, 8192, 8192], [16, 4, 512],
                                                         [128, 64, 4], [4, 1, 1]]
    assert _nest(verify((4096, 4096), (0, 1), (8, 16)), 1, 8, True).panel
    # Runs of exactly one line from 16-row tiles (bf16 T(16,32)) are panels of two tiles,
    # unsplit; from 32 rows or more (bf16 T(32,32)) joined planes, split.
    assert _nest(verify((4096, 4096), (0, 1), (16, 32)), 2, 8, True).panel
    assert not _nest(verify((4096, 4096), (0, 1), (32, 32)), 2, 8, True).panel
    # Packs of runs of 32 bytes or more from 64 rows or fewer are panels, unsplit and never
    # staged (i8 T(16,32): rows of 16 runs, one from every source row of a tile).
    nest = _nest(verify((4096, 4096), (0, 1), (16, 32)), 1, 8, False)
    assert nest.panel and nest.staged is None
    assert nest.table[:, :3].tolist() == [[256, 8192, 8192], [128, 4, 64], [16, 512, 4],
                                          [4, 1, 1]]
    assert _nest(verify((4096, 4096), (0, 1), (64, 64)), 1, 8, False).panel
    # f32 T(8,8): 8-row tiles of half-line runs, one row of joined lines (``_half_lines``).
    nest = _nest(verify((4096, 4096), (0, 1), (8, 8)), 4, 8, False)
    assert nest.panel and nest.staged is None
    assert nest.table[:, :3].tolist() == [[512, 16384, 16384], [512, 4, 32], [8, 2048, 4],
                                          [4, 1, 1]]
    assert _nest(verify((4096, 4096), (0, 1), (8, 8)), 2, 8, False).panel  # bf16
    # Not panels: runs of more than a line, clipped nests, single-row tiles.
    assert not _nest(verify((4096, 4096), (0, 1), (32, 32)), 4, 8, True).panel
    assert not _nest(verify((500, 1000), (0, 1), (16, 32)), 1, 8, True).panel
    assert not _nest(verify((64, 64), (1,), (32,)), 1, 8, True).panel


def test_panel_order():
    # A pack's panel (rows of a tile's 16-64 source rows) goes out in groups of 8 tiles, 8
    # source rows at a time (all rows for 16-row tiles, in groups of 4 tiles when a line
    # joins two runs: i8 T(16,32)); an unpack's (rows crossing many tiles) line by line over
    # all rows, the source in order.
    assert _panel_order(512, 32, 1) == (8, 8)
    assert _panel_order(256, 64, 1) == (8, 8)
    assert _panel_order(512, 16, 1) == (8, 16)
    assert _panel_order(512, 16, 2) == (4, 16)
    assert _panel_order(512, 32, 2) == (8, 8)
    assert _panel_order(32, 512, 1) == (32, 512)
    assert _panel_order(16, 256, 2) == (16, 256)
    assert _panel_order(4, 128, 2) == (4, 128)  # f64 T(128,4) pack, split: 128 source rows
    assert _panel_order(512, 8, 1) == (512, 8)  # 8-row tiles: not measured, source in order


def test_panel_pairs():
    # Two lines of each row in turn: lines of two runs always (i8 T(32,32) unpacks, 32 rows);
    # of one run in a pack's group of 8 tiles or an unpack's 16 rows, not 32 or 64 rows
    # (bf16 T(32,32), i8 T(64,64) unpacks lost with pairs); never lines of four runs.
    assert _pairs(2, 32) and _pairs(2, 8)
    assert _pairs(1, 8) and _pairs(1, 16)
    assert not _pairs(1, 32) and not _pairs(1, 64)
    assert not _pairs(4, 8)


def test_documented_nest_and_stream_split():
    # Module doc: f32[4096, 4096] with tiles (16, 2) is a transpose of 8-byte words.
    nest = _nest(verify((4096, 4096), (0, 1), (16, 2)), 4, 8, False)
    assert nest.unit == 8
    assert nest.table[:, :3].tolist() == [[256, 32768, 32768], [2048, 1, 16], [16, 2048, 1]]
    # Runs of 512 bytes a page apart are read 8 at a time (the fewest streams).
    nest = _nest(verify((1024, 1024), (0, 1), (128, 128)), 4, 8, True)
    assert nest.table[-2].tolist() == [8, 8192, 64, -1, 0]
    # A partial tile clips the inner loop at its partner's last index.
    nest = _nest(verify((500, 1000), (0, 1), (32, 32)), 4, 8, False)
    assert nest.table.tolist() == [[16, 16000, 16384, -1, 0], [32, 16, 512, -1, 0],
                                   [32, 500, 16, 0, 20], [16, 1, 1, 1, 4]]


def test_kernel_reports_overlap_and_misalignment():
    buf = np.zeros(4096 + 8, np.uint8)
    nest = _nest(verify((32, 32), (0, 1), (8, 8)), 1, 8, False)
    pad = nest.pad_pattern(b"\0")
    view = kernels.byte_view
    assert kernels.run(nest, view(buf[:1024]), view(buf[512:1536]), pad, False) == \
        kernels.OVERLAP
    assert kernels.run(nest, view(buf[1:1025]), view(buf[2048:3072]), pad, False) == \
        kernels.MISALIGNED


def test_large_streaming_destinations():
    # Over kernels.STREAMING_BYTES: the non-temporal paths of the public functions.
    x = np.random.default_rng(5).integers(-100, 100, (1030, 1600)).astype(np.float32)
    assert x.nbytes >= kernels.STREAMING_BYTES
    for tiles in [(32, 32), (16, 2), (128, 128), (8, 128)]:
        p = pack(x, (0, 1), tiles, padding_value=-1.0)
        assert np.array_equal(p, pack_reference(x, (0, 1), tiles, padding_value=-1.0))
        assert np.array_equal(unpack(p, (0, 1), tiles, shape=x.shape), x)


def test_repeated_calls_reuse_the_plan_and_still_check_everything():
    x = np.arange(40 * 24, dtype=np.float32).reshape(40, 24)
    out = np.empty((5, 3, 8, 8), np.float32)
    for _ in range(3):  # the first call plans, the others hit the cache
        assert pack(x, [0, 1], (8, 8), out=out) is out
        assert np.array_equal(out, pack_reference(x, (0, 1), (8, 8)))
    x2 = x + 1
    assert np.array_equal(pack(x2, (0, 1), (8, 8)), pack_reference(x2, (0, 1), (8, 8)))
    with pytest.raises(PackError, match="expected 'tensor<5x3x8x8xf32>' for the packed domain"):
        pack(x, (0, 1), (8, 8), out=np.empty((5, 3, 8, 9), np.float32))
    with pytest.raises(PackError, match="out= overlaps the source"):
        pack(x, (0, 1), (8, 8), out=x.reshape(5, 3, 8, 8))
    with pytest.raises(PackError, match="must be a list of integers"):
        pack(x, (0.0, 1), (8, 8))
    raw = np.zeros(x.nbytes + 4, np.uint8)
    shifted = raw[4:].view(np.float32).reshape(out.shape)  # 4-byte aligned only
    assert pack(x, (0, 1), (8, 8), out=shifted) is shifted
    assert np.array_equal(shifted, out)
    # unpack: the cache is keyed by the unpacked shape too
    for shape in [(40, 24), (37, 20), (37, 20)]:
        got = unpack(out, (0, 1), (8, 8), shape=shape)
        assert np.array_equal(got, x[:shape[0], :shape[1]])
        assert np.array_equal(got, unpack_reference(out, (0, 1), (8, 8), shape=shape))
    with pytest.raises(PackError, match="expected 'tensor<6x3x8x8>' for the packed domain "
                                        "value, got 'tensor<5x3x8x8>'"):
        unpack(out, (0, 1), (8, 8), shape=(41, 24))


def test_nan_and_typed_paddings():
    x = np.ones((5, 6), np.float32)
    for _ in range(2):
        p = pack(x, (0, 1), (4, 4), padding_value=float("nan"))
        assert np.isnan(p[1, 1, 3, 3]) and p[0, 0, 0, 0] == 1
    assert pack(x, (0, 1), (4, 4), padding_value=2)[1, 1, 3, 3] == 2
    assert pack(x, (0, 1), (4, 4), padding_value=2.5)[1, 1, 3, 3] == 2.5
    with pytest.raises(PackError, match="expected padding_value has 'i8' but got: 2.5"):
        pack(x.astype(np.int8), (0, 1), (4, 4), padding_value=2.5)
    with pytest.raises(PackError, match="Only full tiles are supported"):
        pack(x, (0, 1), (4, 4))
    assert unpack_packing((2, 2, 4, 4), (0, 1), (4, 4), shape=(5, 6)).shape == (5, 6)


def test_repeated_calls_with_the_same_tuples():
    # The same attribute tuple objects hit the plan by identity; everything else still checked.
    x = np.arange(24 * 40, dtype=np.float32).reshape(24, 40)
    pos, tiles, perm = (1, 0), (8, 4), (1, 0)
    ref = pack_reference(x, pos, tiles, perm)
    for _ in range(3):
        assert np.array_equal(pack(x, pos, tiles, perm), ref)
        assert np.array_equal(unpack(ref, pos, tiles, perm, shape=x.shape), x)
    out = np.empty(ref.shape, np.float32)
    assert pack(x, pos, tiles, perm, out=out) is out and np.array_equal(out, ref)
    with pytest.raises(PackError, match="packed domain"):
        pack(x, pos, tiles, perm, out=np.empty(ref.shape, np.float64))
    with pytest.raises(PackError, match="overlaps the source"):
        unpack(ref, pos, tiles, perm, out=ref.reshape(x.shape))
    y = x[:, :36].copy()  # another shape: its own plan (a partial tile needs a padding value)
    with pytest.raises(PackError, match="Only full tiles"):
        pack(y, pos, tiles, perm)
    assert np.array_equal(pack(y, pos, tiles, perm, padding_value=0.5),
                          pack_reference(y, pos, tiles, perm, padding_value=0.5))


@pytest.mark.parametrize("cols", [1, 3, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100, 129])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.float32])
def test_runs_of_every_length(cols, dt):
    # Unclipped nests of tile rows take _walk_runs: each row is moved as pairs of 32-byte
    # vectors and one move each of 32 .. 1 bytes; every remainder width, both directions.
    rows = 24
    x = np.random.default_rng(cols).integers(-99, 99, (rows, 3 * cols)).astype(dt)
    packing = verify(x.shape, (0, 1), (8, cols))
    if cols * x.dtype.itemsize > 8:  # a run of two units or more (one unit: a transpose)
        for max_unit in (8, 1):
            assert kernels._is_runs(_nest(packing, x.dtype.itemsize, max_unit, False).table)
    _check_both_ways(x, (0, 1), (8, cols), (), 0, offsets=(0, 24))


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("hw", [(4, 16), (8, 24), (5, 13), (16, 64), (33, 128), (31, 131)])
def test_zip_transposes_of_channel_planes(dt, hw):
    # NCHW -> NCHW16c and back: transposes of single elements between 16 channel planes,
    # by lane-parallel zips (whole lines on the strided side, started on its lines when
    # the planes are a whole number of lines apart; the ragged edges unit by unit), from
    # line-aligned and shifted buffers. Unpacks into planes a page or more apart walk a few
    # planes at a time along the block ((33, 128); (31, 131): int8 below a page, wider
    # dtypes above it with planes not a whole number of lines).
    x = np.random.default_rng(hw[1]).integers(-99, 99, (2, 32) + hw).astype(dt)
    _check_both_ways(x, (1,), (16,), (), 0, offsets=(0, 8, 40))
    # and a transpose of 8-byte words with a ragged number of rows (f32 T(16, 2))
    y = np.random.default_rng(3).standard_normal((48, 2 * 37)).astype(np.float32)
    _check_both_ways(y, (0, 1), (16, 2), (), 0, offsets=(0, 24))


@pytest.mark.parametrize("shape, pos, tiles, dt", [
    ((64, 256), (0, 1), (4, 4), np.float32),  # 16-byte tile rows from 4 rows
    ((64, 256), (0, 1), (4, 8), np.int16),
])
def test_staged_streaming_packs(shape, pos, tiles, dt):
    # Streamed packs of rows shorter than a line from few rows are staged: chunks of the
    # packed tensor built in a scratch by the in-cache kernels, then streamed out as whole
    # lines.
    x = np.random.default_rng(1).integers(-99, 99, shape).astype(dt)
    nest = _nest(verify(shape, pos, tiles), x.dtype.itemsize, 8, False)
    assert nest.staged is not None and nest.kernel_args(True)[1] > kernels.STAGED
    chunk = 1 + sum((n - 1) * ds for n, _, ds, *_ in nest.staged[nest.outer:])
    assert chunk * nest.unit <= kernels.CHUNK_BYTES
    _check_both_ways(x, pos, tiles, (), 0, offsets=(0, 8, 40))


@pytest.mark.parametrize("shape", [(2, 32, 10, 97), (1, 32, 8, 136)])
@pytest.mark.parametrize("dt", [np.int8, ml_dtypes.bfloat16, np.float32, np.float64])
def test_streamed_plane_packs_and_unpacks(shape, dt):
    # Streamed NCHW <-> NCHW16c of 1-, 2- and 4-byte elements move a line of positions at a
    # time as a 16-plane register transpose (``_plane_pack``, ``_plane_unpack``), not staged
    # nor written through the cache; heads and tails of positions (970 and 1088 are not a
    # whole number of lines), destinations 8 to 56 bytes past a line and the fallbacks to
    # the block walker (a pack's destination not a multiple of 16 elements past a line, an
    # unpack's planes not whole lines apart: 970 positions; 8-byte elements, two lines a
    # position) are bit-exact.
    x = np.random.default_rng(5).integers(-99, 99, shape).astype(dt)
    narrow = x.dtype.itemsize < 8
    packing = verify(x.shape, (1,), (16,))
    nest = _nest(packing, x.dtype.itemsize, 8, False)
    assert (nest.staged is None or not narrow) and _planes(nest, True) == narrow
    back = _nest(packing, x.dtype.itemsize, 8, True)
    assert _planes(back, False) == narrow and back.kernel_args(True)[2]
    _check_both_ways(x, (1,), (16,), (), 0, offsets=range(0, 64, 8))


@pytest.mark.parametrize("dt", [np.int8, ml_dtypes.bfloat16, np.float32])
@pytest.mark.parametrize("cols", [6, 14, 40, 48, 64, 96, 134, 160])
def test_streamed_row_unpacks_two_lines_a_row(dt, cols):
    # Streamed T(16,2) unpacks: i8 and bf16 through the plane transposes (``_plane_unpack``:
    # each row two lines in turn, an odd last line alone, the rows' partial first and last
    # lines one streamed line where a row ends and the next begins (``_untranspose_seams``,
    # rows a whole number of lines: 48, 64, 96, 160 tile columns) or scalar through the
    # cache), f32 as 8-byte words (``_gather_stream8``: ``_transpose8_pair``, one
    # ``_transpose8_stream`` for an odd 8 columns, scalar ragged edges). Rows of 6 to 160
    # tile columns (under a line to several lines, odd and even counts of lines), 48 rows
    # (3 bands), destinations 0 to 56 bytes past a line: bit-exact.
    x = np.random.default_rng(cols).integers(-99, 99, (48, 2 * cols)).astype(dt)
    back = _nest(verify(x.shape, (0, 1), (16, 2)), x.dtype.itemsize, 8, True)
    assert back.kernel_args(True)[2] and _planes(back, False) == (x.dtype.itemsize < 4)
    _check_both_ways(x, (0, 1), (16, 2), (), 0, offsets=range(0, 64, 8))


@njit
def _plane_kernels(nest, unit):
    return kernels._plane_packs(nest, unit), kernels._plane_unpacks(nest, unit)


def _planes(nest, pack):
    return _plane_kernels(nest.table, nest.unit)[0 if pack else 1]


@pytest.mark.parametrize("shape, tiles, dt", [
    ((64, 512), (16, 32), np.int8),  # 16 rows: 2 tiles a group, all rows at once
    ((64, 32 * 13), (32, 32), np.int8),  # 32 rows: 8 at a time; 13 tiles: a ragged group
    ((128, 64 * 11), (64, 64), np.int8),  # whole-line runs from 64 rows
    ((64, 16 * 19), (32, 16), np.float32),  # 64-byte runs, 19 tiles
    ((96, 8 * 37), (8, 8), np.float32),  # 8-row tiles of half lines: one row of joined lines
    ((40, 8 * 21), (8, 8), ml_dtypes.bfloat16),  # of quarter lines
])
def test_streamed_pack_panels(shape, tiles, dt):
    # Streamed packs of tiles of at most 64 rows, runs of 32 bytes or more, are panels
    # walked in groups of tiles (``_panel_order``), never staged; every phase of the
    # destination's lines (the runs joined in registers) and ragged groups are bit-exact.
    x = np.random.default_rng(2).integers(-99, 99, shape).astype(dt)
    nest = _nest(verify(shape, (0, 1), tiles), x.dtype.itemsize, 8, False)
    assert nest.panel and nest.staged is None and nest.kernel_args(True)[1] == kernels.PANEL
    _check_both_ways(x, (0, 1), tiles, (), 0, offsets=range(0, 64, 8))


def test_narrow_transposed_unpacks_go_through_the_cache():
    # Unpacking transposes of units narrower than 8 bytes (NCHW8c) is written through the
    # cache even above STREAMING_BYTES; 16-channel tiles (NCHW16c) stream, a line of each
    # plane at a time (``_plane_unpack``); packs and 8-byte transposes still stream.
    assert _nest(verify((1, 64, 64, 64), (1,), (8,)), 1, 8, True).kernel_args(True)[2] is False
    packing = verify((1, 64, 64, 64), (1,), (16,))
    assert _nest(packing, 1, 8, True).kernel_args(True)[2] is True
    assert _nest(packing, 8, 8, True).kernel_args(True)[2] is True
    assert _nest(packing, 1, 8, False).kernel_args(True)[2] is True
    x = np.random.default_rng(2).integers(-99, 99, (1, 32, 512, 512)).astype(np.int8)
    assert x.nbytes >= kernels.STREAMING_BYTES
    p = pack(x, (1,), (16,))
    assert np.array_equal(p, pack_reference(x, (1,), (16,)))
    assert np.array_equal(unpack(p, (1,), (16,), shape=x.shape), x)


@njit
def _joins(nest, unit):
    return kernels._joins(nest, unit)


@pytest.mark.parametrize("shape, tiles, dt, lines", [
    ((32, 32 * 13), (16, 32), np.float32, 2),  # 128-byte runs: the copies for 2 lines a run
    ((128, 64 * 5), (64, 64), np.float32, 4),  # 256-byte runs: 4 lines
    ((64, 64 * 3), (64, 64), ml_dtypes.bfloat16, 2),
    ((16, 24 * 7), (8, 24), np.float64, 3),  # 3 lines: the run length a variable
    ((64, 32 * 9), (32, 32), ml_dtypes.bfloat16, 1),  # one-line runs from 32-row tiles
    ((128, 64 * 5), (64, 64), np.int8, 1),
])
def test_streamed_long_runs_go_out_as_joined_lines(shape, tiles, dt, lines):
    # Streamed unpacks of runs of whole lines, contiguous along the runs of a block, are
    # joined planes: every destination line joined in registers from the one or two source
    # lines it spans. Bit-exact at every shift of the destination's lines (0 to 56 bytes
    # past a line: h = 0..7 units), both ways.
    x = np.random.default_rng(lines).integers(-99, 99, shape).astype(dt)
    nest = _nest(verify(shape, (0, 1), tiles), x.dtype.itemsize, 8, True)
    table, mode, nt = nest.kernel_args(True)
    assert nt and mode == kernels.BLOCKS and _joins(table, nest.unit)
    assert table[-1, 0] == 8 * lines
    _check_both_ways(x, (0, 1), tiles, (), 0, offsets=range(0, 64, 8))


def test_joined_planes_whose_blocks_start_at_different_shifts():
    # Blocks ``ds2`` units apart where ``ds2`` is not a whole number of lines: each block's
    # own shift (the branch no sweep layout reaches), against a plain numpy gather.
    rng = np.random.default_rng(9)
    src = rng.integers(0, 2**63, 4096, dtype=np.uint64)
    n2, ss2, ds2, n1, ss1, n0, d = 5, 300, 77, 3, 96, 16, 3
    for offset in range(0, 64, 8):
        raw = np.zeros(4096 + 16, np.uint64)
        dst = raw[(-raw.ctypes.data // 8 + offset // 8) % 8:][:4096]
        dst[:] = 0
        _plane(src, dst, n2, ss2, ds2, n1, ss1, n0, d)
        want = np.zeros_like(dst)
        for i in range(n2):
            for a in range(n1):
                at = i * ds2 + a * n0 + d
                want[at:at + n0] = src[i * ss2 + a * ss1:][:n0]
        assert np.array_equal(dst, want), offset


@njit
def _plane(src, dst, n2, ss2, ds2, n1, ss1, n0, d):
    kernels._plane_words(kernels._data(src), kernels._data(dst), 0, d, n2, ss2, ds2, n1, ss1,
                         n0, dst.ctypes.data)
    kernels._fence()


@pytest.mark.parametrize("run", [kernels._STREAM_RUN - 8, kernels._STREAM_RUN,
                                 kernels._STREAM_RUN + 8, 3 * 64 + 24])
def test_streamed_runs_either_side_of_the_line_threshold(run):
    # Streamed unpacks of tile rows: runs of _STREAM_RUN bytes or more go out as aligned
    # lines with scalar heads and tails (destinations 16 bytes past a line, as numpy puts
    # large arrays, and 40), shorter ones unit by unit.
    x = np.random.default_rng(run).integers(-99, 99, (32, 8 * run // 8)).astype(np.int64)
    _check_both_ways(x, (0, 1), (16, run // 8), (), 0, offsets=(0, 16, 40))


@pytest.mark.parametrize("packed_is_src", [False, True])
@pytest.mark.parametrize("long_runs, at_a_time", [(1024, 8), (2048, 16)])  # AMD, Intel
def test_split_streams_only_for_streamed_destinations(packed_is_src, long_runs, at_a_time,
                                                       monkeypatch):
    # f32 T(32,32) of a [64, 4096] tensor: 128-byte runs 2 KiB (unpack) or 16 KiB (pack)
    # apart are read SEGMENT_LONG_RUNS // 128 at a time when streamed; written through the
    # cache, the nest is walked unsplit (``Nest.in_cache``). Both forms bit-exact, at both
    # store kinds.
    monkeypatch.setattr(kernels, "SEGMENT_LONG_RUNS", long_runs)
    x = np.random.default_rng(3).standard_normal((64, 4096)).astype(np.float32)
    packing = verify(x.shape, (0, 1), (32, 32))
    nest = _nest.__wrapped__(packing, 4, 8, packed_is_src)  # planned now, not cached
    assert nest.in_cache is not None and len(nest.table) == len(nest.in_cache) + 1
    assert nest.table[-2, 0] == at_a_time and nest.table[-1, 0] == 128 // 8  # runs, units
    assert nest.kernel_args(False)[0] is nest.in_cache
    assert nest.kernel_args(True)[0] is nest.table
    _check_both_ways(x, (0, 1), (32, 32), (), 0, offsets=(0, 16))


@pytest.mark.parametrize("vendor, long_runs, early", [("GenuineIntel", 2048, 3 << 20),
                                                      ("AuthenticAMD", 1024, 6 << 20),
                                                      (None, 1024, 6 << 20)])
def test_intel_reads_long_runs_16_at_a_time_and_streams_earlier(vendor, long_runs, early,
                                                                tmp_path):
    # the module's own choices, made at import from a stand-in /proc/cpuinfo (None: unreadable)
    fake = tmp_path / "cpuinfo"
    if vendor:
        fake.write_text(f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: 6\n")
    code = ("import pathlib, tilewise.cpuinfo as c; c.CPUINFO = pathlib.Path(%r); "
            "import tilewise.layout.kernels as k; "
            "print(k.SEGMENT_LONG_RUNS, k._EARLY_STREAM_BYTES, k.STREAMING_BYTES)" % str(fake))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert [int(v) for v in out.stdout.split()] == [long_runs, early, 6 << 20]


@pytest.mark.parametrize("tiles, dt, packed_is_src, start", [
    ((16, 32), np.float32, False, "STREAMING_BYTES"),   # whole 128-byte tile rows
    ((16, 32), np.float32, True, "STREAMING_BYTES"),
    ((64, 64), np.float32, True, "STREAMING_BYTES"),
    ((8, 8), np.float32, False, "STREAMING_BYTES"),
    ((8, 8), np.float32, True, "_EARLY_STREAM_BYTES"),   # an unpack walked as panels
    ((16, 32), np.int8, True, "_EARLY_STREAM_BYTES"),
    ((16, 2), np.float32, False, "_EARLY_STREAM_BYTES"),  # a transpose of 8-byte words
    ((16, 2), np.int8, False, "STREAMING_BYTES"),  # ... of 2-byte units
    ((16, 2), np.float32, True, "_WORDS_STREAM_BYTES"),   # a word gather
])
def test_where_streaming_starts(tiles, dt, packed_is_src, start):
    # Nest.stream_from by the tile row (kernels._stream_from), and streams() at the boundary
    nest = _nest(verify((512, 2048), (0, 1), tiles), np.dtype(dt).itemsize, 8, packed_is_src)
    limit = min(getattr(kernels, start), kernels.STREAMING_BYTES)
    assert nest.stream_from == getattr(kernels, start)
    assert nest.streams(limit) and not nest.streams(limit - 64)


def test_word_gathers_stream_from_a_smaller_size():
    # Unpacks gathering 8-byte words (f32 T(16,2)) stream from _WORDS_STREAM_BYTES on;
    # packs of the same tiles and unpacks of runs from STREAMING_BYTES on.
    limit = kernels._WORDS_STREAM_BYTES
    x = np.random.default_rng(5).standard_normal((512, limit // 2048)).astype(np.float32)
    assert x.nbytes == limit < kernels.STREAMING_BYTES
    packing = verify(x.shape, (0, 1), (16, 2))
    gather = _nest(packing, 4, 8, True)
    assert gather.streams(limit) and not gather.streams(limit - 64)
    assert not _nest(packing, 4, 8, False).streams(limit)
    assert not _nest(verify(x.shape, (0, 1), (16, 32)), 4, 8, True).streams(limit)
    ref = pack_reference(x, (0, 1), (16, 2))
    assert pack(x, (0, 1), (16, 2)).tobytes() == ref.tobytes()
    out = np.full_like(x, 5)
    assert unpack(ref, (0, 1), (16, 2), out=out) is out and out.tobytes() == x.tobytes()


@pytest.mark.parametrize("shape, tiles, dt", [
    ((64, 512), (16, 32), ml_dtypes.bfloat16),  # 64-byte runs of 1 KiB tiles
    ((64, 512), (16, 64), np.int8),
    ((32, 96), (4, 32), np.int16),  # three tiles a row: the last line of a row is split
])
def test_line_panels(shape, tiles, dt):
    # Streamed unpacks of runs of one line from tiles of fewer than 32 rows are panels of
    # two tiles, walked unsplit (from more rows: joined planes, above): every
    # destination line joined from two runs when the destination starts inside a line.
    x = np.random.default_rng(7).integers(-99, 99, shape).astype(dt)
    nest = _nest(verify(shape, (0, 1), tiles), x.dtype.itemsize, 8, True)
    assert nest.panel and nest.table[-1, 0] == 8 and nest.in_cache is None
    _check_both_ways(x, (0, 1), tiles, (), 0, offsets=(0, 8, 16, 56))
