"""One walk of the tiled loop nest, shared by ``simulate`` (counting) and the executor (data).

``walk(workload, arch, mapping)`` yields, in execution order, :class:`Transfer` events (a tile
of a tensor loaded into a level, reloaded as a partial sum, or stored back) and
:class:`Compute` events (an op applied to one innermost tile on one core). Semantics:

- Nest: the loops of level 0 (outermost) ... level n-2, each loop stepping over the next
  level's tiles inside the current tile (at the level above the array: over array tiles of
  ``ways x core tile``); core ``(r, c)`` takes slice ``r`` of the rows-split dim and slice ``c``
  of the cols-split dim. The last tile of a loop is clipped (partial).
- Below the array (private levels of each core, as cpu-6core's L1 under its L2) each core walks
  its own slice: the loops there step through core 0's slice (the largest) and core ``i``
  takes the same tiles shifted by ``i x core tile`` and clipped to its slice. A core whose
  tile there is empty (a short edge slice, or no slice at all) does nothing at those levels:
  no transfer, its private tiles stay resident. At the array level itself every core is
  visited at every step, as above. A core idle at the array level (its slice empty along a
  split dim) drains its tiles of an output below the array (stores them, innermost first; they
  are no longer resident) when the output has that split dim, or when a level at or above the
  array that keeps the output is about to store its tile: no partial sum outlives its parent
  tile, and an idle stretch along an output's own dim ends its tiles' reuse.
- Chains (seed 004's fused loop tree): the ops share the loops of the flattened nest above the
  first loop over a private dim that iterates; at each point of those shared loops every op
  in turn runs the rest of the nest projected onto its own dims (a loop over a dim an op
  does not have does not repeat it). A spine-first order (every order of attention and
  LayerNorm, :mod:`tilewise.model.legality`) shares every loop over a spine dim that iterates.
- A level keeps a tensor unless the mapping bypasses it there or the level does not hold it
  (``Level.holds``); an input the innermost level does not keep is read by compute from the
  nearest level above that keeps it, an output accumulated there.
- A tile of tensor T at level l (l >= 1, T kept there) is identified by the ranges of T's dims
  at level l. Each instance (the one logical memory above the array, each core at the array)
  holds one resident tile per tensor: when an op needs a different tile, an output's resident
  tile is stored; then an input is loaded, an output is reloaded if this instance held that tile
  before (a partial sum), else it starts from zero (a "zero" event that moves nothing). At the
  end every resident output is stored. Within a step (and at the end) all stores come first,
  innermost level first, so a tile is drained into its parent before the parent tile is itself
  stored; then loads, reloads and zeros, outermost level first.
- Boxes are per tensor axis ``(lo, hi)`` half-open, the bounding box of the tile's indices
  clipped to the tensor: padding is never moved.

Example (GM -> UB, two row tiles of a 4x4x4 f16 GEMM)::

    >>> arch = load_arch("ascend-vec")
    >>> m = Mapping.parse("gm[m4 n4 k4] mnk | ub[m2 n4 k4]")
    >>> for ev in list(walk(gemm(4, 4, 4, dtype="f16"), arch, m))[:5]: print(ev)
    Transfer(kind='load', level=1, tensor='A', core=(0, 0), box=((0, 2), (0, 4)), nbytes=16, step=1, tile=((0, 2), (0, 4)))
    Transfer(kind='load', level=1, tensor='B', core=(0, 0), box=((0, 4), (0, 4)), nbytes=32, step=1, tile=((0, 4), (0, 4)))
    Transfer(kind='zero', level=1, tensor='C', core=(0, 0), box=((0, 2), (0, 4)), nbytes=0, step=1, tile=((0, 2), (0, 4)))
    Compute(op='C', core=(0, 0), ranges={'m': (0, 2), 'n': (0, 4), 'k': (0, 4)}, step=1, shared=1)
    Transfer(kind='load', level=1, tensor='A', core=(0, 0), box=((2, 4), (0, 4)), nbytes=16, step=2, tile=((2, 4), (0, 4)))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..ir.workload import Tensor
from ..model.legality import validate, ways_of
from ..model.structure import Structure

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Transfer:
    """``kind`` "load", "reload", "store" or "zero" of ``tensor``'s tile ``box`` at ``level``.

    Loads and reloads move data into ``level`` from its nearest keeping ancestor; stores move
    it back; "zero" starts an output tile's first visit (fill with zeros, nothing moves).
    ``level`` is the level index; ``core`` is ``(row, col)`` at the array level, else None;
    ``step`` numbers the compute step the transfer serves (transfers of one step may be
    broadcast together);
    ``tile`` is the tile identity (dim ranges) and ``nbytes`` the real bytes moved.
    """

    kind: str
    level: int
    tensor: str
    core: tuple[int, int] | None
    box: Box
    nbytes: int
    step: int
    tile: tuple


@dataclass(frozen=True)
class Compute:
    """Op ``op`` on one core over the innermost tile ``ranges`` ({dim: (start, stop)});
    ``shared`` numbers the point of the chain's shared loops it runs under (a fused
    intermediate lives for one such point)."""

    op: str
    core: tuple[int, int]
    ranges: dict
    step: int
    shared: int = 0


def tensor_box(t: Tensor, ranges: dict) -> Box:
    """Bounding box of ``t``'s indices over dim ranges, clipped to ``t.shape`` (may be empty)."""
    if any(ranges[d][0] >= ranges[d][1] for d in t.dims):
        return tuple((0, 0) for _ in t.axes)
    box = []
    for ax, n in zip(t.axes, t.shape):
        lo, hi = ax.bounds(ranges)
        lo, hi = max(lo, 0), min(hi, n - 1) + 1
        box.append((lo, max(lo, hi)))
    return tuple(box)


def box_bytes(t: Tensor, box: Box) -> int:
    n = t.element_bytes
    for lo, hi in box:
        n *= hi - lo
    return n


def kept_tensors(st: Structure, mapping) -> list[set[str]]:
    """Per level, the moved tensors it keeps: not bypassed by the mapping and held by the
    level (``Structure.held``: a level that does not hold a tensor is bypassed by it)."""
    return [{t.name for t in st.moved if st.held[l, st.tensors.index(t)]}
            - mapping.levels[l].bypass for l in range(st.n_levels)]


def walk(workload, arch, mapping) -> Iterator[Transfer | Compute]:
    """Yield the transfers and computes of ``mapping`` in execution order (validates first)."""
    validate(workload, arch, mapping)
    st = Structure(workload, arch)
    n = st.n_levels
    a = st.array_level if st.array_level is not None else n - 1
    tiles = [lv.sizes for lv in mapping.levels]
    ways = ways_of(mapping)
    n_rows = mapping.rows.ways if mapping.rows else 1
    n_cols = mapping.cols.ways if mapping.cols else 1
    split: dict = {}  # dim -> how a core (r, c) indexes its slice: r, c or r x cols + c
    for axis, sp in enumerate((mapping.rows, mapping.cols)):
        if sp:
            split[sp.dim] = 2 if sp.dim in split else axis
    cores = [(r, c) for r in range(n_rows) for c in range(n_cols)]
    loops = [(k, d) for k in range(n - 1) for d in mapping.levels[k].order]
    shared = shared_loops(st, loops, tiles, ways, a)
    kept = kept_tensors(st, mapping)
    ranges = [dict() for _ in range(n)]
    ranges[0] = {d: (0, s) for d, s in workload.sizes.items()}
    resident: dict = {}
    visited: set = set()
    counter = [0]
    point = [0]  # the point of the shared loops the ops run under

    array_tile: dict = {}  # split dim -> the range of the current array tile
    # (ranges[a] and below hold core 0's slice and its tiles, the frame the other cores shift)

    def core_ranges(level: int, core: tuple[int, int]) -> dict:
        rng = dict(ranges[level])
        if level >= a:
            for d, axis in split.items():
                lo, hi = array_tile[d]
                t = tiles[a][d]
                i = core[0] * n_cols + core[1] if axis == 2 else core[axis]
                end = min(hi, lo + (i + 1) * t)
                f_lo, f_hi = ranges[level][d]
                rng[d] = (min(end, f_lo + i * t), min(end, f_hi + i * t))
        return rng

    def idle(rng: dict) -> bool:
        return any(rng[d][0] >= rng[d][1] for d in split)

    def nest(todo: list, i: int, leaf) -> Iterator:
        if i == len(todo):
            yield from leaf()
            return
        k, d = todo[i]
        lo, hi = ranges[k][d]
        step = tiles[k + 1][d] * (ways.get(d, 1) if k + 1 == a else 1)
        for s in range(lo, hi, step):
            ranges[k + 1][d] = (s, min(s + step, hi))
            if k + 1 == a and d in split:
                array_tile[d] = ranges[k + 1][d]
                ranges[k + 1][d] = (s, min(s + tiles[a][d], hi))
            yield from nest(todo, i + 1, leaf)

    def evict(level, t, core, rng, step):
        key = (level, t.name, core)
        old = resident.get(key)
        if old is not None and old != tuple(rng[d] for d in t.dims):
            box = tensor_box(t, dict(zip(t.dims, old)))
            yield Transfer("store", level, t.name, core, box, box_bytes(t, box), step, old)

    def drain_below(t, core, step):
        """The drain of output ``t``'s tiles below the array on a core idle at the array level
        (module doc): stores, innermost first, and the tiles dropped."""
        rng = core_ranges(a, core)
        if not idle(rng):
            return
        along = any(rng[d][0] >= rng[d][1] for d in split if d in t.dims)
        moving = any(resident.get((p, t.name, core if p == a else None), ident) != ident
                     for p in range(1, a + 1) if t.name in kept[p]
                     for ident in [tuple((core_ranges(p, core) if p == a else ranges[p])[d]
                                         for d in t.dims)])
        if not (along or moving):
            return
        for level in range(n - 1, a, -1):
            ident = resident.pop((level, t.name, core), None)
            if ident is not None:
                box = tensor_box(t, dict(zip(t.dims, ident)))
                yield Transfer("store", level, t.name, core, box, box_bytes(t, box), step, ident)

    def touch(level, t, core, rng, is_output, step):
        key = (level, t.name, core)
        ident = tuple(rng[d] for d in t.dims)
        old = resident.get(key)
        if old == ident:
            return
        box = tensor_box(t, rng)
        if not is_output:
            yield Transfer("load", level, t.name, core, box, box_bytes(t, box), step, ident)
        elif (key, ident) in visited:
            yield Transfer("reload", level, t.name, core, box, box_bytes(t, box), step, ident)
        else:
            yield Transfer("zero", level, t.name, core, box, 0, step, ident)
        visited.add((key, ident))
        resident[key] = ident

    def execute(op):
        counter[0] += 1
        step = counter[0]
        moved = [t for t in op.tensors if t.name not in st.intermediate_names]
        visits = []
        for level in range(1, n):
            for core in (cores if level >= a else [None]):
                rng = core_ranges(level, core) if core is not None else ranges[level]
                if level > a and idle(rng):
                    continue  # a core with no tile here: nothing moves below the array
                visits += [(level, core, rng, t) for t in moved if t.name in kept[level]]
        if a < n - 1 and op.output in moved:
            for core in cores:
                yield from drain_below(op.output, core, step)
        # Stores first, innermost level first: a tile drains into its parent before the parent
        # tile is itself stored and replaced (the executor moves real data along these events).
        for level, core, rng, t in sorted(visits, key=lambda v: -v[0]):
            if t is op.output:
                yield from evict(level, t, core, rng, step)
        for level, core, rng, t in visits:
            yield from touch(level, t, core, rng, t is op.output, step)
        for core in cores:
            yield Compute(op.name, core, core_ranges(n - 1, core), step, point[0])

    def shared_leaf():
        point[0] += 1
        for op in workload.ops:
            own = [(k, d) for k, d in loops[shared:] if d in op.dims]
            yield from nest(own, 0, lambda op=op: execute(op))

    yield from nest(loops[:shared], 0, shared_leaf)
    for (level, name, core), ident in sorted(resident.items(), key=lambda kv: -kv[0][0]):
        if name in st.outputs:
            t = workload.tensor(name)
            box = tensor_box(t, dict(zip(t.dims, ident)))
            yield Transfer("store", level, name, core, box, box_bytes(t, box), counter[0] + 1, ident)



def shared_loops(st: Structure, loops: list, tiles: list, ways: dict, a: int) -> int:
    """How many loops of the flattened nest ``loops`` ((level, dim) pairs, outermost first)
    every op shares: those above the first loop over a private dim that iterates (its step,
    the next level's tile x the ways into the array, below its tile); all for a single op."""
    if len(st.workload.ops) == 1:
        return len(loops)
    for i, (k, d) in enumerate(loops):
        step = tiles[k + 1][d] * (ways.get(d, 1) if k + 1 == a else 1)
        if d not in st.spine and step < tiles[k][d]:
            return i
    return len(loops)
