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
# unpacked shape, dtype, lean entry, its record's address, plan (which keeps the record
# alive), result shape)``. A call with the same attribute objects (a loop) skips building
# and hashing the key: three identity tests, then the lean entry (``lean.lean``: it checks
# the arrays and an unpack's ``shape`` itself; a plain tuple: the fewest steps for
# ``pack``/``unpack`` to read it); without ``out=`` the caller allocates the result (an
# unpack only when ``shape=`` is given: else ``out=`` decided the plan's shape).
# Its fields, by index (``pack``/``unpack`` read them as literals: a name is a global lookup).
(L_TILES, L_POS, L_PERM, L_EXTRA, L_DTYPE, L_ENTRY, L_RECORD, L_PLAN, L_SHAPE) = range(9)
LAST_PACK: list = [None]
LAST_UNPACK: list = [None]


class Plan:
    """A verified pack or unpack: the result's ``shape`` and ``dtype``, the compiled
    ``kernel`` and its ``args`` after the source and destination; ``typed``: the arrays go
    to the kernel raveled, not as byte views (``kernels.TYPED``). With ``src_shape`` and the
    kernel's ``unit``, the plan gets a lean entry (``lean.lean``) when it is used again,
    which then runs repeated calls on the arrays as they come (``fast``); ``mover`` (unit -> the
    address of a C function of ``kernels._MOVE_SIG``) is the move it calls, when not
    ``kernels.move_address``'s."""

    __slots__ = ("shape", "dtype", "kernel", "args", "typed", "entry", "lean", "unit",
                 "record", "record_at", "src_shape", "mover")

    def __init__(self, shape, dtype, kernel, args, typed, unit=0, src_shape=None, mover=None):
        self.shape = shape
        self.dtype = dtype
        self.kernel = kernel
        self.args = args
        self.typed = typed
        self.entry = None  # the compiled entry point, once the dispatcher has run it
        self.lean = None  # ``lean.lean``'s entry point, once the plan is used again (``run``)
        self.unit = unit if src_shape is not None else 0
        self.src_shape = src_shape
        self.record = None  # ``lean.lean``'s record of the call (kept alive here)
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
        """Give this plan a lean entry (``lean.lean``) and its record (once; a plan used
        again). Not for object arrays (their elements are references, never moved as bytes)."""
        unit, self.unit = self.unit, 0
        if not unit or self.dtype.hasobject:
            return
        from . import kernels, lean

        entry = lean.entry_point()
        if entry is None:
            return
        mover = self.mover(unit) if self.mover is not None else kernels.move_address(unit)
        self.record = lean.lean_record(mover, *self.args, self.dtype, self.src_shape, self.shape)
        self.record_at = self.record.ctypes.data
        self.lean = entry

    def last(self, tiles, pos, perm, extra) -> tuple | None:
        """``LAST_PACK``/``LAST_UNPACK``'s entry for a call with these objects, or None when
        the plan has no lean entry."""
        if self.lean is None:
            return None
        return (tiles, pos, perm, extra, self.dtype, self.lean, self.record_at, self, self.shape)

    def fast(self, src, out):
        """The result through the lean entry (one compiled call: it checks the arrays'
        types, dtypes, shapes, contiguity and writeability itself), or None when there is
        none yet or the arrays do not fit it (the caller then takes ``run``)."""
        if self.lean is None:
            return None
        if out is None:
            out = np.empty(self.shape, self.dtype)
        return out if self.lean(src, out, None, self.record_at) == 0 else None

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
