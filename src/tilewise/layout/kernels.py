"""Compiled data movement: copy and fill strided boxes of bytes at memcpy speed (numba).

Pack and unpack are pure data movement, so they are expressed here as a list of *boxes*: a box
is a loop nest ``sizes[0] x ... x sizes[-1]`` with a source offset and stride per loop and a
destination offset and stride per loop (all in elements). ``plan`` turns element boxes into
kernel boxes:

1. drops unit loops and coalesces adjacent loops that walk memory contiguously on both sides;
2. appends the element's bytes as the innermost loop and re-coalesces, so a tile row of
   ``tile_cols`` elements becomes one run of ``tile_cols * itemsize`` bytes;
3. picks the widest unsigned unit (8, 4, 2 or 1 bytes) that divides every offset, stride and
   run, so a run of two f32 (8 bytes) is one ``uint64`` move and dtypes never matter;
4. orders the loops to write the destination sequentially, and caps the rows read at once
   (tiles of 128 rows are read 32 rows per pass: fewer streams for the prefetchers and TLB).

Example: packing f32[4096, 4096] with tiles (16, 2) gives the element box
``sizes (256, 2048, 16, 2)``, source strides ``(65536, 2, 4096, 1)``; it becomes the kernel box
``sizes (256, 2048, 16)`` of ``uint64`` with source strides ``(32768, 1, 2048)`` -- a
transpose of 8-byte words -- and destination strides ``(32768, 16, 1)``.

The kernel (``run_boxes``) walks the outer loops with an odometer and the two innermost loops
as a tight 2-D block with four variants: contiguous runs (vectorized), broadcast fill (source
stride 0), a transpose of short rows (cache-blocked) and a general strided copy.
``run_boxes_streaming`` is the same with non-temporal stores, used for destinations larger
than the caches: like memcpy, it skips reading each destination line before overwriting it,
which is a third of the memory traffic of a plain copy loop. Kernels are single-threaded,
release the GIL and are cached on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_UNITS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}

# Transposes of short rows (2-D blocks whose inner loop gathers with a large source stride)
# are copied in square sub-blocks of this many units per side so that both the rows read and
# the rows written stay in L1 (16 x 16 x 8 bytes = 2 KiB each).
_BLOCK = 16
_STREAMS = 32


@dataclass(frozen=True)
class Box:
    """One loop nest of element moves: ``dst[doff + i . dstrides] = src[soff + i . sstrides]``.

    Offsets and strides are in elements of the arrays' own dtype; a source stride of 0 (all
    loops) reads the same source element everywhere (a fill).
    """

    soff: int
    doff: int
    sizes: tuple[int, ...]
    sstrides: tuple[int, ...]
    dstrides: tuple[int, ...]

    @property
    def volume(self) -> int:
        """Number of elements moved."""
        v = 1
        for s in self.sizes:
            v *= s
        return v


@dataclass(frozen=True)
class KernelBoxes:
    """Boxes ready for ``run_boxes``: unit width in bytes and an int64 table.

    Each row of ``table`` is ``soff, doff, sizes[ndim], sstrides[ndim], dstrides[ndim]`` in
    units of ``unit`` bytes, outermost loop first.
    """

    unit: int
    table: np.ndarray


def _coalesce(dims: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Drop unit loops and merge loops that are contiguous on both sides (outer first)."""
    out: list[tuple[int, int, int]] = []
    for size, ss, ds in dims:
        if size == 1:
            continue
        if out:
            osize, oss, ods = out[-1]
            if oss == size * ss and ods == size * ds:
                out[-1] = (osize * size, ss, ds)
                continue
        out.append((size, ss, ds))
    return out


def _byte_box(box: Box, itemsize: int):
    """A box in bytes, in destination order (the destination is written sequentially, which
    streaming stores need), coalesced, with the element bytes as the innermost loop."""
    dims = sorted(_coalesce(list(zip(box.sizes, box.sstrides, box.dstrides))),
                  key=lambda dim: -dim[2])
    dims = _coalesce(dims)
    fill = not any(box.sstrides)
    scaled = [(n, s * itemsize, d * itemsize) for n, s, d in dims]
    # For a fill the source holds one element: its bytes are the innermost loop (stride 1 on
    # both sides) and every element loop has source stride 0.
    scaled.append((itemsize, 1, 1))
    return box.soff * (0 if fill else itemsize), box.doff * itemsize, _coalesce(scaled), fill


def _unit_for(soff: int, doff: int, dims, max_unit: int) -> int:
    g = gcd(soff, doff, max_unit)
    for i, (n, s, d) in enumerate(dims):
        if i == len(dims) - 1 and s == 1 and d == 1:
            g = gcd(g, n)
        else:
            g = gcd(g, s, d)
    return g  # a divisor of max_unit, itself a power of two


def _split_streams(dims: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Cap the rows of the inner 2-D block at ``_STREAMS`` when it copies contiguous runs.

    A tile of 128 rows read in destination order has 128 concurrent source streams, more
    than the hardware prefetchers and the TLB follow; splitting the row loop and hoisting the
    outer part above the next loop keeps each pass at ``_STREAMS`` rows.
    """
    if len(dims) < 3:
        return dims
    (n2, ss2, ds2), (n1, ss1, ds1), (n0, ss0, ds0) = dims[-3:]
    if not (ss0 == 1 and ds0 == 1 and n1 > _STREAMS and n1 % _STREAMS == 0):
        return dims
    c = _STREAMS
    return dims[:-3] + [(n1 // c, ss1 * c, ds1 * c), (n2, ss2, ds2), (c, ss1, ds1),
                        (n0, ss0, ds0)]


def plan(boxes: list[Box], itemsize: int, max_unit: int = 8) -> list[KernelBoxes]:
    """Group ``boxes`` (element units) by the widest unit that moves them; see module doc.

    ``max_unit`` caps the unit (pass the alignment of the arrays' base addresses). Fills (all
    source strides 0) are limited to the widest unit that divides ``itemsize``, since their
    source is a single element.
    """
    groups: dict[int, list[list[int]]] = {}
    for box in boxes:
        if box.volume == 0:
            continue
        soff, doff, dims, fill = _byte_box(box, itemsize)
        unit = _unit_for(soff, doff, dims, gcd(itemsize, max_unit) if fill else max_unit)
        udims = []
        for i, (n, s, d) in enumerate(dims):
            if i == len(dims) - 1 and s == 1 and d == 1:
                udims.append((n // unit, 1, 1))
            else:
                udims.append((n, s // unit, d // unit))
        udims = _split_streams(_coalesce(udims) or [(1, 0, 0)])
        groups.setdefault(unit, []).append([soff // unit, doff // unit, udims])
    out = []
    for unit, rows in sorted(groups.items(), reverse=True):
        ndim = max(2, max(len(r[2]) for r in rows))
        table = np.zeros((len(rows), 2 + 3 * ndim), dtype=np.int64)
        for k, (soff, doff, udims) in enumerate(rows):
            udims = [(1, 0, 0)] * (ndim - len(udims)) + udims
            table[k, 0], table[k, 1] = soff, doff
            for i, (n, s, d) in enumerate(udims):
                table[k, 2 + i], table[k, 2 + ndim + i], table[k, 2 + 2 * ndim + i] = n, s, d
        out.append(KernelBoxes(unit, table))
    return out


def as_units(a: np.ndarray, unit: int) -> np.ndarray:
    """A C-contiguous array's bytes as a 1-D array of ``unit``-byte unsigned ints (a view;
    a tail shorter than a unit is left out: planned boxes never reach into it)."""
    raw = a.reshape(-1).view(np.uint8)
    return raw[: raw.size - raw.size % unit].view(_UNITS[unit])


def execute(plans: list[KernelBoxes], src: np.ndarray, dst: np.ndarray,
            streaming: bool = False) -> None:
    """Run planned boxes from ``src`` to ``dst`` (both C-contiguous; any dtypes)."""
    run = run_boxes_streaming if streaming else run_boxes
    for kb in plans:
        run(as_units(src, kb.unit), as_units(dst, kb.unit), kb.table)


@intrinsic
def _load(typingctx, arr, idx):
    """``arr[idx]`` without the negative-index wraparound numba adds (it blocks vectorizing)."""

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False, boundscheck=False)
        return builder.load(ptr)

    return arr.dtype(arr, types.intp), codegen


def _make_store(streaming: bool):
    def _store(typingctx, arr, idx, val):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            ary = context.make_array(aryty)(context, builder, args[0])
            ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                           wraparound=False, boundscheck=False)
            st = builder.store(args[2], ptr)
            if streaming:
                st.set_metadata("nontemporal",
                                builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return context.get_dummy_value()

        return types.void(arr, types.intp, arr.dtype), codegen

    return intrinsic(_store)


# ``arr[idx] = val`` without wraparound. ``_stream`` is a non-temporal store (``movnti``): it
# writes around the cache, saving the read-for-ownership of every destination line when the
# destination does not fit in cache (what memcpy does for large copies).
_put = _make_store(False)
_stream = _make_store(True)


@intrinsic
def _fence(typingctx):
    """A store fence: streaming stores are weakly ordered and must be fenced before return."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@njit(cache=True, nogil=True)
def _rows(src, dst, s, d, n1, ss1, ds1, n0, nt):
    """``n1`` contiguous runs of ``n0`` units."""
    if nt:
        for a in range(n1):
            sa = s + a * ss1
            da = d + a * ds1
            for b in range(n0):
                _stream(dst, da + b, _load(src, sa + b))
    else:
        for a in range(n1):
            sa = s + a * ss1
            da = d + a * ds1
            for b in range(n0):
                _put(dst, da + b, _load(src, sa + b))


@njit(cache=True, nogil=True)
def _fill(src, dst, s, d, n1, ds1, n0, ds0, nt):
    """``n1 x n0`` copies of ``src[s]``."""
    v = _load(src, s)
    if nt:
        for a in range(n1):
            for b in range(n0):
                _stream(dst, d + a * ds1 + b * ds0, v)
    else:
        for a in range(n1):
            for b in range(n0):
                _put(dst, d + a * ds1 + b * ds0, v)


@njit(cache=True, nogil=True)
def _transpose(src, dst, s, d, n1, ds1, n0, ss0, nt):
    """``dst[d + a*ds1 + b] = src[s + a + b*ss0]``: a transpose of short rows, in square
    sub-blocks so that the rows read and the rows written stay in L1."""
    for a0 in range(0, n1, _BLOCK):
        a1 = min(a0 + _BLOCK, n1)
        for b0 in range(0, n0, _BLOCK):
            b1 = min(b0 + _BLOCK, n0)
            if nt:
                for a in range(a0, a1):
                    for b in range(b0, b1):
                        _stream(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))
            else:
                for a in range(a0, a1):
                    for b in range(b0, b1):
                        _put(dst, d + a * ds1 + b, _load(src, s + a + b * ss0))


@njit(cache=True, nogil=True)
def _strided(src, dst, s, d, n1, ss1, ds1, n0, ss0, ds0, nt):
    """The general 2-D block."""
    for a in range(n1):
        for b in range(n0):
            v = _load(src, s + a * ss1 + b * ss0)
            if nt:
                _stream(dst, d + a * ds1 + b * ds0, v)
            else:
                _put(dst, d + a * ds1 + b * ds0, v)


@njit(cache=True, nogil=True)
def _run(src, dst, table, nt):
    ndim = (table.shape[1] - 2) // 3
    idx = np.zeros(ndim, dtype=np.int64)
    for k in range(table.shape[0]):
        s = table[k, 0]
        d = table[k, 1]
        outer = 1
        for i in range(ndim - 2):
            outer *= table[k, 2 + i]
            idx[i] = 0
        n1 = table[k, 2 + ndim - 2]
        n0 = table[k, 2 + ndim - 1]
        ss1 = table[k, 2 + 2 * ndim - 2]
        ss0 = table[k, 2 + 2 * ndim - 1]
        ds1 = table[k, 2 + 3 * ndim - 2]
        ds0 = table[k, 2 + 3 * ndim - 1]
        for _ in range(outer):
            if ss0 == 1 and ds0 == 1:
                _rows(src, dst, s, d, n1, ss1, ds1, n0, nt)
            elif ss0 == 0 and ss1 == 0:
                _fill(src, dst, s, d, n1, ds1, n0, ds0, nt)
            elif ss1 == 1 and ds0 == 1 and n0 > 2 and n1 > 2:
                # Streaming stores only when the blocks write one contiguous stream.
                _transpose(src, dst, s, d, n1, ds1, n0, ss0, nt and ds1 == n0 <= _BLOCK)
            else:
                _strided(src, dst, s, d, n1, ss1, ds1, n0, ss0, ds0, nt)
            j = ndim - 3
            while j >= 0:
                idx[j] += 1
                s += table[k, 2 + ndim + j]
                d += table[k, 2 + 2 * ndim + j]
                if idx[j] < table[k, 2 + j]:
                    break
                s -= table[k, 2 + ndim + j] * table[k, 2 + j]
                d -= table[k, 2 + 2 * ndim + j] * table[k, 2 + j]
                idx[j] = 0
                j -= 1


@njit(cache=True, nogil=True)
def run_boxes(src, dst, table):
    """Move every box of ``table`` (see ``KernelBoxes``) from ``src`` to ``dst`` (1-D)."""
    _run(src, dst, table, False)


@njit(cache=True, nogil=True)
def run_boxes_streaming(src, dst, table):
    """``run_boxes`` with non-temporal stores, for destinations larger than the cache."""
    _run(src, dst, table, True)
    _fence()
