"""What the cost kernel needs to know about a (workload, arch) pair, flattened into arrays.

:func:`plan` turns the workload's tensors, index expressions, ops and the arch's levels into
small int64/float64/bool arrays once; :mod:`tilewise.model.kernel` then loops over candidates
reading them. The non-obvious parts:

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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..ir.workload import Tensor
from .footprint import element_bytes, in_place
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


def rate(arch, op) -> float:
    """Per-core throughput for ``op``: MACs per cycle for mac ops; vector ops per cycle for the
    others (MACs per cycle when the arch lists no vector rate for that type)."""
    c = arch.compute
    table = (c.vector_ops_per_cycle if op.kind != "mac" and op.dtype.name in c.vector_ops_per_cycle
             else c.macs_per_cycle)
    if op.dtype.name not in table:
        raise SpecError(f"arch {arch.name} gives no {'MAC' if op.kind == 'mac' else 'vector'} rate "
                        f"for {op.dtype.name} (op {op.name}); it has: {', '.join(table) or 'none'}")
    return float(table[op.dtype.name])


@dataclass(frozen=True)
class Plan:
    """The flattened (workload, arch): ``args`` is the tuple the kernel takes after the batch
    arrays (see :func:`tilewise.model.kernel.evaluate_into`); the rest names results."""

    st: Structure
    args: tuple
    useful_points: np.ndarray  # [ops] real iteration points
    capacity: np.ndarray       # [levels] bytes (inf: unbounded)
    footprint: tuple           # the buffers' arrays of ``args``: f_tensor .. bank (kernel doc)


# columns of the group table (``Plan.args``' ``gi``): kind (0 plain, 1 one affine axis, 2 several),
# member count, border flag, [start, end) of its monomials and of its affine axes, then
# ``M`` member dim indices and ``M`` plain-axis powers
GI_KIND, GI_NMEM, GI_BORDER, GI_MONO, GI_AX, GI_MEM = 0, 1, 2, 3, 5, 7


def _i64(x, shape=None) -> np.ndarray:
    a = np.asarray(x, np.int64)
    return a.reshape(shape) if shape is not None else a


def build(workload, arch) -> Plan:
    """Flatten ``workload`` on ``arch`` (see the module docstring)."""
    st = Structure(workload, arch)
    dims, sizes = st.dims, st.workload.sizes
    D, L, T = len(dims), st.n_levels, len(st.tensors)
    a = st.array_level if st.array_level is not None else L - 1
    link_a = st.array_level if st.array_level is not None else L
    arr = arch.array
    names = [t.name for t in st.tensors]

    moved = np.array([t.name not in st.intermediate_names for t in st.tensors])
    is_out = np.array([t.name in st.outputs for t in st.tensors])
    tbytes = _i64([t.element_bytes for t in st.tensors])
    tmask = np.zeros((T, D), bool)
    others = np.zeros((T, D), bool)
    for ti, t in enumerate(st.tensors):
        tmask[ti, [dims.index(d) for d in t.dims]] = True
        if moved[ti]:
            op_dims = [dims.index(d) for d in st.owner(t.name).dims]
            others[ti, op_dims] = True
    others &= ~tmask
    # per tensor: how many op dims do not index it, then those dims
    oth = np.zeros((T, D + 1), np.int64)
    for ti in range(T):
        js = np.flatnonzero(others[ti])
        oth[ti, 0] = len(js)
        oth[ti, 1:1 + len(js)] = js

    # groups, their polynomials and affine axes; merged border windows per dim
    grp: list[tuple[int, Group]] = []
    for ti, t in enumerate(st.tensors):
        if moved[ti]:
            grp += [(ti, g) for g in groups(t, dims)]
    windows: dict[int, tuple[int, int]] = {}
    for _, g in grp:
        if g.affine:
            for d, (left, right) in border_windows(g, sizes).items():
                j = dims.index(d)
                l0, r0 = windows.get(j, (0, 0))
                windows[j] = (max(l0, left), max(r0, right))
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
            axes.append([ax.const, extent] + [coef.get(d, 0) for d in g.members] + [0] * (M - n))
        row[GI_AX + 1] = len(axes)
        row[GI_MEM:GI_MEM + n] = g.idx
        row[GI_MEM + M:GI_MEM + M + n] = g.powers
        if border:
            explicit[list(g.idx)] = True
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
    win = np.array([windows.get(j, (0, 0)) for j in range(D)], np.int64).reshape(D, 2)
    max_pow = max([max(g.powers) for _, g in grp] + [max(e) for _, g in grp if g.affine
                   for e in _poly(g)] + [1])
    max_x = max([sizes[dims[j]] for j in range(D) if explicit[j]], default=1)

    # footprint items: kept tensors (intermediates innermost only) and state tensors
    shared = in_place(workload)
    f_tensor, f_level, f_bytes, f_ax, ax_terms, terms = [], [], [], [], [], []
    items = [(ti, t) for ti, t in enumerate(st.tensors) if t.name not in shared]
    items += [(-1, t) for t in workload.state]
    for ti, t in items:
        inner_only = ti < 0 or t.name in st.intermediate_names
        f_tensor.append(ti)
        f_level.append([not inner_only or l == L - 1 for l in range(L)])
        f_bytes.append([t.element_bytes if ti < 0 else element_bytes(t, workload, l == L - 1)
                        for l in range(L)])
        f_ax.append((len(ax_terms), len(ax_terms) + len(t.axes)))
        for ax in t.axes:
            ax_terms.append((len(terms), len(terms) + len(ax.terms)))
            terms += [(dims.index(d), c) for d, c in ax.terms]
    block = _i64([max(int(lv.block_bytes), 1) for lv in arch.levels])
    bank = _i64([int(lv.bank_bytes) if lv.bank_granular and lv.bank_bytes else 0
                 for lv in arch.levels])
    capacity = np.array([np.inf if lv.capacity_bytes is None else
                         lv.capacity_bytes * (lv.instances if l < a else 1)
                         for l, lv in enumerate(arch.levels)], float)

    # compute
    ops = workload.ops
    op_mask = np.zeros((len(ops), D), bool)
    op_pp = _i64([op.ops_per_point if op.kind != "mac" else 1 for op in ops])
    op_rate = np.array([rate(arch, op) for op in ops], float)
    useful = np.zeros(len(ops), np.int64)
    ideal = 0.0
    for o, op in enumerate(ops):
        idx = [dims.index(d) for d in op.dims]
        op_mask[o, idx] = True
        useful[o] = int(np.prod([sizes[d] for d in op.dims]))
        ideal += useful[o] * op_pp[o] / op_rate[o] / arch.cores

    # links, legality
    read_bw = np.array([lv.read_bandwidth * lv.channels for lv in arch.levels], float)
    write_bw = np.array([lv.write_bandwidth * lv.channels for lv in arch.levels], float)
    inst = _i64([lv.instances for lv in arch.levels])
    no_read = np.array([lv.read_bandwidth <= 0 for lv in arch.levels])
    no_write = np.array([lv.write_bandwidth <= 0 for lv in arch.levels])
    spine = np.array([d in st.spine for d in dims])
    forbidden = np.zeros(D, bool)
    if len(ops) > 1:
        for t in workload.intermediates:
            for d in workload.producer(t.name).reduction_dims:
                forbidden[dims.index(d)] |= d in st.spine
        for t in st.moved:
            if len(workload.readers(t.name)) > 1:
                for d in t.dims:
                    forbidden[dims.index(d)] |= d not in st.spine
    bc = (arr is not None and arr.broadcast_cols, arr is not None and arr.broadcast_rows)

    footprint = (_i64(f_tensor), np.array(f_level, bool).reshape(-1, L), _i64(f_bytes, (-1, L)),
                 _i64(f_ax, (-1, 2)), _i64(ax_terms, (-1, 2)), _i64(terms, (-1, 2)), block, bank)
    align = st.workload.alignment(arch.alignment)
    args = (
        _i64(st.sizes), _i64([align[d] for d in dims]), a, link_a,
        arr is not None, bc[0], bc[1],
        moved, is_out, tbytes, tmask, oth, plain, affine,
        gi, _i64(mono, (-1, 1 + M)), _i64(axes, (-1, 2 + M)), int(max_pow), explicit, win,
        int(max_x),
        *footprint, capacity,
        op_mask, op_pp, op_rate, float(arch.compute.clock_hz), float(ideal),
        read_bw, write_bw, inst, no_read, no_write, len(ops) > 1, spine, forbidden,
    )
    return Plan(st, args, useful, capacity, footprint)


_CACHE: dict = {}


def plan(workload, arch) -> Plan:
    """:func:`build`, memoized on the identity of the (workload, arch) pair (last 64 pairs)."""
    key = (id(workload), id(arch))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is workload and hit[1] is arch:
        return hit[2]
    p = build(workload, arch)
    if len(_CACHE) >= 64:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (workload, arch, p)
    return p
