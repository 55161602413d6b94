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
4. caps the concurrent source streams of unclipped copies: runs a page or more apart are
   read ``SEGMENT // run`` (8 to 32) at a time.

Example: packing f32[4096, 4096] with tiles (16, 2) is the nest ``(256, 2048, 16)`` of
``uint64`` with source strides ``(32768, 1, 2048)`` and destination strides
``(32768, 16, 1)``: a transpose of 8-byte words.

The walker runs the two innermost loops as a 2-D block: contiguous runs (vectorized), or a
gather done with 8x8 register transposes (LLVM ``shufflevector``) when consecutive rows read
consecutive units. Gathers whose rows reread the same source lines and overflow L1 go in
column chunks. Destinations of ``STREAMING_BYTES`` or more are written with non-temporal
stores, as memcpy does: runs with scalar ``movnti``; gathers are staged in an L1 scratch and
streamed out as aligned 64-byte vector stores (never a partial line in the middle of a
chunk). Kernels are single-threaded, release the GIL and are cached on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd, lcm

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

# Destinations at least this large (bytes) bypass the cache: with their source they overflow
# a 2 MiB L2, and measured from L3 (benchmarks/pack.py) streaming stores win from 512 KiB on.
STREAMING_BYTES = 1 << 20
# Source runs at least a page apart are read this many bytes of destination at a time.
SEGMENT = 4096
_PAGE = 4096
_LINE = 64
_L1_BYTES = 16384   # source lines a gather may keep live
_STAGE_BYTES = 8192  # scratch for streamed gathers

_UNITS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


# --- LLVM primitives ---------------------------------------------------------------------

@intrinsic
def _data(typingctx, arr):
    """The data pointer of an array (no reference counting in the loops that use it)."""

    def codegen(context, builder, signature, args):
        return context.make_array(signature.args[0])(context, builder, args[0]).data

    return types.CPointer(arr.dtype)(arr), codegen


def _make_cast(dtype):
    def _cast(typingctx, arr):
        """The data pointer of a byte array, as a pointer to ``dtype`` units."""

        def codegen(context, builder, signature, args):
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            return builder.bitcast(data, context.get_value_type(types.CPointer(dtype)))

        return types.CPointer(dtype)(arr), codegen

    return intrinsic(_cast)


_ptr8, _ptr4, _ptr2, _ptr1 = (_make_cast(t) for t in (types.uint64, types.uint32,
                                                      types.uint16, types.uint8))


@intrinsic
def _load(typingctx, ptr, idx):
    def codegen(context, builder, signature, args):
        return builder.load(builder.gep(args[0], [args[1]]))

    return ptr.dtype(ptr, types.intp), codegen


def _nontemporal(builder, store):
    store.set_metadata("nontemporal",
                       builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))


def _make_store(streaming: bool):
    def _store(typingctx, ptr, idx, val):
        def codegen(context, builder, signature, args):
            st = builder.store(args[2], builder.gep(args[0], [args[1]]))
            if streaming:
                _nontemporal(builder, st)
            return context.get_dummy_value()

        return types.void(ptr, types.intp, ptr.dtype), codegen

    return intrinsic(_store)


# ``ptr[idx] = val``; ``_stream`` is a non-temporal store (``movnti``), which writes around
# the cache and saves the read-for-ownership of each destination line.
_put = _make_store(False)
_stream = _make_store(True)


@intrinsic
def _stream_line(typingctx, srcp, s, dstp, d):
    """``dst[d:d + 64 bytes] = src[s:...]``: one 64-byte vector load and an aligned
    non-temporal vector store; ``dst + d`` must be 64-byte aligned."""

    def codegen(context, builder, signature, args):
        sp, s, dp, d = args
        elty = context.get_value_type(signature.args[0].dtype)
        vty = ir.VectorType(elty, 8 * _LINE // elty.width)
        v = builder.load(builder.bitcast(builder.gep(sp, [s]), vty.as_pointer()),
                         align=elty.width // 8)
        st = builder.store(v, builder.bitcast(builder.gep(dp, [d]), vty.as_pointer()),
                           align=_LINE)
        _nontemporal(builder, st)
        return context.get_dummy_value()

    return types.void(srcp, types.intp, dstp, types.intp), codegen


def _mask(values):
    i32 = ir.IntType(32)
    return ir.Constant(ir.VectorType(i32, len(values)), [ir.Constant(i32, v) for v in values])


# Three rounds of 2-input shuffles transpose 8 vectors of 8 (unpack lo/hi, then pairs, then
# halves): out[i][k] = in[k][i].
_ROUNDS = [([0, 8, 2, 10, 4, 12, 6, 14], [1, 9, 3, 11, 5, 13, 7, 15], 1),
           ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15], 2),
           ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15], 4)]


@intrinsic
def _transpose8(typingctx, srcp, s, ss, dstp, d, ds):
    """``dst[d + i*ds + k] = src[s + i + k*ss]`` for i, k < 8, in registers."""

    def codegen(context, builder, signature, args):
        sp, s, ss, dp, d, ds = args
        elty = context.get_value_type(signature.args[0].dtype)
        vty = ir.VectorType(elty, 8)
        align = elty.width // 8
        rows = []
        for k in range(8):
            ptr = builder.gep(sp, [builder.add(s, builder.mul(ss, ir.Constant(ss.type, k)))])
            rows.append(builder.load(builder.bitcast(ptr, vty.as_pointer()), align=align))
        for lo, hi, step in _ROUNDS:
            out = [None] * 8
            for base in range(0, 8, 2 * step):
                for j in range(base, base + step):
                    out[j] = builder.shuffle_vector(rows[j], rows[j + step], _mask(lo))
                    out[j + step] = builder.shuffle_vector(rows[j], rows[j + step], _mask(hi))
            rows = out
        for i in range(8):
            ptr = builder.gep(dp, [builder.add(d, builder.mul(ds, ir.Constant(ds.type, i)))])
            builder.store(rows[i], builder.bitcast(ptr, vty.as_pointer()), align=align)
        return context.get_dummy_value()

    return types.void(srcp, types.intp, types.intp, dstp, types.intp, types.intp), codegen


@intrinsic
def _fence(typingctx):
    """A store fence: streaming stores are weakly ordered and must be fenced before return."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


# --- kernels (pointers and offsets in units) ---------------------------------------------
# Integer arguments are always typed variables (``zero``, ``one``), never literals: numba
# would compile one specialization per literal value.

@njit(cache=True, nogil=True)
def _copy_rows(src, dst, s, d, a0, a1, ss1, ds1, n):
    """``n`` contiguous units per row, plain stores (vectorized)."""
    for a in range(a0, a1):
        sa = s + a * ss1
        da = d + a * ds1
        for b in range(n):
            _put(dst, da + b, _load(src, sa + b))


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
def _columns(src, dst, pad, period, s, d, a0, a1, ss1, ds1, b0, b1, e0, ss0):
    """Columns [b0, b1) of rows [a0, a1), plain stores: copied below ``e0``, padding from
    ``e0`` on."""
    c1 = min(b1, e0)
    if b0 < c1:
        if ss0 == 1:
            _copy_rows(src, dst, s + b0, d + b0, a0, a1, ss1, ds1, c1 - b0)
        else:
            _gather(src, dst, s, d, a0, a1, ss1, ds1, b0, c1, ss0)
    f0 = max(b0, e0)
    if f0 < b1:
        _fill_put(dst, d + f0, a0, a1, ds1, b1 - f0, pad, period)


@njit(cache=True, nogil=True)
def _stream_out(scr, s, dst, d, n, daddr, unit):
    """``dst[d:d+n] = scr[s:s+n]``, non-temporal: whole aligned lines as vector stores."""
    lineu = _LINE // unit
    head = min(n, (lineu - (daddr // unit + d) % lineu) % lineu)
    for i in range(head):
        _stream(dst, d + i, _load(scr, s + i))
    i = head
    while i + lineu <= n:
        _stream_line(scr, s + i, dst, d + i)
        i += lineu
    while i < n:
        _stream(dst, d + i, _load(scr, s + i))
        i += 1


@njit(cache=True, nogil=True)
def _block(src, dst, scr, pad, period, unit, daddr, s, d, a0, a1, ss1, ds1, e0, n0, ss0, fill,
           nt):
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
        else:
            _stream_rows(src, dst, s, d, a0, a1, ss1, ds1, e0)
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
                         b0, b1, e0, ss0)
                if ds1 == cw:
                    _stream_out(scr, zero, dst, d + r0 * ds1 + b0, (r1 - r0) * cw, daddr, unit)
                else:
                    for a in range(r0, r1):
                        _stream_out(scr, (a - r0) * cw, dst, d + a * ds1 + b0, cw, daddr, unit)
        else:
            _columns(src, dst, pad, period, s, d, a0, a1, ss1, ds1, b0, b1, e0, ss0)
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


@njit(cache=True, nogil=True)
def _walk(src, dst, scr, pad, period, unit, daddr, nest, fill, nt):
    """Walk ``nest`` (see ``Nest``): an odometer over the outer loops, clipped extents
    updated when a partner reaches its last index, clipped tails padded when ``fill``."""
    nl = nest.shape[0]
    nb = nl - 2
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
        if inner_clip and e1 == n1:
            _block(src, dst, scr, pad, period, unit, daddr, s, d, zero, n1 - 1, ss1, ds1, e0,
                   n0, ss0, fill, nt)
            _block(src, dst, scr, pad, period, unit, daddr, s, d, n1 - 1, n1, ss1, ds1, rem0,
                   n0, ss0, fill, nt)
        else:
            _block(src, dst, scr, pad, period, unit, daddr, s, d, zero, e1, ss1, ds1, e0, n0,
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


@njit(nogil=True, inline="always")
def _entry(srcp, dstp, scr, src, dst, pad, nest, fill, nt):
    sa = src.ctypes.data
    da = dst.ctypes.data
    if src.size and dst.size and sa < da + dst.size and da < sa + src.size:
        return 1
    unit = pad.itemsize
    if sa % unit or da % unit:
        return 2
    _walk(srcp, dstp, _data(scr), _data(pad), pad.size, unit, da, nest, fill, nt)
    if nt:
        _fence()
    return 0


# One entry point per unit, compiled on first use. ``src`` and ``dst`` are 1-D byte views.
@njit(cache=True, nogil=True)
def _run8(src, dst, pad, nest, fill, nt):
    scr = np.empty(_STAGE_BYTES // 8 + _LINE, np.uint64)
    return _entry(_ptr8(src), _ptr8(dst), scr, src, dst, pad, nest, fill, nt)


@njit(cache=True, nogil=True)
def _run4(src, dst, pad, nest, fill, nt):
    scr = np.empty(_STAGE_BYTES // 4 + _LINE, np.uint32)
    return _entry(_ptr4(src), _ptr4(dst), scr, src, dst, pad, nest, fill, nt)


@njit(cache=True, nogil=True)
def _run2(src, dst, pad, nest, fill, nt):
    scr = np.empty(_STAGE_BYTES // 2 + _LINE, np.uint16)
    return _entry(_ptr2(src), _ptr2(dst), scr, src, dst, pad, nest, fill, nt)


@njit(cache=True, nogil=True)
def _run1(src, dst, pad, nest, fill, nt):
    scr = np.empty(_STAGE_BYTES + _LINE, np.uint8)
    return _entry(_ptr1(src), _ptr1(dst), scr, src, dst, pad, nest, fill, nt)


_RUN = {8: _run8, 4: _run4, 2: _run2, 1: _run1}

# Statuses of ``run``.
OK, OVERLAP, MISALIGNED = 0, 1, 2


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
    """Read runs that are a page or more apart ``SEGMENT // run`` (8 to 32) at a time: the
    outer part of the run loop is hoisted above the next outer loop (unclipped nests only)."""
    if len(dims) < 3 or any(d[4] is not None for d in dims):
        return dims
    (n2, s2, d2, k2, _, _), (n1, s1, d1, k1, _, _), (n0, s0, d0, k0, _, _) = dims[-3:]
    c = max(8, min(32, SEGMENT // (n0 * unit)))
    if not (s0 == 1 and d0 == 1 and n1 > c and n1 % c == 0 and s1 * unit >= _PAGE):
        return dims
    return dims[:-3] + [(n1 // c, s1 * c, d1 * c, k1, None, 0), (n2, s2, d2, k2, None, 0),
                        (c, s1, d1, -1, None, 0), (n0, s0, d0, k0, None, 0)]


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
    udims = _split_streams(_coalesce(udims), unit)
    while len(udims) < 2:
        udims.insert(0, (1, 0, 0, -2, None, 0))
    where = {dim[3]: i for i, dim in enumerate(udims)}
    table = np.array([(n, s, d, -1 if p is None else where[p], rem)
                      for n, s, d, _, p, rem in udims], dtype=np.int64)
    return Nest(unit, table, fill)


def byte_view(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's bytes as a 1-D ``uint8`` view."""
    return a.reshape(-1).view(np.uint8)


def run(nest: Nest, src: np.ndarray, dst: np.ndarray, pad: np.ndarray,
        streaming: bool) -> int:
    """Move ``src`` to ``dst`` (1-D byte views) along ``nest``; ``pad`` is
    ``nest.pad_pattern(...)``. Returns ``OK``, or ``OVERLAP`` / ``MISALIGNED`` (nothing
    written) when the buffers overlap or are not aligned to the unit."""
    return _RUN[nest.unit](src, dst, pad, nest.table, nest.fill, streaming)
