"""The DMA-limits verdict without the walk: every distinct access shape, from the mapping alone.

Whether one side of a move fits its DMA's limits depends on its access *shape* only: the
sizes and strides (the tile's extents and its buffer's row pitch), the element size and the
offset modulo the DMA word (:mod:`.legal`). The walk moves thousands of tiles of a handful of
shapes, so :func:`shapes_violation` derives the shapes directly:

- per dim, the ranges it takes at every level (:func:`dim_walk`: the nest of one dim, its
  full tiles and its clipped border tiles, each core's slice at the array level), memoised
  across the mappings of a search;
- per tensor, level ``l`` that keeps it and its parent ``p`` (the nearest level above that
  keeps it), per axis the distinct (parent box, child box) pairs over its dims' ranges (a
  window axis ``p + r`` pairs both dims' ranges, clipped to the tensor as the walk clips),
  one representative per class ``(child extent, child start mod Q, parent start mod Q)``
  (``Q``: the DMA words' least common multiple, in elements: what decides the rounding of
  rows and the offset's residue);
- every combination of the axes' classes is one move, built and checked by the program
  builder's own code (:class:`.legal._Checker`: buffers, rounding, BDs, limits, memoised
  per shape) with its parent's origin set as the walk sets it; buffers are sized by the
  largest (rounded) extent of each axis over the classes, as the walk's ``extent`` records;
- an output is stored finished, and where its tiles at ``l`` are revisited (a loop over a
  dim it lacks iterates outside one over its own dims, above ``l``: :func:`revisited`) also
  stored and reloaded as partial sums.

The combinations over axes are all realised by the walk: its iteration space is a product
over dims, each core takes its own slice of a split dim, and core 0 is never idle.
Where that argument does not hold the answer is ``FALLBACK`` (the caller walks the program,
:func:`.legal.dma_violation`): levels below the array (each core's private walk and the
drains of idle cores), a tensor indexed by one dim on two axes, a level whose loop order
leaves out a dim. The answer equals ``dma_violation``'s (None, or a violation, perhaps of a
different move) on random mappings of the AIE presets (tests/emit/test_dma_shapes.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import product
from typing import NamedTuple

from ...errors import DmaError
from ...model.legality import ways_of
from ...simulation.walker import Transfer, shared_loops

FALLBACK = "fallback"  # shapes_violation's answer where only the walk is exact (module doc)

Range = tuple[int, int]


class DimWalk(NamedTuple):
    """The ranges one dim takes: ``chains``, per innermost tile and core index along the dim,
    its range at every level (a core's own slice at and below the array level); ``iterates``
    per level ``k``: whether the loop of level ``k`` over the dim steps more than once."""

    chains: frozenset
    iterates: tuple[bool, ...]


@lru_cache(maxsize=4096)
def dim_walk(size: int, tiles: tuple[int, ...], ways: int, split: bool, a: int,
             period: int = 0) -> DimWalk:
    """The walk of one dim of ``size`` elements tiled ``tiles`` (per level, elements), cut
    ``ways`` ways across the array (``split``) at array level ``a``: the walker's ``nest`` and
    ``core_ranges`` for this dim alone. ``period`` > 0 (a dim every tensor indexes by a plain
    axis, where only extents and starts modulo ``period`` tell shapes apart): of a loop's full
    steps only the first ``period`` are walked (the others repeat them shifted by whole
    periods), and its border step; 0: every step."""
    n = len(tiles)
    chains: set = set()
    iterates = [False] * n

    def rec(k: int, frame: tuple, arr: Range | None) -> None:
        if k == n - 1:
            chains.update(_core_view(frame, arr, i, tiles[a], a) if split else frame
                          for i in range(ways if split else 1))
            return
        lo, hi = frame[k]
        step = tiles[k + 1] * (ways if k + 1 == a else 1)
        iterates[k] = iterates[k] or hi - lo > step
        for s in _steps(lo, hi, step, period):
            r = (s, min(s + step, hi))
            if k + 1 == a and split:
                arr, r = r, (s, min(s + tiles[a], hi))
            rec(k + 1, frame + (r,), arr)

    rec(0, ((0, size),), None)
    return DimWalk(frozenset(chains), tuple(iterates))


def _steps(lo: int, hi: int, step: int, period: int):
    """The starts of a loop's steps over ``[lo, hi)``; with ``period``, the first ``period``
    full ones and the border one (:func:`dim_walk`)."""
    full = (hi - lo) // step
    if not period or full <= period + 1:
        return range(lo, hi, step)
    return list(range(lo, lo + period * step, step)) + ([lo + full * step] if lo + full * step < hi else [])


def _core_view(frame: tuple, arr: Range, i: int, t: int, a: int) -> tuple:
    """Core ``i``'s ranges from core 0's ``frame``: shifted by ``i`` core tiles ``t`` at and
    below the array level ``a``, clipped to the array tile ``arr``."""
    end = min(arr[1], arr[0] + (i + 1) * t)
    return frame[:a] + tuple((min(end, lo + i * t), min(end, hi + i * t)) for lo, hi in frame[a:])


@lru_cache(maxsize=16384)
def dim_pairs(walk: DimWalk, p: int, l: int) -> frozenset:
    """The distinct (range at level ``p``, range at level ``l``) pairs of a dim's ``walk``."""
    return frozenset((c[p], c[l]) for c in walk.chains)


class AxisClass(NamedTuple):
    """A representative (parent box, child box) of one tensor axis, per axis ``[lo, hi)``."""

    parent: Range
    child: Range


@lru_cache(maxsize=16384)
def axis_classes(axis, extent: int, pairs: tuple, p: int, q: int) -> tuple[AxisClass, ...]:
    """One representative per class (module doc) of ``axis``'s (parent, child) boxes, over the
    products of its dims' ``pairs`` (dim name, pair set); ``extent``: the axis's length;
    ``p == 0``: the parent is the whole axis. Memoised: the mappings of a search share most."""
    seen: dict = {}
    names = [d for d, _ in pairs]
    for combo in product(*(s for _, s in pairs)):
        if any(c[1][0] >= c[1][1] for c in combo):
            continue  # an idle core's empty tile moves nothing
        child = _clip(axis.bounds({d: c[1] for d, c in zip(names, combo)}), extent)
        parent = (0, extent) if p == 0 else _clip(axis.bounds({d: c[0] for d, c in zip(names, combo)}), extent)
        key = (child[1] - child[0], child[0] % q, parent[0] % q)
        if key not in seen:
            seen[key] = AxisClass(parent, child)
    return tuple(seen.values())


def _clip(bounds: tuple[int, int], extent: int) -> Range:
    """The walker's ``tensor_box`` on one axis: inclusive ``bounds`` clipped to ``[0, extent)``."""
    lo, hi = max(bounds[0], 0), min(bounds[1], extent - 1) + 1
    return lo, max(lo, hi)


def revisited(checker, t, l: int) -> bool:
    """Whether output ``t``'s tiles at level ``l`` are visited again after others (then its
    partial sums are stored and reloaded): in its producer's nest, a loop above ``l`` over a
    dim ``t`` lacks steps more than once outside one over a dim of ``t`` that does."""
    m, st = checker.m, checker.st
    op = checker.w.producer(t.name)
    tiles = [lv.sizes for lv in m.levels]
    loops = [(k, d) for k in range(checker.n - 1) for d in m.levels[k].order]
    shared = shared_loops(st, loops, tiles, ways_of(m), checker.a)
    other = False
    for i, (k, d) in enumerate(loops):
        if k >= l or not (i < shared or d in op.dims) or not checker.walks[d].iterates[k]:
            continue
        if d not in t.dims:
            other = True
        elif other:
            return True
    return False


def shapes_violation(checker) -> str | None:
    """Why the program of ``checker``'s mapping breaks the limits (a DmaError's message), None
    when every shape fits, or ``FALLBACK`` (module doc). ``checker``: a fresh
    :class:`.legal._Checker` (its memo may be shared by the mappings of a search)."""
    if not _exact(checker):
        return FALLBACK
    m = checker.m
    ways = ways_of(m)
    split = {sp.dim for sp in (m.rows, m.cols) if sp}
    q = math.lcm(*(lv.dma.word_bytes for lv in checker.arch.levels if lv.dma is not None))
    windowed = {d for t in checker.st.moved for ax in t.axes if not ax.is_plain for d in ax.dims}
    checker.walks = {d: dim_walk(s, tuple(lv.sizes[d] for lv in m.levels), ways.get(d, 1),
                                 d in split, checker.a, 0 if d in windowed else q)
                     for d, s in checker.w.sizes.items()}
    moves = []
    for t in checker.st.moved:
        for l in range(1, checker.n):
            if t.name in checker.kept[l]:
                p = checker.parent(l, t)
                again = t.name in checker.st.outputs and revisited(checker, t, l)
                moves.append((t, p, l, again, _classes(checker, t, p, l, q)))
    for t, p, l, _, classes in moves:
        _record_extent(checker, t, l, classes)
    try:
        for t, p, l, again, classes in moves:
            for combo in product(*classes):
                _check_move(checker, t, p, l, combo, again)
    except DmaError as e:
        return str(e)
    return None


def _exact(checker) -> bool:
    """Whether the shapes are exact for this mapping (module doc: no level below the array,
    each tensor's axes on distinct dims, every loop order lists every dim)."""
    if checker.a != checker.n - 1:
        return False
    dims = set(checker.w.sizes)
    if any(set(lv.order) != dims for lv in checker.m.levels[:-1]):
        return False
    return all(len(t.dims) == sum(len(ax.dims) for ax in t.axes) for t in checker.st.moved)


def _classes(checker, t, p: int, l: int, q: int) -> list[tuple[AxisClass, ...]]:
    """Per axis of ``t``, its classes between parent level ``p`` and level ``l``."""
    out = []
    for ax, extent in zip(t.axes, t.shape):
        pairs = tuple((d, dim_pairs(checker.walks[d], p, l)) for d in ax.dims)
        out.append(axis_classes(ax, extent, pairs, p, q))
    return out


def _event(kind: str, l: int, t, box: tuple, core) -> Transfer:
    """A walk event of ``t``'s tile ``box`` at level ``l`` (its identity: the box itself)."""
    return Transfer(kind, l, t.name, core, box, 0, 0, box)


def _record_extent(checker, t, l: int, classes: list) -> None:
    """The largest rounded extent per axis of ``t``'s tiles at ``l`` (the walk's ``extent``)."""
    ext = [max((c.child[1] - c.child[0] for c in axis), default=0) for axis in classes[:-1]]
    last = 0
    for c in classes[-1]:
        box = tuple((0, e) for e in ext) + (c.child,)
        ev = checker.rows_rounded(checker.rounded_out(_event("load", l, t, box, None)),
                                  t.element_bytes)
        last = max(last, ev.box[-1][1] - ev.box[-1][0])
    checker.extent[(l, t.name)] = tuple(ext) + (last,)


def _check_move(checker, t, p: int, l: int, combo: tuple[AxisClass, ...], again: bool) -> None:
    """Build (and so check, :meth:`.legal._Checker.side`) the moves of one combination of
    axis classes: a load, or an output's final store and, where it is revisited (``again``),
    its partial-sum store and reload."""
    core = (0, 0) if l >= checker.a else None
    child = tuple(c.child for c in combo)
    if p:
        parent = checker.rounded_out(_event("load", p, t, tuple(c.parent for c in combo), None))
        checker.origin[(p, checker.instance(p, core), t.name)] = tuple(lo for lo, _ in parent.box)
    if t.name not in checker.st.outputs:
        ev = checker.rounded_out(_event("load", l, t, child, core))
        checker.load(0, ev, [ev])
        return
    checker.origin[(l, checker.instance(l, core), t.name)] = tuple(lo for lo, _ in child)
    ev = _event("store", l, t, child, core)
    checker.store(0, ev, [ev], True)
    if again:
        checker.store(0, ev, [ev], False)
        reload = _event("reload", l, t, child, core)
        checker.load(0, reload, [reload])
