"""The 16-row band kernels (``tilewise.layout.bands``: T(16, t) tiles of one-unit rows and
NCHW -> NCHW16c), bit-exact against the numpy reference: every unit width, plain and
streaming stores, widths that leave a partial transpose, batches of bands, destinations
off a line boundary; and ``pack``/``unpack`` take them where ``bands.choose`` says."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewise import pack, pack_reference, unpack
from tilewise.layout import bands, kernels
from tilewise.layout.pack import _nest, verify

DTYPES = [np.int8, np.int16, ml_dtypes.bfloat16, np.float32, np.float64]


def _offset(a: np.ndarray, fill, offset: int) -> np.ndarray:
    """A copy of ``a``'s shape and dtype filled with ``fill``, ``offset`` bytes past a line."""
    raw = np.empty(a.nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = fill
    return out


# Band widths (units): short ones, whole lines (a streamed unpack's parts start on them)
# and more than one pass of the scratch.
WIDTHS = st.integers(2, 70) | st.sampled_from([32, 64, 96, 600, 640])


@st.composite
def band_problems(draw):
    """(x, inner_dims_pos, inner_tiles): T(16, t) of a batch of 2-D tensors (t elements a
    unit of at most 8 bytes) or NCHW -> NCHW16c, 16 rows a band, any width."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    batch, nbands = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if draw(st.booleans()):
        t = draw(st.sampled_from([t for t in (1, 2, 4, 8) if t * dtype.itemsize <= 8]))
        shape, pos, tiles = (batch, 16 * nbands, t * draw(WIDTHS)), (1, 2), (16, t)
    else:
        shape = (batch, 16 * nbands, draw(st.integers(1, 9)), draw(st.integers(1, 9)))
        pos, tiles = (1,), (16,)
        if shape[2] * shape[3] < 2:
            shape = shape[:3] + (2,)
    raw = np.random.default_rng(draw(st.integers(0, 9))).bytes(int(np.prod(shape)) * dtype.itemsize)
    return np.frombuffer(raw, np.uint8).view(dtype).reshape(shape).copy(), pos, tiles


def _band_nest(x, pos, tiles, packed_is_src):
    """The nest of a pack or unpack of ``x``, checked to be a band nest of the right kind
    (a 16 x 16 square is both: ``band_kind`` calls it a pack)."""
    nest = _nest(verify(x.shape, pos, tiles), x.dtype.itemsize, 8, packed_is_src)
    square = nest.table[-1, 0] == nest.table[-2, 0] == bands.ROWS
    assert bands.band_kind(nest.table, nest.fill) == (2 if packed_is_src and not square else 1)
    return nest


@settings(max_examples=60, deadline=None)
@given(band_problems(), st.booleans(), st.sampled_from([0, 8, 16, 40]))
def test_band_kernels_equal_reference(problem, nt, offset):
    x, pos, tiles = problem
    ref = pack_reference(x, pos, tiles)
    for packed_is_src, src, want in ((False, x, ref), (True, ref, x)):
        nest = _band_nest(x, pos, tiles, packed_is_src)
        dst = _offset(want, 7, offset)
        kind = bands.band_kind(nest.table, nest.fill)
        status = bands.RUN[nest.unit](kernels.byte_view(_offset(src, src, offset)),
                                      kernels.byte_view(dst), nest.pad_pattern(b"\0" * 8),
                                      nest.table, nest.fill, nt, kind)
        assert status == kernels.OK
        assert dst.tobytes() == want.tobytes(), (packed_is_src, nt, nest.table.tolist())


@pytest.mark.parametrize("t", [1, 2, 4, 8])
@pytest.mark.parametrize("width", [600, 640])
def test_wide_bands_in_passes(t, width):
    """Bands wider than one pass of the scratch, rows a whole number of lines apart (640)
    or not (600), destinations on and off a line: every unit width, both store kinds."""
    x = np.random.default_rng(t).integers(-128, 128, (2, 32, t * width), dtype=np.int8)
    ref = pack_reference(x, (1, 2), (16, t))
    for packed_is_src, src, want in ((False, x, ref), (True, ref, x)):
        nest = _band_nest(x, (1, 2), (16, t), packed_is_src)
        for nt in (False, True):
            for offset in (0, 8, 40):
                dst = _offset(want, 7, offset)
                status = bands.RUN[nest.unit](kernels.byte_view(src), kernels.byte_view(dst),
                                              nest.pad_pattern(b"\0" * 8), nest.table,
                                              nest.fill, nt, 2 if packed_is_src else 1)
                assert status == kernels.OK
                assert dst.tobytes() == want.tobytes(), (packed_is_src, nt, offset)


@pytest.mark.parametrize("shape, pos, tiles", [
    ((1024, 16384), (0, 1), (16, 2)),  # rows 32 KiB apart
    ((256, 512), (0, 1), (16, 2)),  # rows 1 KiB apart
    ((1, 32, 256, 256), (1,), (16,)),  # planes 128 KiB apart
])
def test_streamed_unpacks_take_the_plane_transposes(shape, pos, tiles):
    """Streamed, no band is unpacked by the band kernel (``kernels._plane_unpack`` instead);
    in cache, rows under 2 KiB apart are."""
    x = np.zeros(shape, ml_dtypes.bfloat16)
    nest = _band_nest(x, pos, tiles, True)
    assert bands.choose(nest.table, nest.fill, nest.unit, True, x.nbytes) is None
    near = nest.table[-1, 0] * nest.unit < 2048
    assert bands.choose(nest.table, nest.fill, nest.unit, False, x.nbytes) == (
        (2, False) if near else None)


CASES = ([(dt, (256, 512), (0, 1), (16, 2)) for dt in (np.int8, ml_dtypes.bfloat16, np.float32)]
         + [(dt, (2, 64, 12, 20), (1,), (16,)) for dt in DTYPES]
         + [(np.int8, (1, 32, 64, 65), (1,), (16,)),  # planes more than a page apart
            (np.int8, (1, 32, 30, 130), (1,), (16,)),  # 3900 bytes apart: lines and a tail
            (np.int8, (32, 4096), (0, 1), (16, 1))])  # rows a page apart


@pytest.mark.parametrize("dtype, shape, pos, tiles", CASES)
def test_pack_and_unpack_take_the_bands(dtype, shape, pos, tiles):
    """In-cache packs of 2- to 8-byte units, of single bytes whose planes are under a page
    apart, and unpacks with rows under a page apart run the band kernel (through the checked
    path, then the lean entry) and give the reference."""
    x = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
    ref = pack_reference(x, pos, tiles)
    for packed_is_src in (False, True):
        nest = _band_nest(x, pos, tiles, packed_is_src)
        far = nest.table[-1, 1 - packed_is_src] * nest.unit >= 4096  # rows or planes apart
        want = (1 + packed_is_src, False)
        if far and (packed_is_src or nest.unit == 1):
            want = None
        assert bands.choose(nest.table, nest.fill, nest.unit, False, x.nbytes) == want
    for _ in range(3):
        out = np.empty_like(ref)
        assert pack(x, pos, tiles, out=out).tobytes() == ref.tobytes()
        back = np.empty_like(x)
        assert unpack(ref, pos, tiles, shape=x.shape, out=back).tobytes() == x.tobytes()


def test_other_nests_are_not_bands():
    """T(8,2), T(16,32) and NCHW8c move through the block walker."""
    for shape, pos, tiles in (((64, 64), (0, 1), (8, 2)), ((64, 64), (0, 1), (16, 32)),
                              ((1, 16, 4, 5), (1,), (8,))):
        for packed_is_src in (False, True):
            nest = _nest(verify(shape, pos, tiles), 1, 8, packed_is_src)
            assert bands.band_kind(nest.table, nest.fill) == 0
