"""Conversions between XLA tiled layouts and MLIR ``linalg.pack`` (plus reshapes/transposes).

An XLA tile is a pack whose outer dims stay in physical order: on a tensor already in physical
(major-to-minor) order, ``T(t_k,...,t_1)`` is ``linalg.pack inner_dims_pos = [r-k, ..., r-1]
inner_tiles = [t_k, ..., t_1]`` (MLIR's packed shape is the ceil-divided outer dims, permuted by
``outer_dims_perm``, followed by the inner tiles in ``inner_dims_pos`` order; padding at the high
end, exactly XLA's). A non-identity ``minor_to_major`` is a transpose to physical order; for the
first tile it folds into the pack as ``outer_dims_perm = physical order`` with ``inner_dims_pos``
naming the logical dims of the last ``k`` physical dims. A repeated tile is a second pack of the
packed result; ``*`` is a ``tensor.collapse_shape`` first; a tile with more dims than the tensor
(``f32[]{:T(128)}``) is a ``tensor.expand_shape`` adding unit dims first. Example::

    >>> xla_to_pack(Shape.parse("f32[3,5]{0,1:T(2,2)}"))
    (PackStep(inner_dims_pos=(1, 0), inner_tiles=(2, 2), outer_dims_perm=(1, 0)),)

Applying the steps in order to the logical array and flattening row-major gives the first
``prod(physical_shape)`` elements of the XLA buffer (``L(n)`` tail padding comes after them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..dtypes import DType, dtype as _lookup_dtype
from .pack import Packing, list_str, type_str, verify
from .xla import Layout, Shape, Tile, _Stage


@dataclass(frozen=True)
class Transpose:
    """``linalg.transpose``: result dim ``i`` is input dim ``perm[i]``."""

    perm: tuple[int, ...]

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape[p] for p in self.perm)

    def __str__(self) -> str:
        return f"linalg.transpose permutation = {list_str(self.perm)}"


@dataclass(frozen=True)
class Collapse:
    """``tensor.collapse_shape``: each group of consecutive input dims becomes one dim."""

    reassociation: tuple[tuple[int, ...], ...]

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(math.prod(shape[i] for i in g) for g in self.reassociation)

    def __str__(self) -> str:
        return f"tensor.collapse_shape {_groups(self.reassociation)}"


@dataclass(frozen=True)
class Expand:
    """``tensor.expand_shape`` to ``output_shape`` (here: unit dims prepended)."""

    reassociation: tuple[tuple[int, ...], ...]
    output_shape: tuple[int, ...]

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.output_shape

    def __str__(self) -> str:
        return (f"tensor.expand_shape {_groups(self.reassociation)} "
                f"output_shape {list_str(self.output_shape)}")


@dataclass(frozen=True)
class PackStep:
    """``linalg.pack`` attributes (static tiles, padding at the high end of each tiled dim)."""

    inner_dims_pos: tuple[int, ...]
    inner_tiles: tuple[int, ...]
    outer_dims_perm: tuple[int, ...] = ()

    def packing(self, shape: tuple[int, ...]) -> Packing:
        """This pack verified against a source of ``shape``."""
        return verify(shape, self.inner_dims_pos, self.inner_tiles, self.outer_dims_perm)

    def result_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.packing(shape).packed_shape

    def pads(self, shape: tuple[int, ...]) -> bool:
        """Whether packing ``shape`` needs padding (some tile does not divide its dim)."""
        return self.packing(shape).needs_padding

    def __str__(self) -> str:
        perm = f"outer_dims_perm = {list_str(self.outer_dims_perm)} " if self.outer_dims_perm else ""
        return (f"linalg.pack {perm}inner_dims_pos = {list_str(self.inner_dims_pos)} "
                f"inner_tiles = {list_str(self.inner_tiles)}")


Step = Transpose | Collapse | Expand | PackStep


def _groups(groups) -> str:
    return "[" + ", ".join(list_str(g) for g in groups) + "]"


def _reshape_steps(st: _Stage) -> list[Step]:
    steps: list[Step] = []
    if st.expand:
        r = len(st.before)
        reassociation = ((tuple(range(st.expand + 1)),) + tuple((st.expand + i,) for i in range(1, r))
                         if r else ())
        steps.append(Expand(reassociation, (1,) * st.expand + st.before))
    if any(len(g) > 1 for g in st.groups):
        steps.append(Collapse(st.groups))
    return steps


def xla_to_pack(shape: Shape) -> tuple[Step, ...]:
    """The transpose / reshape / pack steps that turn the logical array into XLA's buffer order.

    Applied in order to an array with ``shape.dims``, the result has ``shape.physical_shape`` and,
    read row-major, equals ``shape.to_physical(x)[:prod(physical_shape)]`` (pad with the same value).
    ``shape`` is a :class:`Shape` or its XLA text.
    """
    if not isinstance(shape, Shape):
        shape = Shape.parse(shape)
    perm = shape.physical_order
    identity = perm == tuple(range(shape.rank))
    stages = shape._stages
    if not stages:
        return () if identity else (Transpose(perm),)
    steps: list[Step] = []
    first, rest = stages[0], stages[1:]
    k = len(first.tile)
    if first.expand == 0 and all(len(g) == 1 for g in first.groups):
        # Fold minor_to_major into the pack: outer dims in physical order, the last k physical
        # dims tiled (MLIR places inner tiles in inner_dims_pos order = physical order).
        steps.append(PackStep(perm[shape.rank - k:], first.tile, () if identity else perm))
    else:
        if not identity:
            steps.append(Transpose(perm))
        rest = stages
    for st in rest:
        steps += _reshape_steps(st)
        steps.append(PackStep(tuple(range(st.prefix, st.prefix + len(st.tile))), st.tile))
    return tuple(steps)


def _partition(cur: list[int], moved: set[int]) -> list[int]:
    return [d for d in cur if d not in moved] + [d for d in cur if d in moved]


def _partitions(cur: list[int], target: list[int]) -> list[set[int]]:
    """Stable partitions (move a set to the end, keep order) turning ``cur`` into ``target``."""
    if cur == target:
        return []
    for split in range(1, len(target)):
        if _partition(cur, set(target[split:])) == target:
            return [set(target[split:])]
    rank_of = {d: i for i, d in enumerate(target)}
    steps = []
    for bit in range((len(target) - 1).bit_length()):  # LSD radix sort by position in target
        moved = {d for d in cur if rank_of[d] >> bit & 1}
        if _partition(cur, moved) != cur:
            steps.append(moved)
            cur = _partition(cur, moved)
    return steps


def pack_to_xla(
    dims,
    dtype: "str | DType",
    inner_dims_pos,
    inner_tiles,
    outer_dims_perm=(),
) -> Shape:
    """The XLA shape whose buffer equals the row-major buffer of ``linalg.pack`` of ``dims``.

    ``minor_to_major`` is ``outer_dims_perm`` reversed (the outer dims keep their order) and the
    first tile covers the physical dims from the first tiled one on (size 1 for untiled dims,
    which changes no order). MLIR puts the inner tiles in ``inner_dims_pos`` order, XLA in
    physical order; when these differ, extra tiles made of full sizes and 1s reorder the
    within-tile dims (such a tile moves its full-size dims after its 1-size dims, keeping both
    orders; a few of these sort any order). Padding agrees: both pad each tiled dim at its high
    end. So every valid static pack has an XLA equivalent and ``None`` is never returned; an
    invalid pack raises :class:`~tilewise.errors.PackError` from the one pack verifier,
    :func:`tilewise.layout.pack.verify` (MLIR's rules and diagnostics).

    >>> str(pack_to_xla((128, 256), "f32", (0, 1), (8, 32), (1, 0)))
    'f32[128,256]{0,1:T(32,8)(32,1)}'
    """
    packing = verify(dims, inner_dims_pos, inner_tiles, outer_dims_perm)
    dims, order, size = packing.shape, packing.perm, packing.tile_of
    m2m = tuple(reversed(order))
    dt = _lookup_dtype(dtype)
    if not size:
        return Shape(dt, dims, Layout(m2m))
    j0 = min(order.index(d) for d in size)
    block = order[j0:]
    tiles = [Tile(tuple(size.get(d, 1) for d in block))]
    # Within-tile dims after the first tile, as (logical dim or None for a unit dim, size).
    inner = [(d, size[d]) if d in size and size[d] > 1 else (None, 1) for d in block]
    cur = [d for d, _ in inner if d is not None]
    target = [d for d in packing.inner_dims_pos if size[d] > 1]
    for moved in _partitions(cur, target):
        start = next(i for i, (d, _) in enumerate(inner) if d is not None)
        span = inner[start:]
        tiles.append(Tile(tuple(n if d in moved else 1 for d, n in span)))
        inner = ([(None, 1) if d in moved else (d, n) for d, n in span]
                 + [(d, n) if d in moved else (None, 1) for d, n in span])
    return Shape(dt, dims, Layout(m2m, tuple(tiles)))


def _zero(elem: str) -> str:
    if elem == "i1":
        return "arith.constant false"
    if elem.startswith("i"):
        return f"arith.constant 0 : {elem}"
    if elem.startswith("complex"):
        part = elem[len("complex<"):-1]
        return f"complex.constant [0.000000e+00 : {part}, 0.000000e+00 : {part}] : {elem}"
    return f"arith.constant 0.000000e+00 : {elem}"


def to_mlir(shape: Shape, name: str = "to_physical") -> str:
    """An MLIR function (tensor, linalg dialects) computing :func:`xla_to_pack` of ``shape``
    (a :class:`Shape` or its XLA text)."""
    if not isinstance(shape, Shape):
        shape = Shape.parse(shape)
    elem = shape.dtype.mlir_name
    cur = shape.dims
    src = type_str(cur, elem)
    body, value, n = [], "%arg0", 0
    steps = xla_to_pack(shape)
    if any(isinstance(s, PackStep) for s in steps):
        shp = shape.dims
        needs_pad = False
        for s in steps:
            needs_pad |= isinstance(s, PackStep) and s.pads(shp)
            shp = s.result_shape(shp)
        if needs_pad:
            body.append(f"  %pad = {_zero(elem)}")
    for step in steps:
        out = step.result_shape(cur)
        t_in, t_out = type_str(cur, elem), type_str(out, elem)
        if isinstance(step, Transpose):
            body.append(f"  %e{n} = tensor.empty() : {t_out}")
            body.append(f"  %{n} = linalg.transpose ins({value} : {t_in}) outs(%e{n} : {t_out}) "
                        f"permutation = {list_str(step.perm)}")
        elif isinstance(step, Collapse):
            body.append(f"  %{n} = tensor.collapse_shape {value} {_groups(step.reassociation)} "
                        f": {t_in} into {t_out}")
        elif isinstance(step, Expand):
            body.append(f"  %{n} = tensor.expand_shape {value} {_groups(step.reassociation)} "
                        f"output_shape {list_str(step.output_shape)} : {t_in} into {t_out}")
        else:
            pad = f"padding_value(%pad : {elem}) " if step.pads(cur) else ""
            perm = f"outer_dims_perm = {list_str(step.outer_dims_perm)} " if step.outer_dims_perm else ""
            body.append(f"  %e{n} = tensor.empty() : {t_out}")
            body.append(f"  %{n} = linalg.pack {value} {pad}{perm}inner_dims_pos = "
                        f"{list_str(step.inner_dims_pos)} inner_tiles = {list_str(step.inner_tiles)} "
                        f"into %e{n} : {t_in} -> {t_out}")
        value, cur, n = f"%{n}", out, n + 1
    ret = type_str(cur, elem)
    lines = [f"// {shape}", f"func.func @{name}(%arg0: {src}) -> {ret} {{", *body,
             f"  return {value} : {ret}", "}"]
    return "\n".join(lines)
