"""A repeated pack/unpack call in one compiled function, on the Python objects as passed.

``pack``/``unpack``'s previous-call test (``hot.LAST_PACK``/``LAST_UNPACK``) compares the
attribute objects by identity and hands everything else to :func:`lean`'s entry point: the
source, the destination and an unpack's ``shape`` go in as raw object pointers
(:data:`RAW`: unboxed as the pointer itself, no numba array unboxing, no reference taken),
with the address of the plan's record (:func:`lean_record`). ``lean`` reads the objects'
fields itself at offsets probed once at import (:func:`object_layout`): each array's type,
data pointer, rank, dims, dtype and flags (numpy's ``PyArrayObject_fields``), a shape tuple's
length and items (CPython's tuple layout; each item an exact ``int``, read by
``PyLong_AsLongLongAndOverflow``), checks them against the record and calls the plan's move
(``kernels._MOVE_SIG``, by address); on any mismatch it returns ``MISFIT``, having moved
nothing, and the caller takes the checked path (which raises the right error).

Why: after a cache eviction each Python attribute lookup of those checks misses the caches
(``x.dtype`` 0.8 us, ``x.ndim`` 0.9 us, ``sum(shape)`` 1.8 us on the Intel VM, medians after
the sweep's 4 MiB eviction), and numba's array unboxing allocates a meminfo per array; at
64 KiB the copy itself is 3.5-5 us of a 10-15 us call. One entry point serves every dtype
and rank (the record holds them), so it is compiled once (cached on disk).
"""

from __future__ import annotations

import ctypes
from dataclasses import astuple, dataclass

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import NativeValue, intrinsic, models, register_model, unbox

from .kernels import _TABLE_COLS, MISFIT, _at4, _ati, _call_move

# numpy's array flags (``NPY_ARRAY_C_CONTIGUOUS``, ``NPY_ARRAY_WRITEABLE``).
C_CONTIGUOUS, WRITEABLE = 0x1, 0x400


class RawObject(types.Opaque):
    """A Python object passed to compiled code as its address (no unboxing, no reference)."""

    def __init__(self):
        super().__init__("RawObject")


RAW = RawObject()
register_model(RawObject)(models.OpaqueModel)


@unbox(RawObject)
def _unbox_raw(typ, obj, c):
    return NativeValue(obj)


@intrinsic
def _address(typingctx, obj):
    """A :data:`RAW` object's address."""

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(args[0], ir.IntType(64))

    return types.int64(obj), codegen


@intrinsic
def _as_long(typingctx, fn, obj):
    """``PyLong_AsLongLongAndOverflow`` (at address ``fn``) of the int at address ``obj``;
    -1 on overflow (no exception is set: the caller has checked that it is an exact int)."""

    def codegen(context, builder, signature, args):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        fnty = ir.FunctionType(i64, [i64, i32.as_pointer()])
        overflow = cgutils.alloca_once(builder, i32)
        value = builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1], overflow])
        clean = builder.icmp_signed("==", builder.load(overflow), ir.Constant(i32, 0))
        return builder.select(clean, value, ir.Constant(i64, -1))

    return types.int64(fn, obj), codegen


# The record (``lean_record``): object offsets (bytes from an object's address), the types
# and functions compared against, the plan's dtype, byte counts and move arguments, the two
# ranks, then the source's and the destination's dims.
(_TYPE_AT, _DATA_AT, _ND_AT, _DIMS_AT, _DESCR_AT, _FLAGS_AT, _SIZE_AT, _ITEMS_AT,
 _NDARRAY, _TUPLE, _INT, _NONE, _AS_LONG, _DESCR, _SRC_BYTES, _DST_BYTES,
 _FN, _PAD, _PERIOD, _TABLE, _ROWS, _FILL_NT, _MODE, _SRC_ND, _DST_ND, _DIMS) = range(26)


@njit(nogil=True, inline="always")
def _word(addr):
    return _ati(addr)[0]


@njit(nogil=True, inline="always")
def _array_fits(obj, rec, nd_field, dims_at, want):
    """Whether the object at ``obj`` is an ndarray (exactly) of the record's dtype, of rank
    ``rec[nd_field]`` with the dims at ``rec[dims_at:]``, with every ``want`` flag set."""
    if _word(obj + rec[_TYPE_AT]) != rec[_NDARRAY] or _word(obj + rec[_DESCR_AT]) != rec[_DESCR]:
        return False
    nd = rec[nd_field]
    if _at4(obj + rec[_ND_AT])[0] != nd:
        return False
    dims = _ati(_word(obj + rec[_DIMS_AT]))
    for i in range(nd):
        if dims[i] != rec[dims_at + i]:
            return False
    return (_at4(obj + rec[_FLAGS_AT])[0] & want) == want


@njit(nogil=True, inline="always")
def _shape_fits(obj, rec):
    """Whether the object at ``obj`` is None or a tuple of exact ints equal to the
    destination's dims (an unpack's ``shape``; a bool, a float, a numpy integer or a list
    misfits: the checked path decides)."""
    if obj == rec[_NONE]:
        return True
    nd = rec[_DST_ND]
    if _word(obj + rec[_TYPE_AT]) != rec[_TUPLE] or _word(obj + rec[_SIZE_AT]) != nd:
        return False
    at = _DIMS + rec[_SRC_ND]
    for i in range(nd):
        item = _word(obj + rec[_ITEMS_AT] + 8 * i)
        if _word(item + rec[_TYPE_AT]) != rec[_INT] or _as_long(rec[_AS_LONG], item) != rec[at + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def lean(src, dst, shape, at):
    """The whole repeated call: ``src`` and ``dst`` (and an unpack's ``shape``, else None),
    all :data:`RAW`, checked against the record at address ``at`` (``MISFIT`` when they do
    not fit: nothing moved), then moved by the C function the record names."""
    s, d = _address(src), _address(dst)
    rec = _ati(at)
    if not (_array_fits(s, rec, _SRC_ND, _DIMS, C_CONTIGUOUS)
            and _array_fits(d, rec, _DST_ND, _DIMS + rec[_SRC_ND], C_CONTIGUOUS | WRITEABLE)
            and _shape_fits(_address(shape), rec)):
        return MISFIT
    return _call_move(rec[_FN], _word(s + rec[_DATA_AT]), _word(d + rec[_DATA_AT]),
                      rec[_SRC_BYTES], rec[_DST_BYTES], rec[_PAD], rec[_PERIOD], rec[_TABLE],
                      rec[_ROWS], rec[_FILL_NT], rec[_MODE])


@dataclass(frozen=True)
class ObjectLayout:
    """Byte offsets into objects: the type pointer (any object), an ndarray's data pointer,
    rank (int32), dims pointer, dtype and flags (int32), a tuple's length and first item;
    in the order of the record's fields (``lean_record`` copies them as they are)."""

    type_at: int
    data_at: int
    nd_at: int
    dims_at: int
    descr_at: int
    flags_at: int
    size_at: int
    items_at: int


def _read(addr: int) -> int:
    return ctypes.c_int64.from_address(addr).value


def _probe(layout: ObjectLayout) -> bool:
    """Whether ``layout`` reads the right fields of probe arrays and tuples."""
    base = np.empty((4, 6))
    frozen = np.empty(5, np.int8)
    frozen.flags.writeable = False
    arrays = ((base, 0x401), (frozen, 0x001), (base[:, ::2], 0x400), (base.T, 0x400),
              (np.empty((2, 3, 5), np.float32), 0x401))
    for arr, bits in arrays:
        at = id(arr)
        dims = _read(at + layout.dims_at)
        if (_read(at + layout.type_at) != id(np.ndarray)
                or _read(at + layout.data_at) != arr.ctypes.data
                or ctypes.c_int32.from_address(at + layout.nd_at).value != arr.ndim
                or [_read(dims + 8 * i) for i in range(arr.ndim)] != list(arr.shape)
                or _read(at + layout.descr_at) != id(arr.dtype)
                or ctypes.c_int32.from_address(at + layout.flags_at).value & 0x401 != bits):
            return False
    for tup in ((7, 300, None), (1 << 40,)):
        at = id(tup)
        if (_read(at + layout.type_at) != id(tuple) or _read(at + layout.size_at) != len(tup)
                or [_read(at + layout.items_at + 8 * i) for i in range(len(tup))]
                != [id(v) for v in tup]):
            return False
    return True


def object_layout() -> ObjectLayout | None:
    """The offsets of this CPython and numpy (numpy's ``PyArrayObject_fields`` after the
    object head: data, nd, dimensions, strides, base, descr, flags; a tuple's ``ob_size``
    then its items), checked on probe objects; None when they are not where expected (the
    lean entry is then never used: repeated calls take ``Plan.run``)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    for type_at in (8, 24):   # CPython's object head; free-threaded builds: 24
        head = type_at + 8
        layout = ObjectLayout(type_at, head, head + 8, head + 16, head + 40, head + 48, head,
                              head + 8)
        try:
            if _read(id(None) + type_at) == id(type(None)) and _probe(layout):
                return layout
        except (ValueError, OverflowError):
            continue
    return None


LAYOUT = object_layout()
_AS_LONG_ADDRESS = ctypes.cast(ctypes.pythonapi.PyLong_AsLongLongAndOverflow, ctypes.c_void_p).value


def lean_record(mover: int, pattern: np.ndarray, table: np.ndarray, fill: bool, nt: bool,
                mode: int, dtype: np.dtype, src_shape, dst_shape) -> np.ndarray:
    """The record whose address is ``lean``'s last argument: ``LAYOUT``'s offsets, the
    addresses compared against, the plan's ``dtype`` object (which must outlive the record,
    as must ``pattern`` and ``table``), the move at address ``mover`` and its arguments, the
    two shapes."""
    assert LAYOUT is not None and table.dtype == np.int64 and table.shape[1] == _TABLE_COLS
    assert table.flags.c_contiguous
    itemsize = dtype.itemsize
    head = [0] * _DIMS
    head[_TYPE_AT:_ITEMS_AT + 1] = astuple(LAYOUT)   # its fields in the record's order
    head[_NDARRAY], head[_TUPLE], head[_INT], head[_NONE] = (id(np.ndarray), id(tuple), id(int),
                                                             id(None))
    head[_AS_LONG], head[_DESCR] = _AS_LONG_ADDRESS, id(dtype)
    head[_SRC_BYTES] = itemsize * int(np.prod(src_shape, dtype=np.int64))
    head[_DST_BYTES] = itemsize * int(np.prod(dst_shape, dtype=np.int64))
    head[_FN], head[_PAD], head[_PERIOD] = mover, pattern.ctypes.data, pattern.size
    head[_TABLE], head[_ROWS] = table.ctypes.data, table.shape[0]
    head[_FILL_NT], head[_MODE] = int(fill) + 2 * int(nt), mode
    head[_SRC_ND], head[_DST_ND] = len(src_shape), len(dst_shape)
    return np.array(head + list(src_shape) + list(dst_shape), np.int64)


_ENTRY: list = []


def entry_point():
    """``lean``'s compiled entry point (called without numba's type resolution), compiled
    on first use (cached on disk), or None when ``LAYOUT`` was not found or it fails."""
    if not _ENTRY:
        sig = (RAW, RAW, RAW, types.intp)
        try:
            if LAYOUT is None:
                raise LookupError("object layout not found")
            lean.compile(sig)
            _ENTRY.append(lean.overloads[sig].entry_point)
        except Exception:  # noqa: BLE001 - no lean entry: repeated calls take ``Plan.run``
            _ENTRY.append(None)
    return _ENTRY[0]
