"""MLIR ``linalg.pack`` / ``linalg.unpack`` (formerly ``tensor.pack``): semantics, shape
inference, the verifier's rules, and the data movement itself.

``pack`` tiles the source dims ``inner_dims_pos[i]`` by ``inner_tiles[i]``: each tiled dim of
size ``s`` becomes an outer dim ``ceil(s / tile)`` and an inner dim ``tile``; the inner dims go
last, in the order of ``inner_dims_pos``; ``outer_dims_perm`` (empty, or a permutation of the
source rank) permutes the outer dims. A tile that does not divide its dim is padded at the
high end with ``padding_value`` (required then: MLIR's ``requirePaddingValue``)::

    >>> packed_shape((128, 256), inner_dims_pos=(0, 1), inner_tiles=(32, 32))
    (4, 8, 32, 32)
    >>> packed_shape((200, 127, 256), (1,), (2,), outer_dims_perm=(2, 1, 0))
    (256, 64, 200, 2)

so ``packed[o0, o1, t0, t1] = x[o0*32 + t0, o1*32 + t1]`` for the first example. ``unpack`` is
the inverse and may drop the padded tail (``shape=``); ``unpack(pack(x)) == x``.

Rules and messages follow MLIR's verifier (``commonVerifierPackAndUnPackOp``,
``PackOp::verify`` and ``requirePaddingValue`` in mlir/lib/Dialect/Linalg/IR/LinalgOps.cpp;
the diagnostics of mlir/test/Dialect/Linalg/invalid.mlir), in the same order, each followed by
the offending values. ``pack``/``unpack`` run compiled kernels (``tilewise.layout.kernels``);
``pack_reference``/``unpack_reference`` are the plain numpy pad + reshape + transpose path.
"""

from __future__ import annotations

import numbers
import operator
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import gcd, prod

import ml_dtypes
import numpy as np
from numpy import empty

from ..dtypes import DType, from_mlir, from_numpy
from ..errors import DTypeError, PackError, ParseError
from .hot import (BY_ID, LAST_PACK, LAST_UNPACK, Plan, by_value, exact_ints, pad_key,
                  remember, tuples, value_key)

_DIM = re.compile(r"\s*(\d+)\s*x")


@dataclass(frozen=True)
class Packing:
    """A verified ``linalg.pack`` of a source of ``shape`` (elements); see the module doc."""

    shape: tuple[int, ...]
    inner_dims_pos: tuple[int, ...]
    inner_tiles: tuple[int, ...]
    outer_dims_perm: tuple[int, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def tile_of(self) -> dict[int, int]:
        """Source dim -> its tile (elements), for the tiled dims."""
        return dict(zip(self.inner_dims_pos, self.inner_tiles))

    @cached_property
    def outer_shape(self) -> tuple[int, ...]:
        """Outer dims in source order (before ``outer_dims_perm``): ``ceil(dim / tile)``."""
        tiles = self.tile_of
        return tuple(-(-s // tiles[d]) if d in tiles else s for d, s in enumerate(self.shape))

    @cached_property
    def perm(self) -> tuple[int, ...]:
        """``outer_dims_perm``, or the identity when it is empty."""
        return self.outer_dims_perm or tuple(range(self.rank))

    @cached_property
    def packed_shape(self) -> tuple[int, ...]:
        outer = self.outer_shape
        return tuple(outer[d] for d in self.perm) + self.inner_tiles

    @property
    def padded_shape(self) -> tuple[int, ...]:
        """The source shape rounded up to whole tiles (elements)."""
        tiles = self.tile_of
        return tuple(o * tiles.get(d, 1) for d, o in enumerate(self.outer_shape))

    @cached_property
    def needs_padding(self) -> bool:
        """True when a tile does not divide its dim (MLIR: ``requirePaddingValue``)."""
        return any(s % t for s, t in ((self.shape[d], t) for d, t in self.tile_of.items()))

    @property
    def padding_elements(self) -> int:
        """Elements of padding in the packed tensor."""
        return prod(self.packed_shape) - prod(self.shape)


def list_str(values) -> str:
    """MLIR's integer-array attribute text: ``[0, 1]``."""
    return "[" + ", ".join(str(v) for v in values) + "]"


def _ints(values, what: str, op: str) -> tuple[int, ...]:
    if values is None:
        return ()
    if isinstance(values, (int, np.integer)):
        values = (values,)
    try:
        if isinstance(values, (str, bytes)) or any(isinstance(v, (bool, np.bool_)) for v in values):
            raise TypeError  # a bool is not a dim or a size (True would be taken as 1)
        return tuple(map(operator.index, values))
    except TypeError:
        raise PackError(f"{op}: {what} must be a list of integers, got {_shown(values)}") from None


def _shown(value) -> str:
    """``value`` for an error message, on one line: an array by its rank, dtype and shape,
    anything else by its repr, cut at 80 characters."""
    if isinstance(value, np.ndarray) and value.ndim > 1:
        return f"a {value.ndim}-D {value.dtype} array of shape {value.shape}"
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


def _bad_positions(values: tuple[int, ...], rank: int) -> str | None:
    """Why ``values`` is not a valid position list for ``rank`` (MLIR:
    ``isInvalidPackingPosSpecification``), or None."""
    if len(values) > rank:
        return f"{len(values)} positions for rank {rank}"
    for v in values:
        if not 0 <= v < rank:
            return f"position {v} is out of range [0, {rank})"
    seen = set()
    for v in values:
        if v in seen:
            return f"position {v} is repeated"
        seen.add(v)
    return None


def verify(shape, inner_dims_pos, inner_tiles, outer_dims_perm=(), *,
           op: str = "linalg.pack", where: str | None = None) -> Packing:
    """Check the attributes against a source (unpacked) ``shape``; return the ``Packing``.

    Raises :class:`PackError` with MLIR's diagnostic, in MLIR's order, plus the values.
    """
    shape = _ints(shape, "shape", op)
    pos = _ints(inner_dims_pos, "inner_dims_pos", op)
    tiles = _ints(inner_tiles, "inner_tiles", op)
    perm = _ints(outer_dims_perm, "outer_dims_perm", op)
    key = (shape, pos, tiles, perm)
    try:
        return _verified(*key, op)
    except PackError:
        pass
    rank = len(shape)
    if where is None:
        side = "source" if op == "linalg.pack" else "unpacked"
        where = f"the rank-{rank} {side} {type_str(shape)}"
    if any(s < 0 for s in shape):
        raise PackError(f"{op}: dimension sizes must be >= 0, got shape {list_str(shape)}")
    if 0 in tiles:
        raise PackError(f"{op}: invalid zero tile factor in inner_tiles = {list_str(tiles)}; "
                        f"tiles must be positive")
    negative = [t for t in tiles if t < 0]
    if negative:
        raise PackError(f"{op}: invalid tile factor {negative[0]} in inner_tiles = "
                        f"{list_str(tiles)}; tiles must be positive")
    why = _bad_positions(pos, rank)
    if why:
        raise PackError(f"{op}: invalid inner_dims_pos vector {list_str(pos)} ({why}); expected "
                        f"distinct dims of {where}, each in [0, {rank})")
    why = _bad_positions(perm, rank)
    if why:
        raise PackError(f"{op}: invalid outer_dims_perm vector {list_str(perm)} ({why}); "
                        f"expected a permutation of [0, {rank}) for {where}")
    if perm and len(perm) != rank:
        raise PackError(f"{op}: outer_dims_perm must be a permutation or empty: got "
                        f"{list_str(perm)} for {where}; it permutes the {rank} outer dims "
                        f"(source rank), e.g. {list_str(range(rank)[::-1])}")
    if len(tiles) > rank:
        raise PackError(f"{op}: tiling factors must be less than or equal to the input rank for "
                        f"pack or output rank for unpack: {len(tiles)} inner_tiles "
                        f"{list_str(tiles)} for {where}")
    if len(tiles) != len(pos):
        raise PackError(f"{op}: tiling factors must equal the number of dimensions to tile: "
                        f"inner_tiles = {list_str(tiles)} has {len(tiles)}, inner_dims_pos = "
                        f"{list_str(pos)} has {len(pos)}")
    raise AssertionError(f"{op}: {key} failed verification without a diagnostic")


@lru_cache(maxsize=1024)
def _verified(shape, pos, tiles, perm, op) -> Packing:
    """The checks of ``verify`` without the messages (cached: ``pack`` calls it per call)."""
    rank = len(shape)
    if (min(shape, default=0) < 0 or min(tiles, default=1) <= 0
            or _bad_positions(pos, rank) or _bad_positions(perm, rank)
            or (perm and len(perm) != rank) or len(tiles) > rank or len(tiles) != len(pos)):
        raise PackError(op)
    return Packing(shape, pos, tiles, perm)


def packed_shape(shape, inner_dims_pos, inner_tiles, outer_dims_perm=()) -> tuple[int, ...]:
    """Shape (elements) of ``linalg.pack`` of a ``shape`` source (MLIR: ``inferPackedType``).

    Tiled dims are ceil-divided (padding, if any, is not checked here: see ``pack``).
    """
    return verify(shape, inner_dims_pos, inner_tiles, outer_dims_perm).packed_shape


def require_full_tiles(packing: Packing, op: str = "linalg.pack") -> None:
    """Raise MLIR's ``requirePaddingValue`` diagnostic when a tile does not divide its dim."""
    for d, t in packing.tile_of.items():
        if packing.shape[d] % t:
            raise PackError(
                f"{op}: invalid tile factor or output size provided. Only full tiles are "
                f"supported when padding_value is not set: dim {d} of "
                f"{type_str(packing.shape)} has size {packing.shape[d]}, not a multiple of its "
                f"tile {t}; pass padding_value= to pad it to {-(-packing.shape[d] // t) * t}")


# --- MLIR text -----------------------------------------------------------------------------

def _element(dtype: np.dtype) -> str:
    """MLIR element type of a numpy dtype (``DType.mlir_name``); numpy's name for a dtype with
    no tilewise entry (records, strings), which only error messages print."""
    try:
        return from_numpy(dtype).mlir_name
    except DTypeError:
        return str(np.dtype(dtype))


def type_str(shape, element: str | None = None) -> str:
    """``tensor<4x8x32x32xf32>`` (or ``tensor<4x8x32x32>`` without an element type)."""
    dims = "x".join(str(s) for s in shape)
    if element is None:
        return f"tensor<{dims}>"
    return f"tensor<{dims}x{element}>" if dims else f"tensor<{element}>"


def parse_tensor_type(text: str) -> tuple[tuple[int, ...], DType]:
    """Parse ``128x256xf32`` or ``tensor<128x256xf32>`` into (shape, dtype).

    Element types use MLIR's names (``i8``, ``ui8``, ``i1``, ``bf16``, ``f32``,
    ``complex<f32>``) or tilewise's (``u8``, ``bool``, ``c64``): :func:`tilewise.dtypes.from_mlir`.
    Errors point at the character.
    """
    start, end = 0, len(text)
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if text.startswith("tensor<", start):
        if not text[:end].endswith(">"):
            raise ParseError("tensor type", text, end, "'>' closing 'tensor<'")
        start, end = start + len("tensor<"), end - 1
    body = text[start:end]
    if not body:
        raise ParseError("tensor type", text, start, "dims and an element type, e.g. 128x256xf32")
    # Dims are digits followed by 'x'; the rest is the element type (complex<f32> has an x).
    pos, shape = start, []
    while (m := _DIM.match(text, pos, end)) is not None:
        shape.append(int(m.group(1)))
        pos = m.end()
    if text.startswith("?", pos):
        raise ParseError("tensor type", text, pos,
                         "a static dimension size (dynamic '?' sizes are not supported)")
    if pos < end and text[pos].isdigit() and "x" in text[pos:end]:
        bad = pos
        while text[bad].isdigit():
            bad += 1
        raise ParseError("tensor type", text, bad, "'x' after a dimension size")
    if pos < end and "x" in text[pos:end] and not text[pos:end].lower().startswith("complex<"):
        raise ParseError("tensor type", text, pos, "a dimension size (a non-negative integer)")
    element = text[pos:end].strip()
    if not element:
        raise ParseError("tensor type", text, pos, "an element type such as f32, bf16 or i8")
    try:
        return tuple(shape), from_mlir(element)
    except DTypeError as e:
        raise ParseError("tensor type", text, pos, f"an element type ({e})") from None


def pack_op_text(packing: Packing, element: str, padding_value=None) -> str:
    """The ``linalg.pack`` op line for ``packing`` (MLIR's assembly format)."""
    pad = f" padding_value(%pad : {element})" if padding_value is not None else ""
    perm = (f" outer_dims_perm = {list_str(packing.outer_dims_perm)}"
            if packing.outer_dims_perm else "")
    return (f"%packed = linalg.pack %source{pad}{perm} inner_dims_pos = "
            f"{list_str(packing.inner_dims_pos)} inner_tiles = {list_str(packing.inner_tiles)} "
            f"into %dest : {type_str(packing.shape, element)} -> "
            f"{type_str(packing.packed_shape, element)}")


def unpack_op_text(packing: Packing, element: str) -> str:
    """The ``linalg.unpack`` op line that inverts ``packing``."""
    perm = (f" outer_dims_perm = {list_str(packing.outer_dims_perm)}"
            if packing.outer_dims_perm else "")
    return (f"%unpacked = linalg.unpack %packed{perm} inner_dims_pos = "
            f"{list_str(packing.inner_dims_pos)} inner_tiles = {list_str(packing.inner_tiles)} "
            f"into %dest : {type_str(packing.packed_shape, element)} -> "
            f"{type_str(packing.shape, element)}")


# --- unpack: the unpacked shape ---------------------------------------------------------------

def unpack_packing(packed, inner_dims_pos, inner_tiles, outer_dims_perm=(), shape=None) -> Packing:
    """Verify an unpack of a ``packed`` shape; return the ``Packing`` that it inverts.

    ``shape`` (the unpacked shape) defaults to the whole tiles, ``outer * tile`` per tiled dim;
    a smaller shape drops the padded tail but must keep ``ceil(shape / tile) == outer``
    (MLIR rejects unpacks that drop whole tiles).
    """
    op = "linalg.unpack"
    packed = _ints(packed, "packed shape", op)
    tiles = _ints(inner_tiles, "inner_tiles", op)
    k = len(tiles)
    if shape is None:
        if 2 * k > len(packed):
            raise PackError(
                f"{op}: tiling factors must be less than or equal to the input rank for pack or "
                f"output rank for unpack: {k} inner_tiles {list_str(tiles)} leave an unpacked "
                f"rank of {len(packed) - k} for the packed {type_str(packed)}")
        if tuple(packed[len(packed) - k:]) != tiles:
            raise PackError(
                f"{op}: mismatch in inner tile sizes specified and shaped of tiled dimension in "
                f"the packed type: the last {k} dims of {type_str(packed)} are "
                f"{list_str(packed[len(packed) - k:])}, inner_tiles = {list_str(tiles)}")
        n = len(packed) - k
        packing = verify((0,) * n, inner_dims_pos, tiles, outer_dims_perm, op=op,
                         where=f"the rank-{n} result of unpacking {type_str(packed)}")
        outer = [0] * n
        for i, d in enumerate(packing.perm):
            outer[d] = packed[i]
        tile_of = packing.tile_of
        shape = tuple(o * tile_of.get(d, 1) for d, o in enumerate(outer))
    packing = verify(shape, inner_dims_pos, tiles, outer_dims_perm, op=op)
    if len(packed) != packing.rank + k:
        raise PackError(f"{op}: packed rank != (unpacked rank + num tiling factors), got "
                        f"{len(packed)} != {packing.rank + k} (packed {type_str(packed)}, "
                        f"unpacked {type_str(packing.shape)})")
    if tuple(packing.packed_shape) != packed:
        raise PackError(f"{op}: expected '{type_str(packing.packed_shape)}' for the packed domain "
                        f"value, got '{type_str(packed)}' (unpacking to {type_str(shape)})")
    return packing


# --- data movement -----------------------------------------------------------------------

def padding_scalar(padding_value, dtype: np.dtype, op: str = "linalg.pack") -> np.ndarray:
    """``padding_value`` as a 0-d array of ``dtype``; reject values the dtype cannot hold
    (MLIR requires the padding value to have the element type). The message names the value,
    MLIR's element type and, for integers, the range that ``dtype`` holds."""
    value = np.empty((), dtype=dtype)
    if dtype.hasobject:
        value[()] = padding_value
        return value
    try:
        table = from_numpy(dtype)
    except DTypeError:
        table = None
    name = held = _element(dtype)
    kind = getattr(table, "kind", None)
    if kind in ("int", "uint"):  # MLIR's iN is signless: name the signed or unsigned range
        info = ml_dtypes.iinfo(dtype)
        held = f"{table.name} [{info.min}, {info.max}]"
    bad = f"{op}: expected padding_value has '{name}' but got: {padding_value!r}"
    if isinstance(padding_value, np.ndarray) or not isinstance(padding_value,
                                                               (numbers.Number, np.generic)):
        raise PackError(f"{bad} (a number is expected)")
    if isinstance(padding_value, complex) and padding_value.imag and kind != "complex":
        raise PackError(f"{bad} (complex value for a real type)")
    try:
        with np.errstate(over="ignore"):  # overflow to inf is reported below
            value[()] = padding_value
    except (OverflowError, ValueError, TypeError):
        raise PackError(f"{bad} (out of range for {held})") from None
    if kind in ("int", "uint", "bool") and value.item() != padding_value:
        raise PackError(f"{bad} (not exactly representable in {held})")
    if kind in ("float", "complex"):
        wide = value.astype(np.complex128 if kind == "complex" else np.float64)
        if np.isfinite(padding_value) and not np.isfinite(wide):
            raise PackError(f"{bad} (overflows {held})")
    return value


def _check_out(out, shape: tuple[int, ...], dtype: np.dtype, what: str, op: str, src) -> None:
    if (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == dtype
            and out.flags.c_contiguous and out.flags.writeable
            and not np.may_share_memory(out, src)):
        return
    expected = type_str(shape, _element(dtype))
    if not isinstance(out, np.ndarray):
        raise PackError(f"{op}: out= must be a numpy array of type {expected}, got "
                        f"{type(out).__name__}")
    got = type_str(out.shape, _element(out.dtype))
    if out.shape != shape or out.dtype != dtype:
        raise PackError(f"{op}: expected '{expected}' for the {what} value, got '{got}' (out=)")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise PackError(f"{op}: out= must be a writeable C-contiguous array ({got} is "
                        f"{'not writeable' if not out.flags.writeable else 'strided'})")
    if np.may_share_memory(out, src):
        raise PackError(f"{op}: out= overlaps the source; {op} cannot run in place")


def _c_strides(shape) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def _loops(packing: Packing, packed_is_src: bool):
    """The element loops of a pack (packed order) or unpack (unpacked order): the
    destination's own order, so it is written sequentially. The inner tile loop of a dim
    with a partial last tile is clipped to the remainder when its outer loop is last."""
    from .kernels import Loop

    n, tiles, outer = packing.rank, packing.tile_of, packing.outer_shape
    ustr, pstr = _c_strides(packing.shape), _c_strides(packing.packed_shape)
    q_outer = {d: q for q, d in enumerate(packing.perm)}
    loops = []
    if not packed_is_src:
        for q, d in enumerate(packing.perm):
            loops.append(Loop(outer[d], ustr[d] * tiles.get(d, 1), pstr[q]))
        for j, d in enumerate(packing.inner_dims_pos):
            rem = packing.shape[d] % tiles[d]
            loops.append(Loop(tiles[d], ustr[d], pstr[n + j], q_outer[d] if rem else -1, rem))
        return loops
    j_of = {d: j for j, d in enumerate(packing.inner_dims_pos)}
    for d in range(n):
        t = tiles.get(d, 1)
        loops.append(Loop(outer[d], pstr[q_outer[d]], ustr[d] * t))
        if d in tiles:
            rem = packing.shape[d] % t
            loops.append(Loop(t, pstr[n + j_of[d]], ustr[d], len(loops) - 1 if rem else -1, rem))
    return loops


@lru_cache(maxsize=256)
def _nest(packing: Packing, itemsize: int, max_unit: int, packed_is_src: bool):
    from .kernels import plan

    return plan(_loops(packing, packed_is_src), itemsize, max_unit, fill=not packed_is_src)


def _move(packing: Packing, src: np.ndarray, dst: np.ndarray, packed_is_src: bool,
          pad: np.ndarray | None, keys=None) -> None:
    """Move ``src`` into ``dst`` (both C-contiguous, checked); remember the plan by
    ``keys`` (``hot.remember``'s first arguments) when given."""
    from . import bands, kernels

    if dst.size == 0:
        return
    if src.dtype.hasobject:  # references must be copied by Python, not as bytes
        ref = (unpack_reference(src, packing.inner_dims_pos, packing.inner_tiles,
                                packing.outer_dims_perm, packing.shape) if packed_is_src else
               pack_reference(src, packing.inner_dims_pos, packing.inner_tiles,
                              packing.outer_dims_perm, None if pad is None else pad[()]))
        dst[...] = ref
        return
    max_unit = gcd(src.__array_interface__["data"][0], dst.__array_interface__["data"][0], 8)
    nest = _nest(packing, src.dtype.itemsize, max_unit, packed_is_src)
    pattern = nest.pad_pattern(bytes(src.dtype.itemsize) if pad is None else pad.tobytes())
    streaming = nest.streams(dst.nbytes)
    band = bands.choose(nest.table, nest.fill, nest.unit, streaming, dst.nbytes)
    if band is None:
        table, mode, nt = nest.kernel_args(streaming)
        kernel, mover = kernels.RUN[nest.unit], None
    else:  # 16-row bands: T(16,2), NCHW16c
        (mode, nt), table = band, nest.table
        kernel, mover = bands.RUN[nest.unit], bands.move_address
    plan = Plan(dst.shape, dst.dtype, kernel, (pattern, table, nest.fill, nt, mode),
                src.dtype in kernels.TYPED, nest.unit, src.shape, mover)
    status = plan.move(src, dst)
    assert status == kernels.OK, status  # _check_out rejected overlaps; the unit fits
    if keys is not None and max_unit == 8:
        remember(*keys, plan)


def pack(x, inner_dims_pos, inner_tiles, outer_dims_perm=(), padding_value=None, out=None):
    """``linalg.pack`` of ``x``: see the module doc. Returns the packed array (``out`` if given).

    ``x``: any array (any dtype, incl. ml_dtypes bfloat16); ``padding_value``: required when a
    tile does not divide its dim, and must be representable in ``x``'s dtype; ``out``: a
    C-contiguous array of the packed shape and ``x``'s dtype, not overlapping ``x``.
    Compiled single-threaded kernels move the bytes at close to memcpy speed; a repeated call
    (same shape, dtype, attributes and padding) reuses the verified plan (``hot``).
    """
    last = LAST_PACK[0]  # the previous call's objects and lean entry (``hot.Plan.last``)
    if (last is not None and last[0] is inner_tiles and last[1] is inner_dims_pos
            and last[2] is outer_dims_perm and last[3] is padding_value):
        dst = empty(last[8], last[4]) if out is None else out  # a new array fits the plan
        if last[5](x, dst, None, last[6]) == 0:
            return dst  # the lean entry checked the arrays (``lean.lean``)
    keys = None
    if type(x) is np.ndarray:
        try:
            extra = padding_value if padding_value is None else pad_key(padding_value)
            hit = idk = None
            if tuples(inner_dims_pos, inner_tiles, outer_dims_perm):  # else not in BY_ID
                idk = ("pack", id(inner_dims_pos), id(inner_tiles), id(outer_dims_perm),
                       x.shape, x.dtype, extra)
                hit = BY_ID.get(idk)
        except TypeError:  # an unhashable padding value: the slow path
            hit = idk = None
        if hit is not None:
            plan = hit[0]
            if (done := plan.fast(x, out)) is not None:
                LAST_PACK[0] = plan.last(inner_tiles, inner_dims_pos, outer_dims_perm,
                                         padding_value)
                return done
        else:
            vkey = value_key("pack", x, inner_dims_pos, inner_tiles, outer_dims_perm, extra)
            plan = by_value(vkey, idk, inner_dims_pos, inner_tiles, outer_dims_perm)
            keys = (vkey, idk, inner_dims_pos, inner_tiles, outer_dims_perm)
        if plan is not None and (done := plan.fast_or_run(x, out)) is not None:
            return done
    x = np.asarray(x)
    packing = verify(x.shape, inner_dims_pos, inner_tiles, outer_dims_perm)
    pad = None
    if padding_value is not None:
        pad = padding_scalar(padding_value, x.dtype, "linalg.pack")
    elif packing.needs_padding:
        require_full_tiles(packing)
    if out is None:
        out = np.empty(packing.packed_shape, dtype=x.dtype)
    else:
        _check_out(out, packing.packed_shape, x.dtype, "packed domain", "linalg.pack", x)
    _move(packing, np.ascontiguousarray(x), out, False, pad, keys)
    return out


def unpack(p, inner_dims_pos, inner_tiles, outer_dims_perm=(), shape=None, out=None):
    """``linalg.unpack`` of a packed ``p``: the inverse of ``pack``; returns the array.

    ``shape`` is the unpacked shape (default: whole tiles, or ``out.shape``); a smaller shape
    drops the padded tail, but each tiled dim must keep ``ceil(shape / tile)`` equal to its
    outer dim in ``p``.
    """
    last = LAST_UNPACK[0]  # the previous call's objects and lean entry (``hot.Plan.last``)
    if (last is not None and last[0] is inner_tiles and last[1] is inner_dims_pos
            and last[2] is outer_dims_perm):
        dst = out
        if dst is None and shape is not None:  # the shape decides the plan (else out= did)
            dst = empty(last[8], last[4])
        if last[5](p, dst, shape, last[6]) == 0:
            return dst  # the lean entry checked the arrays and the shape (``lean.lean``)
    given = shape  # as passed: what ``LAST_UNPACK`` compares
    if shape is None and out is not None and isinstance(out, np.ndarray):
        shape = out.shape
    keys = None
    if type(p) is np.ndarray and (shape is None or exact_ints(shape)):
        hit = idk = None
        if tuples(inner_dims_pos, inner_tiles, outer_dims_perm):  # else not in BY_ID
            idk = ("unpack", id(inner_dims_pos), id(inner_tiles), id(outer_dims_perm),
                   p.shape, p.dtype, shape)
            hit = BY_ID.get(idk)
        if hit is not None:
            plan = hit[0]
            if (done := plan.fast(p, out)) is not None:
                LAST_UNPACK[0] = plan.last(inner_tiles, inner_dims_pos, outer_dims_perm, given)
                return done
        else:
            vkey = value_key("unpack", p, inner_dims_pos, inner_tiles, outer_dims_perm, shape)
            plan = by_value(vkey, idk, inner_dims_pos, inner_tiles, outer_dims_perm)
            keys = (vkey, idk, inner_dims_pos, inner_tiles, outer_dims_perm)
        if plan is not None and (done := plan.fast_or_run(p, out)) is not None:
            return done
    p = np.asarray(p)
    packing = unpack_packing(p.shape, inner_dims_pos, inner_tiles, outer_dims_perm, shape)
    if out is None:
        out = np.empty(packing.shape, dtype=p.dtype)
    else:
        _check_out(out, packing.shape, p.dtype, "unpacked domain", "linalg.unpack", p)
    _move(packing, np.ascontiguousarray(p), out, True, None, keys)
    return out


def pack_reference(x, inner_dims_pos, inner_tiles, outer_dims_perm=(), padding_value=None):
    """``pack`` in plain numpy: pad at the high end, reshape, transpose, copy (the reference)."""
    x = np.asarray(x)
    packing = verify(x.shape, inner_dims_pos, inner_tiles, outer_dims_perm)
    if packing.needs_padding:
        if padding_value is None:
            require_full_tiles(packing)
        padded = np.empty(packing.padded_shape, dtype=x.dtype)
        padded[...] = padding_scalar(padding_value, x.dtype, "linalg.pack")
        padded[tuple(slice(0, s) for s in x.shape)] = x
        x = padded
    tiles, split, outer_axis, inner_axis = packing.tile_of, [], {}, {}
    for d, o in enumerate(packing.outer_shape):
        outer_axis[d] = len(split)
        split.append(o)
        if d in tiles:
            inner_axis[d] = len(split)
            split.append(tiles[d])
    axes = [outer_axis[d] for d in packing.perm] + [inner_axis[d] for d in packing.inner_dims_pos]
    return np.ascontiguousarray(x.reshape(split).transpose(axes))


def unpack_reference(p, inner_dims_pos, inner_tiles, outer_dims_perm=(), shape=None):
    """``unpack`` in plain numpy: transpose back, reshape, slice off the padding, copy."""
    p = np.asarray(p)
    packing = unpack_packing(p.shape, inner_dims_pos, inner_tiles, outer_dims_perm, shape)
    n, tiles = packing.rank, packing.tile_of
    # Axes of p in the order (outer d, [inner d]) for d = 0..n-1.
    axes = []
    for d in range(n):
        axes.append(packing.perm.index(d))
        if d in tiles:
            axes.append(n + packing.inner_dims_pos.index(d))
    full = p.transpose(axes).reshape(packing.padded_shape)
    return np.ascontiguousarray(full[tuple(slice(0, s) for s in packing.shape)])
