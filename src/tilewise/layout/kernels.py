"""Compiled data movement for pack/unpack: one loop nest walked in destination order (numba).

A pack or unpack is planned as a single *nest* of loops over the destination, outermost
first; each loop has a size, a source and a destination stride, and may be *clipped*: the
inner tile loop of a dim with a partial last tile runs only ``rem`` iterations when its
*partner* (the dim's outer loop) is at its last index. Clipped iterations read nothing; in a
pack (``fill``) they are written with the padding value, so the destination -- the packed
tensor -- is written once, in address order, padding included. ``plan`` turns element loops
into a kernel nest:

1. drops unit loops and merges adjacent loops that are contiguous on both sides (a clipped
   loop may absorb the loops inside it, its ``rem`` scaled; a partner never merges);
2. appends the element's bytes as the innermost loop, so a tile row of ``tile`` elements
   becomes one run of ``tile * itemsize`` bytes;
3. picks the widest unsigned unit (8, 4, 2 or 1 bytes) that divides every stride, run,
   clipped run and the base addresses, so dtypes never matter;
4. for streamed destinations, caps the concurrent source streams of unclipped copies: runs
   1 KiB or more apart (4 KiB for runs shorter than a line) are read ``SEGMENT // run`` (8
   to 32) at a time (1 KiB of destination per pass); destinations written through the cache
   walk the nest unsplit (``Nest.in_cache``).

Example: packing f32[4096, 4096] with tiles (16, 2) is the nest ``(256, 2048, 16)`` of
``uint64`` with source strides ``(32768, 1, 2048)`` and destination strides
``(32768, 16, 1)``: a transpose of 8-byte words.

In-cache destinations (below ``STREAMING_BYTES``), plain stores:

* unclipped nests whose innermost loop is a tile row (contiguous on both sides) are walked
  three loops at a time (``_walk_runs``); each row is moved as pairs of 32-byte vectors and
  one move each of 32, 16, 8, 4, 2 and 1 bytes as the rest needs (``_copy_run``);
* other nests go through the block walker (``_walk``): the two innermost loops are a 2-D
  block; a gather whose consecutive rows read consecutive units is a transpose, done by
  lane-parallel zips (``_gather_zip``: four 16-byte squares side by side, the whole 64-byte
  lines on the strided side, started on its lines), or by square register transposes
  (``_gather_sq``) when the block is smaller than one zip; blocks of at most 8 rows of
  8-byte units (unpacking tiles 8 rows high whose row is one word: i8 T(8,8), f32 T(8,2))
  are moved word by word in destination order (``_gather_rect``): 0.85-0.99x the zips'
  time with the caches cold, 0.87-0.97x in cache (64 KiB to 1 MiB).

Destinations of ``STREAMING_BYTES`` or more (unpacks gathering 8-byte words: 2 MiB; on Intel
3 MiB for transposes of units and unpacked panels: ``Nest.streams``, ``_stream_from``) are
written with non-temporal stores, as memcpy does for large copies. Packs of tile rows
shorter than a line that are not panels (below) and of single elements other than 16-channel
tiles of 1-, 2- or 4-byte elements (NCHW -> NCHW8c, padded channels) are *staged*
(``_stage``, ``_walk_staged``): each chunk of up to ``CHUNK_BYTES`` of the packed tensor is
built in a stack scratch by the in-cache kernels and streamed out as whole lines. Unpacks of
transposed units narrower than 8 bytes are written through the cache at every size
(``_streams_badly``) but 16-channel tiles (below). The rest stream from the block walker:

* contiguous runs: whole aligned lines from 128 bytes on (``_STREAM_RUN``), else scalar
  ``movnti``; runs of whole lines of 8-byte units whose block of runs is contiguous in the
  destination (packs and unpacks of f32 T(16,32) to T(64,64), bf16 T(64,64); unpacks of
  bf16 T(32,32) and i8 T(64,64)) go out a plane of blocks at a time, every destination line
  joined in registers from the one or two source lines it spans (``_joined_plane``,
  ``_joins``);
* 8x8 transposes of 8-byte words (f32 T(16,2), f64 T(8,1), ...): each transposed row of
  8 words is one destination line, stored straight from the registers
  (``_gather_stream8``, the shorter side of the block innermost), when the lines start at
  the rows' first word or rows are long (a row's split first and last lines are then
  scalar stores); rows of 8 or 16 words filling a contiguous destination (packing f32
  T(8,2) or T(16,2)) go 512 bytes at a time, shifted in registers to the destination's
  lines (``_gather_rows8``);
* *panels*: runs of 16, 32 or 64 bytes that fill a destination row a run per source tile
  (unpacking i8 T(16,32), bf16 T(16,32), ...): the loop over the rows of a tile moves
  inside the loop over tiles, so ``64 / run`` tiles (two for 64-byte runs) are read in
  order and every destination row gets one whole line, joined (and shifted to the
  destination's lines) in registers (``_panel``, planned by ``_is_panel``); packs of tiles
  of 16 to 64 rows with runs of 32 or 64 bytes (bf16 T(16,32), T(32,32), i8 T(16,32),
  T(32,32), T(64,64), ...) are panels too, whose rows (tiles) go out in groups, 8 source
  rows at a time (``_panel_order``), and packs of 8-row tiles of 16- or 32-byte runs (bf16
  and f32 T(8,8)), written as one row of lines joined across tiles (``_tile_lines``);
* 16-channel tiles of 1-, 2- or 4-byte elements (NCHW <-> NCHW16c; T(16, t) bands of one
  unit a row): a line of positions at a time through a 16-plane register transpose, 16
  lines in, 16 lines out (``_plane_pack``, ``_plane_unpack``);
* other gathers: staged in a line-aligned L1 scratch and streamed out as aligned 64-byte
  vector stores (never a partial line in the middle of a chunk).

Kernels are single-threaded, release the GIL and are cached on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd, lcm

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from .. import cpuinfo
from .primitives import (ROWS16, _LANE, _LINE, _address, _advance, _data, _fence, _join2, _join4,
                         _line1, _line2, _line4, _load, _move16, _move2, _move32, _move4, _move8,
                         _prefetch_read, _ptr1, _ptr2, _ptr4, _ptr8, _put, _rows16_to_lines,
                         _rows8_to_lines, _side, _stream, _stream_line, _to_line, _transpose8,
                         _transpose8_pair, _transpose8_stream, _transpose_planes, _transpose_sq,
                         _unit_bytes, _untranspose_planes, _untranspose_planes2,
                         _untranspose_seams, _zip_in, _zip_out)

# Destinations at least this large (bytes) bypass the cache. Below it, source and
# destination stay in the last-level cache between uses and plain stores keep up with
# memcpy and numpy (which also store through the cache at these sizes); above it, streaming
# stores win by skipping the read-for-ownership of every destination line. Measured with
# benchmarks/pack.py's cache state on the 2-core VM (2 MiB L2, shared L3): plain stores
# ahead up to 4 MiB (14.0 vs 12.6 GB/s), even at 6 MiB, streaming ahead from 8 MiB (12.8
# vs 10.0 GB/s) and far ahead at 64 MiB (6.2 vs 3.5 GB/s, pack f32 T(32,32)).
STREAMING_BYTES = 6 << 20
# Unpacks gathering single 8-byte words stream from this size on (``_gathers_words``).
_WORDS_STREAM_BYTES = 2 << 20
# On Intel, nests that transpose units of 4 or 8 bytes (the innermost loop strided on one
# side: f32 T(16,2) and NCHW16c packs, i8 T(8,8) packs) and unpacks walked as panels (bf16
# T(8,8), T(16,32), i8 T(16,32), T(32,32)) stream from this size on (``_stream_from``); nests
# that copy whole tile rows, and those never streamed, keep STREAMING_BYTES. Emerald Rapids
# VM (2 MiB L2, 260 MiB L3 shared with other tenants), benchmarks/pack_ab.py at 4 MiB, 9-15
# rounds, new/base per cell over nine runs (five with every nest at 3 MiB, three with earlier
# forms of this rule, one with this rule) against an A/A run of the same code, which read
# 0.98-1.42, median 1.06 (the harness leans to the new tree): f32 T(8,8) unpack 1.53-1.98,
# T(16,2) pack 1.23-1.63, NCHW16c pack 1.09-1.82; bf16 T(8,8) unpack 1.42-2.23, T(16,32)
# unpack 1.00-2.09; i8 T(8,8) pack 1.20-1.84, T(16,32) unpack 1.01-1.65. In the five runs
# streaming every nest, the row copies lost or tied (f32 T(16,32) unpack 0.72-1.06, T(32,32)
# pack 0.79-1.34, i8 T(32,32) pack 0.86-1.32) and transposes of 1- and 2-byte units tied or
# lost (i8 T(16,2) pack 0.87-1.29, i8 NCHW16c pack 0.87-1.17, bf16 NCHW16c pack 0.88-1.26);
# the never-streamed bf16 NCHW16c unpack read 0.77-0.85 under two earlier forms of the rule
# (its band choice follows the flag). AMD keeps STREAMING_BYTES (its measurements above).
_EARLY_STREAM_BYTES = 3 << 20 if cpuinfo.field("vendor_id") == "GenuineIntel" else STREAMING_BYTES
# Source runs at least ``_SPLIT_BYTES`` apart are read this many bytes of destination at a time (at
# least 8 and at most 32 runs). Fewer concurrent source streams are better on AMD Zen 4
# (EPYC, 1 MiB L2): with 4096 bytes (32 streams of 128 B runs) pack/unpack f32 4096^2
# T(32,32) ran at 0.3 of memcpy, with 1024 bytes (8 streams) at 1.0-1.3
# (benchmarks/pack.py --sweep); the earlier Intel Xeon VM was tuned at 4096.
SEGMENT = 1024


# Runs of 128 bytes or more on Intel: 16 streams at a time, not 8. Emerald Rapids VM (2 MiB
# L2, 260 MiB L3), benchmarks/pack_ab.py 16-256 MiB, 9 rounds, of the fastest copy: f32
# T(32,32) pack/unpack 0.50-0.59 -> 0.69-1.38 (1.3-2.2x) at every size, T(16,32) 1.2-1.4x
# at 16 and 256 MiB, bf16 T(64,64) 1.3x at 64 and 256 MiB; 32 streams (SEGMENT 4096) lost
# 64-byte runs (bf16 T(16,32), T(32,32): 0.8-0.9x) and f32 T(32,32) pack at 256 MiB (0.66x).
SEGMENT_LONG_RUNS = 2048 if cpuinfo.field("vendor_id") == "GenuineIntel" else SEGMENT
# Runs of a line or more at least this far apart (shorter runs: a page) count as separate
# source streams (``_split_streams``): unpacking bf16 T(32,32) (2 KiB tiles) read 128 tiles
# at a time and ran at 0.15 of the fastest copy at 16 MiB, split at 0.53; i8 T(32,32) (32-byte
# runs) split ran slower (0.66 -> 0.18).
_SPLIT_BYTES = 1024
_PAGE = 4096
_PLANES_AHEAD = 4096  # bytes of packed source read ahead by the streamed plane unpacks
_L1_BYTES = 16384   # source lines a gather may keep live
_STAGE_BYTES = 8192  # scratch for streamed gathers
# Streamed destinations of unclipped nests go out in chunks of up to this many bytes: each is
# built in an L2-resident scratch (on the stack) by the in-cache kernels, then streamed out as
# whole lines (``_walk_staged``). Longer chunks read longer runs of each strided source row:
# NCHW -> NCHW16c at 16 and 64 MiB ran at 0.30-0.51 of the fastest copy with 16 KiB chunks
# (1 KiB of each channel plane), 0.53-0.65 with 64 KiB (128 KiB: about the same, and a
# deeper stack than a small thread stack may give).
CHUNK_BYTES = 65536
# Panels whose rows are ``_PANEL_MIN_ROWS`` to ``_PANEL_ROWS`` runs -- a pack's tiles of 16 to
# 64 rows -- go out in groups of tiles (``_panel_order``); packs of 32-byte runs from such
# tiles are planned as panels (``_rows_panel``).
_PANEL_MIN_ROWS = 16
_PANEL_ROWS = 64
# Groups of at most this many panel rows whose lines hold one run each take two lines of a row
# in turn (``_pairs``); larger ones one.
_PAIR_ROWS = 16

# Streamed runs of at least this many bytes go out as whole aligned lines (``_stream_out``: a
# misaligned run's first and last lines as scalar stores); shorter ones unit by unit. Unpack
# f32 T(16,32) (128-byte runs) at 16 MiB: 1.3x faster as lines (pack_ab.py, three runs);
# bf16 T(16,32) and T(32,32) (64-byte runs) 0.8-0.9x, so they keep the scalar stores.
_STREAM_RUN = 128

# Transposed 8-byte rows of at least this many units go straight to whole lines even when
# their first and last lines are split (written with scalar streaming stores).
_STREAM8_ROW = 64

_UNITS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


# --- the scratch (LLVM primitives: .primitives) ---------------------------------------

@intrinsic
def _scratch(typingctx, ptr):
    """A line-aligned scratch of ``_STAGE_BYTES`` or ``CHUNK_BYTES`` (the larger) on the
    stack, as a pointer of ``ptr``'s type (streamed gathers and chunks are staged in it);
    no allocation per call."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        size = max(_STAGE_BYTES, CHUNK_BYTES) + _LINE
        raw = cgutils.alloca_once(builder, ir.IntType(8), size=size)
        addr = builder.ptrtoint(raw, i64)
        aligned = builder.and_(builder.add(addr, ir.Constant(i64, _LINE - 1)),
                               ir.Constant(i64, -_LINE))
        return builder.inttoptr(aligned, args[0].type)

    return ptr(ptr), codegen



# --- kernels (pointers and offsets in units) ---------------------------------------------
# Integer arguments are always typed variables (``zero``, ``one``), never literals: numba
# would compile one specialization per literal value.

@njit(nogil=True, inline="always")
def _copy_run(src, s, dst, d, n):
    """``n`` contiguous units, plain stores: pairs of 32-byte vector moves, then one move
    each of 32, 16, 8, 4, 2 and 1 bytes as the rest needs. No loop for short runs: a loop
    per run (one the compiler vectorizes only for long runs, or one of vector moves the
    compiler unrolls with runtime checks) moved 32-byte tile rows at half the speed."""
    u = _unit_bytes(src)
    v32 = 32 // u
    b = 0
    while b + 2 * v32 <= n:
        _move32(src, s + b, dst, d + b)
        _move32(src, s + b + v32, dst, d + b + v32)
        b += 2 * v32
    if b + v32 <= n:
        _move32(src, s + b, dst, d + b)
        b += v32
    if b + v32 // 2 <= n:
        _move16(src, s + b, dst, d + b)
        b += v32 // 2
    if u <= 8 and b + 8 // u <= n:
        _move8(src, s + b, dst, d + b)
        b += 8 // u
    if u <= 4 and b + 4 // u <= n:
        _move4(src, s + b, dst, d + b)
        b += 4 // u
    if u <= 2 and b + 2 // u <= n:
        _move2(src, s + b, dst, d + b)
        b += 2 // u
    if u == 1 and b < n:
        _put(dst, d + b, _load(src, s + b))


@njit(cache=True, nogil=True)
def _copy_rows(src, dst, s, d, a0, a1, ss1, ds1, n):
    """``n`` contiguous units per row, plain stores."""
    for a in range(a0, a1):
        _copy_run(src, s + a * ss1, dst, d + a * ds1, n)


@njit(cache=True, nogil=True)
def _stream_rows(src, dst, s, d, a0, a1, ss1, ds1, n):
    """``n`` contiguous units per row, non-temporal stores."""
    for a in range(a0, a1):
        sa = s + a * ss1
        da = d + a * ds1
        for b in range(n):
            _stream(dst, da + b, _load(src, sa + b))


@njit(cache=True, nogil=True)
def _fill_put(dst, d, a0, a1, ds1, n, pad, period):
    """``n`` units of padding per row (``n`` a multiple of ``period``), plain stores."""
    for a in range(a0, a1):
        da = d + a * ds1
        for b in range(0, n, period):
            for j in range(period):
                _put(dst, da + b + j, _load(pad, j))


@njit(cache=True, nogil=True)
def _fill_stream(dst, d, a0, a1, ds1, n, pad, period):
    """``_fill_put`` with non-temporal stores."""
    for a in range(a0, a1):
        da = d + a * ds1
        for b in range(0, n, period):
            for j in range(period):
                _stream(dst, da + b + j, _load(pad, j))


@njit(cache=True, nogil=True)
def _gather(src, dst, s, d, a0, a1, ss1, ds1, b0, b1, ss0):
    """``dst[d + a*ds1 + b] = src[s + a*ss1 + b*ss0]`` for a in [a0, a1), b in [b0, b1);
    8x8 register transposes when consecutive rows read consecutive units (``ss1 == 1``)."""
    a = a0
    if ss1 == 1:
        while a + 8 <= a1:
            b = b0
            while b + 8 <= b1:
                _transpose8(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
                b += 8
            for r in range(a, a + 8):
                for c in range(b, b1):
                    _put(dst, d + r * ds1 + c, _load(src, s + r + c * ss0))
            a += 8
    for r in range(a, a1):
        for c in range(b0, b1):
            _put(dst, d + r * ds1 + c, _load(src, s + r * ss1 + c * ss0))


@njit(cache=True, nogil=True)
def _gather_sq(src, dst, s, d, a0, a1, ds1, b0, b1, ss0):
    """``_gather`` with ``ss1 == 1`` (consecutive rows read consecutive units), plain
    stores, by ``_transpose_sq`` squares, in tiles of a line of units by a line of units.
    Within a tile, the side with the longer stride finishes its lines first: each strided
    source line (packing NCHW -> NCHWc: 16 channel planes, all in one cache set) or strided
    destination line (unpacking) is fetched once, not once per square."""
    k = _side(src)
    lu = max(k, _LINE // _unit_bytes(src))
    ak = a0 + (a1 - a0) // k * k
    bk = b0 + (b1 - b0) // k * k
    for ac in range(a0, ak, lu):
        ae = min(ak, ac + lu)
        for bc in range(b0, bk, lu):
            be = min(bk, bc + lu)
            if ss0 >= ds1:
                for b in range(bc, be, k):
                    for a in range(ac, ae, k):
                        _transpose_sq(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
            else:
                for a in range(ac, ae, k):
                    for b in range(bc, be, k):
                        _transpose_sq(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
        for a in range(ac, ae):
            for b in range(bk, b1):
                _put(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))
    for a in range(ak, a1):
        for b in range(b0, b1):
            _put(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))


@njit(nogil=True, inline="always")
def _gather_rect(src, dst, s, d, a0, a1, ds1, b0, b1, ss0):
    """``dst[d + a*ds1 + b] = src[s + a + b*ss0]`` for a in [a0, a1), b in [b0, b1), unit
    by unit (the edges of a transposed block)."""
    for a in range(a0, a1):
        for b in range(b0, b1):
            _put(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))


@njit(cache=True, nogil=True)
def _gather_zip(src, dst, s, d, a0, a1, ds1, b0, b1, ss0, saddr, daddr):
    """``_gather`` with ``ss1 == 1``, plain stores, by lane-parallel zip transposes; the
    whole 64-byte lines go to the strided side: the source rows in a pack (``_zip_in``:
    ``ss0 >= ds1``, and always for 8-byte units), the destination rows in an unpack
    (``_zip_out``). When that side's rows are a whole number of lines apart, the block
    starts on its lines (``saddr``, ``daddr``: base addresses in bytes), so each strided
    line -- the 16 channel planes of NCHW, a power of two apart and in one cache set -- is
    moved whole, once. Returns False (nothing moved) when the block is smaller than one
    transpose."""
    u = _unit_bytes(src)
    lineu = _LINE // u
    k = _LANE // u
    wide = u == 8 or ss0 >= ds1
    ka = lineu if wide else k
    kb = k if wide else lineu
    if a1 - a0 < ka or b1 - b0 < kb:
        return False
    ha = 0
    hb = 0
    if wide and (ss0 * u) % _LINE == 0:
        ha = _to_line(src, saddr, s + a0)
        if a1 - a0 - ha < ka:
            ha = 0
    if not wide and (ds1 * u) % _LINE == 0:
        hb = _to_line(dst, daddr, d + b0)
        if b1 - b0 - hb < kb:
            hb = 0
    as_ = a0 + ha
    bs = b0 + hb
    ak = as_ + (a1 - as_) // ka * ka
    bk = bs + (b1 - bs) // kb * kb
    if wide:  # in destination order: a pack's destination rows are the contiguous side
        for a in range(as_, ak, ka):
            for b in range(bs, bk, kb):
                _zip_in(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
    elif ds1 * u >= _PAGE:  # destination rows a page or more apart (NCHW planes): a few
        # rows at a time along the block, each getting consecutive lines (in source order,
        # the k rows' lines, all in one L1 set, ran at 0.44-0.54 of memcpy, now 0.59-0.65)
        for a in range(as_, ak, ka):
            for b in range(bs, bk, kb):
                _zip_out(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
    else:  # in source order: each source line is used up while it is in L1
        for b in range(bs, bk, kb):
            for a in range(as_, ak, ka):
                _zip_out(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
    _gather_rect(src, dst, s, d, a0, as_, ds1, b0, b1, ss0)
    _gather_rect(src, dst, s, d, ak, a1, ds1, b0, b1, ss0)
    _gather_rect(src, dst, s, d, as_, ak, ds1, b0, bs, ss0)
    _gather_rect(src, dst, s, d, as_, ak, ds1, bk, b1, ss0)
    return True


@njit(cache=True, nogil=True)
def _gather_stream8(src, dst, s, d, a0, a1, ds1, n, ss0, h):
    """``_gather`` of 8-byte units with ``ss1 == 1`` into whole destination lines: each 8x8
    transpose stores 8 aligned lines, non-temporal. Every row's lines start at column
    ``h + 8k`` (``ds1`` is a multiple of a line). The shorter side of the block is
    the inner loop, so both the source and the destination move through memory a few lines
    at a time; the ragged edges (columns below ``h``, the last columns and rows) use scalar
    streaming stores. Two lines of each row in turn (``_transpose8_pair``) where the block
    has 16 rows or more: f32 T(16,2) unpack at 64 and 256 MiB 0.64-0.67 -> 0.76-0.82 of the
    fastest copy (``pack_ab.py``, 11-15 rounds); 8 rows (i8 T(8,8)) lost 7 % with them."""
    a8 = a0 + (a1 - a0) // 8 * 8
    n8 = h + (n - h) // 8 * 8
    if a8 - a0 <= n8 - h:  # rows the inner loop; with 16 or more, two lines of a row in turn
        n16 = h + (n8 - h) // 16 * 16 if a8 - a0 >= 16 else h
        for b in range(h, n16, 16):
            for a in range(a0, a8, 8):
                _transpose8_pair(src, s + a + b * ss0, ss0, 8 * ss0, dst, d + a * ds1 + b, ds1)
        for b in range(n16, n8, 8):
            for a in range(a0, a8, 8):
                _transpose8_stream(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
    else:
        for a in range(a0, a8, 8):
            for b in range(h, n8, 8):
                _transpose8_stream(src, s + a + b * ss0, ss0, dst, d + a * ds1 + b, ds1)
    for a in range(a0, a8):  # a row's last line is the next row's first: streamed in turn
        for b in range(h):
            _stream(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))
        for b in range(n8, n):
            _stream(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))
    for a in range(a8, a1):
        for b in range(n):
            _stream(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))


@njit(cache=True, nogil=True)
def _gather_rows8(src, dst, scr, s, d, a0, a1, n, ss0, p):
    """``_gather`` of 8-byte units with ``ss1 == 1`` into a contiguous destination
    (``ds1 == n``, ``n`` 8 or 16) ``p`` units past a line: ``_rows_to_lines`` streams 512
    bytes at a time as whole lines, carrying each call's last partial line to the next in
    ``scr``. The block's first and last partial lines and the ragged rows are scalar
    streaming stores."""
    per = 64 // n
    full = a0 + (a1 - a0) // per * per
    first = np.int64(1)
    for a in range(a0, full, per):
        da = d + a * n
        if first == 1:
            for j in range(min(8 - p, (a1 - a) * n) if p else 0):
                r = a + j // n
                _stream(dst, da + j, _load(src, s + r + (j % n) * ss0))
        if n == 8:
            _rows8_to_lines(src, s + a, ss0, dst, da, p, scr, first)
        else:
            _rows16_to_lines(src, s + a, ss0, dst, da, p, scr, first)
        first = 0
    start = full * n - p if full > a0 and p else full * n
    for j in range(start, a1 * n):
        r = j // n
        _stream(dst, d + j, _load(src, s + r + (j % n) * ss0))


@njit(cache=True, nogil=True)
def _columns(src, dst, pad, period, s, d, a0, a1, ss1, ds1, b0, b1, e0, ss0, saddr, daddr):
    """Columns [b0, b1) of rows [a0, a1), plain stores: copied below ``e0``, padding from
    ``e0`` on."""
    c1 = min(b1, e0)
    if b0 < c1:
        if ss0 == 1:
            _copy_rows(src, dst, s + b0, d + b0, a0, a1, ss1, ds1, c1 - b0)
        elif ss1 == 1 and _unit_bytes(src) == 8 and a1 - a0 <= 8:
            _gather_rect(src, dst, s, d, a0, a1, ds1, b0, c1, ss0)
        elif ss1 == 1:
            if not _gather_zip(src, dst, s, d, a0, a1, ds1, b0, c1, ss0, saddr, daddr):
                _gather_sq(src, dst, s, d, a0, a1, ds1, b0, c1, ss0)
        else:
            _gather(src, dst, s, d, a0, a1, ss1, ds1, b0, c1, ss0)
    f0 = max(b0, e0)
    if f0 < b1:
        _fill_put(dst, d + f0, a0, a1, ds1, b1 - f0, pad, period)


@njit(cache=True, nogil=True)
def _stream_out(scr, s, dst, d, n, daddr):
    """``dst[d:d+n] = scr[s:s+n]``, non-temporal: whole aligned lines as vector stores (the
    unit is the pointer type's)."""
    unit = _unit_bytes(dst)
    lineu = _LINE // unit
    head = min(n, _to_line(dst, daddr, d))
    for i in range(head):
        _stream(dst, d + i, _load(scr, s + i))
    i = head
    while i + lineu <= n:
        _stream_line(scr, s + i, dst, d + i)
        i += lineu
    while i < n:
        _stream(dst, d + i, _load(scr, s + i))
        i += 1


@njit(nogil=True, inline="always")
def _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, h):
    """For each of ``n2`` blocks (``i``): ``rows`` rows of ``n`` units (a whole number of
    lines) at ``src[s + i*ss2 + a*ss1]``, one after another from ``dst[d + i*ds2]`` on,
    every block's destination lines starting at its unit ``h``: line ``k`` holds the
    rows' units ``[h + k*line, h + (k+1)*line)`` joined in registers (``_line1``); the
    first ``h`` and last ``line - h`` units are scalar."""
    lineu = _LINE // _unit_bytes(dst)
    per = n // lineu
    hop = ss1 - n + lineu  # from a row's last line to the next row's first
    for i in range(n2):
        at = s + i * ss2
        dl = d + i * ds2
        for j in range(h):
            _stream(dst, dl + j, _load(src, at + j))
        dl += h
        for a in range(rows):
            for k in range(per - 1):
                _line1(src, at, lineu, dst, dl, h)
                at += lineu
                dl += lineu
            if a < rows - 1 or h == 0:
                _line1(src, at, hop, dst, dl, h)
                at += hop
                dl += lineu
        for j in range(lineu - h if h else 0):
            _stream(dst, dl + j, _load(src, at + h + j))


@njit(nogil=True, inline="always")
def _joined_shift(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, h):
    """``_joined_rows`` with the shift ``h`` of 8-byte units a constant for destinations
    16-byte aligned (``h`` even: every heap and ``mmap`` array numpy makes), so every line's
    shuffle is fixed; a variable otherwise (one copy, not four more to compile)."""
    if h == 0:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, 0)
    elif h == 2:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, 2)
    elif h == 4:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, 4)
    elif h == 6:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, 6)
    else:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, rows, ss1, n, h)


@njit(cache=True, nogil=True)
def _joined_plane(src, dst, s, d, n2, ss2, ds2, n1, ss1, n0, daddr):
    """The three innermost loops of a *joined* nest (see ``_walk``), streaming 8-byte
    units: ``n2`` blocks of ``n1`` runs of ``n0`` units (a whole number of lines) whose
    destination is contiguous (``ds1 == n0``), every whole destination line joined in
    registers from the one or two source lines it spans (``_joined_rows``), so a
    destination that starts inside a line -- numpy's large arrays start 16 bytes into a
    page -- still gets whole-line stores. The run length (1, 2 or 4 lines) and the shift are
    constants in the compiled loops. f32 T(16,32) unpack at 256 MiB, of the fastest copy,
    side by side in one process: a block of runs at a time, each run streamed on its own
    (``_stream_out``), 0.57-0.61 with the destination 16 bytes into a line (as numpy
    places large arrays) and 0.64-0.68 aligned; joined planes 0.84 and 0.88; the same loops
    with the run length a variable, 0.63."""
    lineu = _LINE // _unit_bytes(dst)
    if ds2 % lineu:  # the blocks' lines start at different units
        for i in range(n2):
            h = _to_line(dst, daddr, d + i * ds2)
            _joined_rows(src, dst, s + i * ss2, d + i * ds2, 1, ss2, ds2, n1, ss1, n0, h)
        return
    h = _to_line(dst, daddr, d)
    if n0 == lineu:
        _joined_shift(src, dst, s, d, n2, ss2, ds2, n1, ss1, lineu, h)
    elif n0 == 2 * lineu:
        _joined_shift(src, dst, s, d, n2, ss2, ds2, n1, ss1, 2 * lineu, h)
    elif n0 == 4 * lineu:
        _joined_shift(src, dst, s, d, n2, ss2, ds2, n1, ss1, 4 * lineu, h)
    else:
        _joined_rows(src, dst, s, d, n2, ss2, ds2, n1, ss1, n0, h)


@njit(nogil=True, inline="always")
def _planes_scalar(src, dst, s, d, p0, p1, sp, sc, dp, dc, c0, c1):
    """Positions ``[p0, p1)`` of channel planes ``[c0, c1)`` unit by unit, plain stores:
    ``dst[d + p*dp + c*dc] = src[s + p*sp + c*sc]`` (the heads and tails of ``_plane_pack``
    and ``_plane_unpack``: partial lines, which streamed a unit at a time leave the write
    combining buffers as partial writes; a 16-row unpack's row ends a line its next row
    starts, written a band apart: bf16 T(16,2) unpack at 16 MiB, 0.58-0.62 of the fastest
    copy streamed, 0.99-1.04 plain)."""
    for p in range(p0, p1):
        for c in range(c0, c1):
            _put(dst, d + p * dp + c * dc, _load(src, s + p * sp + c * sc))


@njit(cache=True, nogil=True)
def _plane_pack(src, dst, s, d, n1, ss0, daddr):
    """Positions ``[0, n1)`` of a pack into 16-channel tiles (NCHW -> NCHW16c), streaming:
    ``dst[d + p*16 + c] = src[s + p + c*ss0]`` for the 16 channel planes ``c``, a line of
    positions at a time by ``_transpose_planes`` once the destination's lines start at a
    position; the positions before and after, scalar. Returns False (nothing moved) when
    they never do (the destination not a multiple of 16 units past a line). i8 at 64 and
    256 MiB, of the fastest copy: 0.88-0.90 in a plain loop against the staged chunks'
    0.59-0.68."""
    u = _unit_bytes(dst)
    lineu = _LINE // u
    base = daddr // u + d
    if base % ROWS16:
        return False
    p0 = min(n1, _to_line(dst, daddr, d) // ROWS16)
    p1 = p0 + (n1 - p0) // lineu * lineu
    one = np.int64(1)
    _planes_scalar(src, dst, s, d, 0, p0, one, ss0, ROWS16, one, 0, ROWS16)
    for p in range(p0, p1, lineu):
        _transpose_planes(src, s + p, ss0, dst, d + p * ROWS16, lineu)
    _planes_scalar(src, dst, s, d, p1, n1, one, ss0, ROWS16, one, 0, ROWS16)
    return True


@njit(cache=True, nogil=True)
def _plane_unpack(src, dst, s, d, n, ds1, daddr):
    """Positions ``[0, n)`` of an unpack of 16-channel tiles (NCHW16c -> NCHW; 16-row bands,
    T(16, t) with one unit a tile row), streaming: ``dst[d + c*ds1 + p] = src[s + p*16 + c]``
    for the 16 planes ``c``, two lines of positions at a time by ``_untranspose_planes2``
    once the planes' lines start at a position. The positions before and after: where the
    planes follow one another (``ds1 == n``), each line a plane ends and the next begins is
    one streamed line (``_untranspose_seams``); the first plane's head and the last one's
    tail, and all of them otherwise, scalar through the cache (``_planes_scalar``). The
    packed source is prefetched ``_PLANES_AHEAD`` bytes ahead of the transposes: i8, bf16
    T(16,2) and NCHW16c, f32 NCHW16c at 64 and 256 MiB 1.06-1.12x (``pack_ab.py``, 7
    rounds; the hardware's prefetch alone fell behind with 16 rows of streamed stores in
    flight). Returns False (nothing moved) when the planes are not a whole number of lines
    apart."""
    u = _unit_bytes(dst)
    lineu = _LINE // u
    if (ds1 * u) % _LINE:
        return False
    p0 = min(n, _to_line(dst, daddr, d))
    p1 = p0 + (n - p0) // lineu * lineu
    one = np.int64(1)
    c0, c1 = 0, ROWS16  # the planes whose head and tail are scalar
    if ds1 == n and 0 < p0 and 2 * lineu <= n:
        _untranspose_seams(src, s, s + (n - lineu) * ROWS16, lineu, dst, d + p1, ds1, p0)
        c0, c1 = ROWS16 - 1, 1
    _planes_scalar(src, dst, s, d, 0, p0, ROWS16, one, one, ds1, 0, c1)
    p2 = p0 + (p1 - p0) // (2 * lineu) * (2 * lineu)
    ahead = _PLANES_AHEAD // _unit_bytes(src)
    for p in range(p0, p2, 2 * lineu):  # each plane two lines in turn (_untranspose_planes2)
        for q in range(0, 2 * ROWS16 * lineu, lineu):
            _prefetch_read(src, s + p * ROWS16 + ahead + q)
        _untranspose_planes2(src, s + p * ROWS16, lineu, dst, d + p, ds1)
    if p2 < p1:
        _untranspose_planes(src, s + p2 * ROWS16, lineu, dst, d + p2, ds1)
    _planes_scalar(src, dst, s, d, p1, n, ROWS16, one, one, ds1, c0, ROWS16)
    return True


@njit(cache=True, nogil=True)
def _flush(scr, at, dst, d, r0, r1, ds1, cw, daddr):
    """Stream out rows [r0, r1) of ``cw`` units staged at ``scr[at:]`` (row r0 first) to
    ``dst[d + r*ds1:]``."""
    if ds1 == cw:
        _stream_out(scr, at, dst, d + r0 * ds1, (r1 - r0) * cw, daddr)
    else:
        for a in range(r0, r1):
            _stream_out(scr, at + (a - r0) * cw, dst, d + a * ds1, cw, daddr)


@njit(cache=True, nogil=True)
def _block(src, dst, scr, pad, period, unit, saddr, daddr, s, d, a0, a1, ss1, ds1, e0, n0, ss0,
           fill, nt):
    """Rows [a0, a1) of the 2-D block: the first ``e0`` of the ``n0`` units of each row are
    copied, the rest padded when ``fill``."""
    if a0 >= a1:
        return
    zero = np.int64(0)
    one = np.int64(1)
    if nt and ss0 == 1:
        if fill and e0 < n0:
            for a in range(a0, a1):
                _stream_rows(src, dst, s + a * ss1, d + a * ds1, zero, one, ss1, ds1, e0)
                _fill_stream(dst, d + a * ds1 + e0, zero, one, ds1, n0 - e0, pad, period)
        elif e0 * unit >= _STREAM_RUN:
            for a in range(a0, a1):
                _stream_out(src, s + a * ss1, dst, d + a * ds1, e0, daddr)
        else:
            _stream_rows(src, dst, s, d, a0, a1, ss1, ds1, e0)
        return
    # Transposes straight to whole lines: when the lines start at column 0, or rows are long
    # enough (a line or more) for their split first and last lines not to matter.
    h = (8 - (daddr // 8 + d) % 8) % 8
    if (nt and unit == 8 and ss1 == 1 and ss0 != 1 and (e0 == n0 or not fill)
            and ds1 % 8 == 0 and (h == 0 or e0 >= _STREAM8_ROW)):
        _stream8_words(src, dst, s, d, a0, a1, ds1, e0, ss0, h)
        return
    # Short rows filling a contiguous destination: 512 bytes at a time, whole shifted lines.
    if (nt and unit == 8 and ss1 == 1 and ss0 != 1 and e0 == n0 == ds1
            and (n0 == 8 or n0 == 16)):
        _rows8_words(src, dst, scr, s, d, a0, a1, n0, ss0, (8 - h) % 8)
        return
    w = n0 if fill else e0
    lineu = _LINE // unit
    stage = _STAGE_BYTES // unit
    chunk = w
    if ss0 != 1:
        lines = e0 if ss0 * unit >= _LINE else e0 * ss0 * unit // _LINE
        if lines * _LINE > _L1_BYTES and ss1 * unit < _LINE and a1 - a0 > 1:
            chunk = max(lineu, _L1_BYTES // (ss0 * unit))
    if nt:
        chunk = min(chunk, stage)
    first = w
    if chunk < w:  # chunks start on destination lines
        phase = (daddr // unit + d) % lineu if (ds1 * unit) % _LINE == 0 else 0
        first = min(w, (lineu - phase) % lineu or chunk)
    b0 = zero
    b1 = first
    while b0 < w:
        if nt:  # gather into the scratch, then stream whole lines out
            cw = b1 - b0
            rows = max(1, stage // cw)
            for r0 in range(a0, a1, rows):
                r1 = min(a1, r0 + rows)
                _columns(src, scr, pad, period, s + r0 * ss1, -b0, zero, r1 - r0, ss1, cw,
                         b0, b1, e0, ss0, saddr, zero)
                _flush(scr, zero, dst, d + b0, r0, r1, ds1, cw, daddr)
        else:
            _columns(src, dst, pad, period, s, d, a0, a1, ss1, ds1, b0, b1, e0, ss0, saddr,
                     daddr)
        b0 = b1
        b1 = min(w, b1 + chunk)


@njit(nogil=True, inline="always")
def _fill(dst, d, n, pad, period, nt):
    """``n`` contiguous units of padding."""
    zero = np.int64(0)
    one = np.int64(1)
    if nt:
        _fill_stream(dst, d, zero, one, zero, n, pad, period)
    else:
        _fill_put(dst, d, zero, one, zero, n, pad, period)


@njit(nogil=True, inline="always")
def _panel_order(m, n1, g):
    """How ``_panel`` visits its ``m`` rows' lines: ``(group, chunk)``, the rows of a group line by
    line, ``chunk`` lines along the rows at a time. Rows of ``_PANEL_MIN_ROWS`` to
    ``_PANEL_ROWS`` runs are a pack's tiles (each run from another source row): 8 source rows at
    a time for 8 tiles (all rows for 16-row tiles), so the destination goes out nearly in order
    while 8 to 16 source rows stream. Emerald Rapids VM, 64 and 256 MiB, of the fastest copy
    (variants of this walk side by side in one process): bf16 T(16,32) 0.58-0.70 -> 0.83-0.91,
    bf16 T(32,32) 0.61-0.69 -> 0.83-0.90, i8 T(64,64) 0.66-0.78 -> 0.74-0.98; all rows of one
    tile before the next (16-64 source rows at once) 0.39-0.73, and the source in order (below)
    0.58-0.78. 16-row tiles went from 2 tiles a group to 8 with the pairs of lines
    (``_panel``): bf16 T(16,32) at 64 and 256 MiB 1.12 and 1.07x with 4, 1.17 and 1.20x with
    8; i8 T(16,32) (lines of two 32-byte runs) 8.6 -> 9.8 GB/s at 64 MiB and 8.5 -> 9.0 at
    256 MiB with 4 (2: 9.9 and 9.2; three processes each, bf16 alongside unchanged). Other
    rows (an unpack's cross ``n1`` tiles; 8-row tiles were not measured) go line by line over
    all rows, the source in order (``group = m``)."""
    if not _PANEL_MIN_ROWS <= n1 <= _PANEL_ROWS:
        return m, n1
    if n1 == _PANEL_MIN_ROWS:
        return 4 if g == 2 else 8, n1
    return 8, 8


@njit(nogil=True, inline="always")
def _pairs(g, group):
    """Whether ``_panel`` writes two lines of each row of a ``group`` in turn, for lines of
    ``g`` runs: lines of two runs always, of one run in groups of at most ``_PAIR_ROWS`` rows
    (a pack's 8 tiles, an unpack's 16-row tiles); never lines of four runs (``_line4``)."""
    return g == 2 or (g == 1 and group <= _PAIR_ROWS)


@njit(nogil=True, inline="always")
def _panel_lines(src, dst, s, d, t0, t1, k0, k1, ss2, ds2, step, ss1, h, g, pair):
    """Lines ``[k0, k1)`` of rows ``[t0, t1)`` of a ``_panel``: line by line, or with ``pair``
    (``_pairs``) two lines of each row in turn."""
    by = 2 if pair else 1
    for k in range(k0, k1, by):
        sk = s + k * step
        dk = d + h + 8 * k
        two = by == 2 and k + 1 < k1
        if g == 1:
            for t in range(t0, t1):
                _line1(src, sk + t * ss2, ss1, dst, dk + t * ds2, h)
                if two:
                    _line1(src, sk + step + t * ss2, ss1, dst, dk + 8 + t * ds2, h)
        elif g == 2:
            for t in range(t0, t1):
                _line2(src, sk + t * ss2, ss1, dst, dk + t * ds2, h)
                if two:
                    _line2(src, sk + step + t * ss2, ss1, dst, dk + 8 + t * ds2, h)
        else:
            for t in range(t0, t1):
                _line4(src, sk + t * ss2, ss1, dst, dk + t * ds2, h)


@njit(nogil=True, inline="always")
def _tile_line(src, dst, st, ss2, ss1, dl, q, n1, r, sh):
    """The line at ``dst[dl]`` of a ``_tile_lines`` panel whose first run is run ``q`` of
    the tile at ``src[st]`` (``q`` may run into the next tiles)."""
    g = 8 // r
    a0 = st + (q // n1) * ss2 + (q % n1) * ss1
    a1 = st + ((q + 1) // n1) * ss2 + ((q + 1) % n1) * ss1
    a2 = st + ((q + 2) // n1) * ss2 + ((q + 2) % n1) * ss1
    if g == 2:
        _join2(src, a0, a1, a2, dst, dl, sh)
    else:
        a3 = st + ((q + 3) // n1) * ss2 + ((q + 3) % n1) * ss1
        a4 = st + ((q + 4) // n1) * ss2 + ((q + 4) % n1) * ss1
        _join4(src, a0, a1, a2, a3, a4, dst, dl, sh)


@njit(nogil=True, inline="always")
def _tile_lines(src, dst, s, d, m, ss2, ss1, h, n1, r):
    """A panel whose ``m`` rows (a pack's tiles) of ``n1`` runs of ``r`` = 2 or 4 words fill
    the destination one after another (``ds2 == n1 * r``), written as one row: every
    destination line, the first ``h`` units on, is joined in registers from the runs it
    spans, across tiles (``_join2``, ``_join4``); only the panel's first ``h`` and last
    units are scalar. Inlined with ``n1``, ``r`` and ``h`` constants, so the tile's lines
    unroll and each run's place in the tile is a constant offset."""
    per = n1 * r // 8  # lines a tile
    g = 8 // r
    q0 = h // r
    sh = h % r
    total = m * n1 * r
    for j in range(h):
        _stream(dst, d + j, _load(src, s + (j // r) * ss1 + j % r))
    dl = d + h
    for t in range(m - 1 if h else m):
        st = s + t * ss2
        for k in range(per):
            _tile_line(src, dst, st, ss2, ss1, dl, q0 + k * g, n1, r, sh)
            dl += 8
    if h:  # the last tile's lines but the one it shares with what follows
        st = s + (m - 1) * ss2
        for k in range(per - 1):
            _tile_line(src, dst, st, ss2, ss1, dl, q0 + k * g, n1, r, sh)
            dl += 8
        for j in range(dl - d, total):
            q = j // r
            _stream(dst, d + j, _load(src, s + (q // n1) * ss2 + (q % n1) * ss1 + j % r))


@njit(nogil=True, inline="always")
def _tile_panel(src, dst, s, d, m, ss2, ss1, h, r):
    """``_tile_lines`` of 8-row tiles, the shift ``h`` a constant for 16-byte aligned
    destinations (as in ``_joined_shift``)."""
    if h == 0:
        _tile_lines(src, dst, s, d, m, ss2, ss1, 0, 8, r)
    elif h == 2:
        _tile_lines(src, dst, s, d, m, ss2, ss1, 2, 8, r)
    elif h == 4:
        _tile_lines(src, dst, s, d, m, ss2, ss1, 4, 8, r)
    elif h == 6:
        _tile_lines(src, dst, s, d, m, ss2, ss1, 6, 8, r)
    else:
        _tile_lines(src, dst, s, d, m, ss2, ss1, h, 8, r)


@njit(cache=True, nogil=True)
def _panel(src, dst, s, d, m, ss2, ds2, n1, ss1, r, h):
    """The three innermost loops of a *panel* nest (see ``_is_panel``), streaming:
    ``dst[d + t*ds2 + j] = src[s + t*ss2 + (j // r)*ss1 + j % r]`` for the ``n1 * r`` units
    j of each of the ``m`` destination rows t, a row being ``n1`` runs of ``r`` units (8
    units a line, ``g = 8 / r`` runs). The destination lines of every row start at unit
    ``h``. In groups of rows (``_panel_order``), a chunk of lines at a time, each row's lines
    are joined in registers from ``g`` runs (``2g`` when ``h > 0``) and streamed out, two
    lines of each row in turn where ``_pairs`` says: streamed stores to interleaved rows ran
    at 17 GB/s one line a row per turn and 24-25 with two (``benchmarks/stream_rows.py``).
    Side by side with one line a row (``pack_ab.py``, 7 rounds, 64 and 256 MiB): i8 T(64,64)
    pack 1.19-1.22x, bf16 T(16,32) and T(32,32) packs 1.08-1.16x, unpacks of i8 T(32,32)
    1.24-1.26x, i8 and bf16 T(16,32) 1.13-1.22x, f32 T(8,8) 1.05-1.09x; unpacks of 32 and 64
    rows of whole lines (bf16 T(32,32), i8 T(64,64)) lost 0.84-0.91x at 16 MiB, so keep one
    line a row. A row's first ``h`` and last few units (parts of lines shared with the rows
    before and after it) are scalar streaming stores, row after row at the end of its
    group."""
    if n1 == 8 and r == 4 and ds2 == 32:  # a pack's 8-row tiles (``_tile_lines``)
        _tile_panel(src, dst, s, d, m, ss2, ss1, h, 4)
        return
    if n1 == 8 and r == 2 and ds2 == 16:
        _tile_panel(src, dst, s, d, m, ss2, ss1, h, 2)
        return
    g = 8 // r
    step = g * ss1
    lines = max(n1 // g - (1 if h else 0), 0)
    group, chunk = _panel_order(m, n1, g)
    pair = _pairs(g, group)
    for t0 in range(0, m, group):
        t1 = min(m, t0 + group)
        for k0 in range(0, lines, chunk):
            _panel_lines(src, dst, s, d, t0, t1, k0, min(lines, k0 + chunk), ss2, ds2, step,
                         ss1, h, g, pair)
        for t in range(t0, t1):
            st = s + t * ss2
            dt = d + t * ds2
            for j in range(h):
                _stream(dst, dt + j, _load(src, st + (j // r) * ss1 + j % r))
            for j in range(h + 8 * lines, n1 * r):
                _stream(dst, dt + j, _load(src, st + (j // r) * ss1 + j % r))


def _words_only(kernel, stub):
    """``stub`` runs ``kernel`` on 8-byte units and compiles to nothing for narrower units:
    the walker is compiled once per unit, and the line paths (``_gather_stream8``,
    ``_gather_rows8``, ``_panel``) are only taken for 8-byte words."""

    @overload(stub, jit_options={"nogil": True})
    def _impl(src, *args):
        if src == types.CPointer(types.uint64):
            return lambda src, *args: kernel(src, *args)
        return lambda src, *args: None

    return stub


def _stream8_words(src, *args):
    """``_gather_stream8`` for 8-byte units (see ``_words_only``)."""


def _panel_words(src, *args):
    """``_panel`` for 8-byte units (see ``_words_only``)."""


def _rows8_words(src, *args):
    """``_gather_rows8`` for 8-byte units (see ``_words_only``)."""


def _plane_words(src, *args):
    """``_joined_plane`` for 8-byte units (see ``_words_only``)."""


_words_only(_gather_stream8, _stream8_words)
_words_only(_panel, _panel_words)
_words_only(_gather_rows8, _rows8_words)
_words_only(_joined_plane, _plane_words)


def _narrow_only(kernel, stub):
    """``stub`` runs ``kernel`` on 1-, 2- and 4-byte units and returns False (nothing moved)
    for 8-byte words, whose 16 channels make two lines a position (the plane transposes)."""

    @overload(stub, jit_options={"nogil": True})
    def _impl(src, *args):
        if src == types.CPointer(types.uint64):
            return lambda src, *args: False
        return lambda src, *args: kernel(src, *args)

    return stub


def _planes_narrow(src, *args):
    """``_plane_pack`` for units narrower than 8 bytes (see ``_narrow_only``)."""


def _unplanes_narrow(src, *args):
    """``_plane_unpack`` for units narrower than 8 bytes (see ``_narrow_only``)."""


_narrow_only(_plane_pack, _planes_narrow)
_narrow_only(_plane_unpack, _unplanes_narrow)


@njit(nogil=True, inline="always")
def _unclipped_inner(nest, k):
    """Whether the ``k`` innermost loops of ``nest`` exist, none clipped nor a partner."""
    nl = nest.shape[0]
    if nl < k:
        return False
    for i in range(nl):
        if nest[i, 3] >= nl - k or (i >= nl - k and nest[i, 3] >= 0):
            return False
    return True


@njit(nogil=True, inline="always")
def _plane_unpacks(nest, unit):
    """Whether the two innermost loops of ``nest`` unpack 16-channel tiles into 16 planes,
    unclipped: ``(16, 1, plane)`` then ``(n0, 16, 1)`` (``_plane_unpack``)."""
    nl = nest.shape[0]
    return (unit < 8 and _unclipped_inner(nest, 2) and nest[nl - 2, 0] == ROWS16
            and nest[nl - 2, 1] == 1 and nest[nl - 1, 1] == ROWS16 and nest[nl - 1, 2] == 1)


@njit(nogil=True, inline="always")
def _plane_packs(nest, unit):
    """Whether the two innermost loops of ``nest`` pack 16 channel planes into 16-channel
    tiles, unclipped: ``(n1, 1, 16)`` then ``(16, plane, 1)`` (``_plane_pack``)."""
    nl = nest.shape[0]
    return (unit < 8 and _unclipped_inner(nest, 2) and nest[nl - 1, 0] == ROWS16
            and nest[nl - 1, 2] == 1 and nest[nl - 2, 1] == 1 and nest[nl - 2, 2] == ROWS16)


@njit(nogil=True, inline="always")
def _joins(nest, unit):
    """Whether the three innermost loops of ``nest`` are a ``_joined_plane``: unclipped,
    runs of 8-byte units, a whole number of lines, whose destination is contiguous along the
    middle loop."""
    nl = nest.shape[0]
    if unit != 8 or not _unclipped_inner(nest, 3):
        return False
    n0 = nest[nl - 1, 0]
    return (nest[nl - 1, 1] == 1 and nest[nl - 1, 2] == 1 and nest[nl - 2, 2] == n0
            and n0 % 8 == 0 and n0 > 0)


@njit(cache=True, nogil=True)
def _walk(src, dst, scr, pad, period, unit, saddr, daddr, nest, fill, nt, panel):
    """Walk ``nest`` (see ``Nest``): an odometer over the outer loops, clipped extents
    updated when a partner reaches its last index, clipped tails padded when ``fill``.
    A streamed ``panel`` nest runs its three innermost loops as a ``_panel``; otherwise the
    two innermost are a ``_block``."""
    nl = nest.shape[0]
    panel = panel and nt
    joined = nt and not panel and _joins(nest, unit)
    planes = nt and not panel and _plane_packs(nest, unit)
    unplanes = nt and not panel and _plane_unpacks(nest, unit)
    nb = nl - 3 if panel or joined else nl - 2
    h = (8 - daddr // unit % 8) % 8  # a panel's lines start at this unit of every row
    ext = np.empty(nl, np.int64)
    idx = np.zeros(nl, np.int64)
    for i in range(nl):
        ext[i] = nest[i, 0]
        p = nest[i, 3]
        if 0 <= p < nb and nest[p, 0] == 1:
            ext[i] = nest[i, 4]
    n1, ss1, ds1 = nest[nb, 0], nest[nb, 1], nest[nb, 2]
    n0, ss0 = nest[nb + 1, 0], nest[nb + 1, 1]
    inner_clip = nest[nb + 1, 3] == nb  # the block's last row is shorter
    rem0 = nest[nb + 1, 4]
    zero = np.int64(0)
    s = zero
    d = zero
    while True:
        e1 = ext[nb]
        e0 = ext[nb + 1]
        if panel:
            _panel_words(src, dst, s, d, n1, ss1, ds1, n0, ss0, nest[nb + 2, 0], h)
        elif joined:
            _plane_words(src, dst, s, d, n1, ss1, ds1, n0, ss0, nest[nb + 2, 0], daddr)
        elif planes and _planes_narrow(src, dst, s, d, e1, ss0, daddr):
            pass
        elif unplanes and _unplanes_narrow(src, dst, s, d, e0, ds1, daddr):
            pass
        elif inner_clip and e1 == n1:
            _block(src, dst, scr, pad, period, unit, saddr, daddr, s, d, zero, n1 - 1, ss1, ds1, e0,
                   n0, ss0, fill, nt)
            _block(src, dst, scr, pad, period, unit, saddr, daddr, s, d, n1 - 1, n1, ss1, ds1, rem0,
                   n0, ss0, fill, nt)
        else:
            _block(src, dst, scr, pad, period, unit, saddr, daddr, s, d, zero, e1, ss1, ds1, e0, n0,
                   ss0, fill, nt)
        if fill and e1 < n1:
            _fill(dst, d + e1 * ds1, (n1 - e1) * ds1, pad, period, nt)
        j = nb - 1
        while j >= 0:
            idx[j] += 1
            s += nest[j, 1]
            d += nest[j, 2]
            if idx[j] < ext[j]:
                if idx[j] == nest[j, 0] - 1:
                    for c in range(j + 1, nl):
                        if nest[c, 3] == j:
                            ext[c] = nest[c, 4]
                break
            if fill and ext[j] < nest[j, 0]:
                _fill(dst, d, (nest[j, 0] - ext[j]) * nest[j, 2], pad, period, nt)
            s -= nest[j, 1] * idx[j]
            d -= nest[j, 2] * idx[j]
            idx[j] = 0
            for c in range(j + 1, nl):
                if nest[c, 3] == j:
                    ext[c] = nest[c, 4] if nest[j, 0] == 1 else nest[c, 0]
            j -= 1
        if j < 0:
            return


@njit(cache=True, nogil=True)
def _runs(src, dst, s, d, n2, ss2, ds2, n1, ss1, ds1, n0):
    """The three innermost loops of a ``_walk_runs`` nest: ``n2 * n1`` runs of ``n0``
    units, plain stores, in destination order."""
    for i in range(n2):
        for j in range(n1):
            _copy_run(src, s + i * ss2 + j * ss1, dst, d + i * ds2 + j * ds1, n0)


@njit(nogil=True, inline="always")
def _next(nest, idx, top, s, d):
    """One step of the odometer over the unclipped loops ``[0, top)`` of ``nest`` (indices
    ``idx``): the next source and destination offsets (units), and whether the walk is
    done."""
    j = top - 1
    while j >= 0:
        idx[j] += 1
        s += nest[j, 1]
        d += nest[j, 2]
        if idx[j] < nest[j, 0]:
            return s, d, False
        s -= nest[j, 1] * idx[j]
        d -= nest[j, 2] * idx[j]
        idx[j] = 0
        j -= 1
    return s, d, True


@njit(cache=True, nogil=True)
def _walk_runs(src, dst, nest):
    """Walk an unclipped nest of three or more loops whose innermost loop is contiguous on
    both sides (tile rows): an odometer over the outer loops, ``_runs`` inside, with no
    per-block dispatch (blocks of a few hundred bytes made it the bottleneck)."""
    nl = nest.shape[0]
    nb = nl - 3
    idx = np.zeros(nl, np.int64)
    n2, ss2, ds2 = nest[nb, 0], nest[nb, 1], nest[nb, 2]
    n1, ss1, ds1 = nest[nb + 1, 0], nest[nb + 1, 1], nest[nb + 1, 2]
    n0 = nest[nb + 2, 0]
    s = np.int64(0)
    d = np.int64(0)
    while True:
        _runs(src, dst, s, d, n2, ss2, ds2, n1, ss1, ds1, n0)
        s, d, done = _next(nest, idx, nb, s, d)
        if done:
            return


@njit(nogil=True, inline="always")
def _is_runs(nest):
    """Whether ``_walk_runs`` can walk ``nest``: three or more loops, none clipped, the
    innermost contiguous on both sides."""
    nl = nest.shape[0]
    if nl < 3 or nest[nl - 1, 1] != 1 or nest[nl - 1, 2] != 1:
        return False
    for i in range(nl):
        if nest[i, 3] >= 0:
            return False
    return True


@njit(cache=True, nogil=True)
def _walk_staged(srcp, dstp, scr, pad, period, unit, saddr, daddr, nest, nout):
    """A streamed walk of a staged nest (``Nest.staged``): for each iteration of the
    ``nout`` outer loops, the inner loops -- one contiguous chunk of the destination, at most
    ``CHUNK_BYTES`` -- are moved into the scratch by the in-cache kernels (``_walk_runs`` or
    ``_walk``: vector moves, register transposes), and the chunk is streamed out as whole
    64-byte lines (``_stream_out``). Every streamed nest gets the in-cache kernels' speed
    for the price of one more pass through L1."""
    nl = nest.shape[0]
    inner = nest[nout:]
    chunk = np.int64(1)
    for i in range(nout, nl):
        chunk += (nest[i, 0] - 1) * nest[i, 2]
    runs = _is_runs(inner)
    at = _address(scr)
    zero = np.int64(0)
    idx = np.zeros(nout, np.int64)
    s = zero
    d = zero
    while True:
        sp = _advance(srcp, s)
        if runs:
            _walk_runs(sp, scr, inner)
        else:
            _walk(sp, scr, scr, pad, period, unit, saddr + s * unit, at, inner, False, False,
                  False)
        _stream_out(scr, zero, dstp, d, chunk, daddr)
        s, d, done = _next(nest, idx, nout, s, d)
        if done:
            return


@njit(nogil=True, inline="always")
def _move_all(srcp, dstp, sa, da, sn, dn, padp, period, unit, nest, fill, nt, mode):
    """Move along ``nest`` from ``srcp`` (address ``sa``, ``sn`` bytes) to ``dstp`` (``da``,
    ``dn`` bytes); ``padp``: ``period`` units of padding. A status: ``OVERLAP`` or
    ``MISALIGNED`` (nothing moved), else ``OK``."""
    if sn and dn and sa < da + dn and da < sa + sn:
        return 1
    if sa % unit or da % unit:
        return 2
    if not nt and _is_runs(nest):
        _walk_runs(srcp, dstp, nest)
        return 0
    if nt and mode >= STAGED:
        _walk_staged(srcp, dstp, _scratch(srcp), padp, period, unit, sa, da, nest,
                     mode - STAGED)
    else:
        _walk(srcp, dstp, _scratch(srcp), padp, period, unit, sa, da, nest, fill, nt,
              mode == PANEL)
    if nt:
        _fence()
    return 0


@njit(nogil=True, inline="always")
def _entry(srcp, dstp, src, dst, pad, nest, fill, nt, mode):
    return _move_all(srcp, dstp, src.ctypes.data, dst.ctypes.data, src.nbytes, dst.nbytes,
                     _data(pad), pad.size, pad.itemsize, nest, fill, nt, mode)


# One entry point per unit, compiled on first use for each array type: ``src`` and ``dst``
# are 1-D arrays of any one dtype (the byte views of dtypes numba has no type for).
@njit(cache=True, nogil=True)
def _run8(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr8(src), _ptr8(dst), src, dst, pad, nest, fill, nt, mode)


@njit(cache=True, nogil=True)
def _run4(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr4(src), _ptr4(dst), src, dst, pad, nest, fill, nt, mode)


@njit(cache=True, nogil=True)
def _run2(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr2(src), _ptr2(dst), src, dst, pad, nest, fill, nt, mode)


@njit(cache=True, nogil=True)
def _run1(src, dst, pad, nest, fill, nt, mode):
    return _entry(_ptr1(src), _ptr1(dst), src, dst, pad, nest, fill, nt, mode)


RUN = {8: _run8, 4: _run4, 2: _run2, 1: _run1}


# --- the repeated call's move, called by address (``lean``) ------------------------------

def _make_at(dtype):
    def _at(typingctx, addr):
        """An address (an integer) as a pointer to ``dtype`` units."""

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(types.CPointer(dtype)))

        return types.CPointer(dtype)(types.intp), codegen

    return intrinsic(_at)


_at8, _at4, _at2, _at1 = (_make_at(t) for t in (types.uint64, types.uint32, types.uint16,
                                                 types.uint8))
_ati = _make_at(types.int64)

# The moving part of a repeated call, one C function per unit, called by address from
# ``lean.lean`` (so its small compilation does not link and re-optimize the walkers):
# (source, destination, source bytes, destination bytes, padding, padding units, table,
# table rows, fill + 2 * nt, mode) -> status; addresses and counts as integers.
_MOVE_SIG = types.int64(*[types.intp] * 10)
_TABLE_COLS = 5


@njit(nogil=True, inline="always")
def _moved(srcp, dstp, padp, unit, sa, da, sn, dn, period, ta, rows, flags, mode):
    """``_MOVE_SIG``'s body once the addresses are pointers to ``unit``-byte units."""
    return _move_all(srcp, dstp, sa, da, sn, dn, padp, period, unit,
                     carray(_ati(ta), (rows, _TABLE_COLS)), flags & 1 != 0, flags & 2 != 0, mode)


# Four functions, not one factory: numba's disk cache keys closures by name and signature,
# which the four would share.
def _moved8(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _moved(_at8(sa), _at8(da), _at8(pa), 8, sa, da, sn, dn, period, ta, rows, flags, mode)


def _moved4(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _moved(_at4(sa), _at4(da), _at4(pa), 4, sa, da, sn, dn, period, ta, rows, flags, mode)


def _moved2(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _moved(_at2(sa), _at2(da), _at2(pa), 2, sa, da, sn, dn, period, ta, rows, flags, mode)


def _moved1(sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    return _moved(_at1(sa), _at1(da), _at1(pa), 1, sa, da, sn, dn, period, ta, rows, flags, mode)


@intrinsic
def _call_move(typingctx, fn, sa, da, sn, dn, pa, period, ta, rows, flags, mode):
    """Call the C function at address ``fn`` (``_MOVE_SIG``)."""
    sig = types.int64(fn, sa, da, sn, dn, pa, period, ta, rows, flags, mode)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64] * 10)
        callee = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(callee, [builder.sext(a, i64) if a.type.width < 64 else a
                                     for a in args[1:]])

    return sig, codegen


_MOVES: dict = {}


def move_address(unit: int) -> int:
    """The address of the compiled move for ``unit``-byte units (compiled on first use,
    cached on disk)."""
    if unit not in _MOVES:
        move = {8: _moved8, 4: _moved4, 2: _moved2, 1: _moved1}[unit]
        _MOVES[unit] = cfunc(_MOVE_SIG, cache=True, nogil=True)(move)
    return _MOVES[unit].address



# Statuses of ``run``.
OK, OVERLAP, MISALIGNED, MISFIT = 0, 1, 2, 3
# Kernel modes: the block walker, a streamed panel nest, a staged nest of ``mode - STAGED``
# outer loops (streamed only).
BLOCKS, PANEL, STAGED = 0, 1, 2


# --- planning ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Loop:
    """One loop of a nest: ``size`` iterations, strides in elements (or units); ``partner``
    (index of an outer loop, or -1) clips it to ``rem`` iterations at the partner's last
    index."""

    size: int
    sstride: int
    dstride: int
    partner: int = -1
    rem: int = 0


@dataclass(frozen=True)
class Nest:
    """A planned nest: ``unit`` bytes per move and an int64 ``table`` with one row per loop,
    outermost first: ``size, sstride, dstride, partner, rem`` (strides in units)."""

    unit: int
    table: np.ndarray
    fill: bool
    panel: bool = False
    staged: np.ndarray | None = None  # the streamed form (``_stage``), if any
    outer: int = 0  # loops of ``staged`` outside its chunks
    cached: bool = False  # never streamed (``_streams_badly``)
    in_cache: np.ndarray | None = None  # the table for smaller destinations, if not ``table``
    stream_from: int = STREAMING_BYTES  # destinations of this many bytes or more stream

    def streams(self, nbytes: int) -> bool:
        """Whether a destination of ``nbytes`` is written with non-temporal stores."""
        return nbytes >= min(self.stream_from, STREAMING_BYTES)

    def kernel_args(self, streaming: bool) -> tuple[np.ndarray, int, bool]:
        """The table, mode and store kind the kernel runs for a destination of
        ``STREAMING_BYTES`` or more (``streaming``) or a smaller one."""
        if streaming and self.staged is not None:
            return self.staged, STAGED + self.outer, True
        if not streaming and self.in_cache is not None:
            return self.in_cache, BLOCKS, False
        return self.table, PANEL if self.panel else BLOCKS, streaming and not self.cached

    def pad_pattern(self, pad: bytes) -> np.ndarray:
        """The padding element ``pad`` repeated to a whole number of units."""
        reps = lcm(len(pad), self.unit) // len(pad)
        return np.frombuffer(pad * reps, dtype=_UNITS[self.unit]).copy()


_Dim = tuple  # (size, sstride, dstride, key, partner key or None, rem)


def _coalesce(dims: list[_Dim]) -> list[_Dim]:
    """Drop unit loops (not partners) and merge loops contiguous on both sides."""
    partners = {d[4] for d in dims if d[4] is not None}
    out: list[_Dim] = []
    for dim in dims:
        size, ss, ds, key, partner, rem = dim
        if size == 1 and key not in partners:
            continue
        if out:
            osize, oss, ods, okey, opartner, orem = out[-1]
            if (oss == size * ss and ods == size * ds and okey not in partners
                    and key not in partners and partner is None):
                out[-1] = (osize * size, ss, ds, okey, opartner, orem * size)
                continue
        out.append(dim)
    return out


def _split_streams(dims: list[_Dim], unit: int) -> list[_Dim]:
    """Read runs that are ``_SPLIT_BYTES`` or more apart ``SEGMENT // run`` (8 to 32;
    ``SEGMENT_LONG_RUNS`` for runs of two lines or more) at a time: the
    outer part of the run loop is hoisted above the next outer loop (unclipped nests only);
    ``dims`` itself when nothing is split. For streamed destinations only: written through
    the cache, the nest unsplit measured as fast or faster at every cell tried (``plans``
    A/B in one process, 256 KiB to 4 MiB, medians of 21 rounds, of the fastest copy:
    pack i8 4 MiB T(64,64) 0.46 -> 0.84, unpack bf16 4 MiB T(16,32) 0.49 -> 0.78 and
    T(32,32) 0.74 -> 1.36, unpack f32 4 MiB T(32,32) 0.72 -> 0.86, pack f32 1 MiB
    T(64,64) 0.77 -> 0.92; i8 T(32,32) 0.64 both)."""
    if len(dims) < 3 or any(d[4] is not None for d in dims):
        return dims
    (n2, s2, d2, k2, _, _), (n1, s1, d1, k1, _, _), (n0, s0, d0, k0, _, _) = dims[-3:]
    run = n0 * unit
    c = max(8, min(32, (SEGMENT_LONG_RUNS if run >= 2 * _LINE else SEGMENT) // run))
    apart = s1 * unit >= (_SPLIT_BYTES if run >= _LINE else _PAGE)
    if not (s0 == 1 and d0 == 1 and n1 > c and n1 % c == 0 and apart):
        return dims
    return dims[:-3] + [(n1 // c, s1 * c, d1 * c, k1, None, 0), (n2, s2, d2, k2, None, 0),
                        (c, s1, d1, -1, None, 0), (n0, s0, d0, k0, None, 0)]


def _rows_panel(n1: int, r: int) -> bool:
    """Whether a panel of rows of ``n1`` runs of ``r`` words is a pack's: each row a source tile's
    ``_PANEL_MIN_ROWS`` to ``_PANEL_ROWS`` rows (the rows ``_panel_order`` groups), runs of 32
    bytes or more. Walked as a panel in groups of tiles, unsplit and unstaged, these packs went
    from the staged chunks' 0.67-0.74 of the fastest copy to 0.74-0.98 (i8 T(16,32), T(32,32);
    Emerald Rapids VM, 64 and 256 MiB, ``pack_ab.py`` against the staged walk, 5-7 rounds:
    1.10-1.27x). Also 8-row tiles of half-line runs (f32 T(8,8)), walked as one row of joined
    lines (``_half_lines``): in plain loops side by side, 0.68-0.71 -> 0.87-0.91 of the copy at
    256 MiB and 0.82-0.84 -> 0.95-0.97 at 16 MiB against the staged walk (the generic panel
    walk had lost at 16 MiB: 0.86-0.89x). Not: 16-byte runs (bf16 T(8,8): 0.72-0.81x as
    panels; joined like the half lines, from five runs a line, 0.50-0.64 against the staged
    walk's 0.64-0.83), which stay staged."""
    return _PANEL_MIN_ROWS <= n1 <= _PANEL_ROWS and r >= 4 or (n1 == 8 and r in (2, 4))


def _is_panel(dims: list[_Dim], unit: int) -> bool:
    """Whether the three innermost loops ``(m, ss2, ds2), (n1, ss1, r), (r, 1, 1)`` write
    runs of ``r`` = 2, 4 or 8 words (a line holds ``g = 8 / r`` of them) contiguously along
    the middle loop, while the outer one steps inside a source tile
    (``m * ss2 <= ss1``): the destination rows of a tile. Walked row after row, the source
    is read a run every ``ss1`` and each line of it is visited again by the next rows; as a
    panel (``_panel``), a group of ``g`` tiles is read in order and each destination row
    gets one whole line. Unclipped nests of 8-byte units whose destination strides keep
    lines aligned. Runs of a whole line (bf16 T(16,32), i8 T(64,64)) are panels of two
    tiles (``g = 1``: each line joined from two runs when the destination starts inside a
    line, as numpy's large arrays do), walked unsplit: streamed row by row, each run's two
    halves went to two lines by scalar stores. Packs of shorter runs from few rows
    (``_rows_panel``) are panels too, unsplit and unstaged."""
    if unit != 8 or len(dims) < 3 or any(d[4] is not None for d in dims):
        return False
    (m, ss2, ds2, *_), (n1, ss1, ds1, *_), (r, ss0, ds0, *_) = dims[-3:]
    lineu = _LINE // unit
    return (ss0 == ds0 == 1 and ds1 == r and r in (2, 4, 8)
            and n1 >= lineu // r and 1 < m and (m < n1 or r == 8 or _rows_panel(n1, r))
            and m * ss2 <= ss1
            and all(d[2] % lineu == 0 for d in dims[:-2]))


def _stage(dims: list[_Dim], unit: int) -> tuple[np.ndarray, int] | None:
    """The streamed form of an unclipped nest in destination order (``_walk_staged``): the
    outer loops, then the inner loops that write one contiguous chunk of at most
    ``CHUNK_BYTES``, the loop at the boundary split (by its largest divisor that fits) so
    chunks are as large as fit. None for clipped nests, destinations not written densely in
    order, or rows longer than a chunk (plain streaming stores move those at full speed)."""
    if any(d[4] is not None for d in dims):
        return None
    limit = CHUNK_BYTES // unit
    extent = 1  # destination units the loops from ``level`` on cover
    level = len(dims)
    while level > 0:
        n, _, ds = dims[level - 1][:3]
        if extent + (n - 1) * ds > limit:
            break
        extent += (n - 1) * ds
        level -= 1
    if level == len(dims) or extent == 1:
        return None
    if level > 0 and dims[level - 1][2] != extent:  # not dense: a gap or an overlap
        return None
    rows = [(n, ss, ds) for n, ss, ds, *_ in dims]
    if level > 0:
        n, ss, ds = rows[level - 1]
        g = max(g for g in range(1, n + 1) if n % g == 0 and g * extent <= limit)
        rows[level - 1:level] = [(n // g, ss * g, ds * g), (g, ss, ds)]
    else:
        rows.insert(0, (1, 0, extent))
        level = 1
    inner = rows[level:]
    while len(inner) < 2:
        inner.insert(0, (1, 0, 0))
    table = np.array([(n, ss, ds, -1, 0) for n, ss, ds in rows[:level] + inner],
                     dtype=np.int64)
    return table, level


def _streams_badly(dims: list[_Dim], unit: int, fill: bool) -> bool:
    """Whether a large unpack is faster written through the cache than streamed: transposes
    of units narrower than 8 bytes (NCHW16c -> NCHW, bf16 T(16,2)), whose streaming gathers
    write many partial lines per pass. Measured at 16 MiB, GB/s streamed -> plain: f32
    NCHW16c 3.1 -> 7.3, i8 NCHW16c 1.7 -> 7.2, bf16 T(16,2) 2.6 -> 7.0 (np.copyto
    10-13). Not 16-channel tiles (``_is_plane_unpack``), which stream a line of each plane
    at a time (``_plane_unpack``: i8 NCHW16c 1.13-1.32x the plain stores at 16-256 MiB)."""
    if fill or not dims or _is_plane_unpack(dims, unit):
        return False
    n0, ss0, ds0 = dims[-1][:3]
    return not ss0 == ds0 == 1 and unit < 8


def _is_plane_unpack(dims: list[_Dim], unit: int) -> bool:
    """``_plane_unpacks`` of planned loops: 16-channel tiles into 16 planes."""
    if unit == 8 or len(dims) < 2 or any(d[4] is not None for d in dims):
        return False
    (n1, s1, d1, *_), (n0, s0, d0, *_) = dims[-2:]
    return n1 == ROWS16 and s1 == 1 and s0 == ROWS16 and d0 == 1


def _stages_well(dims: list[_Dim], unit: int, itemsize: int) -> bool:
    """Whether a streamed pack is faster staged (``_stage``) than on the streaming paths of
    the block walker, as measured with ``benchmarks/pack.py --sweep`` (16 MiB): tile rows
    shorter than a line (f32 T(8,8), bf16 T(8,8), i8 T(16,32): 0.2-0.6 -> 0.6-0.85 of the
    fastest copy) and transposes of single elements (NCHW -> NCHWc: 0.1-0.3 -> 0.2-0.5).
    Longer rows stream faster straight from the source (``_split_streams`` reads fewer
    streams at a time), and so do the 8-byte line transposes (``_gather_stream8``). Panels
    (f32 and bf16 T(8,8) among them, ``_rows_panel``) and 16-channel tiles
    (``_is_plane_pack``) are taken out of the staged ones by ``plan``."""
    if not dims:
        return False
    n0, ss0, ds0 = dims[-1][:3]
    if ss0 == ds0 == 1:
        return n0 * unit < _LINE
    return unit == itemsize < 8


def _is_plane_pack(dims: list[_Dim], unit: int) -> bool:
    """``_plane_packs`` of planned loops: 16 channel planes into 16-channel tiles."""
    if unit == 8 or len(dims) < 2 or any(d[4] is not None for d in dims):
        return False
    (n1, s1, d1, *_), (n0, s0, d0, *_) = dims[-2:]
    return n0 == ROWS16 and d0 == 1 and s1 == 1 and d1 == ROWS16


def plan(loops: list[Loop], itemsize: int, max_unit: int = 8, fill: bool = False) -> Nest:
    """Plan element ``loops`` (destination order, outermost first) for ``itemsize``-byte
    elements; ``max_unit`` caps the unit (the alignment of the base addresses); ``fill``
    pads clipped iterations. See the module doc."""
    dims = [(lp.size, lp.sstride * itemsize, lp.dstride * itemsize, k,
             None if lp.partner < 0 else lp.partner, lp.rem) for k, lp in enumerate(loops)]
    dims = _coalesce(dims + [(itemsize, 1, 1, len(loops), None, 0)])
    unit = max_unit
    for k, (n, s, d, _, _, rem) in enumerate(dims):
        innermost = k == len(dims) - 1 and s == d == 1
        unit = gcd(unit, n, rem) if innermost else gcd(unit, s, d)
    udims = []
    for k, (n, s, d, key, partner, rem) in enumerate(dims):
        if k == len(dims) - 1 and s == d == 1:
            udims.append((n // unit, 1, 1, key, partner, rem // unit))
        else:
            udims.append((n, s // unit, d // unit, key, partner, rem))
    udims = _coalesce(udims)
    staged = _stage(udims, unit) if fill and _stages_well(udims, unit, itemsize) else None
    if staged is not None and _is_plane_pack(udims, unit):
        staged = None  # streamed by ``_plane_pack``
    split = _split_streams(udims, unit)
    if _is_panel(udims, unit) and (udims[-1][0] == _LINE // unit
                                   or _rows_panel(udims[-2][0], udims[-1][0])):
        split = udims  # panels read whole groups of tiles (``_panel_order``): no split
        staged = None  # nor chunks staged in the scratch
    staged_table, outer = staged if staged is not None else (None, 0)
    badly = _streams_badly(split, unit, fill)
    panel = _is_panel(split, unit)
    if panel and not fill and udims[-1][0] == _LINE // unit and udims[-3][0] >= 32:
        # Unpacks of one-line runs from tiles of 32 rows or more (bf16 T(32,32), i8
        # T(64,64)) go as joined planes, split like the other long runs (``_joins``): against
        # the panels, at 16-256 MiB 1.14-1.22x and 1.04-1.25x, at 1-4 MiB 0.93-1.00x
        # (``pack_ab.py``, 7 rounds); from 16-row tiles (bf16 T(16,32)) 0.89-0.92x at
        # 64-256 MiB, so those stay panels.
        split = _split_streams(udims, unit)
        panel = False
        badly = _streams_badly(split, unit, fill)
    return Nest(unit, _table(split), fill, panel, staged_table, outer, badly,
                None if split is udims else _table(udims),
                STREAMING_BYTES if badly else _stream_from(split, udims, unit, fill))


def _stream_from(split: list[_Dim], udims: list[_Dim], unit: int, fill: bool) -> int:
    """Bytes of destination from which a nest that may stream (not ``_streams_badly``) streams
    (``Nest.stream_from``): word gathers from ``_WORDS_STREAM_BYTES``; nests whose innermost
    loop is strided on one side, in units of 4 or 8 bytes, and unpacks walked as panels from
    ``_EARLY_STREAM_BYTES``;
    nests copying contiguous rows from ``STREAMING_BYTES``."""
    if _gathers_words(split, unit, fill):
        return _WORDS_STREAM_BYTES
    if not udims:
        return STREAMING_BYTES
    ss0, ds0 = udims[-1][1:3]
    transposes = not ss0 == ds0 == 1 and unit >= 4
    early = transposes or (_is_panel(udims, unit) and not fill)
    return _EARLY_STREAM_BYTES if early else STREAMING_BYTES


def _gathers_words(dims: list[_Dim], unit: int, fill: bool) -> bool:
    """Whether an unpack gathers single 8-byte words (f32 T(16,2), i8 T(8,8)): streamed, its
    transposed rows go out as whole lines (``_gather_stream8``), which measured faster than
    plain stores from ``_WORDS_STREAM_BYTES`` on (4 MiB, of the fastest copy, medians of 25
    rounds in one process: f32 T(16,2) 0.43 -> 0.74, i8 T(8,8) 0.58 -> 0.87; packs of the
    same tiles were slower streamed at 4 MiB: f32 T(16,2) 0.66 -> 0.61)."""
    return not fill and unit == 8 and bool(dims) and dims[-1][1] != 1


def _table(dims: list[_Dim]) -> np.ndarray:
    """The kernel's int64 table of ``dims`` (at least two loops; partners as loop indices)."""
    dims = list(dims)
    while len(dims) < 2:
        dims.insert(0, (1, 0, 0, -2, None, 0))
    where = {dim[3]: i for i, dim in enumerate(dims)}
    return np.array([(n, s, d, -1 if p is None else where[p], rem)
                     for n, s, d, _, p, rem in dims], dtype=np.int64)


def byte_view(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes as a 1-D ``uint8`` view."""
    return a.reshape(-1).view(np.uint8)


# Dtypes whose arrays go to the kernels as they are (raveled, which is cheaper than a byte
# view): one compiled entry per dtype and unit, so only the common ones.
TYPED = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.uint8, np.int16,
                                        np.uint16, np.int32, np.uint32, np.int64,
                                        np.uint64))


def run(nest: Nest, src: np.ndarray, dst: np.ndarray, pad: np.ndarray,
        streaming: bool) -> int:
    """Move ``src`` to ``dst`` (1-D byte views) along ``nest``; ``pad`` is
    ``nest.pad_pattern(...)``. Returns ``OK``, or ``OVERLAP`` / ``MISALIGNED`` (nothing
    written) when the buffers overlap or are not aligned to the unit."""
    table, mode, nt = nest.kernel_args(streaming)
    return RUN[nest.unit](src, dst, pad, table, nest.fill, nt, mode)
