"""``simulate``: count every transfer and the peak residency by walking the loop nest.

The walk (:func:`tilewise.simulation.walker.walk`) is followed tile by tile in plain Python, so it
is meant for small problems; it is the reference the vectorized model must equal exactly.
Counting rules:

- Bytes are the elements a transfer's contiguous runs move, rounded to the link's granule
  (:mod:`.runs`, the rule of :mod:`tilewise.model.contiguity`), at the width the data moves
  at (an output's partial sums at the accumulator type).
- ``reads[level][tensor]``: bytes moved into ``level`` (loads and partial-sum reloads);
  ``reloads`` the reload part; ``writes`` bytes stored from ``level`` to its parent.
- ``fills`` / ``drains``: the number of those transfers (one per tile moved in / stored out;
  a tile whose dim ranges are empty, on an idle core, moves nothing and is no transfer; a
  window tile that lies wholly in the padding is one: the DMA fills it with zeros).
- ``fill_bds`` / ``drain_bds``: the buffer descriptors of those transfers, where both levels
  of the link declare DMA limits (:mod:`.bds`: each transfer's two sides built from its box,
  its longest side's BDs); a window tile wholly in the padding needs none.
- Broadcast: at the array level, transfers of one step that carry the same tile of the same
  tensor share one transfer along a broadcast axis: ``broadcast_rows`` reaches every core of a
  row (cores with the same row index), ``broadcast_cols`` every core of a column. Partial sums of
  one output tile held by a column are summed into one store (and one reload) when the array
  ``reduce_cols`` (:func:`~tilewise.simulation.share.share_group`).
- Partials through the parent: a final output's tile cut by a split of its reduction on an
  axis without a reduction path (cols; rows without ``reduce_cols``) is stored by each core
  along that axis (all but the last store of the tile at the accumulator type) and each
  partial but one is read back by the merging core (index 0 on that axis), the only one that
  reloads the tile on a later visit (the model's ``parts``: visits x partials).
- ``peak``: buffers are allocated at first use (full tile, rounded, x2 when double-buffered,
  :mod:`tilewise.model.footprint`) and live to the end; fused intermediates and state live in the
  innermost level (a softmax result overwrites its input in place) as a *panel*: every tile
  of them one core computes under one point of the chain's shared loops, each at full tile
  size, counted from the walk (per dim, the most distinct tile starts under one point, x the
  innermost tile; the model derives the same from the orders, :func:`.rules.panel_tile`).
  The peak is per instance (the largest core at the array level).
- ``steps[op]``: innermost tile executions per core (the busiest core); ``padded_points[op]``
  the iteration points computed over all cores including padding; ``useful_points[op]`` the
  real ones.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..model.footprint import in_place, partial_sum_bytes
from ..model.problem import Problem
from ..model.legality import merged_ways
from .bds import BdCounter
from .runs import RunCounter
from .share import share_group, store_key
from .walker import Compute, Transfer, walk


@dataclass(frozen=True)
class Trace:
    """Counts from one walk. Bytes; per level name and tensor name."""

    reads: dict
    reloads: dict
    writes: dict
    fills: dict
    drains: dict
    fill_bds: dict
    drain_bds: dict
    peak: dict
    steps: dict
    padded_points: dict
    useful_points: dict


def simulate(workload, arch, mapping) -> Trace:
    """Walk ``mapping`` tile by tile and count transfers, residency and compute steps."""
    problem = Problem.build(workload, arch)
    st = problem.st
    n = st.n_levels
    names = [lv.name for lv in arch.levels]
    tiles = [lv.sizes for lv in mapping.levels]
    sizes = workload.sizes
    arr = arch.array
    reads = {nm: defaultdict(int) for nm in names[1:]}
    reloads = {nm: defaultdict(int) for nm in names[1:]}
    writes = {nm: defaultdict(int) for nm in names[1:]}
    fills = {nm: defaultdict(int) for nm in names[1:]}
    drains = {nm: defaultdict(int) for nm in names[1:]}
    seen_groups: set = set()
    allocated: dict = defaultdict(dict)  # (level, instance) -> {tensor: bytes}
    steps, padded, useful = defaultdict(int), defaultdict(int), defaultdict(int)
    ops = {op.name: op for op in workload.ops}
    per_core_steps: dict = defaultdict(int)

    shared = in_place(workload)
    merged = merged_ways(mapping, arch)
    # per final output, whether its partials of a rows / cols split merge through the parent
    through = {t: _through_axes(workload, arch, mapping, t) for t in st.outputs}
    merges: dict = defaultdict(list)  # (step, level, tensor, tile, merged coords) -> points
    starts: dict = defaultdict(set)   # (core, shared point, inner tensor, dim) -> tile starts

    def allocate(level: int, instance, tensor) -> None:
        buf = allocated[(level, instance)]
        if tensor.name not in buf and tensor.name not in shared:
            db = tensor.name in mapping.levels[level].double_buffer
            buf[tensor.name] = problem.buffer_bytes(tensor.name, level, tiles, merged, db)

    for t in st.moved:
        allocate(0, None, t)
    # an output tile's last store writes the converted result; its earlier stores (and every
    # reload) move partial sums, at the accumulator type
    partial = {t.name: partial_sum_bytes(t, workload) for t in st.moved}
    runs = RunCounter(workload, arch, mapping)
    bdc = BdCounter(workload, arch, mapping)
    fill_boxes: list = []  # (level, tensor, box, width) of every transfer in: BDs at the end
    stores: dict = {}  # (level, tensor, tile, core or its share group) -> (final, partial) bytes
    for ev in walk(workload, arch, mapping):
        if isinstance(ev, Transfer):
            t = workload.tensor(ev.tensor)
            allocate(ev.level, ev.core, t)
            bdc.see(ev)
            if ev.kind == "zero":
                continue
            group = share_group(ev, st.outputs, arr, st.array_level)
            if group is not None:
                if group in seen_groups:
                    continue
                seen_groups.add(group)
            nm = names[ev.level]
            eb, pb = t.element_bytes, partial[ev.tensor]
            final_b = runs.points(t, ev.level, ev.box, eb) * eb   # bytes at the stored type
            partial_b = runs.points(t, ev.level, ev.box, pb) * pb  # and as partial sums
            moves = all(lo < hi for lo, hi in ev.tile)
            tp = through.get(ev.tensor, (False, False)) if group is not None else (False, False)
            if ev.kind == "store":  # which store of a tile is its last is known at the end
                ident = store_key(ev, group, tp)
                stores.setdefault(ident, []).append((final_b, partial_b, ev.box, moves))
                drains[nm][ev.tensor] += moves
                if any(tp):  # partials through the parent: every one but the first read back
                    merges[(ev.step,) + ident].append((partial_b, moves, ev.box))
            elif ev.kind == "reload" and any(tp) and any(x and g for x, g in zip(tp, ev.core)):
                continue  # only the merging cores (index 0 on those axes) bring the sum back
            elif ev.kind == "reload":  # a reload brings back partial sums
                reads[nm][ev.tensor] += partial_b
                reloads[nm][ev.tensor] += partial_b
                fills[nm][ev.tensor] += moves
                if moves and bdc.active:
                    fill_boxes.append((ev.level, t, ev.box, pb))
            else:
                reads[nm][ev.tensor] += final_b
                fills[nm][ev.tensor] += moves
                if moves and bdc.active:
                    fill_boxes.append((ev.level, t, ev.box, eb))
        elif isinstance(ev, Compute):
            op = ops[ev.op]
            live = all(hi > lo for lo, hi in ev.ranges.values())
            for t in op.tensors + op.state:
                if (t.name in st.intermediate_names or t in op.state) and live:
                    for d in t.dims:
                        starts[(ev.core, ev.shared, t.name, d)].add(ev.ranges[d][0])
            real = 1
            for d in op.dims:
                lo, hi = ev.ranges[d]
                real *= max(0, hi - lo)
            if real:
                vol = 1
                for d in op.dims:
                    vol *= tiles[n - 1][d]
                padded[ev.op] += vol
                useful[ev.op] += real
                per_core_steps[(ev.op, ev.core)] += 1
    for (_, level, tensor, *_), parts in merges.items():  # the merges' read-backs
        for partial_b, moves, box in parts[1:]:
            reads[names[level]][tensor] += partial_b
            reloads[names[level]][tensor] += partial_b
            fills[names[level]][tensor] += moves
            if moves and bdc.active:
                fill_boxes.append((level, workload.tensor(tensor), box, partial[tensor]))
    for (level, tensor, *_), moved in stores.items():
        writes[names[level]][tensor] += moved[-1][0] + sum(p for _, p, *_ in moved[:-1])
    fill_bds, drain_bds = _bds(bdc, names, fill_boxes, stores, partial, workload)
    for (op_name, _core), k in per_core_steps.items():
        steps[op_name] = max(steps[op_name], k)
    _panels(problem, tiles, merged, starts, allocated)
    peak = {nm: 0 for nm in names}
    for (level, _inst), buf in allocated.items():
        peak[names[level]] = max(peak[names[level]], _live(workload, buf))
    return Trace(
        reads=_nonzero(reads), reloads=_nonzero(reloads), writes=_nonzero(writes),
        fills=_nonzero(fills), drains=_nonzero(drains),
        fill_bds=fill_bds, drain_bds=drain_bds, peak=peak, steps=dict(steps),
        padded_points=dict(padded), useful_points=dict(useful),
    )


def _bds(bdc, names, fill_boxes, stores, partial, workload) -> tuple[dict, dict]:
    """BDs of the transfers into and out of each level (:mod:`.bds`), per level and tensor:
    loads and reloads from ``fill_boxes``, stores from ``stores`` (a tile's last store moves
    the finished tile at the tensor's type, the others partial sums); levels without DMA
    limits are left out."""
    fill_bds = {nm: defaultdict(int) for nm in names[1:]}
    drain_bds = {nm: defaultdict(int) for nm in names[1:]}
    for level, t, box, width in fill_boxes:
        n = bdc.bds(t, level, box, width)
        if n is not None:
            fill_bds[names[level]][t.name] += n
    for (level, tensor, *_), moved in stores.items():
        t = workload.tensor(tensor)
        for i, (_, _, box, moves) in enumerate(moved):
            n = bdc.bds(t, level, box, t.element_bytes if i == len(moved) - 1 else partial[tensor])
            if moves and n is not None:
                drain_bds[names[level]][tensor] += n
    return _nonzero(fill_bds), _nonzero(drain_bds)


def _panels(problem, tiles: list, merged: dict, starts: dict, allocated: dict) -> None:
    """Allocate the innermost-only buffers (fused intermediates, state) of every core that
    computed with them, at the panel measured by the walk: per dim the most distinct tile
    starts under one shared point (``starts``), x the innermost tile."""
    st = problem.st
    n, dims = st.n_levels, st.dims
    count: dict = defaultdict(int)  # (tensor, dim) -> most tiles under one point
    for (_, _, name, d), seen in starts.items():
        count[(name, d)] = max(count[(name, d)], len(seen))
    for core, name in {(c, nm) for c, _, nm, _ in starts}:
        panel = [tiles[n - 1][d] * max(count.get((name, d), 1), 1) for d in dims]
        allocated[(n - 1, core)][name] = problem.buffer_bytes(name, n - 1, tiles, merged, False,
                                                              panel=panel)


def _live(workload, buf: dict) -> int:
    """Bytes one instance's buffers ``buf`` take: their sum, or for ``memory="max"``
    (Chimera's MU) the largest sum over the buffers of one op."""
    if workload.memory != "max":
        return sum(buf.values())
    return max(sum(v for k, v in buf.items() if any(t.name == k for t in op.tensors + op.state))
               for op in workload.ops)


def _nonzero(table: dict) -> dict:
    return {level: {t: v for t, v in row.items() if v} for level, row in table.items()}


def _through_axes(workload, arch, mapping, tensor: str) -> tuple[bool, bool]:
    """(rows, cols): whether the partials of ``tensor`` (a final output) cut by that axis's
    split merge through the parent level (:func:`.legality.through_parent`): the axis splits
    a reduction dim of its op and has no reduction path along it."""
    red = workload.producer(tensor).reduction_dims
    rows_path = arch.array is not None and arch.array.reduce_cols
    return (bool(mapping.rows and mapping.rows.dim in red and not rows_path),
            bool(mapping.cols and mapping.cols.dim in red))
