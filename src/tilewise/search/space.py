"""The declared tiling space of a (workload, arch) pair, enumerated as numpy arrays.

A candidate is: a spatial split (which dim on the array rows / cols, how many ways), a tile per
level and dim, a loop order per level above the innermost, and per level and moved tensor
whether it is double-buffered. Nothing is bypassed. The *declared* space:

- spatial: no split, or any dim on rows / cols with 2 .. rows (cols) ways (at most the dim's
  size: more ways only idle cores), one dim per axis; one dim may take both axes
  (``rows=m4 cols=m2``: cut ``4 x 2`` ways, at most its size);
  a reduction dim only on rows of an array that ``reduce_cols`` (seed 003's K split across a
  column); chains split spine dims no op reduces, and reductions whose partials merge
  (:attr:`tilewise.model.structure.Structure.mergeable`: attention's keys, LayerNorm's
  columns), on the same rows-only terms (the model's rules). Two kinds are in the space only
  when ``spatial=`` names them (``"rows=n4 cols=m2"``), for speed: a reduction split whose
  partials merge through the parent level (on cols, or without ``reduce_cols``; in the
  default space it multiplied the search time of GEMM, conv and attention: conv 3x3 2 s to
  3 s, attention L=16384 d=128 0.7 s to 4.7 s), and attention's keys over cores (a spine
  dim a chain reduces: alone it took attention at L=16384, d=128 from 0.72 s to 1.32 s; it
  is close to the optimum there, so its subtrees are not pruned early). With private levels
  below the array (cpu-6core: L2 and L1 per core) the dims
  :func:`~tilewise.model.legality.below_array_refusal` names are left out.
- tiles, per level ``l >= 1`` and dim ``d`` of size ``S`` split ``w`` ways at the array
  (``Q = ceil(S / w)``), with ``a`` the dim's alignment (every value rounded up to ``a``):

  1. the *balanced* tiles ``ceil(Q / j)`` for ``j = 1 ..`` :data:`PARTS` (32): ``Q`` cut into
     up to 32 near-equal parts;
  2. every balanced tile ``ceil(Q / j)`` (any ``j``) up to :data:`SMALL` x ``a`` (32 x ``a``);
  3. the divisors of ``Q`` that are multiples of ``a`` (tilings with no padding);
  4. for a *large* dim, ``Q > PARTS x SMALL x a`` (over 16384 elements at ``a = 16``), the
     power-of-two multiples ``a x 2^i``: its middle range, where a tile is a small share of
     ``Q`` and pads it by at most that share.

  Where ``Q <= PARTS x SMALL x a`` (1 .. 3 then give every ``ceil(Q / j)``, ``j = 1 .. Q``:
  a ``j > 32`` gives a value under ``Q / 32 <= 32 a``) this is exactly the space before
  issue 18, every balanced tile (tested against that enumeration); above, the values in
  ``(32 a, Q / 32)`` are thinned to 3 and 4, and the optimum is exact over this declared
  space, not over every balanced tile. None of it loops over ``Q``: 1 and 3 cost
  ``O(min(sqrt(Q), H))``, 2 ``O(min(sqrt(Q), 32))`` (:func:`balanced_tiles`), with ``H`` the
  level's limit below. Above the innermost level values are capped at ``Q`` (so ``Q`` itself
  is there), at the innermost possibly over ``Q`` (padded). Then each level keeps only the
  values that can fit it: at most ``H``, the largest tile whose buffers fit the level's
  capacity with every other dim at its smallest value, single-buffered at the final widths
  (:func:`fit_limits`; a mapping's buffers only grow with every tile, double buffers and
  partial sums, so no mapping that fits is left out: the optimum is unchanged by this cap),
  keeping the smallest value when none fits (for the empty-space message). Sizes past what
  int64 counts hold are refused up front (:func:`check_sizes`: a dim over :data:`MAX_DIM`
  = 2^40, or an op's padded points x bytes per point over 2^62).
  A tile is used below a parent tile ``P`` only if it fits it (``t x w <= P``, innermost
  ``t <= roundup(ceil(P / w), a)``). Example: S=512, a=16: 512 256 176 128 112 96 80 64 48 32 16.
- loop orders: every permutation of the dims at every level above the innermost;
- double buffering: every subset of the moved tensors at every level that can double-buffer.

Pruning that provably loses nothing (:func:`canonical_orders`): the model's reuse rule treats
a loop that iterates once (its step >= its level's tile) as transparent, so such loops are
put last in dim order; and two adjacent loops indexed by exactly the same tensors (and used by
the same ops) can be swapped without changing any count: for a tensor indexed by both, both
advance it; for a tensor indexed by neither, the tensor's indexing loops inside either are the
same set, so the transitions advancing either keep or change the tile alike, and per outer
context the two loops give ``t_a*t_b - 1`` transitions in either order. In a chain of GEMMs
(seed 004's fused loop tree) two adjacent loops over private dims of different ops commute
too: each op's projection holds at most one of them, and the ops diverge at the outer one
either way, with the same loops below it (the same panel). Each run of such loops is kept in
dim order only. Tests check pruned optimum == brute force over the unpruned
space (:func:`iter_mappings`).

    >>> sp = Space.build(gemm(64, 64, 64), load_arch("aie-4x2"))
    >>> sp.values[0]["core"]["m"]      # core tile values of m without a split
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from math import ceil, isqrt
from typing import Iterator

import numpy as np

from ..errors import TilewiseError
from ..mapping import LevelMapping, Mapping, Spatial
from ..model.legality import below_array_refusal
from ..model.problem import Problem
from ..model.contiguity import run_axes
from ..model.rules import level_bytes
from .ladders import core0_padded, ladders
from ..model.structure import Structure


MAX_DIM = 2 ** 40    # elements: the largest dim size the search takes (module doc)
MAX_BYTES = 2 ** 62  # bytes: the int64 headroom the cost kernel keeps for its byte counts
PARTS = 32           # balanced tiles ceil(q / j) for j = 1 .. PARTS (module doc)
SMALL = 32           # ... and every balanced tile up to SMALL x the alignment


def check_sizes(workload, arch) -> None:
    """Refuse, with one line naming the value and the limit, a problem whose numbers the
    search cannot represent: a dim over :data:`MAX_DIM`, or an op whose padded points x the
    widest bytes per point of its tensors (partial sums at the accumulator width) exceed
    :data:`MAX_BYTES` (int64 byte counts could overflow). Padded: each dim rounded up by its
    alignment once per core of the array (the most any mapping pads)."""
    from ..model.footprint import partial_sum_bytes

    cores = arch.array.rows * arch.array.cols if arch.array is not None else 1
    align = {d: 1 for d in workload.sizes}
    try:
        align = workload.alignment(arch.alignment)
    except TilewiseError:
        pass
    for d, n in workload.sizes.items():
        if n > MAX_DIM:
            raise TilewiseError(f"dim {d} = {n} is above the search's limit of {MAX_DIM:,} "
                                "(2^40) elements per dim")
    for op in workload.ops:
        points = 1
        for d in op.dims:
            points *= workload.sizes[d] + align[d] * cores
        width = max(partial_sum_bytes(t, workload) for t in (op.output,) + tuple(op.inputs))
        if points * width > MAX_BYTES:
            sizes = " x ".join(f"{d}={workload.sizes[d]}" for d in op.dims)
            raise TilewiseError(f"op {op.name} ({sizes}) has ~{points:.3g} padded points x {width} "
                                f"B = {points * width:.3g} B, above the int64 limit of 2^62 "
                                f"= {MAX_BYTES:.3g} B the cost model counts bytes in")


def balanced_tiles(q: int, align: int, limit: int) -> np.ndarray:
    """The distinct ``ceil(q / j)`` for ``j = 1 .. q`` rounded up to ``align`` that are at
    most ``limit`` (elements), ascending ``int64``, in ``O(min(sqrt(q), limit))``: for
    ``j <= sqrt(q)`` directly; below, a value ``v`` is one iff ``ceil(q / ceil(q / v)) == v``."""
    r = isqrt(q)
    lim = limit // align * align      # up(v) <= limit  <=>  v <= lim
    if lim < 1:
        return np.zeros(0, np.int64)
    j = np.arange(max(1, -(-q // lim)), r + 2, dtype=np.int64)
    v = np.arange(1, min(r + 1, lim) + 1, dtype=np.int64)
    vals = np.concatenate([-(-q // j), v[-(-q // (-(-q // v))) == v]])
    vals = np.unique(-(-vals // align) * align)
    return vals[vals <= limit]


def aligned_divisors(q: int, align: int, limit: int) -> np.ndarray:
    """The divisors of ``q`` that are multiples of ``align`` and at most ``limit``, ascending
    ``int64``, by trial division up to ``min(sqrt(q), limit)``."""
    d = np.arange(1, min(isqrt(q), limit) + 1, dtype=np.int64)
    d = d[q % d == 0]
    d = np.unique(np.concatenate([d, q // d]))
    return d[(d % align == 0) & (d <= limit)]


def tile_values(size: int, ways: int, align: int, innermost: bool,
                limit: int | None = None) -> list[int]:
    """Candidate tiles (elements) of a dim of ``size`` split ``ways`` ways (the module doc's
    rule: balanced tiles for up to :data:`PARTS` parts, those up to :data:`SMALL` x ``align``,
    aligned divisors and, for a large dim, power-of-two multiples of ``align``), descending;
    those over ``limit`` (the largest that can fit the level, :func:`fit_limits`; None: no
    limit) left out, but never the smallest. Never a loop over the size."""
    q = -(-size // ways)
    up_q = -(-q // align) * align     # above the innermost, values over q count as q
    top = up_q if innermost else q
    hi = top if limit is None else max(1, min(limit, top))
    lim = up_q if hi >= q else hi
    j = np.arange(1, min(PARTS, q) + 1, dtype=np.int64)
    parts = [-(-(-(-q // j)) // align) * align,
             balanced_tiles(q, align, min(lim, SMALL * align)),
             aligned_divisors(q, align, lim)]
    if q > PARTS * SMALL * align:     # a large dim: its middle range by powers of two
        parts.append(align << np.arange(max(0, lim // align).bit_length(), dtype=np.int64))
    vals = np.concatenate(parts)
    if not innermost:
        vals = np.minimum(vals, q)
    vals = np.unique(vals[vals <= hi])
    return [int(x) for x in vals[::-1]] if len(vals) else [min(align, top)]


def pack_variants(st: Structure, pack) -> np.ndarray:
    """``[P, T]`` bool: the outermost-level layouts the search tries (:mod:`tilewise.model.contiguity`):
    ``"none"`` row-major only, ``"any"`` every subset of the tensors that can be packed (each
    axis one plain dim), a list of names: exactly those packed. Each choice costs one model call
    per leaf (like a double-buffer choice, it is enumerated, so the search stays exact)."""
    T = len(st.tensors)
    can = [i for i, t in enumerate(st.tensors)
           if t in st.moved and run_axes(t, st.dims) is not None]
    if isinstance(pack, str) and pack in ("none", "any"):
        n = len(can) if pack == "any" else 0
        v = np.zeros((2 ** n, T), bool)
        for b, i in enumerate(can[:n]):
            v[:, i] = (np.arange(2 ** n) >> b) & 1
        return v
    names = [st.tensors[i].name for i in can]
    if isinstance(pack, str) or not all(isinstance(x, str) and x in names for x in pack):
        raise TilewiseError(f"pack={pack!r}; valid: 'none', 'any' or a list of tensors to pack "
                            f"from {names}")
    v = np.zeros((1, T), bool)
    v[0, [can[names.index(x)] for x in pack]] = True
    return v


def fit_limits(problem: Problem, k: int, ways: list[int], align: list[int],
               innermost: bool) -> list[int | None]:
    """Per dim, the largest tile (elements) that level ``k`` can hold with every other dim at
    its smallest candidate (``min(align, ceil(size / ways))``; the alignment at the innermost)
    and single buffers at their final widths (:func:`~tilewise.model.rules.level_bytes`, the
    model's rule; a mapping's buffers are never smaller: they grow with every tile, double
    buffers and partial sums only add); 0 when not even the smallest fits, None when the
    level is unbounded. No tile over it is in a mapping that fits (module doc)."""
    cap = float(problem.summed_levels().capacity[k])   # what the buffers summed may take
    sizes, desc = problem.dims.sizes, problem.buffers
    D = len(ways)
    q = [-(-int(sizes[j]) // ways[j]) for j in range(D)]
    top = [-(-q[j] // align[j]) * align[j] if innermost else q[j] for j in range(D)]
    small = np.array([align[j] if innermost else min(align[j], q[j]) for j in range(D)], np.int64)
    if not np.isfinite(cap):
        return [None] * D
    fits = lambda tl: level_bytes(k, tl, sizes, desc) <= cap
    out = []
    for j in range(D):
        tl = small.copy()
        lo, hi = 0, top[j]      # the largest fitting tile lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi + 1) // 2
            tl[j] = mid
            lo, hi = (mid, hi) if fits(tl) else (lo, mid - 1)
        out.append(lo)
    return out


@dataclass(frozen=True)
class Split:
    """A spatial choice: ``rows`` / ``cols`` are ``(dim index, ways)`` or None."""

    rows: tuple[int, int] | None
    cols: tuple[int, int] | None

    def merged(self, n_dims: int, reduce_rows: bool) -> np.ndarray:
        """:meth:`ways` without the ways whose partials merge through the parent level (the
        cols split; the rows split unless the array ``reduce_cols``): what the partial-sum
        width rule sees (:func:`tilewise.model.legality.merged_ways`)."""
        w = np.ones(n_dims, np.int64)
        if self.rows and reduce_rows:
            w[self.rows[0]] *= self.rows[1]
        return w

    def ways(self, n_dims: int) -> np.ndarray:
        w = np.ones(n_dims, np.int64)
        for sp in (self.rows, self.cols):
            if sp:
                w[sp[0]] *= sp[1]  # a dim on both axes: rows x cols ways
        return w

    def text(self, dims) -> str:
        parts = [f"{axis}={dims[sp[0]]}{sp[1]}" for axis, sp in (("rows", self.rows), ("cols", self.cols)) if sp]
        return " ".join(parts) or "none"


def spatial_choices(st: Structure, allow: str | list[str] = "any") -> list[Split]:
    """The declared spatial splits (module doc); ``allow`` "none", "any" or a list of texts
    such as ``"rows=n4 cols=m2"`` (``"none"`` for no split)."""
    wl, arch, dims = st.workload, st.arch, st.dims
    out = [Split(None, None)]
    if arch.array is None:
        splits = out
    else:
        chain = len(wl.ops) > 1
        red = {d for op in wl.ops for d in op.reduction_dims}

        named = allow not in ("any", "none")  # some splits only when named (module doc)
        below = st.array_level != st.n_levels - 1  # private levels below the array

        def axis_opts(axis: str):
            opts: list = [None]
            for j, d in enumerate(dims):
                if chain and (d not in st.spine | st.mergeable or (d in red and d not in st.mergeable)):
                    continue
                if chain and d in red and d in st.spine and not named:
                    continue  # attention's keys over cores: only when named
                if below and below_array_refusal(st, d):
                    continue
                if d in red and (axis != "rows" or not arch.array.reduce_cols) and \
                        not (named and d in st.parent_mergeable):
                    continue
                # more ways than elements only idles cores: dominated by fewer ways
                opts += [(j, w) for w in range(2, min(getattr(arch.array, axis), wl.sizes[d]) + 1)]
            return opts

        # a dim on both axes: rows x cols ways, at most its size
        splits = [Split(r, c) for r in axis_opts("rows") for c in axis_opts("cols")
                  if not (r and c and r[0] == c[0] and r[1] * c[1] > wl.sizes[dims[r[0]]])]
    if allow == "any":
        return splits
    wanted = ["none"] if allow == "none" else [allow] if isinstance(allow, str) else allow
    if not isinstance(wanted, (list, tuple)) or not all(isinstance(t, str) for t in wanted):
        raise TilewiseError(f"spatial={allow!r}: give 'any', 'none', a split such as "
                            "'rows=m4 cols=n2', or a list of them")
    by_text = {s.text(dims): s for s in splits}
    out = []
    for text in wanted:
        key = " ".join(sorted(text.split(), key=lambda p: not p.startswith("rows"))) or "none"
        if key not in by_text:
            raise TilewiseError(f"spatial={text!r} is not in the space of {arch.name}; valid: "
                                + ", ".join(sorted(by_text)))
        out.append(by_text[key])
    return out


def signatures(st: Structure) -> list[tuple]:
    """Per dim: the tensors indexing it, the ops using it, and whether it is a private dim of
    a chain of GEMMs (:attr:`.Structure.projected`); adjacent loops commute by
    :func:`commutes`."""
    wl = st.workload
    return [(frozenset(t.name for t in wl.tensors if d in t.dims),
             frozenset(op.name for op in wl.ops if d in op.dims),
             st.projected and d not in st.spine) for d in st.dims]


def commutes(sa: tuple, sb: tuple) -> bool:
    """Whether two adjacent loops with :func:`signatures` ``sa``, ``sb`` can be swapped at no
    cost: equal signatures, or private dims of different ops of a chain of GEMMs."""
    return sa == sb or (sa[2] and sb[2] and not sa[1] & sb[1])


def canonical_orders(real: tuple[bool, ...], sig: list[tuple]) -> np.ndarray:
    """Loop orders (dim indices, outermost first) kept for one level whose real loops are
    ``real``: permutations of the real dims with each run of adjacent equal-signature dims in
    increasing dim order, then the loops that iterate once in dim order. ``[n, D]`` int64."""
    r = [j for j, x in enumerate(real) if x]
    rest = [j for j, x in enumerate(real) if not x]
    out = []
    for p in itertools.permutations(r):
        if all(not (a > b and commutes(sig[a], sig[b])) for a, b in zip(p, p[1:])):
            out.append(list(p) + rest)
    return np.array(out, np.int64).reshape(len(out), len(real))


@dataclass(frozen=True)
class TileLadders:
    """Tile ladders of one dim (a ladder: one tile per level, each fitting in the one above;
    "chain" is kept for operator chains): ``tiles [n, L]`` elements (level 0 = the size),
    ``counts [n, L]`` tiles visited per level over the whole run (level 0: 1), ``padded [n]``
    elements one core computes, ``padded_all [n]`` elements all cores compute (innermost tiles
    over every core x the innermost tile: the model's padded points per dim)."""

    tiles: np.ndarray
    counts: np.ndarray
    padded: np.ndarray
    padded_all: np.ndarray


@dataclass
class Space:
    """The declared space of one (workload, arch), per spatial split."""

    st: Structure
    splits: list[Split]
    values: list[dict]                       # per split: {level name: {dim: [tile values]}}
    moved: list[int]                         # tensor indices (Structure.tensors) that move
    db_levels: list[int]                     # levels that may double-buffer
    db_mode: object = "any"
    orders_allowed: list | None = None
    fixed: dict = field(default_factory=dict)
    max_core: dict = field(default_factory=dict)
    pack_mode: object = "none"
    problem: Problem | None = field(default=None, repr=False)  # the model's description
    ladder_cache: dict = field(default_factory=dict, repr=False)  # (dim, ways, values) -> ladders

    @classmethod
    def build(cls, workload, arch, spatial="any", double_buffer="any", orders=None,
              tiles=None, max_core_tile=None, pack="none") -> "Space":
        check_sizes(workload, arch)
        st = Structure(workload, arch)
        dims, L = st.dims, st.n_levels
        if L < 2:
            raise TilewiseError(f"arch {arch.name} has one memory level; tiling needs two")
        problem = Problem.build(workload, arch)
        fixed = {}
        align = workload.alignment(arch.alignment)
        for lvname, tt in (tiles or {}).items():
            k = [lv.name for lv in arch.levels].index(arch.level(lvname).name)
            for d, v in tt.items():
                if d not in dims:
                    raise TilewiseError(f"tiles={{{lvname!r}: ...}}: unknown dim {d!r}; dims: {', '.join(dims)}")
                where = f"tiles={{{lvname!r}: {{{d!r}: {v!r}}}}}"
                size = workload.sizes[d]
                top = -(-size // align[d]) * align[d] if k == L - 1 else size  # innermost: padded
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= top:
                    raise TilewiseError(f"{where}: a tile must be an integer in 1 .. {top} "
                                        f"({d} has size {size})")
                if k == L - 1 and v % align[d]:
                    raise TilewiseError(f"{where}: the innermost tile of {d} must be a multiple of its "
                                        f"alignment {align[d]} on {arch.name}")
                fixed[(k, d)] = int(v)
        max_core = dict(max_core_tile or {})
        for d in max_core:
            if d not in dims:
                raise TilewiseError(f"max_core_tile: unknown dim {d!r}; dims: {', '.join(dims)}")
        splits = spatial_choices(st, spatial)
        values = []
        for sp in splits:
            w = sp.ways(len(dims))
            per = {}
            for k in range(1, L):
                inner = k == L - 1
                ways = [int(w[j]) if k == st.array_level else 1 for j in range(len(dims))]
                limits = fit_limits(problem, k, ways, [align[d] for d in dims], inner)
                vd = {}
                for j, d in enumerate(dims):
                    v = tile_values(workload.sizes[d], ways[j], align[d], inner, limits[j])
                    if inner and d in max_core:
                        v = [x for x in v if x <= max_core[d]]
                    if (k, d) in fixed:
                        v = [fixed[(k, d)]]
                    vd[d] = v
                per[arch.levels[k].name] = vd
            values.append(per)
        moved = [i for i, t in enumerate(st.tensors) if t.name not in st.intermediate_names]
        db_levels = [k for k in range(1, L) if arch.levels[k].double_buffer]
        if orders is not None:
            orders = [tuple(dims.index(c) for c in _order(o, dims)) for o in orders]
        if double_buffer not in ("any", "all", "none") and not isinstance(double_buffer, dict):
            raise TilewiseError(f"double_buffer={double_buffer!r}; valid: 'any', 'all', 'none' or "
                                "a dict {level: [tensors]}")
        return cls(st, splits, values, moved, db_levels, double_buffer, orders, fixed, max_core,
                   pack_variants(st, pack), problem=problem)

    # ----- double buffering -----

    def db_variants(self) -> np.ndarray:
        """``[V, L, T]`` bool: the declared double-buffer choices (T = moved tensors)."""
        L, T = self.st.n_levels, len(self.moved)
        names = [self.st.tensors[t].name for t in self.moved]
        if isinstance(self.db_mode, dict):
            v = np.zeros((1, L, T), bool)
            for lvname, tensors in self.db_mode.items():
                k = [x.name for x in self.st.arch.levels].index(self.st.arch.level(lvname).name)
                if k not in self.db_levels:
                    raise TilewiseError(f"double_buffer: level {lvname} cannot double-buffer; "
                                        f"levels that can: {', '.join(self.st.arch.levels[j].name for j in self.db_levels)}")
                for tn in tensors:
                    if tn not in names:
                        raise TilewiseError(f"double_buffer: {tn!r} is not a moved tensor; valid: {', '.join(names)}")
                    if not self.st.held[k, self.moved[names.index(tn)]]:
                        raise TilewiseError(f"double_buffer: level {lvname} does not hold {tn} "
                                            f"(it holds {', '.join(self.st.arch.levels[k].holds)})")
                    v[0, k, names.index(tn)] = True
            return v
        # a level double-buffers only tensors it holds (Level.holds)
        slots = [(k, t) for k in self.db_levels for t in range(T) if self.st.held[k, self.moved[t]]]
        if self.db_mode == "none" or not slots:
            return np.zeros((1, L, T), bool)
        if self.db_mode == "all":
            v = np.zeros((1, L, T), bool)
            for k, t in slots:
                v[0, k, t] = True
            return v
        n = len(slots)
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        v = np.zeros((2 ** n, L, T), bool)
        for i, (k, t) in enumerate(slots):
            v[:, k, t] = bits[:, i].astype(bool)
        return v

    def pack_variants(self) -> np.ndarray:
        """``[P, T]`` bool (all tensors): the declared pack choices at the outermost level."""
        return self.pack_mode

    # ----- per-dim tile ladders and their products -----

    def dim_ladders(self, s: int, j: int) -> "TileLadders":
        """Every ladder of tiles (levels 1 .. L-1) of dim ``j`` under split ``s``, with the number
        of tiles visited per level (the model's loop iterations) and the padded extent one core
        computes (innermost count x innermost tile)."""
        st, arch = self.st, self.st.arch
        L, d = st.n_levels, st.dims[j]
        w = int(self.splits[s].ways(len(st.dims))[j])
        vals = tuple(tuple(self.values[s][arch.levels[k].name][d]) for k in range(1, L))
        key = (j, w, vals)  # splits that cut dim j alike share its ladders
        if key not in self.ladder_cache:
            self.ladder_cache[key] = self._ladders_of(j, w, vals)
        return self.ladder_cache[key]

    def _ladders_of(self, j: int, w: int, vals: tuple) -> "TileLadders":
        st, arch = self.st, self.st.arch
        L, d = st.n_levels, st.dims[j]
        a = st.workload.alignment(arch.alignment)[d]
        n = np.array([len(v) for v in vals], np.int64)
        flat = np.array([t for v in vals for t in v], np.int64)
        at = -1 if st.array_level is None else int(st.array_level)  # -1: no array
        tiles, counts, padded_all = ladders(int(st.sizes[j]), int(w), int(a), L, at, flat,
                                            np.cumsum(n) - n, np.cumsum(n))
        one = (counts[:, L - 1] * tiles[:, L - 1] if not 0 <= at < L - 1 or w == 1 else
               core0_padded(int(st.sizes[j]), tiles, int(w), at))  # below the array: core 0's
        return TileLadders(tiles, counts, one, padded_all)

    def real_loops(self, tiles: np.ndarray, ways: np.ndarray) -> np.ndarray:
        """``[n, L-1, D]`` bool: the loop over dim d at level k iterates more than once (its
        step, the level k+1 tile x the ways ``[n, D]`` at the array level, is below the level-k
        tile ``tiles [n, L, D]``)."""
        st = self.st
        out = np.zeros((len(tiles), st.n_levels - 1, len(st.dims)), bool)
        for k in range(st.n_levels - 1):
            step = tiles[:, k + 1, :] * (ways if k + 1 == st.array_level else 1)
            out[:, k, :] = step < tiles[:, k, :]
        return out

    def orders_for(self, real: tuple[bool, ...]) -> np.ndarray:
        """Canonical orders of one level (see :func:`canonical_orders`), filtered by ``orders=``."""
        sig = signatures(self.st)
        o = canonical_orders(real, sig)
        if self.orders_allowed is not None:
            # an allowed order matches the canonical one it equals on the real loops, once its
            # adjacent equal-signature loops are put in dim order (they commute: same cost)
            r = [j for j, x in enumerate(real) if x]
            allowed = {tuple(_commute_sorted([j for j in a if j in r], sig))
                       for a in self.orders_allowed}
            keep = [i for i, row in enumerate(o) if tuple(j for j in row if j in r) in allowed]
            o = o[keep]
        return o


def _commute_sorted(loops: list[int], sig: list[tuple]) -> list[int]:
    """``loops`` with every adjacent pair of commuting dims (:func:`commutes`) swapped into dim
    order until none is left: a canonical representative of the orders equal to it in cost."""
    loops = list(loops)
    swapped = True
    while swapped:
        swapped = False
        for i in range(len(loops) - 1):
            a, b = loops[i], loops[i + 1]
            if a > b and commutes(sig[a], sig[b]):
                loops[i], loops[i + 1] = b, a
                swapped = True
    return loops


def _order(text: str, dims) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in text.split(",")) if "," in text else tuple(text)
    if sorted(parts) != sorted(dims):
        raise TilewiseError(f"orders: {text!r} is not a permutation of the dims {', '.join(dims)}")
    return parts


def iter_mappings(space: Space) -> Iterator[Mapping]:
    """Every mapping of the *unpruned* declared space (all permutations at every level, every
    double-buffer choice, no capacity filter), one by one: the brute force the tests compare
    the pruned search with. Small problems only."""
    st, arch = space.st, space.st.arch
    dims, L = st.dims, st.n_levels
    names = [st.tensors[t].name for t in space.moved]
    sizes = st.workload.sizes
    perms = list(itertools.permutations(dims))
    if space.orders_allowed is not None:
        perms = [tuple(dims[j] for j in o) for o in space.orders_allowed]
    dbs = space.db_variants()
    for s, sp in enumerate(space.splits):
        w = dict(zip(dims, (int(x) for x in sp.ways(len(dims)))))
        rows = Spatial(dims[sp.rows[0]], sp.rows[1]) if sp.rows else None
        cols = Spatial(dims[sp.cols[0]], sp.cols[1]) if sp.cols else None

        def ladders(k, parent):
            if k == L:
                yield []
                return
            lv = arch.levels[k]
            per = []
            for d in dims:
                ww = w[d] if k == st.array_level else 1
                a = st.workload.alignment(arch.alignment)[d]
                lim = -(-ceil(parent[d] / ww) // a) * a if k == L - 1 else parent[d] // ww
                per.append([v for v in space.values[s][lv.name][d] if v <= lim])
            for combo in itertools.product(*per):
                t = dict(zip(dims, combo))
                for rest in ladders(k + 1, t):
                    yield [t] + rest

        for tl in ladders(1, dict(sizes)):
            all_tiles = [dict(sizes)] + tl
            for ords in itertools.product(perms, repeat=L - 1):
                for v, pk in itertools.product(dbs, space.pack_variants()):
                    levels = []
                    for k in range(L):
                        db = frozenset(n for i, n in enumerate(names) if v[k, i])
                        pack = frozenset(t.name for t, p in zip(st.tensors, pk) if p and k == 0)
                        levels.append(LevelMapping(arch.levels[k].name,
                                                   tuple((d, all_tiles[k][d]) for d in dims),
                                                   ords[k] if k < L - 1 else (), frozenset(), db,
                                                   pack))
                    yield Mapping(tuple(levels), rows, cols)
