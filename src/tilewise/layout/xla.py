"""XLA dense shapes with tiled layouts: parse, print, physical shape, linear index, buffers.

A shape such as ``f32[3,5]{1,0:T(2,2)}`` is an element type, logical dims (major to minor in
index order) and a layout. The layout's ``minor_to_major`` lists the logical dims from the
fastest varying to the slowest; reversed, it is the *physical* (major-to-minor) order. Each tile
``T(t_k,...,t_1)`` then acts on the most-minor ``k`` physical dims of the shape it tiles:

1. a ``*`` entry merges that dim into the next more-minor one (bounds multiply);
2. each tiled dim ``d`` is padded to ``ceil(d/t)*t`` and split into ``(ceil(d/t), t)``;
3. the within-tile parts move to the minor end, keeping their relative order.

The result, e.g. ``(2, 3, 2, 2)`` for ``f32[3,5]{1,0:T(2,2)}``, is the input of the next tile of a
repeated tiling ``T(2,4)(2,1)``, which may therefore reach into the previous tile's cross-tile
dims (XLA's ``docs/tiled_layout.md``). The final shape, read row-major, is the buffer::

    >>> s = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    >>> s.physical_shape, s.linear_index((2, 3)), s.size_in_elements, s.size_in_bytes
    ((2, 3, 2, 2), 17, 24, 96)

A tile with more dims than the shape it tiles (``f32[]{:T(128)}`` in TPU dumps) treats the
missing major dims as size 1, as XLA's ``ShapeUtil::ArraySize`` does. ``L(n)`` rounds the buffer
up to a multiple of ``n`` elements; ``E(bits)`` stores each element in ``bits`` bits (sub-byte
packing: bytes = ceil(elements * bits / 8)); ``S(n)`` is the memory space (no effect on the
buffer). Printing follows XLA's ``Layout::Print`` order ``T L E S``; sparse-only fields
(``D(...)`` with non-dense levels, ``#(...)``, ``*(...)``, ``P(...)``), split configs ``SC`` and
dynamic-shape metadata ``M`` are rejected as not supported. Bounded dynamic dims ``<=n`` are
kept and laid out at their bound ``n``; unbounded ``?`` dims are rejected.

Unlike XLA's C++ helpers, which size a buffer from the first tile only, every tile is applied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

import numpy as np

from ..dtypes import XLA_DTYPES, DType, dtype as _lookup_dtype
from ..errors import LayoutError, ParseError


def _ints(values, what: str) -> tuple[int, ...]:
    """``values`` as a tuple of ints; LayoutError for a bool, a float or a non-sequence (int()
    would take True as 1 and 2.5 as 2)."""
    try:
        items = tuple(values)
    except TypeError:
        raise LayoutError(f"{what} {values!r}: expected a sequence of integers") from None
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise LayoutError(f"{what} {items!r}: {v!r} is not an integer")
    return tuple(int(v) for v in items)


# Largest buffer (elements, padding included) whose offsets an int64 holds with room to spare.
MAX_ELEMENTS = 2**62


@dataclass(frozen=True)
class Tile:
    """One XLA tile: sizes (elements) of the most-minor dims it covers, major to minor.

    ``Tile.COMBINE`` (printed ``*``) merges that dim into the next more-minor one before tiling.
    XLA's docs give it as -1 (its C++ uses INT64_MIN); here it is -1.
    """

    dims: tuple[int, ...]
    COMBINE: ClassVar[int] = -1

    def __post_init__(self):
        object.__setattr__(self, "dims", _ints(self.dims, "tile dims"))
        if not self.dims:
            raise LayoutError("empty tile (); a tile needs at least one dimension")
        for d in self.dims:
            if d <= 0 and d != Tile.COMBINE:
                raise LayoutError(
                    f"tile {self}: dimension sizes must be positive integers or '*' "
                    f"(Tile.COMBINE); got {d}"
                )
        if self.dims[-1] == Tile.COMBINE:
            raise LayoutError(
                f"tile {self}: the most-minor entry cannot be '*' (it combines a dim with the "
                f"next more-minor one, and there is none)"
            )

    def __str__(self) -> str:
        return "(" + ",".join("*" if d == Tile.COMBINE else str(d) for d in self.dims) + ")"


@dataclass(frozen=True)
class Layout:
    """A dense XLA layout.

    ``minor_to_major``: logical dims from fastest to slowest varying. ``tiles``: applied in order.
    ``tail_padding_alignment``: the buffer is padded to a multiple of this many elements (``L``).
    ``element_size_in_bits``: storage bits per element, 0 = the element type's size (``E``).
    ``memory_space``: XLA memory space number, 0 = default (``S``).
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[Tile, ...] = ()
    tail_padding_alignment: int = 1
    element_size_in_bits: int = 0
    memory_space: int = 0

    def __post_init__(self):
        object.__setattr__(self, "minor_to_major", _ints(self.minor_to_major, "minor_to_major"))
        object.__setattr__(
            self, "tiles", tuple(t if isinstance(t, Tile) else Tile(tuple(t)) for t in self.tiles)
        )
        if self.tail_padding_alignment < 1:
            raise LayoutError(
                f"layout {self}: tail padding alignment L({self.tail_padding_alignment}) must "
                f"be a positive number of elements"
            )
        if self.element_size_in_bits < 0:
            raise LayoutError(
                f"layout {self}: element size E({self.element_size_in_bits}) must be a positive "
                f"number of bits (or 0 for the element type's own size)"
            )
        if self.memory_space < 0:
            raise LayoutError(
                f"layout {self}: memory space S({self.memory_space}) must be >= 0"
            )

    @staticmethod
    def default(rank: int) -> "Layout":
        """XLA's default layout: major to minor in index order, ``{rank-1,...,1,0}``."""
        return Layout(tuple(range(rank - 1, -1, -1)))

    def __str__(self) -> str:
        fields = ""
        if self.tiles:
            fields += "T" + "".join(str(t) for t in self.tiles)
        if self.tail_padding_alignment != 1:
            fields += f"L({self.tail_padding_alignment})"
        if self.element_size_in_bits != 0:
            fields += f"E({self.element_size_in_bits})"
        if self.memory_space != 0:
            fields += f"S({self.memory_space})"
        body = ",".join(str(d) for d in self.minor_to_major)
        return "{" + body + (":" + fields if fields else "") + "}"


@dataclass(frozen=True)
class _Stage:
    """One tile applied to ``before`` (major to minor): unit dims prepended, ``*`` merges, split."""

    before: tuple[int, ...]
    expand: int  # unit dims prepended when the tile has more dims than ``before``
    groups: tuple[tuple[int, ...], ...]  # reassociation of the expanded dims into merged dims
    merged: tuple[int, ...]
    tile: tuple[int, ...]  # over the last len(tile) merged dims; no '*'

    @property
    def prefix(self) -> int:
        return len(self.merged) - len(self.tile)

    @property
    def outer(self) -> tuple[int, ...]:
        return tuple(-(-m // t) for m, t in zip(self.merged[self.prefix:], self.tile))

    @property
    def after(self) -> tuple[int, ...]:
        return self.merged[: self.prefix] + self.outer + self.tile

    def forward(self, e: list) -> list:
        """Map index components (ints or integer arrays) of ``before`` to those of ``after``."""
        e = [0] * self.expand + list(e)
        sizes = (1,) * self.expand + self.before
        merged = []
        for group in self.groups:
            acc = e[group[0]]
            for j in group[1:]:
                acc = acc * sizes[j] + e[j]
            merged.append(acc)
        p = self.prefix
        tail = merged[p:]
        return merged[:p] + [x // t for x, t in zip(tail, self.tile)] + [
            x % t for x, t in zip(tail, self.tile)
        ]


def _stage(before: tuple[int, ...], tile: Tile) -> _Stage:
    k = len(tile.dims)
    expand = max(0, k - len(before))
    full = (1,) * expand + before
    base = len(full) - k
    groups: list[tuple[int, ...]] = [(i,) for i in range(base)]
    merged = list(full[:base])
    sizes: list[int] = []
    pending: list[int] = []
    for j, t in enumerate(tile.dims):
        pending.append(base + j)
        if t != Tile.COMBINE:
            groups.append(tuple(pending))
            merged.append(math.prod(full[i] for i in pending))
            sizes.append(t)
            pending = []
    return _Stage(before, expand, tuple(groups), tuple(merged), tuple(sizes))


@dataclass(frozen=True)
class Shape:
    """An XLA array shape with a dense layout: ``dtype``, logical ``dims`` and ``layout``.

    ``dynamic`` marks bounded dynamic dims (``<=n``), laid out at their bound. Sizes are in
    elements unless the name says bytes.
    """

    dtype: DType
    dims: tuple[int, ...]
    layout: Layout | None = None
    dynamic: tuple[bool, ...] = field(default=())

    def __post_init__(self):
        object.__setattr__(self, "dtype", _lookup_dtype(self.dtype))
        object.__setattr__(self, "dims", _ints(self.dims, "shape dims"))
        rank = len(self.dims)
        object.__setattr__(self, "dynamic", tuple(bool(b) for b in self.dynamic) or (False,) * rank)
        if self.layout is None:
            object.__setattr__(self, "layout", Layout.default(rank))
        text = self._text()
        if any(d < 0 for d in self.dims):
            raise LayoutError(f"shape {text}: dimension sizes must be >= 0; got {self.dims}")
        if len(self.dynamic) != rank:
            raise LayoutError(
                f"shape {text}: {len(self.dynamic)} dynamic flags for {rank} dims"
            )
        m2m = self.layout.minor_to_major
        if len(m2m) != rank:
            raise LayoutError(
                f"shape {text}: layout minor_to_major {list(m2m)} has {len(m2m)} entries but "
                f"the shape has rank {rank}; it must list each dim 0..{rank - 1} once"
            )
        if sorted(m2m) != list(range(rank)):
            raise LayoutError(
                f"shape {text}: layout minor_to_major {list(m2m)} is not a permutation of "
                f"0..{rank - 1} (each logical dim exactly once)"
            )
        bits = self.layout.element_size_in_bits
        least = 1 if self.dtype.kind == "bool" else self.dtype.bits
        if bits and bits < least:
            raise LayoutError(
                f"shape {text}: element size E({bits}) is smaller than the {least} bits a "
                f"{self.dtype.xla_name} value needs; use E(n) with n >= {least}, or omit it"
            )
        if self.size_in_elements > MAX_ELEMENTS:
            raise LayoutError(
                f"shape {text}: {self.size_in_elements} buffer elements is above the limit of "
                f"2^62 = {MAX_ELEMENTS} (offsets are int64); use smaller dims"
            )

    # ---- text -------------------------------------------------------------------------------

    @staticmethod
    def parse(text: str) -> "Shape":
        """Parse XLA's dense shape text, e.g. ``bf16[4,8]{1,0:T(2,4)(2,1)}`` or ``f32[3,5]``."""
        if not isinstance(text, str):
            raise LayoutError(f"an XLA shape is text such as 'f32[3,5]{{1,0}}', got "
                              f"{type(text).__name__} {text!r}")
        return _Parser(text).shape()

    def _text(self) -> str:
        dims = ",".join(("<=" if dyn else "") + str(d) for d, dyn in zip(self.dims, self.dynamic))
        head = f"{self.dtype.xla_name}[{dims}]"
        layout = str(self.layout)
        # XLA's ShapeUtil::HumanStringWithLayout omits a scalar's empty layout "{}".
        return head if layout == "{}" else head + layout

    def __str__(self) -> str:
        return self._text()

    # ---- physical layout --------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def physical_order(self) -> tuple[int, ...]:
        """Logical dims from major to minor (``minor_to_major`` reversed)."""
        return tuple(reversed(self.layout.minor_to_major))

    @cached_property
    def _stages(self) -> tuple[_Stage, ...]:
        shape = tuple(self.dims[d] for d in self.physical_order)
        stages = []
        for tile in self.layout.tiles:
            st = _stage(shape, tile)
            stages.append(st)
            shape = st.after
        return tuple(stages)

    @cached_property
    def physical_shape(self) -> tuple[int, ...]:
        """The shape after all tilings, major to minor (elements per dim, padding included)."""
        if self._stages:
            return self._stages[-1].after
        return tuple(self.dims[d] for d in self.physical_order)

    @property
    def num_elements(self) -> int:
        """Logical elements (no padding)."""
        return math.prod(self.dims)

    @cached_property
    def size_in_elements(self) -> int:
        """Buffer length in elements: the tiled shape's product, rounded up to ``L(n)``."""
        n = math.prod(self.physical_shape)
        align = self.layout.tail_padding_alignment
        return -(-n // align) * align

    @property
    def element_size_in_bits(self) -> int:
        """Storage bits per element: ``E(bits)`` if given, else the element type's bits."""
        return self.layout.element_size_in_bits or self.dtype.bits

    @property
    def size_in_bytes(self) -> int:
        """Buffer bytes as XLA's ShapeUtil::ArraySize counts them.

        With ``E(bits)``: ceil(elements * bits / 8) (sub-byte packing); otherwise elements times
        the element type's byte size (sub-byte types such as s4 then take a whole byte each).
        """
        if self.layout.element_size_in_bits:
            return -(-self.size_in_elements * self.layout.element_size_in_bits // 8)
        return self.size_in_elements * self.dtype.bytes

    @property
    def padding_elements(self) -> int:
        """Buffer elements that hold no logical element."""
        return self.size_in_elements - self.num_elements

    # ---- index maps -------------------------------------------------------------------------

    def _physical_index(self, index: list) -> list:
        e = [index[d] for d in self.physical_order]
        for st in self._stages:
            e = st.forward(e)
        return e

    def _offset(self, e: list):
        offset = 0
        for i, d in zip(e, self.physical_shape):
            offset = offset * d + i
        return offset

    def linear_index(self, index) -> int:
        """Buffer offset (elements) of the element at ``index`` (logical dims order): a sequence
        of integers (not bools, floats or a string); LayoutError otherwise."""
        if isinstance(index, (str, bytes)) or not hasattr(index, "__iter__") or any(
                isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) for i in index):
            raise LayoutError(f"index {index!r} for {self}: expected {self.rank} integers, "
                              "e.g. (0, 1)")
        idx = tuple(int(i) for i in index)
        if len(idx) != self.rank or any(not 0 <= i < d for i, d in zip(idx, self.dims)):
            raise LayoutError(
                f"index {idx} is out of bounds for {self}: need {self.rank} integers with "
                f"0 <= index[i] < {list(self.dims)}[i]"
            )
        return self._offset(self._physical_index(list(idx)))

    def linear_indices(self) -> np.ndarray:
        """Buffer offsets (int64) of every element, as an array with the logical dims."""
        offsets = self._offset(self._physical_index(list(np.indices(self.dims, dtype=np.int64))))
        return np.broadcast_to(np.asarray(offsets, dtype=np.int64), self.dims).copy()

    # ---- buffers ----------------------------------------------------------------------------

    def _check_array(self, array) -> np.ndarray:
        """``array`` as a numpy array of this shape's element type: a numpy array must already
        have it (an int8 array is not an f32 buffer); a list is converted when no value changes."""
        want = self.dtype.numpy
        if isinstance(array, np.ndarray):
            if array.dtype != want:
                raise LayoutError(
                    f"array of dtype {array.dtype} does not match {self}: expected {want} "
                    f"({self.dtype.name}); convert it first, e.g. array.astype({str(want)!r})"
                )
            a = array
        else:
            raw = np.asarray(array)
            try:
                a = raw.astype(want)
                same = raw.shape == a.shape and bool(np.all(a.astype(raw.dtype) == raw))
            except (TypeError, ValueError, OverflowError):
                same = False
            if not same:
                raise LayoutError(f"values {str(array)[:60]} are not {self.dtype.name} values "
                                  f"of {self}; give a numpy array of dtype {want}")
        if a.shape != self.dims:
            raise LayoutError(
                f"array of shape {a.shape} does not match {self}: expected logical dims {self.dims}"
            )
        return a

    def to_physical(self, array, fill=0) -> np.ndarray:
        """The 1-D buffer (``size_in_elements`` long, this shape's dtype) holding ``array`` (a
        numpy array of that dtype, or a list of its values; LayoutError otherwise).

        Padding elements (from tiles and ``L(n)``) hold ``fill``. Computed by pad + reshape +
        transpose per tile, independently of :meth:`linear_index`.
        """
        a = self._check_array(array).transpose(self.physical_order)
        for st in self._stages:
            a = a.reshape(st.merged)
            p, k = st.prefix, len(st.tile)
            pad = [(0, 0)] * p + [(0, o * t - m) for o, t, m in zip(st.outer, st.tile, st.merged[p:])]
            if any(high for _, high in pad):
                a = np.pad(a, pad, constant_values=np.asarray(fill).astype(a.dtype))
            split = st.merged[:p] + tuple(x for ot in zip(st.outer, st.tile) for x in ot)
            a = a.reshape(split).transpose(
                tuple(range(p)) + tuple(p + 2 * i for i in range(k)) + tuple(p + 2 * i + 1 for i in range(k))
            )
        flat = a.reshape(-1)
        tail = self.size_in_elements - flat.size
        if tail:
            flat = np.concatenate([flat, np.full(tail, fill, dtype=flat.dtype)])
        return np.ascontiguousarray(flat)

    def from_physical(self, buffer) -> np.ndarray:
        """The array (logical dims, ``buffer``'s dtype) stored in a 1-D buffer of this layout."""
        b = np.asarray(buffer)
        if b.ndim != 1 or b.size != self.size_in_elements:
            raise LayoutError(
                f"buffer of shape {b.shape} does not fit {self}: expected a 1-D buffer of "
                f"{self.size_in_elements} elements"
            )
        a = b[: math.prod(self.physical_shape)].reshape(self.physical_shape)
        for st in reversed(self._stages):
            p, k = st.prefix, len(st.tile)
            inv = [0] * (p + 2 * k)
            order = list(range(p)) + [p + 2 * i for i in range(k)] + [p + 2 * i + 1 for i in range(k)]
            for pos, src in enumerate(order):
                inv[src] = pos
            a = a.transpose(inv).reshape(st.merged[:p] + tuple(o * t for o, t in zip(st.outer, st.tile)))
            a = a[(slice(None),) * p + tuple(slice(0, m) for m in st.merged[p:])]
            a = a.reshape(st.before)
        inverse = np.argsort(self.physical_order)
        return np.ascontiguousarray(a.reshape(tuple(self.dims[d] for d in self.physical_order))
                                    .transpose(inverse))


class _Parser:
    """Recursive-descent parser for one dense XLA shape; errors point at the character."""

    WHAT = "XLA shape"

    def __init__(self, text: str):
        self.text, self.pos = text, 0

    # -- helpers --
    def _ws(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _peek(self, s: str) -> bool:
        self._ws()
        return self.text.startswith(s, self.pos)

    def _fail(self, expected: str, pos: int | None = None):
        raise ParseError(self.WHAT, self.text, self.pos if pos is None else pos, expected)

    def _expect(self, s: str, expected: str | None = None):
        if not self._peek(s):
            self._fail(expected or repr(s))
        self.pos += len(s)

    def _unsupported(self, what: str, start: int):
        raise LayoutError(
            f"not supported: {what} at character {start + 1} of {self.text!r}; tilewise "
            f"handles dense XLA layouts (fields T, L, E, S)"
        )

    def _int(self, expected: str = "an integer") -> int:
        self._ws()
        start = self.pos
        if self.pos < len(self.text) and self.text[self.pos] == "-":
            self.pos += 1
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if not self.text[start:self.pos].lstrip("-"):
            self.pos = start
            self._fail(expected)
        return int(self.text[start:self.pos])

    # -- grammar --
    def shape(self) -> Shape:
        self._ws()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isalnum():
            self.pos += 1
        name = self.text[start:self.pos]
        if not name:
            if self._peek("("):
                self._unsupported("tuple shapes", self.pos)
            self._fail("an element type such as f32, bf16, s8, pred")
        if name not in XLA_DTYPES:
            self._fail(f"an XLA element type ({', '.join(XLA_DTYPES)})", start)
        dims, dynamic = self._dims()
        layout = self._layout(len(dims)) if self._peek("{") else None
        self._ws()
        if self.pos != len(self.text):
            self._fail("end of text" if layout is not None else "'{' (a layout) or end of text")
        return Shape(XLA_DTYPES[name], tuple(dims), layout, tuple(dynamic))

    def _dims(self):
        self._expect("[", "'[' after the element type")
        dims, dynamic = [], []
        if self._peek("]"):
            self.pos += 1
            return dims, dynamic
        while True:
            self._ws()
            if self._peek("?"):
                self._unsupported("unbounded dynamic dimension '?'", self.pos)
            dyn = self._peek("<=")
            if dyn:
                self.pos += 2
            at = self.pos
            d = self._int("a dimension size (integer, '<=n' or '?')")
            if d < 0:
                self._fail("a non-negative dimension size", at)
            dims.append(d)
            dynamic.append(dyn)
            if self._peek(","):
                self.pos += 1
                continue
            self._expect("]", "',' or ']' in the dimension list")
            return dims, dynamic

    def _layout(self, rank: int) -> Layout:
        self._expect("{")
        m2m = []
        self._ws()
        if self.pos < len(self.text) and (self.text[self.pos].isdigit() or self.text[self.pos] == "-"):
            while True:
                m2m.append(self._int())
                if self.pos < len(self.text) and self.text[self.pos] in "DCSH":
                    self._unsupported(f"sparse dim level type suffix {self.text[self.pos]!r}", self.pos)
                if not self._peek(","):
                    break
                self.pos += 1
        tiles: list[Tile] = []
        kw: dict[str, int] = {}
        if self._peek(":"):
            self.pos += 1
            self._ws()
            if self._peek("D("):
                self._dim_level_types()
            if self._peek("T"):
                self.pos += 1
                if not self._peek("("):
                    self._fail("'(' starting a tile after T")
                while self._peek("("):
                    tiles.append(self._tile())
            for letter, key in (("L", "tail_padding_alignment"), ("#", None), ("*", None),
                                ("E", "element_size_in_bits"), ("S", "memory_space")):
                if letter == "S" and self._peek("SC"):
                    self._unsupported("split configs SC(...)", self.pos)
                if not self._peek(letter):
                    continue
                at = self.pos
                if key is None:
                    kind = "index" if letter == "#" else "pointer"
                    self._unsupported(f"sparse {kind} primitive type {letter}(...)", at)
                self.pos += 1
                self._expect("(", f"'(' after {letter}")
                kw[key] = self._int(f"an integer in {letter}(...)")
                self._expect(")", f"')' closing {letter}(...)")
            for letter, what in (("SC", "split configs SC(...)"),
                                 ("P", "sparse physical shape P(...)"),
                                 ("M", "dynamic shape metadata prefix M(...)")):
                if self._peek(letter):
                    self._unsupported(what, self.pos)
        self._ws()
        if not self._peek("}"):
            self._fail("'}' closing the layout (its fields come in XLA's order: "
                       "minor_to_major, then ':' T(...) L(n) E(bits) S(space))")
        self.pos += 1
        if len(m2m) != rank:
            raise LayoutError(
                f"layout of {self.text!r} lists {len(m2m)} minor_to_major entries {m2m} but the "
                f"shape has rank {rank}; list each dim 0..{rank - 1} once"
            )
        return Layout(tuple(m2m), tuple(tiles), **kw)

    def _dim_level_types(self):
        """Accept ``D(D,...,D)`` (all levels dense, which XLA treats as a dense layout)."""
        self.pos += 2
        while True:
            self._ws()
            at = self.pos
            c = self.text[self.pos] if self.pos < len(self.text) else ""
            if c not in ("D", "C", "S", "H"):
                self._fail("a dim level type (D, C, S or H)")
            self.pos += 1
            while self.pos < len(self.text) and self.text[self.pos] in "+~":
                self.pos += 1
            if self.text[at:self.pos] != "D":
                self._unsupported(f"sparse dim level type {self.text[at:self.pos]!r} in D(...)", at)
            if self._peek(","):
                self.pos += 1
                continue
            self._expect(")", "',' or ')' in D(...)")
            return

    def _tile(self) -> Tile:
        start = self.pos
        self.pos += 1
        dims = []
        while True:
            self._ws()
            if self._peek("*"):
                self.pos += 1
                dims.append(Tile.COMBINE)
            else:
                dims.append(self._int("a tile dimension (positive integer or '*')"))
            if self._peek(","):
                self.pos += 1
                continue
            if self._peek(")"):
                self.pos += 1
                break
            self._fail("',' or ')' in the tile")
        try:
            return Tile(tuple(dims))
        except LayoutError as e:
            raise LayoutError(f"{e} (in {self.text!r} at character {start + 1})") from None
