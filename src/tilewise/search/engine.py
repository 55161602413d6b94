"""The search engine of one (workload, arch, space): its tables, node stand-ins, bounds and leaves.

:class:`Engine` holds what the walk (:mod:`.walk`) reads: the tile-ladder groups per dim
(:mod:`.groups`), the stages (per level ``k = 1 .. L-1`` the level-``k`` tile of each dim, then
the level ``k-1`` loop order), the links' bandwidths, the capacities and the chain rules. It
turns nodes (:class:`.Nodes`) into stand-in tiles (:class:`.StandIns`) and lower bounds of the
objective from the one cost model (:mod:`.bound`): the kernel evaluates each tensor under its own
least-traffic orders for the open levels, with the open tiles at their most favourable
stand-ins, and the latency formula is minimized over the double-buffer choices that fit. Nodes
whose smallest buffers overflow a level, or that the chain rules make illegal whatever their
orders, are dropped before any model call. A leaf is a full mapping: every double-buffer choice
of it is costed (:func:`.bound.variant_latencies`, checked against :func:`tilewise.evaluate`)
into a :class:`.Pool`. Every rule (capacity, buffer bytes, link times, latency, energy, the
compute-bound minimum, chain legality) is the model's (:mod:`tilewise.model.rules`, over the
problem description :class:`tilewise.model.problem.Problem` built once per engine). Under a
chain's ``memory="max"`` the capacity checks on buffer sums take the model's relaxation of
its rule (:meth:`~tilewise.model.problem.Problem.summed_levels`) and the leaves are fitted
by the rule itself (:meth:`Engine._rule_fits`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import SpecError
from ..model.batch import MappingBatch
from ..model.cost import evaluate_batch
from ..model.rules import link_instances, require_energy
from .bound import (OBJ_CODE, Traffic, best_variant, favorable_orders, level_subsets,
                    op_points, variant_latencies)
from .buffers import BufferTable
from .calls import CallFloor, CallFloors, Coupling
from .chain_rules import ChainRules
from .custom import BASE, Custom
from .exposure import Exposure, exposure
from .floors import MAX_ORDERS, maximal_combos
from .groups import prefix_groups
from .nodes import Nodes, Stage, StandIns, expand_ranges
from .order_trie import OrderTrie
from .pool import SLACK, Pool, Ranking
from .space import Space
from .stats import SearchStats
from .visits import VisitMemo, VisitTable, box_floors, node_floors
from .anytime import on_time

ROWS = 1 << 14      # nodes bounded per model call (x moved tensors while orders are open)
FLOOR_ROWS = 1 << 16  # tile combos per model call of the level floors (:meth:`Engine.floors`)
TIMED_ROWS = 1 << 12  # the same under a deadline, checked between calls (up to ~25 us a row)
# SLACK (relative, from .pool): a float bound within rounding of a kept value is kept


@dataclass(frozen=True)
class RunConfig:
    """What one walk minimizes: ``objectives`` the bound columns (a top-k walk: the objective
    then its secondary keys; a Pareto walk: its two metrics), ``rank`` the objective its
    leaves are ranked by, ``ranking`` the top-k walk's rank order (:class:`.Ranking`)."""

    objectives: tuple[str, ...]
    rank: str
    ranking: Ranking | None = None
    floor_levels: tuple[bool, ...] = ()

    @classmethod
    def of(cls, arch, objectives: tuple[str, ...], rank: str,
           ranking: Ranking | None = None, workload=None) -> "RunConfig":
        """SpecError naming the missing numbers when an objective needs energy the arch lacks
        (for ``workload``: an energy per MAC for each of its ops' dtypes)."""
        if any(o in ("energy", "edp") for o in objectives + (rank,)):
            require_energy(arch, workload)
        return cls(objectives, rank, ranking)


def has_energy(arch, workload=None) -> bool:
    """Whether ``arch`` gives the energy numbers the model needs (:func:`require_energy`),
    for ``workload``'s dtypes when given."""
    try:
        require_energy(arch, workload)
    except SpecError:
        return False
    return True


class Engine:
    """One (workload, arch, space): the tables, stand-ins, bounds and leaf costs of the branch
    and bound over the declared space (module doc; the walk is :mod:`.walk`).

    A node fixes the split, the tile ladders of the first dims of :attr:`dim_order` and the loop
    orders of the first levels; its bound (:mod:`.bound`) does not exceed the objective of any
    mapping below it. A leaf is a full mapping; its bound is its least objective over double
    buffering.
    """

    def __init__(self, workload, arch, constraints: dict):
        self.workload, self.arch = workload, arch
        self.deadline = None   # a time-limited walk's (:mod:`.anytime`), checked in long calls
        self.has_energy = has_energy(arch, workload)  # every energy number this workload needs
        self.space = Space.build(workload, arch, **constraints)
        st = self.st = self.space.st
        self.L, self.D = st.n_levels, len(st.dims)
        self.T = len(st.tensors)
        self.set_db_variants(self.space.db_variants())
        self.problem = self.space.problem  # the model's description, built once
        self.problem.require_rates()
        # bounds count exact bytes: rounding runs to granules only adds (model.contiguity), and
        # a tile larger than another can move more rounded bytes, so stand-ins bound exact bytes
        self.bound_problem = self.problem.exact_bytes()
        self.min_time_s = self.problem.compute.ideal  # the compute-bound minimum (s)
        self.op_dims = [[st.dims.index(d) for d in op.dims] for op in workload.ops]
        # bytes the buffers of a level summed may take (the model's rule; memory="max": a
        # relaxation, Problem.summed_levels, the leaves checked by the rule itself)
        self.prune_levels = self.problem.summed_levels()
        self.share = self.problem.footprint_share()
        self.cap = self.prune_levels.capacity
        self._split_tables()
        chain = self.problem.chain  # the model's chain rules: spine and forbidden dims
        self.chain_rules = (ChainRules(chain.spine, chain.forbidden, chain.projected)
                            if chain.chain else None)
        self._order_tables()
        self.visit_table = VisitTable.of(st, self.problem, self.space.moved)
        self._stages()
        self._tries: dict = {}
        self.buf = BufferTable(self.space, self.problem)
        # whether some pack choice packs a tensor (a packed tile moves as one run): then the
        # bounds count exact bytes, else a full mapping's own rounded bytes, and the visit
        # floors round rows to each link's granule (search/visits.py)
        self.may_pack = bool(self.space.pack_variants().any())
        self.run_granule = (np.ones(self.L) if self.may_pack
                            else self.problem.levels.granule.astype(float))
        self._visit_memo: dict[int, VisitMemo] = {}
        self._held_tables()
        self._call_floors: tuple | None = None

    def _held_tables(self) -> None:
        """Levels that hold only some tensors (``Level.holds``): the level whose bytes of each
        tensor cross each link (``link_src [L, T]``, the nearest level at or below the link
        that keeps the tensor; ``L``: none) and the part of each level's capacity each moved
        tensor's buffer is allocated in (``slot_part [L, Tm]``; fused intermediates and state
        in part 0), with the parts' bytes (``part_cap [L, P]``)."""
        L, T = self.L, self.T
        held = ~self.problem.forced
        self.folded = bool(self.problem.forced.any())
        self.link_src = np.full((L, T), L, np.int64)
        for t in range(T):
            for l in range(L - 1, -1, -1):
                self.link_src[l, t] = l if held[l, t] else (self.link_src[l + 1, t] if l < L - 1 else L)
        self.part_cap = self.prune_levels.part_cap
        self.slot_part = np.zeros((L, self.buf.n_moved), np.int64)
        for f, i in enumerate(self.buf.slot):
            if i >= 0:
                self.slot_part[:, i] = self.problem.buffers.part[f]

    def over_capacity(self, bufs: np.ndarray, other: np.ndarray) -> np.ndarray:
        """``[..., L]`` bool: levels whose buffers (bytes per moved tensor ``bufs [..., L, Tm]``,
        other buffers ``other [..., L]``) exceed a part of their capacity (the model's rule,
        :func:`tilewise.model.rules.part_capacity`; one part, the level, unless it reserves
        bytes for some tensors)."""
        over = bufs.sum(-1) + other > self.cap
        for p in range(1 if self.part_cap.shape[1] == 1 else 0, self.part_cap.shape[1]):
            mine = (bufs * (self.slot_part == p)).sum(-1) + (other if p == 0 else 0)
            over |= mine > self.part_cap[:, p]
        return over

    def link_traffic(self, tr: Traffic) -> Traffic:
        """``tr`` (bytes and transfers into each level) as what crosses each link: a tensor's
        bytes into the nearest level at or below the link that keeps it (:attr:`link_src`;
        the model's rule for bypassed levels, :func:`tilewise.model.kernel._links`)."""
        if not self.folded:
            return tr
        return Traffic(*(self._fold(x) for x in tr))

    def _fold(self, x: np.ndarray) -> np.ndarray:
        """``x [n, L, T]`` per level -> per link by :attr:`link_src` (0 where none keeps it)."""
        pad = np.concatenate([x, np.zeros_like(x[:, :1])], 1)
        return pad[:, self.link_src, np.arange(self.T)[None, :]]

    def _split_tables(self) -> None:
        """Per split: the tile ladders and their groups per dim, the ladder counts, the split as
        ``[rows dim, ways, cols dim, ways]``, the ways per dim, the links' bandwidths (bytes/s,
        :func:`tilewise.model.rules.link_instances`)."""
        S, L, D = len(self.space.splits), self.L, self.D
        self.ladders = [[self.space.dim_ladders(s, j) for j in range(D)] for s in range(S)]
        self.split_arr = np.array([[sp.rows[0] if sp.rows else -1, sp.rows[1] if sp.rows else 1,
                                    sp.cols[0] if sp.cols else -1, sp.cols[1] if sp.cols else 1]
                                   for sp in self.space.splits], np.int64)
        self.ways = np.array([sp.ways(D) for sp in self.space.splits], np.int64).reshape(S, D)
        self.merged = np.array([sp.merged(D, self.problem.levels.reduce_rows)
                                for sp in self.space.splits], np.int64).reshape(S, D)
        used = self.split_arr[:, 1] * self.split_arr[:, 3]
        lv = self.problem.levels
        ins = np.array([[link_instances(lv.instances, l, lv.link_array, u) for l in range(L)]
                        for u in used], float).reshape(S, L)
        self.rbw, self.wbw = lv.read_bw[None, :] * ins, lv.write_bw[None, :] * ins  # [S, L]
        self.xfs = lv.xfer_s[None, :] / ins  # seconds per transfer on each link [S, L]
        self.n_ladders = np.array([[len(self.ladders[s][j].padded) for j in range(D)]
                                   for s in range(S)], np.int64).reshape(S, D)
        self.groups = [prefix_groups([self.ladders[s][j] for s in range(S)], L) for j in range(D)]
        # every ladder's innermost tile and padded extent, dim after dim, and the calls a
        # padded point costs per op: what couples a node's padding with its calls
        n_lad = [len(self.groups[j][0].inner) for j in range(D)]
        c = self.problem.compute
        self.coupling = (np.concatenate([g[0].inner for g in self.groups]).astype(np.int64),
                         np.concatenate([g[0].padded for g in self.groups]).astype(np.int64),
                         np.concatenate([[0], np.cumsum(n_lad)]).astype(np.int64),
                         np.asarray(c.op_pp / c.op_rate / c.call if c.call > 0
                                    else np.zeros(len(c.op_pp)), float))

    def _order_tables(self) -> None:
        """Per moved tensor its favourable order (``fav``) and ranks for completing partial
        orders (``prio``); for the chain rules, spine dims first (``prio_legal``)."""
        rules = self.chain_rules  # spine dims first where the rules put them first
        spine = rules.spine if rules is not None and not rules.projected else None
        self.fav = favorable_orders(self.st, self.space.moved, spine)
        self.prio = np.argsort(self.fav, axis=1)
        self.prio_legal = np.argsort(sorted(range(self.D), key=lambda j: (
            0 if spine is None or spine[j] else 1, j)))
        self.moved_idx = np.array(self.space.moved, np.int64)

    def _stages(self) -> None:
        """The stages (:class:`.Stage`) and per stage the levels fixed per dim (``depth``) and
        the levels whose order is fixed (``n_fixed``). Dims with few ladders come first (small
        fan-out near the root, where bounds are loosest); a dim with one ladder in every split
        (a size-1 dim, a fixed tile) is fixed at the root. At the array level the dims some
        split divides come first: their core tiles decide the regions the cores walk, which
        the floors of the cores' own levels take where they apply (:meth:`_slice_floors`;
        with a core tile open only the looser :func:`.visits.box_floors`). Seed 001's packed
        BRGEMM on cpu-6core, split over ``n``: 166,389 -> 29,693 nodes. At a cache level
        (lines: ``block_bytes > 1``) the dims along which more moved tensors' rows run come
        before the others of their group: their tiles decide how many lines each row of a
        visit takes (:mod:`.visits`, *Runs*), so the floors tighten a stage earlier (the
        BRGEMM: 31,649 -> 18,512 nodes, 3.81 -> 2.00 s; GEMM 512x512x1024 f32: 6,221 -> 5,022;
        the same top 5)."""
        L, D = self.L, self.D
        self.dim_order = sorted(range(D), key=lambda j: (int(self.n_ladders[:, j].max()), j))
        self.single = (self.n_ladders == 1).all(0)
        per_core = (self.visit_table is not None and self.st.array_level is not None
                    and self._cores_sum_at_array())
        split = (self.ways > 1).any(0) & per_core
        rows = np.zeros(D, np.int64)   # per dim, the moved tensors whose rows run along it
        if self.visit_table is not None:
            np.add.at(rows, self.visit_table.last, 1)
        self.stages = []
        for k in range(1, L):
            lines = self.arch.levels[k].block_bytes > 1 and self.visit_table is not None
            order = sorted(self.dim_order, key=lambda j: (
                k == self.st.array_level and not split[j], -rows[j] if lines else 0))
            self.stages += [Stage("tile", k, j) for j in order if not self.single[j]]
            self.stages.append(Stage("order", k - 1, -1))
        self.depth = np.zeros((len(self.stages) + 1, D), np.int64)  # levels fixed per dim
        self.depth[0, self.single] = L - 1
        self.n_fixed = np.zeros(len(self.stages) + 1, np.int64)      # levels whose order is fixed
        for i, (kind, k, j) in enumerate(self.stages):
            self.depth[i + 1] = self.depth[i]
            self.n_fixed[i + 1] = self.n_fixed[i] + (kind == "order")
            if kind == "tile":
                self.depth[i + 1, j] = k

    def set_db_variants(self, dbv: np.ndarray) -> None:
        """The double-buffer choices ``dbv [V, L, moved]`` every mapping is costed under."""
        self.db = np.zeros((len(dbv), self.L, self.T), bool)
        self.db[:, :, self.space.moved] = dbv
        self.dbm = dbv
        self.db_subs = level_subsets(dbv)

    def call_floors(self) -> CallFloors | None:
        """The floors of the kernel calls (:mod:`.calls`) for the current double-buffer
        choices, built once per choice set; None where calls cost nothing or the floor is
        off (too many combos)."""
        if self.problem.compute.call <= 0:
            return None
        subs, nsub, _ = self.db_subs
        if self._call_floors is None or self._call_floors[0] is not subs:
            xp = exposure(self.problem, self.moved_idx, subs[self.L - 1], int(nsub[self.L - 1]),
                          self.ways, self.rbw[:, self.L - 1], self.wbw[:, self.L - 1])
            cf = CallFloors(self.space, self.problem, self.buf.slot, subs[self.L - 1],
                            int(nsub[self.L - 1]), xp)
            self._call_floors = (subs, cf if cf.ok else None)
        return self._call_floors[1]

    def exposure(self) -> Exposure | None:
        """The tables of the joint floor of calls and exposed bytes (:mod:`.exposure`) for
        the current double-buffer choices; None where it does not apply."""
        cf = self.call_floors()
        return None if cf is None else cf.exposure

    def tile_combos(self) -> int:
        """The size of the tile space: ladder combinations summed over the splits."""
        return int(sum(np.prod(self.n_ladders[s], dtype=np.int64) for s in range(len(self.n_ladders))))

    def new_stats(self) -> SearchStats:
        return SearchStats(tile_combos=self.tile_combos())

    def config(self, objectives: tuple[str, ...], rank: str | None = None,
               ranking: Ranking | None = None) -> RunConfig:
        """The run configuration bounding ``objectives`` and ranking leaves by ``rank``
        (default the first objective); ``ranking`` the top-k walk's rank order."""
        return RunConfig.of(self.arch, tuple(objectives), rank or objectives[0], ranking,
                            self.workload)

    def ranking(self, objective: str, then=None, tolerance: float = 0.0) -> Ranking:
        """The rank order for ``objective``: secondary keys ``then`` (None: latency, energy,
        traffic without the objective and, where the arch has no energy numbers, without
        energy), objectives within ``tolerance`` (relative) of the optimum tied."""
        if then is None:
            then = tuple(k for k in ("latency", "energy", "traffic")
                         if k != objective and (k != "energy" or self.has_energy))
        then = tuple(dict.fromkeys(k for k in then if k != objective))
        return Ranking(objective, then, float(tolerance))

    def trie(self, real_key: tuple) -> OrderTrie:
        """The canonical orders of one level with real loops ``real_key`` (bools per dim) as
        a trie from the innermost loop outward (:mod:`.order_trie`); built once."""
        if real_key not in self._tries:
            self._tries[real_key] = OrderTrie.build(self.space.orders_for(real_key), sum(real_key))
        return self._tries[real_key]

    # ----- stand-ins -----

    def assemble(self, gid: np.ndarray, stage: int, s: np.ndarray | None = None):
        """Per node: tiles for traffic (open levels at their largest), tiles for footprint
        (open levels at their smallest), counts (most) ``[n, L, D]`` and padded extents
        ``[n, D]`` (least), elements, over the ladders of each dim's group ``gid [n, D]``. With
        the splits ``s [n]`` of a chain, the footprint tiles also obey the loops the chain
        rules keep from iterating (:meth:`.ChainRules.force_small`)."""
        n, L, D = len(gid), self.L, self.D
        tt = np.empty((n, L, D), np.int64)
        tm = np.empty((n, L, D), np.int64)
        cnt = np.empty((n, L, D), np.int64)
        pad = np.empty((n, D), np.int64)
        for j in range(D):
            g = self.groups[j][self.depth[stage, j]]
            tt[:, :, j] = g.whole[gid[:, j]]
            tm[:, :, j] = g.small[gid[:, j]]
            cnt[:, :, j] = g.max_counts[gid[:, j]]
            pad[:, j] = g.min_padded[gid[:, j]]
        if s is not None:
            self._keep_whole(tt, s, stage)
        if s is not None and self.chain_rules is not None:
            self.chain_rules.force_small(tm, self.fixed_real_loops(tt, s, stage), self.ways[s],
                                         self.depth[stage], self.st.array_level)
        return tt, tm, cnt, pad

    def _keep_whole(self, tt: np.ndarray, s: np.ndarray, stage: int) -> None:
        """Raise, in place, the traffic stand-ins ``tt [n, L, D]`` of the open levels below a
        dim's first open one to the largest tile legal under the stand-in above (the model's
        :func:`~tilewise.model.rules.innermost_limit` at the innermost, ``ceil(tile / ways)``
        elsewhere): the dim kept whole below its first open level (:mod:`.bound`, fact 2).
        The group's largest tile there can be smaller where the space leaves out tiles that
        cannot fit the level (:func:`.space.fit_limits`); a stand-in with a real loop there
        would lose the reuse of the loops above that a mapping with a smaller tile at the
        first open level keeps, and could bound above it."""
        L, a = self.L, self.st.array_level
        align = self.problem.dims.align
        for j in range(self.D):
            w = self.ways[s, j]
            for k in range(int(self.depth[stage, j]) + 2, L):
                ww = w if k == a else 1
                up = tt[:, k - 1, j]
                if k == L - 1:
                    lim = -(-(-(-up // ww)) // align[j]) * align[j]
                else:
                    lim = -(-up // ww)
                np.maximum(tt[:, k, j], lim, out=tt[:, k, j])

    def fixed_real_loops(self, tt: np.ndarray, s: np.ndarray, stage: int) -> np.ndarray:
        """``[n, L-1, D]``: the loops of nodes at ``stage`` (splits ``s``, tiles ``tt``) known
        to iterate more than once: both tiles that decide them are fixed."""
        known = self.depth[stage][None, :] >= np.arange(1, self.L)[:, None]   # [L-1, D]
        return self.space.real_loops(tt, self.ways[s]) & known[None]

    def buffers(self, tiles: np.ndarray):
        """Single-buffer bytes of the moved tensors ``[n, L, Tm]`` and other buffers ``[n, L]``."""
        return self.buf.bytes(tiles)

    def stand_ins(self, nd: Nodes, stage: int) -> StandIns:
        """The stand-ins of nodes at ``stage`` (:meth:`assemble`) and the single-buffer bytes
        of their smallest tiles (a projected chain's intermediates at least their panel's
        floor, :meth:`.ChainRules.panel_floor`)."""
        tt, tm, cnt, pad = self.assemble(nd.group, stage, nd.split)
        bufs, fixed = self.buffers(tm)
        rules = self.chain_rules
        if rules is not None and rules.projected:  # the intermediates' panels, at least
            pm = tm.copy()
            pm[:, -1] = rules.panel_floor(tm, tt, self.fixed_real_loops(
                tt, nd.split, stage), self.ways[nd.split], self.st.array_level)
            fixed[:, -1] = self.buffers(pm)[1][:, -1]
        pall = np.empty_like(pad)
        lad = np.empty((len(nd), self.D, 2), np.int64)
        for j in range(self.D):
            g = self.groups[j][self.depth[stage, j]]
            pall[:, j] = g.min_padded_all[nd.group[:, j]]
            lad[:, j, 0], lad[:, j, 1] = g.lo[nd.group[:, j]], g.hi[nd.group[:, j]]
        return StandIns(tt, tm, cnt, pad, bufs, fixed, padded_all=pall, ladders=lad)

    def capped(self, si: StandIns, s: np.ndarray, stage: int, idx=None) -> np.ndarray:
        """The traffic stand-ins of ``si`` (nodes at ``stage`` of splits ``s``; rows ``idx``,
        default all, ``s`` then of those rows) with each open innermost tile whose dim is
        fixed above capped to the largest that can fit (:meth:`.BufferTable.cap_tiles`);
        ``si.capped`` when already known (:meth:`with_capped`).

        Only the innermost level, only below fixed tiles: the capped stand-in then differs
        from a mapping below the node in that one tile, and a larger innermost tile never
        moves more bytes. Capping a deeper tile under an open (whole) parent would not be a
        bound: it turns the parent's loop real *inside* every loop of the levels above,
        where a mapping with a smaller parent tile has that loop outside them (GEMM 512 x
        3072 x 768 on aie-4x2: the C partial sums reloaded 48x, a bound of 2x the optimum)."""
        if si.capped is not None:
            return si.capped if idx is None else si.capped[idx]
        dims = self.depth[stage] >= self.L - 2
        ttc = si.whole.copy() if idx is None else si.whole[idx]
        self.buf.cap_tiles(ttc, si.small if idx is None else si.small[idx], s, self.cap, dims)
        return ttc

    def with_capped(self, si: StandIns, s: np.ndarray, stage: int) -> StandIns:
        """``si`` with its capped traffic stand-ins (:meth:`capped`) kept for reuse."""
        return si if si.capped is not None else si.with_capped(self.capped(si, s, stage))

    # ----- traffic -----

    def traffic(self, s, tiles, ords, nfix: int,
                rounded: bool = False) -> tuple[Traffic, np.ndarray | None]:
        """Bytes and transfers into / out of each level (:class:`.bound.Traffic`): exact for
        the given orders when every level's order is fixed (``nfix == L-1``; also returns the
        legality mask), else each tensor's least over the open levels' orders. Bytes are
        exact (:attr:`bound_problem`) unless ``rounded`` (the tiles are the mapping's own:
        its runs rounded to the granules, :attr:`problem`)."""
        n, L, T = len(s), self.L, self.T
        sp = self.split_arr[s]
        if nfix == L - 1:
            z = np.zeros((n, L, T), bool)
            cb = evaluate_batch(self.workload, self.arch, MappingBatch(
                tiles, ords, z, z, sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3]),
                problem=self.problem if rounded else self.bound_problem)
            return Traffic.of(cb), cb.legal
        return self.tensor_traffic(s, tiles, self.tensor_orders(ords, nfix)), None

    def tensor_orders(self, ords: np.ndarray, nfix: int) -> np.ndarray:
        """``[n, Tm, L-1, D]``: per moved tensor, the nodes' orders ``ords`` of the first
        ``nfix`` levels and its favourable order (:func:`favorable_orders`) below."""
        o = np.empty((len(ords), len(self.fav), self.L - 1, self.D), np.int64)
        o[:] = self.fav[None, :, None, :]
        o[:, :, :nfix] = ords[:, None, :nfix]
        return o

    def tensor_traffic(self, s, tiles, o) -> Traffic:
        """Bytes and transfers into / out of each level (:class:`.bound.Traffic`) where moved
        tensor ``i`` takes its own orders ``o[:, i] [n, Tm, L-1, D]`` (one model row per
        tensor)."""
        n, Tm, L, T = len(s), len(self.fav), self.L, self.T
        rows = n * Tm
        z = np.zeros((rows, L, T), bool)
        spr = np.repeat(self.split_arr[s], Tm, 0)
        cb = evaluate_batch(self.workload, self.arch, MappingBatch(
            np.repeat(tiles, Tm, 0), o.reshape(rows, L - 1, self.D), z, z,
            spr[:, 0], spr[:, 1], spr[:, 2], spr[:, 3]), only=np.tile(self.moved_idx, n),
            problem=self.bound_problem)
        parts = []
        for arr in (cb.reads, cb.writes, cb.fills, cb.drains):
            a = arr.reshape(n, Tm, L, T)
            x = np.zeros((n, L, T))
            for i, ti in enumerate(self.moved_idx):
                x[:, :, ti] = a[:, i, :, ti]
            parts.append(x)
        return Traffic(*parts)

    def node_traffic(self, nd: Nodes, stage: int):
        """Per-tensor traffic bounds (or exact traffic at a leaf) of nodes at ``stage``."""
        tt = self.capped(self.stand_ins(nd, stage), nd.split, stage)
        return self.traffic(nd.split, tt, nd.orders, int(self.n_fixed[stage]))

    # ----- bounds -----

    def bound(self, nd: Nodes, stage: int, run: RunConfig, stats: SearchStats,
              rw=None, si: StandIns | None = None, refine=None, visits: bool = True
              ) -> np.ndarray:
        """Bounds ``[n, len(run.objectives)]`` of nodes at ``stage`` (see the class doc);
        ``inf`` for nodes that cannot fit (their smallest buffers, single-buffered, overflow a
        level) or, in a chain, cannot be legal (:meth:`.ChainRules.legal_tiles`): those are
        found first, without a model call. ``rw``: traffic bounds (:class:`.bound.Traffic`) to use instead of the
        model's (a parent's bounds hold for its children: a cheap first filter); ``si``: the
        nodes' :meth:`stand_ins` when already known; ``refine(bounds) -> mask``: the nodes
        worth the cost of the floors of their first open level (:meth:`floors`: those the walk
        would keep), bounded again with them; ``visits=False``: without the visit floors
        (:meth:`visit_floors`) unless ``si`` holds them (a cheaper, looser first filter)."""
        return self.bound_traffic(nd, stage, run, stats, rw, si, refine, visits)[0]

    def bound_traffic(self, nd: Nodes, stage: int, run: RunConfig, stats: SearchStats,
                      rw=None, si: StandIns | None = None, refine=None, visits: bool = True
                      ) -> tuple[np.ndarray, Traffic | None]:
        """:meth:`bound` and the nodes' own traffic bounds it used (:class:`.bound.Traffic`,
        zero for nodes that cannot fit), what :meth:`node_traffic` would work out again for
        their children; None where it used ``rw`` or costed full mappings."""
        n = len(nd)
        leaf = rw is None and self.n_fixed[stage] == self.L - 1  # full mappings: exact
        si = self.stand_ins(nd, stage) if si is None else si
        out = np.full((n, len(run.objectives)), np.inf)
        idx = np.nonzero(self._alive(nd, si, stage, stats, leaf))[0]
        if not len(idx):
            return out, None
        own = rw is None and not leaf
        s, ords = nd.split, nd.orders
        ttc = self.capped(si, nd.split, stage)  # innermost tiles no larger than can fit
        sr = si
        if len(idx) < n:
            s, ords, ttc, sr = s[idx], ords[idx], ttc[idx], si.take(idx)
            rw = None if rw is None else rw.take(idx)
        if rw is None:
            # a full mapping with one layout (no pack choices) is bounded by its own bytes,
            # rounded to the granules (exact); with pack choices, by exact bytes (below all)
            full = stage == len(self.stages) and not self.may_pack
            tr, legal = self.traffic(s, ttc, ords, int(self.n_fixed[stage]), rounded=full)
        else:
            tr, legal = rw, None
        if leaf:
            vf = None
        elif sr.visits is not None:   # kept for nodes bounded twice (:meth:`with_visits`)
            vf = (sr.visits[:, 0], sr.visits[:, 1])
        elif visits:
            vf = self.visit_floors(run, s, sr.whole, stage)
        else:
            vf = None
        # the fewest kernel calls from the largest innermost tiles that fit (_least_objectives)
        sub, nfit = self._least_objectives(run, s, tr, vf, sr, ttc[:, -1, :])
        fl_level = self.floor_level(stage)
        if refine is not None and fl_level and run.floor_levels[fl_level]:
            r = np.nonzero(refine(sub) & (nfit > 0))[0]
            fl = None
            if len(r) and self.stages[stage].kind == "order":
                fl = self.order_floors(s[r], ttc[r], ords[r], stage)
            elif len(r):
                if vf is not None:   # a visit floor of the level already: no model calls
                    r = r[vf[0][r, fl_level] + vf[1][r, fl_level] <= 0]
                if len(r):
                    fl = self.floors(s[r], nd.group[idx[r]], stage, ttc[r], ords[r])
            if fl is not None:
                if vf is not None:
                    fl = (np.maximum(fl[0], vf[0][r]), np.maximum(fl[1], vf[1][r]))
                sub[r] = self._least_objectives(run, s[r], tr.take(r), fl, sr.take(r),
                                                ttc[r, -1, :])[0]
        if leaf:
            stats.valid += int(nfit[legal].sum())
            sub[~legal] = np.inf
            stats.reject("chain order", ~legal, len(self.db))
        else:
            stats.reject("capacity with the declared double buffering", nfit == 0)
        out[idx] = sub
        return out, self._rows(tr, idx, n) if own else None

    def _rows(self, tr: Traffic, idx: np.ndarray, n: int) -> Traffic:
        """``tr`` (rows ``idx`` of ``n`` nodes) as ``n`` rows, zero elsewhere."""
        if len(idx) == n:
            return tr
        full = []
        for a in tr:
            x = np.zeros((n,) + a.shape[1:], a.dtype)
            x[idx] = a
            full.append(x)
        return Traffic(*full)

    def _alive(self, nd: Nodes, si: StandIns, stage: int, stats: SearchStats, leaf) -> np.ndarray:
        """``[n]``: the nodes whose smallest buffers fit every level and, in a chain, whose
        fixed tiles the chain rules allow; counts the others (or, at leaves, the evaluated)."""
        over = self.over_capacity(si.buffers, si.other)
        alive = ~over.any(1)
        if leaf:
            stats.evaluated += len(nd)
            stats.candidates += len(nd) * len(self.db)
            return alive
        for k in range(1, self.L):  # count the nodes by the level that overflows first
            stats.reject(f"capacity at {self.arch.levels[k].name}", over[:, k] & ~over[:, :k].any(1))
        if self.chain_rules is not None:
            real = self.fixed_real_loops(si.whole, nd.split, stage)
            legal = self.chain_rules.legal_tiles(real) & (si.small <= si.whole).all((1, 2))
            stats.reject("chain order", alive & ~legal)
            alive &= legal
        return alive

    def _least_objectives(self, run: RunConfig, s, tr: Traffic, fl, si: StandIns, inner):
        """Per node and objective of ``run`` the least over the double-buffer choices that fit
        (:func:`.bound.best_variant`) ``[m, objectives]``, and the number of choices that fit.
        Compute from the least padded extents ``si.padded`` and, for the per-call overhead,
        the fewest kernel calls: per dim ``ceil(padded / inner)`` with ``inner`` the largest
        innermost tile (a ladder's calls are its padded extent / its tile); compute energy
        from the least padded extents over all cores ``si.padded_all``. ``fl``: floors of the
        bytes per level (:meth:`floors`; None: none)."""
        m = len(s)
        O = len(self.op_dims)
        points, steps = np.empty((m, O)), np.empty((m, O))
        pad = np.ascontiguousarray(si.padded, np.int64)
        mask = self.problem.compute.op_mask   # [O, D], the model's per-op dims
        op_points(pad, np.ascontiguousarray(inner, np.int64), mask, points, steps)
        it = np.prod(si.counts, axis=2).astype(float)
        custom = any(isinstance(o, Custom) for o in run.objectives)
        energy = custom or any(o in ("energy", "edp") for o in run.objectives)
        points_all = points
        if energy:
            points_all = np.empty((m, O))
            op_points(np.ascontiguousarray(si.padded_all, np.int64), pad, mask, points_all,
                      np.empty((m, O)))
        sub = np.empty((m, len(run.objectives)))
        nfit = np.zeros(m, np.int64)
        rfl, wfl = (np.zeros((m, self.L)), np.zeros((m, self.L))) if fl is None else fl
        # C-contiguous always: one compiled best_variant, not one per layout (3 s each, cold)
        rfl, wfl = np.ascontiguousarray(rfl), np.ascontiguousarray(wfl)
        calls, joint = si.calls, si.joint
        if calls is None:
            fl = self._calls(run, s, si, inner)
            calls, joint = (None, None) if fl is None else fl

        need = []   # the base objectives to bound, each once
        for o in run.objectives:
            for k in (BASE if isinstance(o, Custom) else (o,)):
                if k not in need and (k != "energy" or self.has_energy or not isinstance(o, Custom)):
                    need.append(k)
        vals = np.empty((m, len(need)))
        best_variant(np.array([OBJ_CODE[k] for k in need], np.int64), points, steps, points_all,
                     tr, rfl, wfl, self.rbw[s], self.wbw[s], self.xfs[s], it, si.buffers,
                     si.other, *self.db_subs, self.moved_idx, self.prune_levels,
                     self.problem.compute, vals, nfit, calls, joint)
        col = {k: vals[:, i] for i, k in enumerate(need)}
        if "space" in col and self.share > 1:   # memory="max": the sums bound share x it
            col["space"] = col["space"] / self.share
        for i, o in enumerate(run.objectives):
            if isinstance(o, Custom):  # monotone: its function of the metrics' own bounds
                base = {k: col[k] if k in col else np.full(m, np.nan) for k in BASE}
                sub[:, i] = np.where(np.isfinite(base["latency"]), o(**base), np.inf)
            else:
                sub[:, i] = col[o]
        return sub, nfit

    def _calls(self, run: RunConfig, s, si: StandIns, inner, coupled: bool = True
               ) -> CallFloor | None:
        """The fewest kernel calls ``[n, U, O]`` (:mod:`.calls`) and the joint floor of calls
        and exposed bytes (:mod:`.exposure`) of nodes of splits ``s``
        with stand-ins ``si`` and largest innermost tiles ``inner``, or None where they do
        not bound ``run``: they raise latency bounds, and where latency is only a secondary
        key (ties on the objective are rare) the per-dim calls bound it well enough for
        their cost. ``coupled``: in excess of padding (:class:`.calls.Coupling`), where
        ``si`` has its ladder ranges."""
        first = run.objectives[0]
        cf = self.call_floors() if isinstance(first, Custom) or first in ("latency", "edp") \
            else None
        if cf is None:
            return None
        coupling = None if si.ladders is None or not coupled else Coupling(si.ladders,
                                                                          *self.coupling)
        return cf.steps(s, si.padded, si.small[:, -1], inner, self.problem.compute.op_mask,
                        coupling)

    def with_calls(self, si: StandIns, s: np.ndarray, stage: int, run: RunConfig,
                   coupled: bool = True) -> StandIns:
        """``si`` (nodes at ``stage`` of splits ``s``) capped (:meth:`with_capped`) and with
        their fewest kernel calls kept (``coupled``: in excess of padding, :meth:`_calls`),
        for nodes bounded more than once with the same stand-ins (a tile stage's children:
        a first filter, then the model)."""
        si = self.with_capped(si, s, stage)
        fl = self._calls(run, s, si, si.capped[:, -1, :], coupled)
        return si if fl is None else replace(si, calls=fl.calls, joint=fl.joint)

    def with_visits(self, si: StandIns, s: np.ndarray, stage: int, run: RunConfig,
                    part: str = "all") -> StandIns:
        """``si`` (nodes at ``stage`` of splits ``s``) with their visit floors kept
        (:meth:`visit_floors`), for nodes bounded twice at that stage (a tile stage's
        children: a first filter, then the model). ``part``: "all" the levels, "shallow"
        all but those below the array reached through an open level (the costly ones:
        :meth:`_slice_floors` below the array), "deep" those alone, added to ``si.visits``."""
        vf = self.visit_floors(run, s, si.whole, stage, part)
        if vf is None:
            return si
        v = np.stack(vf, 1)
        if part == "deep" and si.visits is not None:
            v = np.maximum(v, si.visits)
        return replace(si, visits=v)

    def has_deep_visits(self, run: RunConfig, stage: int) -> bool:
        """Whether :meth:`visit_floors` at ``stage`` has levels below the array reached
        through an open level (what ``part="deep"`` computes)."""
        return any(self._deep_levels(run, stage, k) for k in self.visit_levels(run, stage))

    def _deep_levels(self, run: RunConfig, stage: int, k: int) -> list[int]:
        """The levels below the array whose bytes :meth:`visit_floors` floors from the visits
        of level ``k`` at ``stage`` through an open level (:meth:`_slice_floors`): where
        ``k + 1`` is the array level, its bytes are the cores' sum and some array-level tile
        is still open; those ``run`` floors."""
        a = self.st.array_level
        if a is None or k + 1 != a or not self._cores_sum_at_array() \
                or (self.depth[stage] >= a).all():
            return []
        return [into for into in range(a + 1, self.L) if run.floor_levels[into]]

    def order_floors(self, s, tiles, ords, stage: int):
        """Floors ``(reads, writes) [n, L]`` of the bytes moved into level ``k``, summed over
        tensors, for nodes at ``stage``, the stage fixing the level ``k-1`` order (splits
        ``s``, tiles ``tiles``: those of levels ``0 .. k`` fixed, orders ``ords`` of the levels
        above ``k-1`` fixed): the least over the level's canonical orders of the model's bytes
        with every tensor under that one order (:mod:`.floors`), 0 elsewhere and for nodes with
        more than :data:`.floors.MAX_ORDERS` orders."""
        k = self.stages[stage].level + 1
        n = len(s)
        real = self.space.real_loops(tiles, self.ways[s])[:, k - 1]
        keys, inv = np.unique(real, axis=0, return_inverse=True)
        inv = inv.ravel()
        owner, rows = [], []
        for q, key in enumerate(keys):
            orders = self.trie(tuple(bool(x) for x in key)).orders
            if len(orders) > MAX_ORDERS:
                continue
            who = np.nonzero(inv == q)[0]
            owner.append(np.repeat(who, len(orders)))
            rows.append(np.tile(orders, (len(who), 1)))
        rfl, wfl = np.zeros((n, self.L)), np.zeros((n, self.L))
        if not owner:
            return rfl, wfl
        owner, rows = np.concatenate(owner), np.concatenate(rows)
        o = ords[owner].copy()
        o[:, k - 1] = rows
        o[:, k:] = self.fav[0]   # deeper levels: any order (the bytes into k do not depend on it)
        sp = self.split_arr[s[owner]]
        z = np.zeros((len(owner), self.L, self.T), bool)
        cb = evaluate_batch(self.workload, self.arch, MappingBatch(
            tiles[owner], o, z, z, sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3]),
            problem=self.bound_problem)
        has = np.zeros(n, bool)
        has[owner] = True
        for fl, moved in ((rfl, cb.reads), (wfl, cb.writes)):
            fl[has, k] = np.inf
            np.minimum.at(fl[:, k], owner, moved[:, k].sum(1).astype(float))
        return rfl, wfl

    def visit_floors(self, run: RunConfig, s, whole, stage: int, part: str = "all"):
        """Floors ``(reads, writes) [n, L]`` of the bytes moved into each level ``k+1`` whose
        parent level ``k`` has every tile fixed and its order open, visit by visit
        (:mod:`.visits`); None where they do not apply (:class:`.visits.VisitTable`) or cannot
        raise ``run``'s bounds (:attr:`RunConfig.floor_levels`)."""
        ks = self.visit_levels(run, stage)
        if not ks:
            return None
        dep = self.depth[stage]
        n = len(s)
        unsplit = (self.ways[s] == 1).all(1)
        a = self.st.array_level
        rfl, wfl = np.zeros((n, self.L)), np.zeros((n, self.L))
        sizes = self.problem.dims.sizes
        for k in ks:
            # a split: each core visits its slices, the sum over cores, where the level is
            # private to each core (at the array level a broadcast or a merge of partial sums
            # moves fewer bytes than the cores' sum, unless the arch has neither)
            if a is not None and k + 1 == a and self._cores_sum_at_array():
                if part != "deep":
                    self._slice_floors(s, whole, dep, k, a, rfl, wfl)
                for into in self._deep_levels(run, stage, k) if part != "shallow" else ():
                    self._slice_floors(s, whole, dep, k, into, rfl, wfl)
                continue
            if part == "deep":
                continue
            # above or below the array a split changes no visit of the level (at the array
            # level, without the cores' sum, a broadcast or merge may move fewer bytes)
            idx = np.nonzero(unsplit)[0] if a is not None and k + 1 == a else np.arange(n)
            if not len(idx):
                continue
            memo = self._visit_memo.setdefault(k, VisitMemo())
            r, w = node_floors(self.visit_table, sizes, whole[idx], dep >= k + 1, k, self.cap, memo,
                               granule=self.run_granule[k + 1])
            rfl[idx, k + 1], wfl[idx, k + 1] = r, w
        return rfl, wfl

    def visit_levels(self, run: RunConfig, stage: int) -> list[int]:
        """The levels ``k`` whose visits floor the bytes into level ``k+1`` for nodes at
        ``stage`` (:meth:`visit_floors`; empty: none applies)."""
        if self.visit_table is None or not run.floor_levels:
            return []
        dep, nfix = self.depth[stage], int(self.n_fixed[stage])
        return [k for k in range(nfix, min(int(dep.min()), self.L - 2) + 1)
                if run.floor_levels[k + 1]]

    def _cores_sum_at_array(self) -> bool:
        """Whether the bytes moved into the array level are the cores' sum: no broadcast and
        no merge of partial sums along the array (cpu-6core)."""
        lv = self.problem.levels
        return not (lv.bc_rows_split or lv.bc_cols_split or lv.reduce_rows)

    def _slice_floors(self, s, whole, dep, k: int, into: int, rfl, wfl) -> None:
        """Fill ``rfl, wfl [n, L]`` at level ``into``, the array level ``a = k + 1`` (where the
        bytes into it are the cores' sum, :meth:`_cores_sum_at_array`) or one below it, for
        nodes whose core tiles are known on every split dim: each visit of a level-``k`` tile
        is cut into the regions the cores walk (:func:`.visits.core_regions`), each a visit of
        one core's level ``into`` (the open levels between, walked as one order); for the
        others (a split dim's core tile open) each visit is one region, less what the other
        cores may keep (:func:`.visits.box_floors`)."""
        a = k + 1
        ways = self.ways[s]
        known = ((ways == 1) | (dep >= a)[None, :]).all(1)
        idx = np.nonzero(known)[0]
        if len(idx):
            memo = self._visit_memo.setdefault(("cores", into), VisitMemo())
            r, w = node_floors(self.visit_table, self.problem.dims.sizes, whole[idx],
                               dep >= into, k, self.cap, memo, into=into,
                               cores=(whole[idx, a], ways[idx]), granule=self.run_granule[into])
            rfl[idx, into], wfl[idx, into] = r, w
        idx = np.nonzero(~known)[0]
        if len(idx):   # a split dim's core tile open: each visit as one region (box_floors)
            memo = self._visit_memo.setdefault(("box", into), VisitMemo())
            r, w = box_floors(self.visit_table, self.problem.dims.sizes, whole[idx],
                              dep >= into, k, self.cap, memo, into,
                              np.prod(ways[idx], axis=1), self.run_granule[into])
            rfl[idx, into], wfl[idx, into] = r, w

    def floor_level(self, stage: int) -> int:
        """The level whose bytes nodes at ``stage`` get a floor of (0: none): at the stage
        fixing the level ``k-1`` order, level ``k`` (:meth:`order_floors`); at a tile stage,
        the first open level ``l`` once the orders of levels ``0 .. l-2`` are fixed
        (:meth:`floors`: before those orders are fixed the nodes are too many for it to pay)."""
        if stage < len(self.stages) and self.stages[stage].kind == "order":
            return self.stages[stage].level + 1
        l = int(self.depth[stage].min()) + 1
        return l if l <= self.L - 1 and self.n_fixed[stage] >= l - 1 else 0

    def floor_levels(self, run: RunConfig, root: Nodes | None) -> tuple[bool, ...]:
        """Per level whether floors of its bytes (:meth:`floors`, :meth:`order_floors`) may
        raise the bounds of ``run``'s objective: energy and edp count every level's bytes,
        traffic level 1's; latency every level's only through its slowest link, so only where the least
        latency bound of the ``root`` nodes (None: no latency floors) is over 1.05 x their
        least compute time (a link, not compute, may decide the optimum). They cost a model
        call per node; where they are unlikely to change a bound, none is made."""
        first = run.objectives[0]   # secondary keys alone do not pay for them
        every = isinstance(first, Custom) or first in ("energy", "edp")
        if first == "latency" and root is not None and len(root):
            si = self.stand_ins(root, 0)
            per_op = lambda a: np.stack([np.prod(a[:, ix], axis=1) for ix in self.op_dims], 1)
            c = self.problem.compute
            cs = ((per_op(si.padded) * c.op_pp / c.op_rate).sum(1) / c.clock).min()
            every |= float(root.bound[:, 0].min()) > 1.05 * cs
        return tuple(l > 0 and (every or (l == 1 and first == "traffic")) for l in range(self.L))

    def floors(self, s, gid, stage: int, whole, ords):
        """Floors ``(reads, writes) [n, L]`` of the bytes moved into each level, summed over
        tensors, for nodes at ``stage`` (splits ``s``, groups ``gid``, traffic stand-ins
        ``whole``, orders ``ords``): at their first open level ``l`` the least over the
        maximal level-``l`` tile combos that fit (:mod:`.floors`), 0 elsewhere."""
        dep = self.depth[stage]
        l = int(dep.min()) + 1
        n, D = len(s), self.D
        vals, v_lo, v_hi, off = [], np.empty((n, D), np.int64), np.empty((n, D), np.int64), 0
        for j in range(D):
            if dep[j] >= l:   # fixed: one value per node
                vals.append(whole[:, l, j])
                v_lo[:, j] = off + np.arange(n)
                v_hi[:, j] = v_lo[:, j] + 1
                off += n
            else:             # open: the level-l tiles of the node's child groups (ascending),
                g, ch = self.groups[j][l - 1], self.groups[j][l]   # gathered node by node
                lo, hi = g.child_lo[gid[:, j]], g.child_hi[gid[:, j]]
                _, at = expand_ranges(lo, hi)
                vals.append(ch.whole[at, l])
                v_hi[:, j] = off + np.cumsum(hi - lo)
                v_lo[:, j] = v_hi[:, j] - (hi - lo)
                off += len(at)
        owner, combos = maximal_combos(np.concatenate(vals), v_lo, v_hi, l, self.cap[l],
                                       self.buf.sizes, self.buf.desc)
        rfl, wfl = np.zeros((n, self.L)), np.zeros((n, self.L))
        if not len(owner):
            return rfl, wfl
        tiles = whole[owner].copy()
        tiles[:, l] = combos
        tiles[:, l + 1:] = np.minimum(tiles[:, l + 1:], combos[:, None, :])
        rfl[:, l] = np.inf
        wfl[:, l] = np.inf
        nf = int(self.n_fixed[stage])
        step = FLOOR_ROWS if self.deadline is None else TIMED_ROWS
        for a in range(0, len(owner), step):   # a time limit is checked per chunk
            on_time(self.deadline)
            o, t = owner[a:a + step], tiles[a:a + step]
            tr = self.tensor_traffic(s[o], t, self.tensor_orders(ords[o], nf))
            np.minimum.at(rfl[:, l], o, tr.R[:, l].sum(1))
            np.minimum.at(wfl[:, l], o, tr.W[:, l].sum(1))
        has = np.zeros(n, bool)
        has[owner] = True
        rfl[~has, l] = 0.0
        wfl[~has, l] = 0.0
        return rfl, wfl

    # ----- roots and leaves -----

    def root(self, run: RunConfig, stats: SearchStats) -> Nodes:
        """The root nodes (one per split with a non-empty space) with their bounds."""
        L, D = self.L, self.D
        ok = np.nonzero((self.n_ladders > 0).all(1))[0]
        root = Nodes(split=ok.astype(np.int64), group=self.root_gid(ok),
                     orders=np.full((len(ok), max(L - 1, 1), D), -1, np.int64),
                     weight=np.prod(self.n_ladders[ok], axis=1).astype(float) / max(stats.tile_combos, 1))
        return root.with_bound(self.bound(root, 0, run, stats))

    def root_gid(self, s: np.ndarray) -> np.ndarray:
        """``[n, D]`` group indices of the roots of splits ``s``: the split itself (depth 0),
        or for a dim with a single ladder its one ladder (depth L-1)."""
        gid = np.tile(np.asarray(s, np.int64)[:, None], (1, self.D))
        for j in np.nonzero(self.single)[0]:
            gid[:, j] = np.searchsorted(self.groups[j][self.L - 1].lo, self.groups[j][0].lo[s])
        return gid

    def find_smallest(self, stats: SearchStats) -> None:
        """For the empty-space message: the smallest tiles of every split, single-buffered;
        per level that they overflow, the least total bytes with the tiles and bytes per
        tensor (``stats.smallest[level] = (total, tiles, bytes per tensor, other, capacity)``)."""
        if self.share > 1:  # memory="max": buffer sums are not the rule's footprints
            return
        S = len(self.space.splits)
        _, tiles, _, _ = self.assemble(self.root_gid(np.arange(S)), 0)
        bufs, other = self.buf.bytes(tiles)
        names = [self.st.tensors[t].name for t in self.space.moved]
        total = bufs.sum(2) + other                                       # [S, L]
        ok = np.ones(S, bool)
        for k in range(1, self.L):
            bad = ok & (total[:, k] > self.cap[k])
            ok &= ~bad
            if not bad.any():
                continue
            i = int(np.argmin(np.where(bad, total[:, k], np.iinfo(np.int64).max)))
            name = self.arch.levels[k].name
            prev = stats.smallest.get(name)
            if prev is None or total[i, k] < prev[0]:
                stats.smallest[name] = (
                    int(total[i, k]), dict(zip(self.st.dims, (int(x) for x in tiles[i, k]))),
                    dict(zip(names, (int(x) for x in bufs[i, k]))), int(other[i, k]),
                    int(self.cap[k]))

    def leaf_pool(self, nd: Nodes, run: RunConfig, stats: SearchStats) -> Pool:
        """Every double-buffer and pack choice of the full mappings ``nd`` that fits, costed
        (the objective ``run.rank``, latency, traffic, energy, space, 𝔽): one model call per
        pack choice (:meth:`.space.Space.pack_variants`); the bounds count exact bytes and no
        pass, below every choice."""
        tiles, _, counts, _ = self.assemble(nd.group, len(self.stages))
        stats.leaves += len(nd.split)
        return Pool.concat([self._leaf_pool(nd, run, stats, tiles, counts, pk)
                            for pk in self.space.pack_variants()])

    def _leaf_pool(self, nd, run, stats, tiles, counts, pk) -> Pool:
        """:meth:`leaf_pool` under one pack choice ``pk [T]``."""
        L = self.L
        s = nd.split
        spb = self.split_arr[s]
        B = len(s)
        z = np.zeros((B, L, self.T), bool)
        pack = np.repeat(pk[None], B, 0)
        batch = MappingBatch(tiles, nd.orders, z, z, spb[:, 0], spb[:, 1], spb[:, 2], spb[:, 3],
                             pack)
        cb = evaluate_batch(self.workload, self.arch, batch, problem=self.problem)
        V = len(self.db)
        stats.ranked += B * V
        rbw, wbw = self.rbw[s], self.wbw[s]
        iterations = np.prod(counts, axis=2).astype(float)
        tr = Traffic.of(cb, bds=True)  # the exact latency charges each transfer's BDs
        fits, space = self._leaf_fits(tiles, s, cb.legal, cb.footprint)
        if self.share > 1:   # memory="max": the sums only bound the footprints
            fits, space = self._rule_fits(batch, fits, space)
        bi, vi = np.nonzero(fits)
        if len(bi) == 0:
            return Pool()
        lat = variant_latencies(cb.compute_s, self.link_traffic(tr), rbw, wbw, self.xfs[s],
                                iterations, self._fold(self.db) if self.folded else self.db)
        lat += cb.pack_s[:, None]  # the pack passes do not overlap the operator
        # 1/𝔽 as the bound computes it (best_variant: the slowest link / compute.ideal), bit
        # for bit: ties on 𝔽 then prune exactly (pool module doc)
        inv_ratio = (cb.transfer_s[:, 1:].max(1) if L > 1 else np.zeros(B)) / self.min_time_s
        traffic = cb.offchip_bytes.astype(float)
        energy = cb.energy_j
        pool = Pool(objective=np.zeros(len(bi)), volume=np.prod(tiles[bi, L - 1, :], axis=1).astype(float),
                    inv_ratio=inv_ratio[bi], latency_s=lat[bi, vi], traffic=traffic[bi],
                    energy=energy[bi], space=space[bi, vi], tiles=tiles[bi], orders=nd.orders[bi],
                    double_buffer=self.db[vi], split=spb[bi], pack=pack[bi])
        return replace(pool, objective=np.asarray(pool.metric(run.rank), float))

    def _rule_fits(self, batch: MappingBatch, fits: np.ndarray, space: np.ndarray):
        """``fits, space [B, V]`` (:meth:`_leaf_fits`, from buffer sums: a superset) made
        exact by the model's own footprint rule (``memory="max"``): each mapping of ``batch``
        that the sums let fit is costed again under each such double-buffer choice."""
        bi, vi = np.nonzero(fits)
        if not len(bi):
            return fits, space
        cb = evaluate_batch(self.workload, self.arch, MappingBatch(
            batch.tiles[bi], batch.orders[bi], batch.bypass[bi], self.db[vi],
            batch.rows_dim[bi], batch.rows_ways[bi], batch.cols_dim[bi], batch.cols_ways[bi],
            batch.pack[bi]), problem=self.problem)
        fits = np.zeros_like(fits)
        fits[bi, vi] = cb.fits
        space = space.copy()
        space[bi, vi] = cb.footprint[:, 1:].sum(1)
        return fits, space

    def _leaf_fits(self, tiles: np.ndarray, s: np.ndarray, legal: np.ndarray,
                   footprint: np.ndarray):
        """``[B, V]``: the legal mappings (tiles ``[B, L, D]``, splits ``s``) whose buffers
        (partial sums at the accumulator width where the model says so) under each
        double-buffer choice fit every level, and their on-chip bytes (the footprints of
        levels 1 .. L-1 summed, float). The buffers other than the moved tensors' (a chain's
        fused intermediates and state, whose panels the loop orders decide) are the model's
        ``footprint [B, L]`` of the mappings without double buffers less the moved ones."""
        bufs, _ = self.buf.bytes(tiles, self.merged[s])  # partial sums: merged ways
        fixed = footprint - bufs.sum(2)
        total = np.einsum("blt,vlt->bvl", bufs, self.dbm.astype(np.int64)) + (bufs.sum(2) + fixed)[:, None, :]
        over = total > self.cap[None, None, :]
        if self.part_cap.shape[1] > 1:  # some level reserves bytes for some tensors
            over = self.over_capacity(bufs[:, None] * (1 + self.dbm[None]), fixed[:, None])
        fits = ~over.any(2) & legal[:, None]
        return fits, total[:, :, 1:].sum(2).astype(float)
