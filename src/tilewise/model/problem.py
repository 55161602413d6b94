"""The problem description: what the one cost model knows of a (workload, arch) pair.

:meth:`Problem.build` turns the workload's tensors, index expressions, ops and the arch's levels
into small int64/float64/bool arrays, once, in named groups (NamedTuples of arrays, which numba
takes as arguments): :class:`DimsInfo`, :class:`Levels`, :class:`Tensors`,
:class:`AffineGroups`, :class:`Buffers`, :class:`Compute` and :class:`ChainRules`. The compiled
cost kernel (:mod:`tilewise.model.kernel`), the rules (:mod:`tilewise.model.rules`), the search's
bounds and the executor's allocator all read these groups; none rebuilds them. The non-obvious
parts:

- *Groups*: a tensor's dims coupled through non-plain axes (a convolution input row
  ``p*2 + r - 1`` couples ``p`` and ``r``); plain dims form groups of one. A group's bytes
  factor over a set of tiles is, for kind 0 (one plain dim), a power sum of tile extents; for
  kind 1 (one affine axis) the polynomial in the members' extents given by :func:`_poly` (the
  halo rule, summed per dim) minus the clipping at the tensor border; for kind 2 (several affine
  axes) a direct sum over every combination of member tiles.
- *Border windows* (:func:`border_windows`): per dim, in elements, the tiles that can reach
  the tensor border: a tile ``[s, s + e)`` of dim ``d`` can be clipped only if ``s < left`` or
  ``s + e - 1 >= size - right``. Only those tiles are listed explicitly; every other tile is
  unclipped. Example: ``I[p + r - 1]`` with P=56, R=3 over 56 rows gives ``p: (1, 1)``:
  only the first and last p tiles can be clipped.
- *Footprint items*: each buffer (a kept tensor per level, or a state tensor in the innermost
  level) with its element bytes per level and its axes, each a range of ``(dim, coeff)`` terms.
  A level that does not hold a tensor (``Level.holds``) keeps no buffer of it, and the tensor
  bypasses it in every mapping (:attr:`Problem.forced`, or-ed into every batch's ``bypass``);
  each buffer is allocated in a part of its level's capacity (``Level.reserved``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from typing import NamedTuple

from ..ir.workload import Tensor
from .descriptors import limits_row
from .contiguity import (granule_points, link_granules, rounded_window, row_word, run_axes,
                         window_granules)
from .footprint import element_bytes, in_place, partial_sum_bytes
from .rules import (buffer_bytes, compute_bound_s, energy_per_point, energy_table,
                    transfer_seconds,
                    holds_partial_sums, level_capacity, loop_step, ops_per_point,
                    panel_tile, part_capacity, rate, rates)
from .structure import Structure


@dataclass(frozen=True)
class Group:
    """Dims of a tensor coupled by affine axes, with the plain axes on them."""

    idx: tuple[int, ...]          # dim indices
    members: tuple[str, ...]      # dim names
    powers: tuple[int, ...]       # plain axes per member
    affine: tuple                 # ((Affine, extent of the tensor axis), ...)


def groups(t: Tensor, dims: tuple[str, ...]) -> list[Group]:
    """Connected components of ``t``'s dims through its non-plain axes."""
    parent = {d: d for d in t.dims}

    def find(d):
        while parent[d] != d:
            d = parent[d]
        return d

    for ax in t.axes:
        if not ax.is_plain:
            for d in ax.dims[1:]:
                parent[find(d)] = find(ax.dims[0])
    comps: dict = {}
    for d in t.dims:
        comps.setdefault(find(d), []).append(d)
    out = []
    for members in comps.values():
        powers = tuple(sum(1 for ax in t.axes if ax.is_plain and ax.dims[0] == d) for d in members)
        affine = tuple((ax, n) for ax, n in zip(t.axes, t.shape)
                       if not ax.is_plain and ax.dims[0] in members)
        out.append(Group(tuple(dims.index(d) for d in members), tuple(members), powers, affine))
    return out


def border_windows(g: Group, sizes: dict) -> dict[str, tuple[int, int]]:
    """Per member dim, ``(left, right)`` in elements: a tile can be clipped at the tensor border
    only if it starts before ``left`` or ends at or after ``size - right``.

    For one affine axis ``sum(c*d) + const`` over a tensor axis of extent S (coefficients >= 1,
    so every term is >= 0): the left border is reached only if ``c*start_d < -const``, i.e.
    ``start_d < ceil(-const / c)``; the right only if ``c*last_d`` exceeds
    ``rest = S - 1 - const - sum_others c*(size - 1)``, i.e. ``last_d >= rest // c + 1``.
    Several affine axes: every tile is listed (``left = size``).
    """
    if len(g.affine) != 1:
        return {d: (sizes[d], 0) for d in g.members}
    ax, S = g.affine[0]
    out = {}
    for d, c in ax.terms:
        left = -(ax.const // c) if ax.const < 0 else 0
        rest = S - 1 - ax.const - sum(c2 * (sizes[d2] - 1) for d2, c2 in ax.terms if d2 != d)
        right = max(0, sizes[d] - 1 - rest // c) if rest >= 0 else sizes[d]
        out[d] = (min(left, sizes[d]), min(right, sizes[d]))
    return out


def _poly(g: Group) -> dict:
    """The unclipped bytes factor of a group as a polynomial in the member extents:
    ``{exponents per member: coefficient}`` (each affine axis contributes
    ``sum(c * e_d) + 1 - sum(c)``, each plain axis one factor ``e_d``)."""
    m = len(g.members)
    poly = {tuple([0] * m): 1}

    def mul(poly, terms):
        out: dict = {}
        for mono, c in poly.items():
            for i, k in terms:
                key = list(mono)
                if i is not None:
                    key[i] += 1
                key = tuple(key)
                out[key] = out.get(key, 0) + c * k
        return out

    for ax, _ in g.affine:
        terms = [(g.members.index(d), c) for d, c in ax.terms]
        terms.append((None, 1 - sum(c for _, c in ax.terms)))
        poly = mul(poly, terms)
    for i, p in enumerate(g.powers):
        for _ in range(p):
            poly = mul(poly, [(i, 1)])
    return {k: v for k, v in poly.items() if v}


# columns of the group table (:attr:`AffineGroups.gi`): kind (0 plain, 1 one affine axis, 2 several),
# member count, border flag, [start, end) of its monomials and of its affine axes, then
# ``M`` member dim indices and ``M`` plain-axis powers
GI_KIND, GI_NMEM, GI_BORDER, GI_MONO, GI_AX, GI_MEM = 0, 1, 2, 3, 5, 7


def _i64(x, shape=None) -> np.ndarray:
    a = np.asarray(x, np.int64)
    return a.reshape(shape) if shape is not None else a




class DimsInfo(NamedTuple):
    """Per dim (workload order): ``sizes [D]`` and innermost ``align [D]`` (elements)."""

    sizes: np.ndarray
    align: np.ndarray


class Levels(NamedTuple):
    """The memory levels, outermost first (link ``l`` joins level ``l`` to its parent).

    ``array``: index of the level made of the array's cores (``L - 1`` without an array);
    ``link_array``: first link whose instances are the cores used (``L`` without an array);
    ``capacity [L]`` bytes per logical memory (:func:`.rules.level_capacity`, ``inf``:
    unbounded); ``read_bw``/``write_bw [L]`` bytes/s per instance (x channels);
    ``instances [L]``; ``no_read``/``no_write [L]`` a level without bandwidth;
    ``e_read``/``e_write``/``e_link [L]`` joules per byte read from / written into level ``l``
    and moved over link ``l`` (:func:`.rules.energy_table`; ``e_link`` NaN: unknown);
    ``xfer_s [L]`` seconds of fixed cost per DMA transfer on link ``l`` on one instance (its
    channels share the transfers), ``has_xfer`` whether any link has one; ``part_cap [L, P]``
    bytes of each part of a level (:func:`.rules.part_capacity`: part 0 shared, the others
    reserved for some tensors); ``granule [L]`` bytes a run moved over link ``l`` is rounded
    up to (:func:`.contiguity.link_granules`); ``row_word`` bytes the rows of a row-major
    tensor are padded to (:func:`.contiguity.row_word`, 1: its own row pitch)."""

    array: int
    link_array: int
    has_array: bool
    bc_rows_split: bool    # a tensor not indexed by the rows' split dim is broadcast
    bc_cols_split: bool
    reduce_rows: bool      # partials of a rows split merge along the array (reduce_cols)
    capacity: np.ndarray
    read_bw: np.ndarray
    write_bw: np.ndarray
    instances: np.ndarray
    no_read: np.ndarray
    no_write: np.ndarray
    e_read: np.ndarray
    e_write: np.ndarray
    e_link: np.ndarray
    xfer_s: np.ndarray
    has_xfer: bool
    part_cap: np.ndarray
    granule: np.ndarray
    row_word: int


class Tensors(NamedTuple):
    """Per tensor (``Structure.tensors`` order): ``moved`` (not a fused intermediate),
    ``psum`` bytes per point of its partial sums for a final output (the accumulator type,
    :func:`.footprint.partial_sum_bytes`; 0 for every other tensor), ``tbytes`` bytes per
    point as stored, ``tmask [T, D]`` dims
    indexing it, ``red [T, D]`` the reduction dims of the op writing a final output, ``oth [T, 1 + D]`` count then indices of its op's dims that do not index it,
    ``plain [T, 1 + 2D]`` count then (dim, power) of its plain groups, ``affine [T, 1 + G]``
    count then indices of its affine groups (:class:`AffineGroups`); ``runs [T, 1 + D]`` count
    then the dim index of each axis, outermost first, of a tensor laid out in contiguous runs
    (:func:`.contiguity.run_axes`; count 0: exact bytes)."""

    moved: np.ndarray
    psum: np.ndarray
    tbytes: np.ndarray
    tmask: np.ndarray
    oth: np.ndarray
    plain: np.ndarray
    affine: np.ndarray
    red: np.ndarray
    runs: np.ndarray


class AffineGroups(NamedTuple):
    """Dims coupled through affine axes (module doc): ``gi [G, 7 + 2M]`` (columns ``GI_*``),
    ``mono`` the halo polynomials' monomials, ``axes`` the affine axes (const, extent,
    coefficients, then per level the word in elements its window rows are rounded out to: 1
    but for the innermost axis of a :func:`.contiguity.rounded_window` where a DMA moves it,
    whose members' tiles are then all listed, so each window's start is known), ``max_pow`` the largest power sum needed, ``explicit [D]`` dims
    listed tile by tile near the border, ``win [D, 2]`` their border windows, ``max_x`` the
    most listed tiles of a dim."""

    gi: np.ndarray
    mono: np.ndarray
    axes: np.ndarray
    max_pow: int
    explicit: np.ndarray
    win: np.ndarray
    max_x: int


class DmaTable(NamedTuple):
    """What the kernel needs to count the buffer descriptors (BDs) of each transfer
    (:mod:`.descriptors`, the rule :mod:`tilewise.simulation.bds` applies to every transfer of
    the walk): ``active`` some level declares DMA limits (else every transfer is one BD, and
    nothing here is read); per level ``has [L]`` it declares them, ``lim [L, 6]`` their
    :func:`.descriptors.limits_row`; per tensor ``n_axes [T]`` its axes (0: its BDs are not
    modelled, each transfer charged as one: a tensor with several affine axes on one group of
    dims, or plain axes inside an affine group), ``shape [T, A]`` their extents, ``parts [T, A,
    3]`` per axis (kind: 0 plain, 1 one affine axis; the dim, or the group; the affine axis row
    of :attr:`AffineGroups.axes`), ``lanes [T]`` (elements per vector element), ``rows_ok
    [T]`` a row-major tensor whose rows may be padded (:func:`.contiguity.rows_padded`, which
    the kernel tests per candidate), ``win0 [T]`` the padded extent of a rounded window's last
    axis in its outermost copy (0: not one); ``quick [T]`` no tile of it can be empty (every
    axis plain, or windows that never reach the padding), so where its buffers' sizes keep
    every shape within a DMA's limits each transfer is one BD (:func:`.kernel_bds._fits_one`)."""

    active: bool
    has: np.ndarray
    lim: np.ndarray
    n_axes: np.ndarray
    shape: np.ndarray
    parts: np.ndarray
    lanes: np.ndarray
    rows_ok: np.ndarray
    win0: np.ndarray
    quick: np.ndarray


class Buffers(NamedTuple):
    """The buffers the levels allocate (:mod:`.footprint`): per buffer ``tensor [F]`` (its
    tensor index, -1 for op state), ``level [F, L]`` whether level ``l`` keeps it, ``bytes
    [F, L]`` bytes per point there, ``axes [F, 2]`` its range of ``ax_terms [*, 3]``, each a
    range of ``terms [*, 2]`` (dim, coefficient) and the DMA word in elements its rows are
    rounded out to (1: exact; :func:`.contiguity.rounded_window`); per level ``block``/``bank [L]`` bytes (the
    rounding; ``bank`` 0 unless bank granular). ``psum [F, L]``: bytes per point while the
    buffer holds partial sums, where ``red [F, D]`` (the reduction dims of the op producing a
    final output) are split above the level (:func:`.rules.holds_partial_sums`). ``part [F, L]``:
    the part of the level's capacity it is allocated in (:attr:`.structure.Structure.part`; 0
    the shared part). ``ops [F, O]``: the ops that touch the buffer (read, write or keep
    state in it; the footprint rule of ``memory="max"``). ``inner [F]``: a buffer of the
    innermost level only (a fused intermediate or op state: sized as the panel,
    :func:`.rules.panel_tile`)."""

    tensor: np.ndarray
    level: np.ndarray
    part: np.ndarray
    bytes: np.ndarray
    psum: np.ndarray
    red: np.ndarray
    axes: np.ndarray
    ax_terms: np.ndarray
    terms: np.ndarray
    block: np.ndarray
    bank: np.ndarray
    ops: np.ndarray
    inner: np.ndarray


class Compute(NamedTuple):
    """Per op: ``op_mask [O, D]`` its dims, ``op_pp [O]`` ops per point (1 for a MAC),
    ``op_rate [O]`` per-core rate (ops/cycle; NaN: none given, see
    :meth:`Problem.require_rates`); ``call`` cycles per innermost kernel invocation (the
    fixed cost of a call); ``clock`` Hz; ``ideal`` the compute-bound
    minimum (s, :func:`.rules.compute_bound_s`); ``e_point [O]`` joules per padded point
    (NaN: unknown)."""

    op_mask: np.ndarray
    op_pp: np.ndarray
    op_rate: np.ndarray
    call: float
    clock: float
    ideal: float
    e_point: np.ndarray


class ChainRules(NamedTuple):
    """Fused chains (:mod:`.legality`): ``chain`` (more than one op), ``spine [D]`` dims
    shared by every op, ``forbidden [D]`` dims whose loops may not iterate, ``passes [T]``
    how many ops walk a moved tensor's tiles each on its own once a private loop iterates
    above a level (LayerNorm's X: 2, the statistics pass then the normalize pass; 1 for a
    tensor with one reader, :meth:`.Structure.passes`); ``projected``: every loop order is
    legal, each op running its projection of the nest below the first real private loop
    (:attr:`.Structure.projected`); ``memory_max``: a level's footprint is the max over ops of
    the buffers each touches (:attr:`.Chain.memory` ``"max"``), not their sum."""

    chain: bool
    spine: np.ndarray
    forbidden: np.ndarray
    passes: np.ndarray
    projected: bool
    memory_max: bool


@dataclass(frozen=True)
class Problem:
    """A (workload, arch) pair described for the model, built once (:meth:`build`) and passed
    to every rule, the kernel, the search and the executor."""

    st: Structure
    dims: DimsInfo
    levels: Levels
    tensors: Tensors
    groups: AffineGroups
    buffers: Buffers
    compute: Compute
    chain: ChainRules
    useful_points: np.ndarray  # [ops] real iteration points
    forced: np.ndarray         # [L, T] a moved tensor its level does not hold: always bypassed
    dma: DmaTable | None = None  # BDs per transfer (None: built from st)

    def __post_init__(self):
        if self.dma is None:
            object.__setattr__(self, "dma", _dma_table(self.st))

    @property
    def workload(self):
        return self.st.workload

    @property
    def arch(self):
        return self.st.arch

    @property
    def kernel_args(self) -> tuple:
        """The groups in the order :func:`.kernel.evaluate_into` takes them."""
        return (self.dims, self.levels, self.tensors, self.groups, self.buffers, self.compute,
                self.chain, self.dma)

    def exact_bytes(self) -> "Problem":
        """This problem with every link moving exact bytes (granules of one byte, no run
        rounding, rows not padded): the search's bounds take it, since rounding runs and packing only add
        bytes (:mod:`.contiguity`)."""
        ones = np.ones_like(self.levels.granule)
        axes = self.groups.axes.copy()
        axes[:, axes.shape[1] - len(ones):] = 1  # window rows exact too
        return replace(self, levels=self.levels._replace(granule=ones, row_word=1),
                       groups=self.groups._replace(axes=axes),
                       dma=self.dma._replace(active=False))  # bounds count transfers

    def summed_levels(self) -> Levels:
        """The levels with the bytes a level's buffers *summed* (and each part's) can take in
        a mapping that fits: its capacities, or for a chain's ``memory="max"``
        (:attr:`ChainRules.memory_max`: a level fits when the buffers each op touches fit)
        ``O`` times them: every buffer is touched by some op (:attr:`Buffers.ops`), so the
        sum is at most the sum over the ``O`` ops of the buffers each touches, at most ``O``
        times their max. The search prunes by sums, so it takes these (a relaxation of the
        max rule, never stricter); its leaves are checked by the rule itself. Unbounded
        where some buffer is touched by no op."""
        lv, share = self.levels, self.footprint_share()
        if share == 1:
            return lv
        return lv._replace(capacity=lv.capacity * share, part_cap=lv.part_cap * share)

    def footprint_share(self) -> float:
        """How many times a level's footprint its buffers summed can be (:meth:`summed_levels`):
        1, or for ``memory="max"`` the number of ops (``inf`` where a buffer has none)."""
        if not self.chain.memory_max:
            return 1.0
        ops = self.buffers.ops
        return float(ops.shape[1]) if ops.any(1).all() else np.inf

    def require_rates(self) -> None:
        """SpecError naming the first op the arch gives no compute rate for (costing needs it)."""
        for op, r in zip(self.workload.ops, self.compute.op_rate):
            if np.isnan(r):
                rate(self.arch, op)

    def buffer_names(self) -> tuple[str, ...]:
        """The tensor of each buffer of :attr:`buffers`, by name (op state after the tensors)."""
        state = iter(self.workload.state)
        return tuple(self.st.tensors[ti].name if ti >= 0 else next(state).name
                     for ti in self.buffers.tensor)

    def buffer_part(self, tensor: str, level: int) -> int:
        """The part of ``level``'s capacity ``tensor``'s buffer is allocated in (0 shared;
        :attr:`Levels.part_cap`)."""
        names = self.buffer_names()
        return int(self.buffers.part[names.index(tensor), level]) if tensor in names else 0

    def panel(self, tiles: list, orders: list, ways: dict) -> np.ndarray:
        """The extents ``[D]`` (elements, per core) of the fused intermediates' live panel
        for a mapping's per-level ``tiles``, ``orders`` (loop dims per level above the
        innermost) and split ``ways`` (:func:`.legality.ways_of`): the model's rule,
        :func:`.rules.panel_tile`; the innermost tiles for a single op."""
        dims, L = self.st.dims, self.st.n_levels
        tl = np.array([[t[d] for d in dims] for t in tiles], np.int64).reshape(L, len(dims))
        out = tl[L - 1].copy()
        if not self.chain.chain:
            return out
        step = np.array([[loop_step(tl[k + 1, j], ways.get(d, 1), k + 1 == self.levels.array)
                          for j, d in enumerate(dims)] for k in range(L - 1)],
                        np.int64).reshape(L - 1, len(dims))
        od = np.array([[dims.index(d) for d in o] for o in orders], np.int64).reshape(L - 1,
                                                                                   len(dims))
        work = np.zeros((2, L + 1), np.int64)
        panel_tile(od, step < tl[:L - 1], self.chain.spine, step, tl, self.levels.array, out,
                   work[0], work[1])
        return out

    def buffer_bytes(self, tensor: str, level: int, tiles: list, ways: dict,
                     double_buffered: bool, panel: np.ndarray | None = None) -> int:
        """Bytes ``tensor``'s buffer takes at ``level`` for a mapping's per-level, per-dim
        ``tiles`` (elements) and split ``ways`` (:func:`.legality.merged_ways`: a split whose
        partials merge through the parent counts as a loop above the array): the model's rule
        (:func:`.rules.buffer_bytes`, at the partial-sum width where
        :func:`.rules.holds_partial_sums`), x2 when double buffered; 0 for a tensor that has
        no buffer there (computed in place of its input, or inner-only). A buffer of the
        innermost level only (a fused intermediate, op state) takes the ``panel`` extents
        (:meth:`panel`) when given."""
        names = self.buffer_names()
        if tensor not in names:
            return 0
        f = names.index(tensor)
        if not self.buffers.level[f, level]:
            return 0
        dims, L = self.st.dims, self.st.n_levels
        tl = np.array([[t[d] for d in dims] for t in tiles], np.int64)
        step = np.array([[loop_step(tl[k + 1, j], ways.get(d, 1), k + 1 == self.levels.array)
                          for j, d in enumerate(dims)] for k in range(L - 1)], np.int64)
        partial = holds_partial_sums(self.buffers.red[f], level, step.reshape(L - 1, len(dims)),
                                     tl)
        at = panel if panel is not None and self.buffers.inner[f] else tl[level]
        nb = int(buffer_bytes(f, level, np.asarray(at, np.int64), self.dims.sizes, self.buffers,
                              partial))
        return nb * (2 if double_buffered else 1)

    @classmethod
    def build(cls, workload, arch) -> "Problem":
        """Describe ``workload`` on ``arch`` (see the module docstring)."""
        st = Structure(workload, arch)
        moved = np.array([t.name not in st.intermediate_names for t in st.tensors])
        forced = ~st.held & moved[None, :]
        grp = [(ti, g) for ti, t in enumerate(st.tensors) if moved[ti]
               for g in groups(t, st.dims)]
        align = workload.alignment(arch.alignment)
        useful = _i64([int(np.prod([workload.sizes[d] for d in op.dims])) for op in workload.ops])
        return cls(st, DimsInfo(_i64(st.sizes), _i64([align[d] for d in st.dims])),
                   _levels(st), _tensors(st, moved, grp), _affine_groups(st, grp),
                   _buffers(st), _compute(st), chain_rules(st), useful, forced)


def _levels(st: Structure) -> Levels:
    arch, L = st.arch, st.n_levels
    arr = arch.array
    energy = energy_table(arch)
    xfer = transfer_seconds(arch)
    return Levels(
        array=st.array_level if st.array_level is not None else L - 1,
        link_array=st.array_level if st.array_level is not None else L,
        has_array=arr is not None,
        bc_rows_split=arr is not None and arr.broadcast_cols,
        bc_cols_split=arr is not None and arr.broadcast_rows,
        reduce_rows=arr is not None and arr.reduce_cols,
        capacity=level_capacity(arch),
        read_bw=np.array([lv.read_bandwidth * lv.channels for lv in arch.levels], float),
        write_bw=np.array([lv.write_bandwidth * lv.channels for lv in arch.levels], float),
        instances=_i64([lv.instances for lv in arch.levels]),
        no_read=np.array([lv.read_bandwidth <= 0 for lv in arch.levels]),
        no_write=np.array([lv.write_bandwidth <= 0 for lv in arch.levels]),
        e_read=energy.read, e_write=energy.write, e_link=energy.link,
        xfer_s=xfer, has_xfer=bool(np.any(xfer > 0)), part_cap=part_capacity(arch),
        granule=link_granules(arch), row_word=row_word(arch))


def _tensors(st: Structure, moved: np.ndarray, grp: list) -> Tensors:
    dims = st.dims
    D, T = len(dims), len(st.tensors)
    tmask = np.zeros((T, D), bool)
    others = np.zeros((T, D), bool)
    for ti, t in enumerate(st.tensors):
        tmask[ti, [dims.index(d) for d in t.dims]] = True
        if moved[ti]:
            others[ti, [dims.index(d) for d in st.owner(t.name).dims]] = True
    others &= ~tmask
    oth = np.zeros((T, D + 1), np.int64)  # how many op dims do not index it, then those dims
    for ti in range(T):
        js = np.flatnonzero(others[ti])
        oth[ti, 0] = len(js)
        oth[ti, 1:1 + len(js)] = js
    # per tensor: its plain groups as (dim, power) pairs, then its other groups' indices
    plain = np.zeros((T, 1 + 2 * D), np.int64)
    affine = np.zeros((T, 1 + max(len(grp), 1)), np.int64)
    for g_i, (ti, g) in enumerate(grp):
        if not g.affine:
            plain[ti, 1 + 2 * plain[ti, 0]:3 + 2 * plain[ti, 0]] = g.idx[0], g.powers[0]
            plain[ti, 0] += 1
        else:
            affine[ti, 1 + affine[ti, 0]] = g_i
            affine[ti, 0] += 1
    psum = _i64([partial_sum_bytes(t, st.workload) if t.name in st.outputs else 0
                 for t in st.tensors])
    red = np.array([[t.name in st.outputs and d in st.workload.producer(t.name).reduction_dims
                     for d in dims] for t in st.tensors], bool).reshape(T, D)
    runs = np.zeros((T, 1 + D), np.int64)  # per tensor: its axes' dims when laid out in runs
    for ti, t in enumerate(st.tensors):
        axes = run_axes(t, dims) if moved[ti] else None
        if axes:
            runs[ti, 0] = len(axes)
            runs[ti, 1:1 + len(axes)] = axes
    return Tensors(moved, psum, _i64([t.element_bytes for t in st.tensors]), tmask, oth, plain,
                   affine, red, runs)


def _affine_groups(st: Structure, grp: list) -> AffineGroups:
    dims, sizes = st.dims, st.workload.sizes
    D = len(dims)
    windows: dict[int, tuple[int, int]] = {}  # merged border windows per dim
    for _, g in grp:
        if g.affine:
            for d, (left, right) in border_windows(g, sizes).items():
                j = dims.index(d)
                l0, r0 = windows.get(j, (0, 0))
                windows[j] = (max(l0, left), max(r0, right))
    wgran = window_granules(st.arch)
    rows = bool(np.any(wgran > 1))  # a DMA moves whole words somewhere
    for ti, g in grp:  # a window rounded out: every tile listed (its start decides its words)
        t = st.tensors[ti]
        if rows and rounded_window(t, st.outputs) and any(ax is t.axes[-1] for ax, _ in g.affine):
            for d in g.members:
                windows[dims.index(d)] = (sizes[d], sizes[d])
    M = max([len(g.idx) for _, g in grp], default=1)
    # one row per group: kind, members, border flag, its monomials and affine axes, members, powers
    gi = np.zeros((len(grp), GI_MEM + 2 * M), np.int64)
    mono, axes = [], []
    explicit = np.zeros(D, bool)
    for g_i, (ti, g) in enumerate(grp):
        n = len(g.idx)
        kind = 0 if not g.affine else 1 if len(g.affine) == 1 else 2
        border = kind == 2 or (kind == 1 and any(windows[j] != (0, 0) for j in g.idx))
        row = gi[g_i]
        row[GI_KIND], row[GI_NMEM], row[GI_BORDER] = kind, n, border
        row[GI_MONO] = len(mono)
        if kind == 1:
            mono += [[coeff] + list(exps) + [0] * (M - n) for exps, coeff in _poly(g).items()]
        row[GI_MONO + 1] = len(mono)
        row[GI_AX] = len(axes)
        for ax, extent in g.affine:
            coef = dict(ax.terms)
            t = st.tensors[ti]
            inner = rows and ax is t.axes[-1] and rounded_window(t, st.outputs)
            words = [int(granule_points(w, t.element_bytes)) if inner else 1 for w in wgran]
            axes.append([ax.const, extent] + [coef.get(d, 0) for d in g.members] + [0] * (M - n)
                        + words)
        row[GI_AX + 1] = len(axes)
        row[GI_MEM:GI_MEM + n] = g.idx
        row[GI_MEM + M:GI_MEM + M + n] = g.powers
        if border:
            explicit[list(g.idx)] = True
    max_pow = max([max(g.powers) for _, g in grp] + [max(e) for _, g in grp if g.affine
                   for e in _poly(g)] + [1])
    return AffineGroups(
        gi, _i64(mono, (-1, 1 + M)), _i64(axes, (-1, 2 + M + len(wgran))), int(max_pow), explicit,
        np.array([windows.get(j, (0, 0)) for j in range(D)], np.int64).reshape(D, 2),
        int(max([sizes[dims[j]] for j in range(D) if explicit[j]], default=1)))


def _dma_table(st: Structure) -> DmaTable:
    """:class:`DmaTable` of ``st`` (its axes' kinds from :func:`groups`, in the order
    :func:`_affine_groups` numbers groups and their affine axes)."""
    arch, dims = st.arch, st.dims
    L, T = st.n_levels, len(st.tensors)
    has = np.array([lv.dma is not None for lv in arch.levels], bool)
    lim = np.zeros((L, 6), np.int64)
    for l, lv in enumerate(arch.levels):
        if lv.dma is not None:
            lim[l] = limits_row(lv.dma)
    A = max([len(t.axes) for t in st.tensors] + [1])
    n_axes, lanes, rows_ok, win0 = (np.zeros(T, np.int64), np.ones(T, np.int64),
                                    np.zeros(T, bool), np.zeros(T, np.int64))
    shape, parts = np.zeros((T, A), np.int64), np.zeros((T, A, 3), np.int64)
    quick = np.zeros(T, bool)
    sizes = st.workload.sizes
    wgran = window_granules(arch)
    g_i, x_i = 0, 0  # the group and affine-axis numbering of _affine_groups
    for ti, t in enumerate(st.tensors):
        if t.name in st.intermediate_names:
            continue
        ok = quick[ti] = True
        for g in groups(t, dims):
            for ax, extent in g.affine:  # a window that can reach the padding may be empty
                hi = ax.const + sum(c * (sizes[d] - 1) for d, c in ax.terms)
                quick[ti] &= ax.const >= 0 and hi <= extent - 1
            if g.affine:
                ok = ok and len(g.affine) == 1 and not any(g.powers)
                ax = g.affine[0][0]
                k = [i for i, a in enumerate(t.axes) if a is ax][0]
                parts[ti, k] = (1, g_i, x_i)
                x_i += len(g.affine)
            else:
                ok = ok and g.powers == (1,)
                k = [i for i, a in enumerate(t.axes) if a.is_plain and a.dims[0] == g.members[0]][0]
                parts[ti, k] = (0, g.idx[0], -1)
            g_i += 1
        n_axes[ti] = len(t.axes) if ok else 0
        shape[ti, :len(t.axes)] = t.shape
        lanes[ti] = t.lanes
        rows_ok[ti] = run_axes(t, dims) is not None and t.lanes == 1
        if rounded_window(t, st.outputs) and np.any(wgran > 1):
            pts = max(int(granule_points(int(w), t.element_bytes)) for w in wgran)
            win0[ti] = -(-t.shape[-1] // pts) * pts
    return DmaTable(bool(has.any()), has, lim, n_axes, shape, parts, lanes, rows_ok, win0, quick)


def _buffers(st: Structure) -> Buffers:
    """Kept tensors (fused intermediates innermost only, none computed in place) and state."""
    workload, arch, dims, L = st.workload, st.arch, st.dims, st.n_levels
    shared = in_place(workload)
    f_tensor, f_level, f_bytes, f_ax, ax_terms, terms = [], [], [], [], [], []
    f_psum, f_red, f_part, f_ops, f_inner = [], [], [], [], []
    held, part = st.held, st.part
    items = [(ti, t) for ti, t in enumerate(st.tensors) if t.name not in shared]
    items += [(-1, t) for t in workload.state]
    for ti, t in items:
        inner_only = ti < 0 or t.name in st.intermediate_names
        f_inner.append(inner_only)
        f_ops.append([any(t.name == u.name for u in op.tensors + op.state) for op in workload.ops])
        f_tensor.append(ti)
        f_level.append([l == L - 1 if inner_only else bool(held[l, ti]) for l in range(L)])
        f_part.append([0 if ti < 0 else int(part[l, ti]) for l in range(L)])
        f_bytes.append([t.element_bytes if ti < 0 else element_bytes(t, workload, l == L - 1)
                        for l in range(L)])
        final = ti >= 0 and t.name in st.outputs
        f_psum.append([partial_sum_bytes(t, workload) if final else f_bytes[-1][l]
                       for l in range(L)])
        op = workload.producer(t.name) if final else None
        f_red.append([op is not None and d in op.reduction_dims for d in dims])
        f_ax.append((len(ax_terms), len(ax_terms) + len(t.axes)))
        rounded = ti >= 0 and rounded_window(t, st.outputs)
        word = int(granule_points(int(window_granules(arch).max()), t.element_bytes))
        for ax in t.axes:
            ax_terms.append((len(terms), len(terms) + len(ax.terms),
                             word if rounded and ax is t.axes[-1] else 1))
            terms += [(dims.index(d), c) for d, c in ax.terms]
    return Buffers(
        _i64(f_tensor), np.array(f_level, bool).reshape(-1, L), _i64(f_part, (-1, L)),
        _i64(f_bytes, (-1, L)),
        _i64(f_psum, (-1, L)), np.array(f_red, bool).reshape(-1, len(dims)), _i64(f_ax, (-1, 2)),
        _i64(ax_terms, (-1, 3)), _i64(terms, (-1, 2)),
        _i64([max(int(lv.block_bytes), 1) for lv in arch.levels]),
        _i64([int(lv.bank_bytes) if lv.bank_granular and lv.bank_bytes else 0
              for lv in arch.levels]),
        np.array(f_ops, bool).reshape(-1, len(workload.ops)), np.array(f_inner, bool))


def _compute(st: Structure) -> Compute:
    workload, arch, dims = st.workload, st.arch, st.dims
    ops = workload.ops
    op_mask = np.zeros((len(ops), len(dims)), bool)
    for o, op in enumerate(ops):
        op_mask[o, [dims.index(d) for d in op.dims]] = True
    return Compute(op_mask, _i64([ops_per_point(op) for op in ops]),
                   rates(arch, workload), float(arch.compute.call_overhead_cycles),
                   float(arch.compute.clock_hz), compute_bound_s(workload, arch),
                   energy_per_point(arch, workload))


def chain_rules(st: Structure) -> ChainRules:
    """Spine dims, the dims whose loops may not iterate (:mod:`.legality` rules 2, 3) and the
    passes over each tensor (1 where its private loops may not iterate)."""
    workload, dims = st.workload, st.dims
    forbidden = np.zeros(len(dims), bool)
    chain = len(workload.ops) > 1
    if chain:
        for t in workload.intermediates:
            for d in workload.producer(t.name).reduction_dims:
                forbidden[dims.index(d)] |= d in st.spine
        for t in st.moved:
            if st.passes(t.name) == 0:
                for d in t.dims:
                    forbidden[dims.index(d)] |= d not in st.spine
    passes = _i64([max(st.passes(t.name), 1) if chain else 1 for t in st.tensors])
    return ChainRules(chain, np.array([d in st.spine for d in dims]), forbidden, passes,
                      st.projected, chain and workload.memory == "max")
