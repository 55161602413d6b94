"""Transposes of 16-row *bands*: packing T(16, t) tiles whose tile row is one unit (i8 and
bf16 T(16,2), f32 T(16,2) as 8-byte words) and NCHW -> NCHW16c, and their unpacks (numba).

Planned by ``kernels.plan``, these nests end in the same two loops (units of ``unit`` bytes,
``w`` the band's width in units, source and destination strides)::

    pack:   (w, 1, 16), (16, w, 1)    dst[j*16 + r] = src[r*w + j]
    unpack: (16, 1, w), (w, 16, 1)    dst[r*w + j] = src[j*16 + r]

for rows r < 16 and columns j < w of each band; the loops outside them step from band to
band. The block walker moves such a band in lane-zip transposes of 16-byte pieces (a tile
of 16 units gets two or more partial stores) and, streamed, through its generic staging.
Here a band moves ``_side(unit)`` columns at a time: ``16 / side`` register transposes
(``primitives._transpose_sq``: rows of 32 bytes, 16 bytes for single bytes) write whole tiles,
``16 * side`` units (256 or 512 bytes) of the packed band in order; an unpack's squares
store to its 16 rows, each row's next line fetched for ownership ahead of them
(``primitives._prefetch_write``). Single bytes move 64 columns at a time first: a line of
each of the 16 rows shuffled into 16 packed lines, or back (``_transpose_planes_put``,
``_untranspose_planes_put``). A streamed (``nt``) pack's destination goes through an L1
scratch, ``_CHUNK`` bytes a pass, and out as whole lines (``kernels._stream_out``). Streamed
unpacks are the block walker's plane transposes (``kernels._plane_unpack``). ``choose`` says
where this beats the block walker.
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit

from .kernels import (_TABLE_COLS, MISALIGNED, OK, OVERLAP, _at1, _at2, _at4, _at8, _ati, _next,
                      _scratch, _stream_out)
from .primitives import (_LINE, _fence, _load, _prefetch_write, _ptr1, _ptr2, _ptr4, _ptr8, _put,
                         _side, _transpose_planes_put, _transpose_sq, _unit_bytes,
                         _untranspose_planes_put)

ROWS = 16  # rows of a band (T(16, t) tiles, the 16 channels of NCHW16c)
# Bytes of the packed band moved through the scratch per pass when streaming a pack.
_CHUNK = 8192
_PAGE = 4096
_L2_BYTES = 2 << 20


def choose(table: np.ndarray, fill: bool, unit: int, streaming: bool,
           nbytes: int) -> tuple[int, bool] | None:
    """The band kernel's ``(kind, nt)`` for a nest ``table`` of ``unit``-byte units and a
    destination of ``nbytes`` bytes, large enough to stream (``streaming``) or not, or None
    where the block walker was as fast or faster (``benchmarks/pack_bands_ab.py``,
    ``pack_ab.py``; ``results/pack_bands_ab.json``):

    * packs of 2- to 8-byte units, but not of 8-byte units streamed (f32 T(16,2): the block
      walker's line transposes, ``_gather_rows8``, win); single bytes (i8 NCHW16c) in cache
      whose planes are less than a page apart, a line of 64 columns at a time (64 KiB, planes
      1 KiB apart: 0.83-0.95x the block walker's time with the caches cold; 16-byte squares
      ran at 0.7-0.85 of its lane zips; planes a page apart: the same time);
    * unpacks in cache whose rows are less than a page apart (16 rows a page apart share an
      L1 set: i8 NCHW16c -> NCHW ran at 0.4-0.7 of the block walker's speed), and rows 2 KiB
      or more apart only up to ``_L2_BYTES`` (i8 T(16,2) at 4 MiB, rows 2 KiB apart: 0.86-1.0
      of the block walker in four runs; f32 and bf16 at 1 MiB: 1.0-1.3);
    * never streamed unpacks: the block walker's plane transposes (``kernels._plane_unpack``,
      each row two lines in turn) ran at 1.0-1.25x the band kernel's staged lines for i8
      and bf16 T(16,2) at 16-256 MiB (``pack_ab.py``, 9 rounds, twice; bf16 at 4 MiB
      0.88-0.90x, 0.75 of the fastest copy)."""
    kind = band_kind(table, fill)
    if kind == 1 and 1 < unit and (unit < 8 or not streaming):
        return kind, streaming
    if kind == 1 and unit == 1 and not streaming and table[-1, 1] < _PAGE:
        return kind, False
    row = table[-1, 0] * unit  # bytes between the unpacked rows
    if kind == 2 and not streaming and row < _PAGE and (row < _PAGE // 2 or nbytes <= _L2_BYTES):
        return kind, False
    return None


def band_kind(table: np.ndarray, fill: bool) -> int:
    """1 when ``table`` (``kernels.Nest``'s rows, outermost first) packs 16-row bands, 2 when
    it unpacks them, else 0. Nests with clipped (padded) loops are not bands."""
    if table.shape[0] < 2 or (table[:, 3] >= 0).any():
        return 0
    (n1, ss1, ds1), (n0, ss0, ds0) = table[-2, :3].tolist(), table[-1, :3].tolist()
    if (ss1, ds1, n0, ds0) == (1, ROWS, ROWS, 1) and ss0 == n1 > 1:
        return 1
    if not fill and (n1, ss1, ss0, ds0) == (ROWS, 1, ROWS, 1) and ds1 == n0 > 1:
        return 2
    return 0


@njit(nogil=True, inline="always")
def _pack_cols(src, s, w, dst, d, j0, j1):
    """Columns [j0, j1) of a band packed: ``dst[d + (j - j0)*16 + r] = src[s + r*w + j]``;
    single bytes a line of 64 columns at a time (``_transpose_planes_put``: 4 rounds of 16
    shuffles of whole lines per 64 columns, where 16-byte squares take 4 rounds of 16 per 16
    columns) while whole lines remain, then whole squares while ``side`` columns remain, then
    unit by unit."""
    k = _side(src)
    j = j0
    if _unit_bytes(src) == 1:
        while j + _LINE <= j1:
            _transpose_planes_put(src, s + j, w, dst, d + (j - j0) * ROWS, _LINE)
            j += _LINE
    while j + k <= j1:
        for q in range(0, ROWS, k):
            _transpose_sq(src, s + q * w + j, w, dst, d + (j - j0) * ROWS + q, ROWS)
        j += k
    for c in range(j, j1):
        for r in range(ROWS):
            _put(dst, d + (c - j0) * ROWS + r, _load(src, s + r * w + c))


@njit(nogil=True, inline="always")
def _unpack_cols(src, s, dst, d, ds, j0, j1):
    """Columns [j0, j1) of a band unpacked into rows ``ds`` apart:
    ``dst[d + r*ds + (j - j0)] = src[s + j*16 + r]``; single bytes 64 columns at a time
    (``_untranspose_planes_put``: 16 packed lines to a line of each row) first. Each row's
    next line is fetched for ownership (``_prefetch_write``) a line of columns ahead of the
    stores: without it the 16 rows' read-for-ownership misses stalled the stores (the byte
    lines alone ran 1.03-1.14x slower than squares with the caches cold)."""
    k = _side(src)
    j = j0
    lineu = _LINE // _unit_bytes(src)
    if lineu == _LINE:
        while j + _LINE <= j1:
            if j + 2 * _LINE <= j1:
                _own_rows(dst, d + (j + _LINE - j0), ds)
            _untranspose_planes_put(src, s + j * ROWS, _LINE, dst, d + (j - j0), ds)
            j += _LINE
    while j + k <= j1:
        if (j - j0) % lineu == 0 and j + 2 * lineu <= j1:
            _own_rows(dst, d + (j + lineu - j0), ds)
        for q in range(0, ROWS, k):
            _transpose_sq(src, s + j * ROWS + q, ROWS, dst, d + q * ds + (j - j0), ds)
        j += k
    for c in range(j, j1):
        for r in range(ROWS):
            _put(dst, d + r * ds + (c - j0), _load(src, s + c * ROWS + r))


@njit(nogil=True, inline="always")
def _own_rows(dst, d, ds):
    """Fetch for ownership the line at ``dst[d]`` of each of a band's 16 rows ``ds``
    apart (``_prefetch_write``)."""
    for r in range(ROWS):
        _prefetch_write(dst, d + r * ds)


@njit(nogil=True)
def _pack_band(src, s, w, dst, d, scr, daddr, nt):
    """One band packed: ``16 * w`` units from ``dst[d]`` (``daddr``: the destination's base
    address, bytes), plain stores or (``nt``) through the scratch as whole lines."""
    if not nt:
        _pack_cols(src, s, w, dst, d, 0, w)
        return
    u = _unit_bytes(src)
    cols = max(1, _CHUNK // (ROWS * u))
    zero = np.int64(0)
    for j0 in range(0, w, cols):
        j1 = min(w, j0 + cols)
        _pack_cols(src, s, w, scr, zero, j0, j1)
        _stream_out(scr, zero, dst, d + j0 * ROWS, (j1 - j0) * ROWS, daddr)


@njit(nogil=True)
def _unpack_band(src, s, w, dst, d):
    """One band unpacked: 16 rows of ``w`` units from ``dst[d]``, ``w`` apart, plain stores
    straight to the rows (streamed unpacks are ``kernels._plane_unpack``'s)."""
    _unpack_cols(src, s, dst, d, w, 0, w)


@njit(nogil=True)
def _walk_bands(srcp, dstp, scr, daddr, nest, kind, nt):
    """Every band of ``nest`` (``band_kind`` ``kind``): an odometer over its outer loops."""
    nl = nest.shape[0]
    w = nest[nl - 1, 0] if kind == 2 else nest[nl - 2, 0]
    idx = np.zeros(nl, np.int64)
    s = np.int64(0)
    d = np.int64(0)
    while True:
        if kind == 1:
            _pack_band(srcp, s, w, dstp, d, scr, daddr, nt)
        else:
            _unpack_band(srcp, s, w, dstp, d)
        s, d, done = _next(nest, idx, nl - 2, s, d)
        if done:
            return


@njit(nogil=True, inline="always")
def _move_bands(srcp, dstp, sa, da, sn, dn, unit, nest, nt, kind):
    """``kernels._move_all`` for band nests: ``OVERLAP`` or ``MISALIGNED`` (nothing moved),
    else ``OK``."""
    if sn and dn and sa < da + dn and da < sa + sn:
        return OVERLAP
    if sa % unit or da % unit:
        return MISALIGNED
    _walk_bands(srcp, dstp, _scratch(srcp), da, nest, kind, nt)
    if nt:
        _fence()
    return OK


@njit(nogil=True, inline="always")
def _entry(srcp, dstp, src, dst, nest, nt, kind):
    return _move_bands(srcp, dstp, src.ctypes.data, dst.ctypes.data, src.nbytes, dst.nbytes,
                       _unit_bytes(srcp), nest, nt, kind)


# ``kernels.RUN``'s signature (``pad`` and ``fill`` unused: bands are never padded; ``mode``
# is the band kind), one entry point per unit.
@njit(cache=True, nogil=True)
def _run8(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr8(src), _ptr8(dst), src, dst, nest, nt, mode)


@njit(cache=True, nogil=True)
def _run4(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr4(src), _ptr4(dst), src, dst, nest, nt, mode)


@njit(cache=True, nogil=True)
def _run2(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr2(src), _ptr2(dst), src, dst, nest, nt, mode)


@njit(cache=True, nogil=True)
def _run1(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr1(src), _ptr1(dst), src, dst, nest, nt, mode)


RUN = {8: _run8, 4: _run4, 2: _run2, 1: _run1}


# The lean entry's C functions (``kernels._MOVE_SIG``: source, destination, their bytes,
# padding, padding units, table, table rows, fill + 2 * nt, mode -> status).
def _moved8(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _move_bands(_at8(sa), _at8(da), sa, da, sn, dn, 8,
                       carray(_ati(ta), (rows, _TABLE_COLS)), flags & 2 != 0, mode)


def _moved4(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _move_bands(_at4(sa), _at4(da), sa, da, sn, dn, 4,
                       carray(_ati(ta), (rows, _TABLE_COLS)), flags & 2 != 0, mode)


def _moved2(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _move_bands(_at2(sa), _at2(da), sa, da, sn, dn, 2,
                       carray(_ati(ta), (rows, _TABLE_COLS)), flags & 2 != 0, mode)


def _moved1(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _move_bands(_at1(sa), _at1(da), sa, da, sn, dn, 1,
                       carray(_ati(ta), (rows, _TABLE_COLS)), flags & 2 != 0, mode)


_MOVES: dict = {}


def move_address(unit: int) -> int:
    """The address of the compiled band move for ``unit``-byte units (``kernels.lean``
    calls it; compiled on first use, cached on disk)."""
    if unit not in _MOVES:
        from .kernels import _MOVE_SIG

        move = {8: _moved8, 4: _moved4, 2: _moved2, 1: _moved1}[unit]
        _MOVES[unit] = cfunc(_MOVE_SIG, cache=True, nogil=True)(move)
    return _MOVES[unit].address

