"""Legality of a mapping for a workload and architecture, with errors that name the culprit.

:func:`validate` is the check every entry point runs on a mapping. Beyond shape checks, fused
chains obey three rules. A loop is *real* when it can iterate more than once: its step (the next level's tile, x
ways at the array) is smaller than its level's tile.

1. Loop orders. A chain of plain GEMMs (:attr:`.Structure.projected`, seed 004's chains)
   accepts every order, with seed 004's semantics: the ops share the loops above the first
   real loop over a private dim (a dim of one op only), and below it each op runs the rest
   of the nest projected onto its own dims, one op after the other (a loop over a dim an op
   does not have does not repeat that op). The intermediate lives in the innermost level as
   the panel its consumer walks (:func:`.rules.panel_tile`): with ``C = A·B; E = C·D`` and
   the order ``mnkl``, C is ``T_M x L`` (the l loop runs inside n). Chains with online state
   or several readers of a tensor (attention, LayerNorm) keep *spine first*: no real private
   loop may enclose a real loop over a spine dim (their executors merge state per spine
   point).
2. A producer's reduction over a spine dim must not be real: its output would be consumed
   before the reduction completes (a 3-GEMM chain reducing over a shared dim). Softmax reduces
   nothing (its statistics are online state), so attention may tile ``n``.
3. A tensor read by several ops (X in LayerNorm) is walked by each op in turn once a private
   loop iterates above a level, so it moves into that level once per reader (LayerNorm with
   its normalized dim tiled: the statistics pass reads X, the normalize pass reads it again).
   The model counts that exactly when every reader's dims are the tensor's own
   (:meth:`.Structure.passes`); readers that walk it differently must keep its private dims
   whole.

Spatial splits: with private levels below the array, each core walks its own slice through
them (:func:`below_array_refusal` names the dims that cannot be split there yet); in a chain
they may split only spine dims that no op reduces, or a reduction whose partials merge (:attr:`.Structure.mergeable`:
attention's key dim). A reduction split merges its partials along the columns of an array that
``reduce_cols`` (a rows split, as GEMM's K over a column); otherwise (a cols split, or no
``reduce_cols``) through the parent level, when the partials are moved outputs
(:attr:`.Structure.parent_mergeable`: not LayerNorm's fused statistics).
"""

from __future__ import annotations

import numpy as np

from ..errors import MappingError
from .problem import chain_rules
from .rules import chain_violation, innermost_limit, loop_step, tile_fits
from .contiguity import run_axes
from .structure import Structure


def ways_of(mapping) -> dict[str, int]:
    """Ways each split dim is cut into across the array: a dim on both rows and cols is cut
    ``rows x cols`` ways (core ``(r, c)`` takes slice ``r x cols + c``)."""
    ways: dict[str, int] = {}
    for sp in (mapping.rows, mapping.cols):
        if sp:
            ways[sp.dim] = ways.get(sp.dim, 1) * sp.ways
    return ways


def through_parent(mapping, arch) -> dict[str, int]:
    """Ways of each split dim whose partials do *not* merge along the array's reduction path
    but through the parent level: the cols split, and the rows split of an arch that does not
    ``reduce_cols``. (Only a reduction dim's partials merge; for other dims this only says on
    which axes they lie.)"""
    out: dict[str, int] = {}
    for axis, sp in (("rows", mapping.rows), ("cols", mapping.cols)):
        if sp and (axis == "cols" or arch.array is None or not arch.array.reduce_cols):
            out[sp.dim] = out.get(sp.dim, 1) * sp.ways
    return out


def merged_ways(mapping, arch) -> dict[str, int]:
    """:func:`ways_of` without the :func:`through_parent` factor: the ways whose partial
    sums merge on the reduction path (the partial-sum width rule's view of the split:
    :func:`.rules.holds_partial_sums` sees a split through the parent as a loop above it)."""
    through = through_parent(mapping, arch)
    return {d: w // through.get(d, 1) for d, w in ways_of(mapping).items()}


def validate(workload, arch, mapping) -> None:
    """Raise MappingError naming the level, dim or tensor if ``mapping`` is illegal.

    Checks: levels match the arch; tiles are positive, cover every dim, equal the problem at
    level 0 and do not exceed the parent tile (at the array level: ways x tile, and the
    innermost tile may round the parent up to the alignment); the innermost tile meets
    ``arch.alignment``; orders are permutations; bypass/double-buffer name real tensors at
    legal levels (a tensor a level does not hold, ``Level.holds``, is bypassed there whether
    the mapping says so or not, and cannot be double-buffered there); spatial splits fit the array; and the chain rules of the module doc.
    """
    check_mapping(workload, arch, mapping)


def check_mapping(workload, arch, mapping) -> None:
    st = Structure(workload, arch)
    dims, sizes, n = st.dims, workload.sizes, st.n_levels
    names = [lv.name for lv in arch.levels]
    if n < 2:
        raise MappingError(f"arch {arch.name} has one level; tiling needs at least two")
    got = [lv.level for lv in mapping.levels]
    if got != names:
        raise MappingError(f"mapping levels {got} do not match arch {arch.name} levels {names}")
    tensor_names = {t.name for t in st.tensors}
    tiles = []
    for i, lv in enumerate(mapping.levels):
        t = lv.sizes
        for d in t:
            if d not in sizes:
                raise MappingError(f"level {lv.level}: unknown dim {d!r}; dims: {', '.join(dims)}")
        for d in dims:
            if d not in t:
                raise MappingError(f"level {lv.level}: no tile size for dim {d!r}")
            if isinstance(t[d], bool) or not isinstance(t[d], int) or t[d] < 1:
                raise MappingError(f"level {lv.level}: tile {d}={t[d]!r} must be a positive integer")
        tiles.append(t)
        if i < n - 1 and sorted(lv.order) != sorted(dims):
            raise MappingError(f"level {lv.level}: loop order {''.join(lv.order) or '(none)'} is not a "
                               f"permutation of the dims {', '.join(dims)}")
        if i == n - 1 and lv.order:
            raise MappingError(f"level {lv.level} is innermost: it has no loops, drop the order "
                               f"{''.join(lv.order)}")
        for kind, group in (("bypass", lv.bypass), ("double buffer", lv.double_buffer)):
            for tn in group:
                if tn not in tensor_names:
                    raise MappingError(f"level {lv.level}: {kind} names unknown tensor {tn!r}; "
                                       f"tensors: {', '.join(sorted(tensor_names))}")
                if tn in st.intermediate_names:
                    raise MappingError(f"level {lv.level}: {tn} is a fused intermediate (it lives in "
                                       f"the innermost level only); it cannot be {kind}ed")
                if i == 0:
                    raise MappingError(f"level {lv.level} is outermost and holds every tensor; "
                                       f"it cannot {kind} {tn}")
        unheld = {t.name for ti, t in enumerate(st.tensors) if not st.held[i, ti]}
        if lv.bypass - unheld and i == n - 1:
            raise MappingError(f"level {lv.level} is innermost: compute reads its operands there, "
                               f"so {', '.join(sorted(lv.bypass - unheld))} cannot be bypassed "
                               "(unless the arch's level does not hold them)")
        if lv.double_buffer & unheld:
            raise MappingError(f"level {lv.level} does not hold "
                               f"{', '.join(sorted(lv.double_buffer & unheld))} (it holds "
                               f"{', '.join(arch.levels[i].holds)}), so it cannot double-buffer it")
        if lv.double_buffer and not arch.levels[i].double_buffer:
            raise MappingError(f"level {lv.level} cannot double-buffer ({', '.join(sorted(lv.double_buffer))})")
        _check_pack(st, i, lv)
        both = lv.bypass & lv.double_buffer
        if both:
            raise MappingError(f"level {lv.level}: {', '.join(sorted(both))} both bypassed and double-buffered")
    for d in dims:
        if tiles[0][d] != sizes[d]:
            raise MappingError(f"level {names[0]} holds the whole problem: tile {d}={tiles[0][d]} "
                               f"must equal the size {sizes[d]}")
    ways = _check_spatial(st, mapping)
    a = st.array_level
    alignment = workload.alignment(arch.alignment)
    for k in range(1, n):
        for d in dims:
            w = ways.get(d, 1) if a == k else 1
            parent, tile, align = tiles[k - 1][d], tiles[k][d], alignment[d]
            if tile_fits(tile, parent, w, align, k == n - 1):
                continue
            if k < n - 1:
                raise MappingError(f"level {names[k]}: tile {d}={tile} exceeds its parent tile "
                                   f"{d}={parent} at {names[k - 1]}" + (
                                       f" split {w} ways (at most {-(-parent // w)} a core)"
                                       if w > 1 else ""))
            if tile % align:
                raise MappingError(f"level {names[k]}: tile {d}={tile} violates the "
                                   f"alignment of {d} to multiples of {align} ({arch.name})")
            limit = int(innermost_limit(parent, w, align))
            raise MappingError(
                f"level {names[k]}: tile {d}={tile} exceeds its parent tile "
                f"{d}={parent} at {names[k - 1]}" + (f" split {w} ways" if w > 1 else "")
                + (f" (rounded up to the alignment {align}: {limit})" if align > 1 else ""))
    _check_chain(st, mapping, tiles, ways)


def _check_pack(st: Structure, i: int, lv) -> None:
    """``pack:`` only at the outermost level, of moved tensors whose axes are plain dims (a
    layout in rows: :func:`.contiguity.run_axes`)."""
    for tn in sorted(lv.pack):
        if i != 0:
            raise MappingError(f"level {lv.level}: pack:{tn} is a layout of the outermost level "
                               f"({st.arch.levels[0].name}); write it there")
        tensor = next((t for t in st.moved if t.name == tn), None)
        if tensor is None:
            raise MappingError(f"level {lv.level}: pack names {tn!r}, not a tensor moved from "
                               f"there; moved: {', '.join(t.name for t in st.moved)}")
        if run_axes(tensor, st.dims) is None:
            raise MappingError(f"level {lv.level}: pack:{tn}: {tensor} has an axis that is not "
                               "one plain dim (a window or a repeated dim); only tensors indexed "
                               "by plain dims are packed")


def _check_spatial(st: Structure, mapping) -> dict[str, int]:
    arch, wl = st.arch, st.workload
    ways = {}
    for axis, sp in (("rows", mapping.rows), ("cols", mapping.cols)):
        if sp is None:
            continue
        if arch.array is None:
            raise MappingError(f"{axis}={sp}: arch {arch.name} has no core array")
        if sp.dim not in wl.sizes:
            raise MappingError(f"{axis}={sp}: unknown dim {sp.dim!r}; dims: {', '.join(wl.sizes)}")
        if st.array_level != st.n_levels - 1:
            _check_below_array(st, axis, sp)
        limit = getattr(arch.array, axis)
        if not 1 <= sp.ways <= limit:
            raise MappingError(f"{axis}={sp}: {sp.ways} ways, but the array has {limit} {axis}")
        reducing = [op for op in wl.ops if sp.dim in op.reduction_dims]
        if reducing:
            if sp.dim not in st.mergeable:
                raise MappingError(f"{axis}={sp}: {sp.dim} is reduced by op {reducing[0].name} of a "
                                   "fused chain, whose partial results cannot be merged across "
                                   "cores; a chain may split only dims no op reduces or "
                                   "attention's key dim (merged by the online softmax)")
            if (axis != "rows" or not arch.array.reduce_cols) and sp.dim not in st.parent_mergeable:
                raise MappingError(
                    f"{axis}={sp}: splitting the reduction dim {sp.dim} needs its partials merged "
                    "along a column: put it on rows" + ("" if arch.array.reduce_cols else
                                                         f", and {arch.name} cannot reduce_cols"))
        if len(wl.ops) > 1 and sp.dim not in st.spine | st.mergeable:
            raise MappingError(f"{axis}={sp}: {sp.dim} is private to one op of the chain; split a "
                               f"shared dim ({', '.join(sorted(st.spine))})")
        ways[sp.dim] = ways.get(sp.dim, 1) * sp.ways  # on both axes: rows x cols ways
    return ways


def below_array_refusal(st: Structure, dim: str) -> str | None:
    """Why ``dim`` cannot be split over an array with private levels below it (None: it can).
    Each core walks its own slice through those levels (:mod:`tilewise.simulation.walker`);
    the model counts that for dims under plain indices. Not yet for a dim under a window
    (affine) index, whose border tiles the model lists explicitly, nor for a chain's reduction
    (attention's keys, merged by the online softmax at the array level only)."""
    wl = st.workload
    if any(not ax.is_plain for t in st.tensors for ax in t.axes if dim in ax.dims):
        return "it indexes a window (affine) axis"
    if len(wl.ops) > 1 and any(dim in op.reduction_dims for op in wl.ops):
        return "a fused chain reduces over it"
    return None


def _check_below_array(st: Structure, axis: str, sp) -> None:
    why = below_array_refusal(st, sp.dim)
    if why:
        arch = st.arch
        raise MappingError(f"{axis}={sp}: {arch.name} has private levels below its array (at "
                           f"{arch.array.level}) and {sp.dim} cannot be split there: {why}; "
                           "split another dim")


def _check_chain(st: Structure, mapping, tiles, ways) -> None:
    """The chain rules (module doc) by the model's rule (:func:`.rules.chain_violation`),
    with a message naming the loops."""
    wl = st.workload
    if len(wl.ops) == 1:
        return
    dims, L = st.dims, st.n_levels
    rules = chain_rules(st)
    orders = np.array([[dims.index(d) for d in mapping.levels[k].order] for k in range(L - 1)],
                      np.int64).reshape(L - 1, len(dims))
    real = np.array([[loop_step(tiles[k + 1][d], ways.get(d, 1), st.array_level == k + 1)
                      < tiles[k][d] for d in dims] for k in range(L - 1)], bool)
    kind, p, q = chain_violation(orders, real.reshape(L - 1, len(dims)), L - 1, rules.spine,
                                 rules.forbidden, rules.projected)
    if kind == 0:
        return
    names = [lv.level for lv in mapping.levels]
    at = lambda x: (names[x // len(dims)], dims[orders[x // len(dims), x % len(dims)]])
    (lp, dp) = at(p)
    if kind == 1:
        lq, dq = at(q)
        op = next(o for o in wl.ops if dp in o.dims)
        raise MappingError(
            f"illegal order: the loop over {dp} at {lp} (private to op {op.name}) encloses the "
            f"loop over the shared dim {dq} at {lq}; the ops of {wl.name} (online state, or a "
            f"tensor read by several ops) must share every shared loop. Put private loops "
            f"inside shared ones.")
    for t in wl.intermediates:
        prod = wl.producer(t.name)
        if dp in prod.reduction_dims and dp in st.spine:
            raise MappingError(f"illegal tiling: op {prod.name} reduces over {dp}, which indexes a "
                               f"fused intermediate; {t.name} would be consumed before the "
                               f"reduction completes. Keep {dp} whole ({wl.sizes[dp]}).")
    t = next(t for t in st.moved if dp in t.dims and st.passes(t.name) == 0)
    readers = wl.readers(t.name)
    raise MappingError(
        f"{t.name} is read by ops {', '.join(o.name for o in readers)} over different dims; "
        f"tiling its private dim {dp} would walk it differently per op. Keep {dp} whole "
        f"({wl.sizes[dp]}) at every level.")
