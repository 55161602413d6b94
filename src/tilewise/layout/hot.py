"""Repeated ``pack``/``unpack`` calls: verified plans, remembered and run with a few checks.

A call's cost at 64 KiB is mostly Python: the copy itself takes 3.5-5 us, and with cold caches
(a call after other work) every attribute lookup, tuple and dict probe of the argument checks
costs a cache miss. A call whose arguments were verified before skips verification and
planning: ``LAST_PACK``/``LAST_UNPACK`` find the previous call's plan by identity tests,
``BY_ID`` a plan by the identity of the attribute tuples (the entry keeps them alive, so an
id cannot be reused while it is remembered) and the source's shape and dtype, ``BY_VALUE``
by their values. A plan then checks only what the compiled kernel does not (the
destination's shape, dtype, contiguity and writeability) and calls the kernel's compiled
entry point directly, without numba's dispatcher (which types every argument on each call).
The kernel itself checks overlap and alignment and returns a status; on any failure the
caller takes the slow path, which raises the right error.
"""

from __future__ import annotations

import operator

import numpy as np

# Plans by (op, shape, dtype, pos, tiles, perm, extra) -- values -- and by (op, id(pos),
# id(tiles), id(perm), shape, dtype, extra) for callers that pass the same tuple objects
# every time (one dict probe; NCHW i8 [1, 64, 32, 32] and f32 [1, 64, 32, 32] share
# everything but the dtype). Cleared when full.
BY_VALUE: dict = {}
BY_ID: dict = {}
SIZE = 512
# The most recent ``BY_ID`` hit of each op whose plan has a lean entry, with the objects it
# was found by (kept alive), as ``Plan.last`` builds it: ``(tiles, pos, perm, padding or
# unpacked shape, dtype, source rank, destination rank, lean entry, its record's address,
# plan (which keeps the record alive), how the shape matches (``shape_match``), result
# shape)``. A call with the same objects (a loop) skips building and hashing the key:
# identity tests, then the lean entry (a plain tuple: the fewest steps for
# ``pack``/``unpack`` to read it); without ``out=`` it allocates the result (an unpack only
# when ``shape=`` is given: else ``out=`` decided the plan's shape).
LAST_PACK: list = [None]
LAST_UNPACK: list = [None]


class Plan:
    """A verified pack or unpack: the result's ``shape`` and ``dtype``, the compiled
    ``kernel`` and its ``args`` after the source and destination; ``typed``: the arrays go
    to the kernel raveled, not as byte views (``kernels.TYPED``). With ``src_shape`` and the
    kernel's ``unit``, ``kernels.lean`` is compiled when the plan is used again, for the
    arrays as they come, and then runs repeated calls (``fast``); ``mover`` (unit -> the
    address of a C function of ``kernels._MOVE_SIG``) is the move it calls, when not
    ``kernels.move_address``'s."""

    __slots__ = ("shape", "dtype", "kernel", "args", "typed", "entry", "lean", "unit",
                 "record", "record_at", "src_shape", "ndim", "src_ndim", "mover")

    def __init__(self, shape, dtype, kernel, args, typed, unit=0, src_shape=None, mover=None):
        self.shape = shape
        self.dtype = dtype
        self.kernel = kernel
        self.args = args
        self.typed = typed
        self.entry = None  # the compiled entry point, once the dispatcher has run it
        self.lean = None  # ``kernels.lean``'s entry point, once compiled (``run``)
        self.ndim = len(shape)
        self.src_ndim = -1 if src_shape is None else len(src_shape)
        self.unit = unit if src_shape is not None and FLAGS_AT is not None else 0
        self.src_shape = src_shape
        self.record = None  # ``kernels.lean``'s record of the call (kept alive here)
        self.record_at = 0  # its address: what ``lean`` takes
        self.mover = mover

    def move(self, src: np.ndarray, dst: np.ndarray) -> int:
        """Run the kernel on C-contiguous ``src`` and ``dst``; the kernel's status."""
        a, b = src.ravel(), dst.ravel()  # contiguous: a strided source is copied
        if not self.typed:
            a, b = a.view(np.uint8), b.view(np.uint8)
        if self.entry is not None:
            return self.entry(a, b, *self.args)
        status = self.kernel(a, b, *self.args)
        self.entry = _entry_point(self.kernel, (a, b) + self.args)
        return status

    def _compile_lean(self) -> None:
        """Compile ``kernels.lean`` for this plan's arrays (once; a plan used again)."""
        unit, self.unit = self.unit, 0
        if not unit or carrier(self.dtype) is None:
            return
        from . import kernels

        self.record = kernels.lean_record(FLAGS_AT, unit, *self.args, self.src_shape,
                                          self.shape)
        if self.mover is not None:
            self.record[kernels._FN] = self.mover(unit)
        self.record_at = self.record.ctypes.data
        self.lean = _lean_entry(kernels.lean, self.dtype, self.src_ndim, self.ndim,
                                (self.record_at,))

    def last(self, tiles, pos, perm, extra) -> tuple | None:
        """``LAST_PACK``/``LAST_UNPACK``'s entry for a call with these objects, or None when
        the plan has no lean entry. Its last field says how an unpack's ``shape``
        (``extra``) may be matched by value (``shape_match``)."""
        if self.lean is None:
            return None
        return (tiles, pos, perm, extra, self.dtype, self.src_ndim, self.ndim, self.lean,
                self.record_at, self, shape_match(extra), self.shape)

    def fast(self, src: np.ndarray, out):
        """The result through the lean entry (one compiled call: the kernel checks shapes,
        contiguity and writeability itself), or None when there is none yet or the arrays
        do not fit it (the caller then takes ``run``). ``src``: an ndarray of the plan's
        source dtype."""
        lean = self.lean
        if lean is None or src.ndim != self.src_ndim:
            return None
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif not (out.__class__ is np.ndarray and out.dtype is self.dtype
                  and out.ndim == self.ndim):
            return None
        return out if lean(src, out, self.record_at) == 0 else None

    def fast_or_run(self, src: np.ndarray, out):
        """``fast``, else ``run``: the result, or None when the slow path must decide."""
        done = self.fast(src, out)
        return self.run(src, out) if done is None else done

    def run(self, src: np.ndarray, out):
        """The result, or None when the slow path must decide (a bad ``out=``, an overlap,
        a base address not aligned to the kernel's unit). ``src`` is any ndarray of the
        plan's source shape and dtype (raveled: copied if strided)."""
        if out is None:
            out = np.empty(self.shape, self.dtype)
        elif not (type(out) is np.ndarray and out.shape == self.shape
                  and out.dtype is self.dtype and (flags := out.flags).c_contiguous
                  and flags.writeable):
            return None
        if self.unit:
            self._compile_lean()
        if self.typed and self.entry is not None:  # the common case, inlined
            status = self.entry(src.ravel(), out.ravel(), *self.args)
        else:
            status = self.move(src, out)
        return out if status == 0 else None


# How ``unpack``'s previous-call test may match an equal ``shape`` (``Plan.last``).
BY_IDENTITY, BY_SUM, BY_TYPES = 0, 1, 2


def shape_match(extra) -> int:
    """How an unpack's remembered ``shape`` (``extra``) may match an equal one: only as the
    same object (``BY_IDENTITY``: None, or not a tuple); ``BY_SUM``: an equal tuple whose
    ``sum`` is an ``int`` has no float, no numpy scalar and -- no dim being 0 or 1 -- no
    bool, so it holds the exact ints the checked path accepts (the cheapest test);
    ``BY_TYPES``: a dim is 0 or 1 (``True == 1``), so every dim's type is tested
    (``exact_ints``)."""
    if type(extra) is not tuple:
        return BY_IDENTITY
    return BY_TYPES if 0 in extra or 1 in extra else BY_SUM


def _flags_offset() -> int | None:
    """Where numpy keeps an array's ``flags`` in the ndarray object (bytes from its address:
    64 in CPython's 64-bit builds, ``PyArrayObject_fields``), checked on arrays whose flags
    differ; None when that layout is not found (the lean entry is then never used)."""
    import ctypes

    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    base = np.empty((4, 4))
    frozen = np.empty(4)
    frozen.flags.writeable = False
    probes = ((base, 0x401), (frozen, 0x001), (base[:, ::2], 0x400), (base.T, 0x400))
    at = 64
    for arr, bits in probes:
        flags = ctypes.c_int.from_address(id(arr) + at).value
        if flags & 0x401 != bits:
            return None
    return at


FLAGS_AT = _flags_offset()


def carrier(dtype: np.dtype):
    """The numba array dtype the lean entry is compiled for: ``dtype`` itself when numba
    types it, else the unsigned integer of its size (the entry point never looks at the
    dtype: bfloat16 runs as ``uint16``), or None (sizes other than 1, 2, 4, 8)."""
    from .kernels import TYPED

    if dtype in TYPED:
        return dtype
    return {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
            8: np.dtype(np.uint64)}.get(dtype.itemsize) if not dtype.hasobject else None


def _lean_entry(kernel, dtype, src_ndim: int, ndim: int, args):
    """``kernel`` compiled for C-contiguous arrays of ``dtype``'s carrier and ranks
    ``src_ndim`` / ``ndim``, as its entry point (called without type checks), or None."""
    from numba import from_dtype, typeof, types

    try:
        elem = from_dtype(carrier(dtype))
        sig = (types.Array(elem, src_ndim, "C"), types.Array(elem, ndim, "C"),
               *(typeof(a) for a in args))
        kernel.compile(sig)
        return kernel.overloads[sig].entry_point
    except Exception:  # noqa: BLE001 - no lean entry: repeated calls take ``run``
        return None


def _entry_point(dispatcher, args):
    """The compiled function ``dispatcher`` ran for ``args``, callable without its type
    resolution (numba's ``entry_point``), or None."""
    from numba import typeof

    try:
        return dispatcher.overloads[tuple(typeof(a) for a in args)].entry_point
    except (KeyError, ValueError, AttributeError):
        return None


def pad_key(value):
    """A padding value as a key part: equal keys mean equal padding bytes (-0.0 is not 0.0;
    NaN never equals itself, so a NaN padding hits only as the same object)."""
    return None if value is None else (type(value), value, repr(value))


def value_key(op: str, x: np.ndarray, pos, tiles, perm, extra):
    """``BY_VALUE``'s key, or None when an attribute is not a list of integers or ``extra``
    is unhashable (the slow path reports it). Lists or tuples of exact ints (the common
    case) are tested in one pass and copied as they are; anything else goes through
    ``operator.index`` (numpy integers; a bool or a float is then no key)."""
    try:
        if _INT.issuperset(map(type, (*pos, *tiles, *perm))):
            key = (op, x.shape, x.dtype, tuple(pos), tuple(tiles), tuple(perm), extra)
        else:
            key = (op, x.shape, x.dtype, _indices(pos), _indices(tiles), _indices(perm), extra)
        hash(key)
    except TypeError:
        return None
    return key


def _indices(values) -> tuple[int, ...]:
    """``values`` as a tuple of ints (``operator.index``); TypeError for bools, which the
    checked path rejects while ``operator.index`` takes them."""
    if any(type(v) is bool or isinstance(v, np.bool_) for v in values):
        raise TypeError("a bool is not a dim or a size")
    return tuple(map(operator.index, values))


def tuples(pos, tiles, perm) -> bool:
    """Whether the three attributes are tuples: only tuples are remembered by identity
    (``BY_ID``), so other containers skip building and probing its key."""
    return pos.__class__ is tuple and tiles.__class__ is tuple and perm.__class__ is tuple


_INT = frozenset({int})


def exact_ints(values) -> bool:
    """Whether ``values`` is a tuple of exact ints (no bools, floats or numpy scalars); the
    test runs in C (no generator), as ``unpack`` does it on every call with a ``shape``."""
    return type(values) is tuple and _INT.issuperset(map(type, values))


def remember(value_key_, id_key, pos, tiles, perm, plan: Plan) -> None:
    """Remember ``plan`` by value and, when the attributes are tuples of exact ints
    (immutable: the same object holds the same values), by their identity."""
    if value_key_ is not None:
        if len(BY_VALUE) >= SIZE:
            BY_VALUE.clear()
        BY_VALUE[value_key_] = plan
    if id_key is not None and exact_ints(pos) and exact_ints(tiles) and exact_ints(perm):
        if len(BY_ID) >= SIZE:
            BY_ID.clear()
        BY_ID[id_key] = (plan, pos, tiles, perm)  # the entry keeps the keyed ids alive


def by_value(value_key_, id_key, pos, tiles, perm) -> Plan | None:
    """The plan remembered by value (then also remembered by ``id_key``), or None."""
    plan = BY_VALUE.get(value_key_) if value_key_ is not None else None
    if plan is not None:
        remember(None, id_key, pos, tiles, perm, plan)
    return plan
