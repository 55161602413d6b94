"""Exact search: the optimum, the top-k and the Pareto front over the declared space.

The space (:mod:`.space`) is a product of a spatial split, per-dim tile ladders, canonical loop
orders per level and double-buffer choices. The search is a depth-first branch and bound
(:class:`Engine`) that fixes, level by level from the outermost, the level-``k`` tile of every
dim and then the level ``k-1`` loop order (whose real loops those tiles decide). A loop order
is fixed one loop at a time from the innermost (:mod:`.order_trie`): the innermost loops
decide most of the reuse, so a bad suffix is dropped with every order ending in it. Every
node gets a lower bound from the one cost model (:mod:`.bound`): the kernel evaluates each
tensor under its own least-traffic orders for the open levels (in a chain, the least over the
legal ones), with the open tiles at their most favourable stand-ins, and the latency formula
is minimized over the double-buffer choices that fit. Nodes whose smallest buffers overflow a
level, or that the chain rules make illegal whatever their orders, are dropped before any
model call. Children are bounded in numpy batches (first with the parent's traffic bounds,
which cost no model call), sorted, and the most promising batch is expanded first; a node
whose bound exceeds the k-th best objective found (by more than rounding, ``_SLACK``) is
dropped with its subtree, so nothing unseen can beat or tie it.

Threshold passes: a node whose bound is over ``theta`` (first 0.01 % over the
root's least bound, ``_THETA0``) is *deferred*, not dropped, and so is a partial loop order
over it (its parent node is kept with ``tp = theta``; re-expanded later, it emits only the
orders below a partial order over ``tp``, so nothing is emitted twice). The next pass doubles
the threshold's excess over the root bound (``_THETA_GROWTH``, at least to the least deferred
bound) and resumes from the deferred nodes; no node is expanded twice. The walk stops once the
k-th best found lies within ``theta`` (every deferred bound is then above it) or nothing was
deferred. Every node whose bound is at most the final k-th best is visited, so the result is
exact; the passes make the walk nearly best-first where bounds are flat (a convolution's top
mappings lie within 0.02 % of the compute bound) without giving up batched evaluation.

A leaf is a full mapping: every double-buffer choice of it is costed
(:func:`latency_variants`, checked against :func:`tilewise.evaluate`) and the running top-k
keeps the best (objective, larger innermost tile = more work per subvolume, higher 𝔽 = min over
links of compute time / transfer time, then the mapping itself: split, tiles, orders, double
buffering, smallest first, so the ranking does not depend on the walk) with ``np.lexsort``.
The exact Pareto front uses the same walk, dropping nodes whose bound pair a front point dominates.
Chain rules (spine loops first) prune order prefixes as soon as they are violated.

Constraints (keyword arguments of :func:`search`): ``spatial`` ("any", "none" or a list such
as ``["rows=n4 cols=m2"]``), ``double_buffer`` ("any", "all", "none" or ``{level: [tensors]}``),
``orders`` (allowed loop orders, e.g. ``["mnk", "nmk"]``, at every level), ``tiles``
(``{level: {dim: elements}}`` fixed tiles), ``max_core_tile`` (``{dim: elements}`` bound on
the innermost tile).

Statistics (``Result.stats``): ``tile_combos`` the size of the tile space, ``nodes`` the nodes
expanded, ``examined_combos`` nodes with every tile fixed, ``evaluated`` full mappings bounded
exactly, ``candidates`` those x double-buffer choices, ``valid`` the ones that fit,
``pruned_candidates`` those dropped by their bound before ranking, ``rejected`` nodes dropped
per constraint (capacity per level, chain order), ``passes`` threshold passes, ``seconds``.

    >>> r = search(gemm(512, 768, 768, dtype="i8"), "aie-4x2", objective="latency", top=5)
    >>> print(r.best.mapping); r.best.xslowdown
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import CapacityError, SpecError, TilewiseError
from ..model.batch import MappingBatch
from ..model.cost import evaluate, evaluate_batch
from ..model.plan import plan, rate
from .result import METRICS, Result, Solution
from .bound import OBJ_CODE, best_variant, favorable_orders, level_subsets
from .buffers import BufferTable
from .order_trie import OrderTrie, arrange as _arrange
from .space import Space

OBJECTIVES = ("latency", "traffic", "energy", "edp")
CONSTRAINTS = ("double_buffer", "max_core_tile", "orders", "spatial", "tiles")
_ROWS = 1 << 14      # nodes bounded per model call (x moved tensors while orders are open)
_SLACK = 1e-9        # relative: a bound within rounding of the k-th best is kept
_THETA0 = 1e-4       # the first threshold: 0.01 % over the root's bound
_THETA_GROWTH = 2.0  # each further pass: the threshold's excess over the root's bound x 2


def link_bandwidths(arch, array_level, used) -> tuple[np.ndarray, np.ndarray]:
    """Read / write bytes per second of every link ``[B, L]`` (index 0 unused) for ``used``
    cores ``[B]``: per channel x channels x instances (the cores used at and below the array)."""
    L = len(arch.levels)
    a = array_level if array_level is not None else L
    rbw, wbw = np.ones((len(used), L)), np.ones((len(used), L))
    for l in range(1, L):
        lv = arch.levels[l]
        inst = lv.instances if l < a else np.minimum(lv.instances, used)
        rbw[:, l] = lv.read_bandwidth * lv.channels * inst
        wbw[:, l] = lv.write_bandwidth * lv.channels * inst
    return rbw, wbw


def _time(nbytes, bw):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nbytes > 0, nbytes / bw, 0.0)


def latency_variants(compute_s, reads, writes, rbw, wbw, iterations, db):
    """Latency ``[B, V]`` (seconds) of each candidate under each double-buffer choice ``db``
    ``[V, L, T]``, nothing bypassed: the model's ``max(T_c + sum E_l, max T_l) +
    sum O_l / iterations_l`` with ``T_l`` / ``E_l`` / ``O_l`` the link times of all / of the
    not double-buffered / of the double-buffered bytes (reads into level l, writes out of it)."""
    B, L, T = reads.shape
    r, w = reads.astype(float), writes.astype(float)
    Tt = np.maximum(_time(r.sum(2), rbw), _time(w.sum(2), wbw))            # [B, L]
    keep = (~db).astype(float)                                             # [V, L, T]
    rx = np.einsum("blt,vlt->vbl", r, keep)
    wx = np.einsum("blt,vlt->vbl", w, keep)
    ex = np.maximum(_time(rx, rbw[None]), _time(wx, wbw[None]))
    ov = np.maximum(_time(r.sum(2)[None] - rx, rbw[None]), _time(w.sum(2)[None] - wx, wbw[None]))
    ex[:, :, 0] = 0.0
    ov[:, :, 0] = 0.0
    Tt[:, 0] = 0.0
    fill = (ov[:, :, 1:] / np.maximum(iterations[None, :, 1:], 1)).sum(2)
    lat = np.maximum(compute_s[None, :] + ex.sum(2), Tt.max(1)[None, :]) + fill
    return lat.T


def _arch(arch):
    if isinstance(arch, str):
        from ..arch.loader import load_arch

        return load_arch(arch)
    return arch


def energy_constants(arch) -> tuple[float, np.ndarray]:
    """(joules per MAC, joules per byte per link ``[L]``); SpecError naming missing keys."""
    missing = []
    if arch.compute.energy_pj_per_mac is None:
        missing.append("compute.energy_per_mac")
    missing += [f"levels[{lv.name}].energy_per_byte" for lv in arch.levels[1:]
                if lv.energy_pj_per_byte is None]
    if missing:
        raise SpecError(f"objective energy/edp needs energy numbers; arch {arch.name} lacks "
                        + ", ".join(missing))
    per_byte = np.array([0.0] + [lv.energy_pj_per_byte * 1e-12 for lv in arch.levels[1:]])
    return arch.compute.energy_pj_per_mac * 1e-12, per_byte


class _Pool:
    """Kept candidates: parallel arrays (``obj vol F lat traffic energy tiles orders db sp``),
    merged and cut by rank."""

    def __init__(self, **arrays):
        self.a = arrays

    def __len__(self):
        return 0 if not self.a else len(self.a["obj"])

    def take(self, idx):
        return _Pool(**{k: v[idx] for k, v in self.a.items()})

    @staticmethod
    def concat(pools):
        pools = [p for p in pools if len(p)]
        if not pools:
            return _Pool()
        return _Pool(**{k: np.concatenate([p.a[k] for p in pools]) for k in pools[0].a})

    def ranked(self, *primary):
        """Indices in rank order: by the ``primary`` keys (first most significant; default
        the objective), then more work per subvolume, higher 𝔽, then :meth:`identity`."""
        primary = primary or (self.a["obj"],)
        return np.lexsort(self.identity()[::-1] + (-self.a["F"], -self.a["vol"]) + primary[::-1])

    def identity(self) -> tuple:
        """Columns that name each candidate (split, tiles, orders, double buffering), for
        the last tie-break: the ranking then does not depend on the order of the walk."""
        n = len(self)
        cols = np.concatenate([self.a["sp"].reshape(n, -1), self.a["tiles"].reshape(n, -1),
                               self.a["orders"].reshape(n, -1),
                               self.a["db"].reshape(n, -1).astype(np.int64)], axis=1)
        return tuple(cols[:, i] for i in range(cols.shape[1]))

    def best(self, top: int) -> "_Pool":
        """The ``top`` best kept candidates, in rank order."""
        return self.take(self.ranked()[:top]) if len(self) else self

    def kth(self, top: int) -> float:
        """Objective of the ``top``-th best candidate; inf while fewer are kept."""
        return float(self.a["obj"][self.ranked()[top - 1]]) if len(self) >= top else np.inf


class Engine:
    """One (workload, arch, space): a depth-first branch and bound over the declared space.

    A node fixes the split, the tile ladders of the first dims of :attr:`dim_order` and the loop
    orders of the first levels; its bound (:mod:`.bound`) does not exceed the objective of any
    mapping below it. Nodes are expanded in batches, children sorted by bound and the most
    promising batch expanded first, so good solutions (and a tight k-th best) come early; a
    node whose bound exceeds the k-th best found is dropped with its whole subtree. A leaf is
    a full mapping; its bound is its least objective over double buffering, and every double
    buffer choice of a surviving leaf is costed and ranked.
    """

    def __init__(self, workload, arch, constraints: dict):
        self.workload, self.arch = workload, arch
        self.space = Space.build(workload, arch, **constraints)
        st = self.st = self.space.st
        self.L, self.D = st.n_levels, len(st.dims)
        self.T = len(st.tensors)
        self.set_db_variants(self.space.db_variants())
        clock = float(arch.compute.clock_hz)
        self.op_dims, self.op_c = [], []
        ideal = 0.0
        for op in workload.ops:
            per_point = op.ops_per_point if op.kind != "mac" else 1
            c = per_point / rate(arch, op) / clock
            self.op_dims.append([st.dims.index(d) for d in op.dims])
            self.op_c.append(c)
            ideal += int(np.prod([workload.sizes[d] for d in op.dims])) * c / arch.cores
        self.min_time_s = ideal
        self.pp = [op.ops_per_point if op.kind != "mac" else 1 for op in workload.ops]
        S, L, D = len(self.space.splits), self.L, self.D
        self.ladders = [[self.space.dim_ladders(s, j) for j in range(D)] for s in range(S)]
        self.cap = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes * (
            lv.instances if st.array_level is not None and k < st.array_level else 1)
            for k, lv in enumerate(arch.levels)])
        self.split_arr = np.array([[sp.rows[0] if sp.rows else -1, sp.rows[1] if sp.rows else 1,
                                    sp.cols[0] if sp.cols else -1, sp.cols[1] if sp.cols else 1]
                                   for sp in self.space.splits], np.int64)
        self.ways = np.array([sp.ways(D) for sp in self.space.splits], np.int64).reshape(S, D)
        used = self.split_arr[:, 1] * self.split_arr[:, 3]
        self.rbw, self.wbw = link_bandwidths(arch, st.array_level, used)  # [S, L]
        self.n_ladders = np.array([[len(self.ladders[s][j].padded) for j in range(D)]
                                  for s in range(S)], np.int64).reshape(S, D)
        self.groups = [_prefix_groups([self.ladders[s][j] for s in range(S)], L) for j in range(D)]
        args = plan(workload, arch).args  # the model's chain rules: spine and forbidden dims
        self.chain_rules = (args[-2], args[-1]) if len(workload.ops) > 1 else None
        spine = self.chain_rules[0] if self.chain_rules is not None else None
        self.fav = favorable_orders(st, self.space.moved, spine)
        # ranks for completing partial orders: per tensor its favorable order; for the chain
        # rules, spine dims first
        self.prio = np.argsort(self.fav, axis=1)
        self.prio_legal = np.argsort(sorted(range(self.D), key=lambda j: (
            0 if spine is None or spine[j] else 1, j)))
        self.moved_idx = np.array(self.space.moved, np.int64)
        # dims with few ladders first: small fan-out near the root, where bounds are loosest
        self.dim_order = sorted(range(D), key=lambda j: (int(self.n_ladders[:, j].max()), j))
        # stages: per level k = 1 .. L-1 the level-k tile of each dim, then the level k-1 order;
        # a dim with one ladder in every split (a size-1 dim, a fixed tile) is fixed at the root
        self.single = (self.n_ladders == 1).all(0)
        self.stages = []
        for k in range(1, L):
            self.stages += [("tile", k, j) for j in self.dim_order if not self.single[j]]
            self.stages.append(("order", k - 1, -1))
        self.depth = np.zeros((len(self.stages) + 1, D), np.int64)  # levels fixed per dim
        self.depth[0, self.single] = L - 1
        self.n_fixed = np.zeros(len(self.stages) + 1, np.int64)      # levels whose order is fixed
        for i, (kind, k, j) in enumerate(self.stages):
            self.depth[i + 1] = self.depth[i]
            self.n_fixed[i + 1] = self.n_fixed[i] + (kind == "order")
            if kind == "tile":
                self.depth[i + 1, j] = k
        self._tries: dict = {}
        self.energy = None
        self.buf = BufferTable(self.space)

    def set_db_variants(self, dbv: np.ndarray) -> None:
        """The double-buffer choices ``dbv [V, L, moved]`` every mapping is costed under."""
        self.db = np.zeros((len(dbv), self.L, self.T), bool)
        self.db[:, :, self.space.moved] = dbv
        self.dbm = dbv
        self.db_subs = level_subsets(dbv)

    def tile_combos(self) -> int:
        return int(sum(np.prod(self.n_ladders[s], dtype=np.int64) for s in range(len(self.n_ladders))))

    def compute_s(self, padded: np.ndarray) -> np.ndarray:
        """Compute seconds of the busiest core from padded extents ``[n, D]`` (= the model's)."""
        out = np.zeros(len(padded))
        for idx, c in zip(self.op_dims, self.op_c):
            out += np.prod(padded[:, idx], axis=1).astype(float) * c
        return out

    # ----- nodes -----

    def assemble(self, gid: np.ndarray, stage: int, s: np.ndarray | None = None):
        """Per node: tiles for traffic (open levels at their largest), tiles for footprint
        (open levels at their smallest), counts (most) ``[n, L, D]`` and padded extents
        ``[n, D]`` (least) over the ladders of each dim's group ``gid [n, D]``. With the
        splits ``s [n]`` of a chain, the footprint tiles also obey the loops the chain rules
        keep from iterating (:meth:`chain_forced`)."""
        n, L, D = len(gid), self.L, self.D
        tt = np.empty((n, L, D), np.int64)
        tm = np.empty((n, L, D), np.int64)
        cnt = np.empty((n, L, D), np.int64)
        pad = np.empty((n, D), np.int64)
        for j in range(D):
            g = self.groups[j][self.depth[stage, j]]
            tt[:, :, j] = g.whole[gid[:, j]]
            tm[:, :, j] = g.small[gid[:, j]]
            cnt[:, :, j] = g.max_cnt[gid[:, j]]
            pad[:, j] = g.min_pad[gid[:, j]]
        if s is not None and self.chain_rules is not None:
            self.chain_forced(tt, tm, s, stage)
        return tt, tm, cnt, pad

    def chain_forced(self, tt: np.ndarray, tm: np.ndarray, s: np.ndarray, stage: int) -> None:
        """Raise, in place, the footprint stand-ins ``tm`` of open tiles that the chain rules
        force: a loop over a forbidden dim, and a loop over a spine dim below a level with a
        real private loop (known from the fixed tiles ``tt``), may not iterate, so the next
        tile of that dim is at least ``ceil(tile / ways)``. Every legal mapping below the
        node has tiles at least these, so the footprint stays a lower bound; a node whose
        forced tile exceeds the largest of its group (``tm > tt``) has no legal mapping."""
        spine, forbidden = self.chain_rules
        L, dep = self.L, self.depth[stage]
        ways = self.ways[s]
        real = self.fixed_real_loops(tt, s, stage)
        priv = (real & ~spine[None, None, :]).any(2)                        # [n, L-1]
        first = np.where(priv.any(1), np.argmax(priv, axis=1), L)           # [n]
        for j in range(self.D):
            if not (spine[j] or forbidden[j]):
                continue
            for l in range(int(dep[j]) + 1, L):
                w = ways[:, j] if l == self.st.array_level else 1
                need = -(-tm[:, l - 1, j] // w)
                force = np.ones(len(s), bool) if forbidden[j] else l - 1 >= first + 1
                tm[:, l, j] = np.where(force, np.maximum(tm[:, l, j], need), tm[:, l, j])

    def buffers(self, tiles: np.ndarray):
        """Single-buffer bytes of the moved tensors ``[n, L, Tm]`` and other buffers ``[n, L]``."""
        return self.buf.bytes(tiles)

    def traffic(self, s, tiles, ords, nfix: int):
        """Bytes read into / written out of each level ``[n, L, T]`` (float): exact for the
        given orders when every level's order is fixed (``nfix == L-1``; also returns the
        legality mask), else each tensor's least traffic over the open levels' orders."""
        n, L, T = len(s), self.L, self.T
        sp = self.split_arr[s]
        if nfix == L - 1:
            z = np.zeros((n, L, T), bool)
            cb = evaluate_batch(self.workload, self.arch, MappingBatch(
                tiles, ords, z, z, sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3]))
            return cb.reads.astype(float), cb.writes.astype(float), cb.legal
        R, W = self.tensor_traffic(s, tiles, self.tensor_orders(ords, nfix))
        return R, W, None

    def tensor_orders(self, ords: np.ndarray, nfix: int) -> np.ndarray:
        """``[n, Tm, L-1, D]``: per moved tensor, the nodes' orders ``ords`` of the first
        ``nfix`` levels and its favourable order (:func:`favorable_orders`) below."""
        o = np.empty((len(ords), len(self.fav), self.L - 1, self.D), np.int64)
        o[:] = self.fav[None, :, None, :]
        o[:, :, :nfix] = ords[:, None, :nfix]
        return o

    def tensor_traffic(self, s, tiles, o):
        """Bytes read into / written out of each level ``[n, L, T]`` (float) where moved
        tensor ``i`` takes its own orders ``o[:, i] [n, Tm, L-1, D]`` (one model row per
        tensor)."""
        n, Tm, L, T = len(s), len(self.fav), self.L, self.T
        rows = n * Tm
        z = np.zeros((rows, L, T), bool)
        spr = np.repeat(self.split_arr[s], Tm, 0)
        cb = evaluate_batch(self.workload, self.arch, MappingBatch(
            np.repeat(tiles, Tm, 0), o.reshape(rows, L - 1, self.D), z, z,
            spr[:, 0], spr[:, 1], spr[:, 2], spr[:, 3]), only=np.tile(self.moved_idx, n))
        rd = cb.reads.reshape(n, Tm, L, T)
        wr = cb.writes.reshape(n, Tm, L, T)
        R = np.zeros((n, L, T))
        W = np.zeros((n, L, T))
        for i, ti in enumerate(self.moved_idx):
            R[:, :, ti] = rd[:, i, :, ti]
            W[:, :, ti] = wr[:, i, :, ti]
        return R, W

    def node_traffic(self, nd: dict, stage: int):
        """Per-tensor traffic bounds (or exact traffic at a leaf) of nodes at ``stage``."""
        tt = self.capped(self.stand_ins(nd, stage), nd["s"], stage)
        return self.traffic(nd["s"], tt, nd["ords"], int(self.n_fixed[stage]))

    def stand_ins(self, nd: dict, stage: int) -> dict:
        """The stand-ins of nodes at ``stage`` (:meth:`assemble`: ``tt tm cnt pad``) and the
        single-buffer bytes of their smallest tiles (``bufs fixed``)."""
        tt, tm, cnt, pad = self.assemble(nd["gid"], stage, nd["s"])
        bufs, fixed = self.buffers(tm)
        return dict(tt=tt, tm=tm, cnt=cnt, pad=pad, bufs=bufs, fixed=fixed)

    def capped(self, si: dict, s: np.ndarray, stage: int, idx=None) -> np.ndarray:
        """The traffic stand-ins of ``si`` (nodes at ``stage``, rows ``idx``, default all)
        with each open innermost tile whose dim is fixed above capped to the largest that
        can fit (:meth:`.BufferTable.cap_tiles`); kept in ``si`` for reuse.

        Only the innermost level, only below fixed tiles: the capped stand-in then differs
        from a mapping below the node in that one tile, and a larger innermost tile never
        moves more bytes. Capping a deeper tile under an open (whole) parent would not be a
        bound: it turns the parent's loop real *inside* every loop of the levels above,
        where a mapping with a smaller parent tile has that loop outside them (GEMM 512 x
        3072 x 768 on aie-4x2: the C partial sums reloaded 48x, a bound of 2x the optimum)."""
        dims = self.depth[stage] >= self.L - 2
        if "ttc" not in si:
            if idx is not None:
                ttc = si["tt"][idx]
                self.buf.cap_tiles(ttc, si["tm"][idx], s, self.cap, dims)
                return ttc
            si["ttc"] = si["tt"].copy()
            self.buf.cap_tiles(si["ttc"], si["tm"], s, self.cap, dims)
        return si["ttc"] if idx is None else si["ttc"][idx]

    def bound(self, nd: dict, stage: int, objectives: tuple[str, ...], stats: dict,
              rw=None, si=None) -> np.ndarray:
        """Bounds ``[n, len(objectives)]`` of nodes at ``stage`` (see the class doc); ``inf``
        for nodes that cannot fit (their smallest buffers, single-buffered, overflow a
        level) or, in a chain, cannot be legal (:meth:`chain_legal`): those are found first,
        without a model call. ``rw``: traffic bounds to use instead of the model's (a
        parent's bounds hold for its children: a cheap first filter); ``si``: the nodes'
        :meth:`stand_ins` when already known."""
        n = len(nd["s"])
        leaf = rw is None and self.n_fixed[stage] == self.L - 1  # full mappings: exact
        si = self.stand_ins(nd, stage) if si is None else si
        tt, tm, cnt, pad, bufs, fixed = (si[k] for k in ("tt", "tm", "cnt", "pad", "bufs", "fixed"))
        out = np.full((n, len(objectives)), np.inf)
        over = bufs.sum(2) + fixed > self.cap[None, :]
        alive = ~over.any(1)
        if leaf:
            stats["evaluated"] += n
            stats["candidates"] += n * len(self.db)
        else:
            for k in range(1, self.L):  # count the nodes by the level that overflows first
                self._reject(stats, f"capacity at {self.arch.levels[k].name}",
                             over[:, k] & ~over[:, :k].any(1))
            if self.chain_rules is not None:
                legal = self.chain_legal(tt, nd["s"], stage) & (tm <= tt).all((1, 2))
                self._reject(stats, "chain order", alive & ~legal)
                alive &= legal
        idx = np.nonzero(alive)[0]
        if not len(idx):
            return out
        if len(idx) < n:
            nd = {key: nd[key][idx] for key in ("s", "gid", "ords")}
            cnt, pad, bufs, fixed = cnt[idx], pad[idx], bufs[idx], fixed[idx]
            rw = None if rw is None else (rw[0][idx], rw[1][idx])
        s, m = nd["s"], len(idx)
        if rw is None:
            ttc = self.capped(si, s, stage, idx if m < n else None)
            R, W, legal = self.traffic(s, ttc, nd["ords"], int(self.n_fixed[stage]))
        else:
            R, W, legal = rw[0], rw[1], None
        cs = self.compute_s(pad)
        pts = np.zeros(m)
        for ix, p in zip(self.op_dims, self.pp):
            pts += np.prod(pad[:, ix], axis=1).astype(float) * p
        it = np.prod(cnt, axis=2).astype(float)
        e_mac, e_byte = self.energy if self.energy is not None else (0.0, np.zeros(self.L))
        sub = np.empty((m, len(objectives)))
        nfit = np.zeros(m, np.int64)
        for i, o in enumerate(objectives):
            best_variant(OBJ_CODE[o], cs, R, W, self.rbw[s], self.wbw[s], it, bufs, fixed,
                         self.cap, *self.db_subs, self.moved_idx, e_mac, e_byte, pts, sub[:, i], nfit)
        if leaf:
            stats["valid"] += int(nfit[legal].sum())
            sub[~legal] = np.inf
            self._reject(stats, "chain order", ~legal, len(self.db))
        else:
            self._reject(stats, "capacity with the declared double buffering", nfit == 0)
        out[idx] = sub
        return out

    @staticmethod
    def _reject(stats: dict, key: str, mask: np.ndarray, per: int = 1) -> None:
        if mask.any():
            stats["rejected"][key] = stats["rejected"].get(key, 0) + int(mask.sum()) * per

    # ----- expansion -----

    def trie(self, real_key: tuple) -> OrderTrie:
        """The canonical orders of one level with real loops ``real_key`` (bools per dim) as
        a trie from the innermost loop outward (:mod:`.order_trie`)."""
        if real_key not in self._tries:
            self._tries[real_key] = OrderTrie.build(self.space.orders_for(real_key), sum(real_key))
        return self._tries[real_key]

    def children(self, nd: dict, stage: int):
        """The children of ``nd`` (nodes at a tile stage), in slices of at most ``_ROWS``, each
        with its share ``w`` of the parent's weight (the fraction of the space below it) and
        the index of its ``parent``."""
        kind, k, j = self.stages[stage]
        g = self.groups[j][k - 1]
        parent, child = _expand(g.child_lo[nd["gid"][:, j]], g.child_hi[nd["gid"][:, j]])
        share = self.groups[j][k].combos[child] / g.combos[nd["gid"][parent, j]]
        for a in range(0, len(parent), _ROWS):
            p = parent[a:a + _ROWS]
            gid = nd["gid"][p].copy()
            gid[:, j] = child[a:a + _ROWS]
            yield dict(s=nd["s"][p], gid=gid, ords=nd["ords"][p], w=nd["w"][p] * share[a:a + _ROWS],
                       parent=p)

    def order_children(self, nd: dict, stage: int, objectives, keep, stats, defer=None,
                       keep_partial=None, theta=None):
        """The children of ``nd`` (nodes at the stage fixing the level-``k`` order) that
        survive ``keep``, with their bounds ``lb``, and the weight of the pruned ones.

        The order is fixed one real loop at a time from the innermost (:class:`OrderTrie`);
        a partial order is bounded like an open level, each tensor completing it with the
        free loops sorted its favourable way (:meth:`partial_order_bound`), and dropped with
        every order ending in it when ``keep_partial`` (default ``keep``) refuses the bound
        or the chain rules refuse every completion (checked on the completion with spine
        loops first).

        Threshold passes (``theta()`` the current threshold, ``defer`` as in :meth:`dfs`): a
        partial order over the threshold is cut and its parent deferred with ``tp`` = the
        threshold; re-expanded in a later pass, the parent emits only the orders below a
        partial order over ``tp`` (the others were emitted before, or deferred as nodes)."""
        k = self.stages[stage][1]
        Tm = len(self.fav)
        si = self.stand_ins(nd, stage)  # the level-k order changes no tile: one for all children
        self.capped(si, nd["s"], stage)
        take = lambda rows: {key: v[rows] for key, v in si.items()}
        real_all = self.space.real_loops(si["tt"], self.ways[nd["s"]])
        keys = np.packbits(real_all[:, k], axis=1, bitorder="little")
        _, first, tid = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        tries = [self.trie(tuple(bool(x) for x in real_all[i, k])) for i in first]
        total = np.array([len(t.orders) for t in tries], float)
        p, tid, g = np.arange(len(tid)), tid.ravel(), np.zeros(len(tid), np.int64)
        rep = np.array([t.orders[0] for t in tries], np.int64).reshape(-1, self.D)[tid]
        size = total[tid].astype(np.int64)
        tp = nd["tp"] if "tp" in nd else np.full(len(tid), -np.inf)
        new = np.zeros(len(p), bool)  # a partial order above it was over tp: not emitted before
        cut_lb = np.full(len(tid), np.inf)  # per parent: least bound of a partial order cut
        out, pruned = [], 0.0
        for m in range(self.D + 1):
            if m:  # expand every surviving partial order by one loop
                P, TID, G, rep, size, NEW = [], [], [], [], [], []
                for q in np.unique(tid):
                    sel = np.nonzero(tid == q)[0]
                    tr = tries[q]
                    par, c = _expand(tr.child_lo[m - 1][g[sel]], tr.child_hi[m - 1][g[sel]])
                    par = sel[par]
                    P.append(p[par])
                    TID.append(np.full(len(par), q))
                    G.append(c)
                    NEW.append(new[par])
                    rep.append(tr.orders[tr.lo[m][c]])
                    size.append(tr.hi[m][c] - tr.lo[m][c])
                p, tid, g = np.concatenate(P), np.concatenate(TID), np.concatenate(G)
                rep, size, new = np.concatenate(rep), np.concatenate(size), np.concatenate(NEW)
            w = nd["w"][p] * size / total[tid]
            done = (size == 1) & (new | np.isneginf(tp[p]))  # a single order left: complete
            if done.any():
                ords = nd["ords"][p[done]].copy()
                ords[:, k] = rep[done]
                ch = dict(s=nd["s"][p[done]], gid=nd["gid"][p[done]], ords=ords, w=w[done],
                          parent=p[done])
                if self.chain_rules is not None:
                    ok = self.legal_prefix(real_all, nd["ords"], p[done], rep[done], k)
                    pruned += float(ch["w"][~ok].sum())
                    ch = {key: v[ok] for key, v in ch.items()}
                for a in range(0, len(ch["s"]), _ROWS // Tm):
                    part = {key: v[a:a + _ROWS // Tm] for key, v in ch.items()}
                    part["lb"] = self.bound(part, stage + 1, objectives, stats,
                                            si=take(part.pop("parent")))
                    ok = keep(part["lb"])
                    if defer is not None and not ok.all():
                        pruned -= defer(stage + 1, {key: v[~ok] for key, v in part.items()})
                    pruned += float(part["w"][~ok].sum())
                    if stage + 1 == len(self.stages):
                        stats["pruned_candidates"] += int((~ok).sum()) * len(self.db)
                    out.append({key: v[ok] for key, v in part.items()})
            more = size > 1
            p, tid, g, rep, w, new = p[more], tid[more], g[more], rep[more], w[more], new[more]
            if not len(p):
                break
            if not m:
                continue  # the root: the parent's bound holds
            r = np.array([t.r for t in tries])[tid]
            if self.chain_rules is not None:
                arr = _arrange(rep, r - m, self.prio_legal)
                legal = self.legal_prefix(real_all, nd["ords"], p, arr, k)
                pruned += float(w[~legal].sum())
                p, tid, g, rep, w, r = p[legal], tid[legal], g[legal], rep[legal], w[legal], r[legal]
                new = new[legal]
            lbs = np.empty((len(p), len(objectives)))
            stats["nodes"] += len(p)
            for a in range(0, len(p), _ROWS // Tm):
                sl = slice(a, a + _ROWS // Tm)
                sub = {key: nd[key][p[sl]] for key in ("s", "gid", "ords")}
                lbs[sl] = self.partial_order_bound(sub, stage, rep[sl], r[sl] - m, objectives,
                                                   stats, take(p[sl]))
            ok = (keep_partial or keep)(lbs)
            lb = lbs[:, 0]
            if theta is not None:  # over the threshold: cut now, the parent deferred
                cut = ok & (lb > theta() * (1 + _SLACK))
                np.minimum.at(cut_lb, p[cut], lb[cut])
                ok &= ~cut
                pruned -= float(w[cut].sum())  # not pruned: deferred
            pruned += float(w[~ok].sum())
            new = new[ok] | (lb[ok] > tp[p[ok]] * (1 + _SLACK))
            p, tid, g, rep = p[ok], tid[ok], g[ok], rep[ok]
            if not len(p):
                break
        if defer is not None and np.isfinite(cut_lb).any():
            back = np.nonzero(np.isfinite(cut_lb))[0]
            part = {key: v[back] for key, v in nd.items() if key not in ("lb", "tp")}
            part["lb"] = np.repeat(cut_lb[back][:, None], nd["lb"].shape[1], 1)
            part["tp"] = np.full(len(back), theta())
            defer(stage, part)
        if not out:
            return None, pruned
        return {key: np.concatenate([c[key] for c in out]) for key in out[0]}, pruned

    def fixed_real_loops(self, tt: np.ndarray, s: np.ndarray, stage: int) -> np.ndarray:
        """``[n, L-1, D]``: the loops of nodes at ``stage`` (splits ``s``, tiles ``tt``) known
        to iterate more than once: both tiles that decide them are fixed."""
        known = self.depth[stage][None, :] >= np.arange(1, self.L)[:, None]   # [L-1, D]
        return self.space.real_loops(tt, self.ways[s]) & known[None]

    def chain_legal(self, tt: np.ndarray, s: np.ndarray, stage: int) -> np.ndarray:
        """Whether nodes at ``stage`` (tiles ``tt``) can be legal for the chain rules whatever
        their orders: among the loops whose tiles are fixed, no real loop over a forbidden dim
        and no real private loop at a level above a real spine loop (within a level the order
        can put spine loops first; that is checked when the order is fixed)."""
        spine, forbidden = self.chain_rules
        real = self.fixed_real_loops(tt, s, stage)
        ok = ~(real & forbidden[None, None, :]).any((1, 2))
        private = np.logical_or.accumulate((real & ~spine[None, None, :]).any(2), axis=1)
        return ok & ~(private[:, :-1] & (real & spine[None, None, :]).any(2)[:, 1:]).any(1)

    def partial_order_bound(self, nd: dict, stage: int, rep: np.ndarray, n_free,
                            objectives, stats, si=None) -> np.ndarray:
        """Bounds of nodes ``nd`` at the order stage ``stage`` (level ``k``) given a partial
        level-``k`` order: ``rep [n, D]`` with its first ``n_free`` loops free (the outer
        real loops, any order) and the rest fixed; each tensor completes it its favourable
        way (:func:`.order_trie.arrange`), deeper open levels too."""
        k = self.stages[stage][1]
        o = self.tensor_orders(nd["ords"], k)
        for i in range(len(self.fav)):
            o[:, i, k] = _arrange(rep, n_free, self.prio[i])
        si = self.stand_ins(nd, stage) if si is None else si
        rw = self.tensor_traffic(nd["s"], self.capped(si, nd["s"], stage), o)
        return self.bound(nd, stage + 1, objectives, stats, rw, si)

    def legal_prefix(self, real_all, ords, parent, ordk, k) -> np.ndarray:
        """Whether the loops of levels 0 .. k (orders ``ords[parent]`` above k, ``ordk`` at k;
        ``real_all`` the parents' real loops, :meth:`Space.real_loops`) obey the chain rules
        of :mod:`tilewise.model.legality` (spine loops before private ones in the flattened
        nest, no real loop over a forbidden dim); deeper levels are checked when their orders
        are fixed."""
        spine, forbidden = self.chain_rules
        n = len(parent)
        first_private = np.full(n, np.iinfo(np.int64).max)
        last_spine = np.full(n, -1)
        ok = np.ones(n, bool)
        pos = 0
        for lvl in range(k + 1):
            o = ordk if lvl == k else ords[parent, lvl]
            real = real_all[parent, lvl]
            for p in range(self.D):
                dq = o[:, p]
                r = real[np.arange(n), dq]
                ok &= ~(r & forbidden[dq])
                sp = r & spine[dq]
                last_spine = np.where(sp, pos, last_spine)
                first_private = np.where(r & ~spine[dq], np.minimum(first_private, pos), first_private)
                pos += 1
        return ok & (first_private > last_spine)

    # ----- the depth-first branch and bound -----

    def root(self, objectives, stats) -> dict:
        """The root nodes (one per split with a non-empty space) with their bounds."""
        L, D = self.L, self.D
        ok = np.nonzero((self.n_ladders > 0).all(1))[0]
        root = dict(s=ok.astype(np.int64), gid=self.root_gid(ok),
                    ords=np.full((len(ok), max(L - 1, 1), D), -1, np.int64),
                    w=np.prod(self.n_ladders[ok], axis=1).astype(float) / max(stats["tile_combos"], 1))
        root["lb"] = self.bound(root, 0, objectives, stats)
        return root

    def root_gid(self, s: np.ndarray) -> np.ndarray:
        """``[n, D]`` group indices of the roots of splits ``s``: the split itself (depth 0),
        or for a dim with a single ladder its one ladder (depth L-1)."""
        gid = np.tile(np.asarray(s, np.int64)[:, None], (1, self.D))
        for j in np.nonzero(self.single)[0]:
            gid[:, j] = np.searchsorted(self.groups[j][self.L - 1].lo, self.groups[j][0].lo[s])
        return gid

    def dfs(self, objectives, keep, leaf, stats, progress=None, roots=None, defer=None,
            keep_partial=None, theta=None, done=0.0) -> float:
        """Visit the space below ``roots`` (``(stage, nodes)`` entries, the last popped first;
        default the root): ``keep(bounds) -> mask`` prunes, ``leaf(nodes)`` takes full
        mappings (their bounds are exact per mapping, least over double buffering).
        ``defer(stage, nodes)`` receives every node ``keep`` refuses (to keep those a threshold
        cut, not a bound) and returns the weight it kept for later (not done); partial loop
        orders are pruned by ``keep_partial`` and cut at ``theta()`` (:meth:`order_children`).
        ``done``: the share of the space already settled (for ``progress``); returns it
        updated."""
        L = self.L
        total = stats["tile_combos"]
        if roots is None:
            roots = [(0, self.root(objectives, stats))]
        last = len(self.stages)
        stack = list(roots)
        while stack:
            stage, nd = stack.pop()
            m = keep(nd["lb"])
            if not m.all():
                if defer is not None:
                    done -= defer(stage, {k: v[~m] for k, v in nd.items()})
                done += float(nd["w"][~m].sum())
                if stage == last:
                    stats["pruned_candidates"] += int((~m).sum()) * len(self.db)
                nd = {k: v[m] for k, v in nd.items()}
            if len(nd["s"]) == 0:
                continue
            if stage == last:
                leaf(nd)
                done += float(nd["w"].sum())
                continue
            if progress:
                progress(int(min(done, 1.0) * total), total)
            kind, k, j = self.stages[stage]
            fan = int(self.n_ladders[:, j].max()) if kind == "tile" else 64
            batch = max(1, _ROWS // max(fan, 1))
            if len(nd["s"]) > batch:
                stack.append((stage, {key: v[batch:] for key, v in nd.items()}))
                nd = {key: v[:batch] for key, v in nd.items()}
            stats["nodes"] += len(nd["s"])
            if kind == "order":
                kids, pruned = self.order_children(nd, stage, objectives, keep, stats, defer,
                                                   keep_partial, theta)
                done += pruned
                kids = [kids] if kids is not None and len(kids["s"]) else []
            else:
                kids = []
                rw = self.node_traffic(nd, stage)[:2]  # the parent's traffic bounds hold
                for ch in self.children(nd, stage):   # for its children: a first filter
                    parent = ch.pop("parent")
                    si = self.stand_ins(ch, stage + 1)
                    lb = self.bound(ch, stage + 1, objectives, stats,
                                    (rw[0][parent], rw[1][parent]), si)
                    m = keep(lb)
                    if defer is not None and not m.all():
                        refused = {key: v[~m] for key, v in ch.items()}
                        done -= defer(stage + 1, {**refused, "lb": lb[~m]})
                    done += float(ch["w"][~m].sum())
                    ch = {key: v[m] for key, v in ch.items()}
                    if not len(ch["s"]):
                        continue
                    ch["lb"] = self.bound(ch, stage + 1, objectives, stats,
                                          si={key: v[m] for key, v in si.items()})
                    m = keep(ch["lb"])
                    if defer is not None and not m.all():
                        done -= defer(stage + 1, {key: v[~m] for key, v in ch.items()})
                    done += float(ch["w"][~m].sum())
                    kids.append({key: v[m] for key, v in ch.items()})
            if not kids:
                continue
            kids = {key: np.concatenate([c[key] for c in kids]) for key in kids[0]}
            if (self.depth[stage + 1] == L - 1).all() and not (self.depth[stage] == L - 1).all():
                stats["examined_combos"] += len(kids["s"])
            lb = kids["lb"]
            order = np.lexsort(tuple(lb[:, i] for i in range(lb.shape[1] - 1, -1, -1)))
            stack.append((stage + 1, {key: v[order] for key, v in kids.items()}))
        if progress:
            progress(int(min(done, 1.0) * total) if defer is not None else total, total)
        return done

    def leaf_pool(self, nd: dict, stats: dict, kth: float = np.inf, top: int | None = None) -> _Pool:
        """Every double-buffer choice of the full mappings ``nd``, costed and filtered by
        capacity; with ``top``, only the choices that can enter the top-k (and their ties)."""
        L = self.L
        s = nd["s"]
        tiles, _, counts, _ = self.assemble(nd["gid"], len(self.stages))
        spb = self.split_arr[s]
        B = len(s)
        z = np.zeros((B, L, self.T), bool)
        batch = MappingBatch(tiles, nd["ords"], z, z, spb[:, 0], spb[:, 1], spb[:, 2], spb[:, 3])
        cb = evaluate_batch(self.workload, self.arch, batch)
        V = len(self.db)
        rbw, wbw = self.rbw[s], self.wbw[s]
        iterations = np.prod(counts, axis=2).astype(float)
        r, w = cb.reads.astype(float), cb.writes.astype(float)
        bufs, fixed = self.buffers(tiles)
        total = np.einsum("blt,vlt->bvl", bufs, self.dbm.astype(np.int64)) + (bufs.sum(2) + fixed)[:, None, :]
        fits = ~(total > self.cap[None, None, :]).any(2) & cb.legal[:, None]
        lat = latency_variants(cb.compute_s, r, w, rbw, wbw, iterations, self.db)
        traffic = np.broadcast_to(cb.offchip_bytes[:, None].astype(float), (B, V))
        if self.energy is not None:
            e_mac, e_byte = self.energy
            moved = (r + w).sum(2) @ e_byte
            pts = (cb.padded_points * np.array(self.pp)[None, :]).sum(1)
            energy = np.broadcast_to((moved + pts * e_mac)[:, None], (B, V))
        else:
            energy = np.full((B, V), np.nan)
        ratio = cb.ratio[:, 1:]
        F = np.where(np.isfinite(ratio), ratio, np.inf).min(1) if L > 1 else np.full(B, np.inf)
        obj = {"latency": lat, "traffic": traffic, "energy": energy, "edp": energy * lat}[self.objective]
        obj = np.where(fits, obj, np.inf)
        if top is not None and obj.size > top:  # keep the top-k and its ties only
            cut = min(np.partition(obj.ravel(), top - 1)[top - 1], kth)
            fits = fits & (obj <= cut)
        bi, vi = np.nonzero(fits)
        if len(bi) == 0:
            return _Pool()
        stats["leaves"] += B
        vol = np.prod(tiles[:, L - 1, :], axis=1).astype(float)
        return _Pool(obj=obj[bi, vi], vol=vol[bi], F=F[bi],
                     lat=lat[bi, vi], traffic=traffic[bi, vi], energy=energy[bi, vi],
                     tiles=tiles[bi], orders=nd["ords"][bi], db=self.db[vi], sp=spb[bi])

    def new_stats(self) -> dict:
        return {"tile_combos": self.tile_combos(), "examined_combos": 0, "evaluated": 0,
                "candidates": 0, "valid": 0, "rejected": {}, "smallest": {},
                "pruned_candidates": 0, "leaves": 0, "nodes": 0, "passes": 0}

    def run(self, objective: str, top: int, progress=None) -> tuple[_Pool, dict]:
        self.objective = objective
        if objective in ("energy", "edp"):
            self.energy = energy_constants(self.arch)
        stats = self.new_stats()
        root = self.root((objective,), stats)
        # threshold passes (module doc): nodes over theta are deferred, not dropped, and the
        # next pass resumes from them
        lb0 = float(root["lb"][:, 0].min()) if len(root["s"]) else np.inf
        state = {"theta": lb0 * (1 + _THETA0), "best": _Pool(), "kth": np.inf}

        def keep(lb):
            return (lb[:, 0] <= state["kth"] * (1 + _SLACK)) & (lb[:, 0] <= state["theta"] * (1 + _SLACK))

        def keep_partial(lb):
            return lb[:, 0] <= state["kth"] * (1 + _SLACK)

        def defer(stage, nd):
            lb = nd["lb"][:, 0]
            cut = (lb <= state["kth"] * (1 + _SLACK)) & (lb > state["theta"] * (1 + _SLACK))
            if not cut.any():
                return 0.0
            state["deferred"].append((stage, {k: v[cut] for k, v in nd.items()}))
            state["next"] = min(state["next"], float(lb[cut].min()))
            return float(nd["w"][cut].sum())  # not done: a later pass visits it

        def leaf(nd):
            pool = self.leaf_pool(nd, stats, state["kth"], top)
            state["best"] = _Pool.concat([state["best"], pool]).best(top)
            state["kth"] = state["best"].kth(top)

        entries, done = [(0, root)], 0.0
        while True:  # exact once the top-k lie within the threshold or nothing was deferred
            state.update(deferred=[], next=np.inf)
            stats["passes"] += 1
            done = self.dfs((objective,), keep, leaf, stats, progress, entries, defer=defer,
                            keep_partial=keep_partial, theta=lambda: state["theta"], done=done)
            if state["kth"] <= state["theta"] * (1 + _SLACK) or not state["deferred"]:
                break
            state["theta"] = max(state["next"], lb0 + (state["theta"] - lb0) * _THETA_GROWTH)
            # resume from the deferred nodes, the least bounds popped first
            entries = sorted(state["deferred"], key=lambda e: -float(e[1]["lb"][:, 0].min()))
        if progress:
            progress(stats["tile_combos"], stats["tile_combos"])
        if not len(state["best"]):
            self.find_smallest(stats)
        return state["best"], stats

    def find_smallest(self, stats: dict) -> None:
        """For the empty-space message: the smallest tiles of every split, checked for fit."""
        S = len(self.space.splits)
        _, tiles, _, _ = self.assemble(self.root_gid(np.arange(S)), 0)
        self.space.fits_single(tiles, {"rejected": {}, "smallest": stats["smallest"]})

    def front(self, x: str, y: str, progress=None) -> _Pool:
        """Exact Pareto front of (x, y) over the whole space: a node is dropped when a point
        already on the front is at least as good in both metrics as its bounds."""
        if "energy" in (x, y) or "edp" in (x, y):
            self.energy = energy_constants(self.arch)
        self.objective = "latency"
        key = {"latency": "lat", "traffic": "traffic", "energy": "energy"}
        stats = self.new_stats()
        state = {"front": _Pool(), "fx": np.zeros(0), "fy": np.zeros(0)}

        def keep(lb):
            fx, fy = state["fx"], state["fy"]
            if not len(fx):
                return np.ones(len(lb), bool)
            i = np.searchsorted(fx, lb[:, 0] * (1 - _SLACK), side="right") - 1
            ymin = np.where(i >= 0, fy[np.maximum(i, 0)], np.inf)
            return ~(ymin < lb[:, 1] * (1 - _SLACK))

        def leaf(nd):
            pool = self.leaf_pool(nd, stats)
            merged = _Pool.concat([state["front"], pool])
            if not len(merged):
                return
            mx, my = _metric(merged, x, key), _metric(merged, y, key)
            order = merged.ranked(mx, my)
            ys = my[order]
            prev_min = np.minimum.accumulate(np.concatenate([[np.inf], ys[:-1]]))
            f = merged.take(order[ys < prev_min])
            state["front"], state["fx"], state["fy"] = f, _metric(f, x, key), _metric(f, y, key)

        self.dfs((x, y), keep, leaf, stats, progress)
        return state["front"]


@dataclass(frozen=True)
class _Groups:
    """The ladders of one dim (every split, concatenated) grouped by their tiles at levels
    1 .. depth: per group the ladder range, the child groups one level deeper and the stand-ins
    for its open levels (largest and smallest tile, most iterations, least padded extent)."""

    lo: np.ndarray
    hi: np.ndarray
    combos: np.ndarray        # ladders in the group
    child_lo: np.ndarray      # groups at depth + 1 inside this one: [child_lo, child_hi)
    child_hi: np.ndarray
    whole: np.ndarray         # [G, L]
    small: np.ndarray
    max_cnt: np.ndarray
    min_pad: np.ndarray       # [G]


def _prefix_groups(ladders: list, L: int) -> list[_Groups]:
    """Groups of every depth 0 .. L-1 (depth 0: one group per split) over the ladders of every
    split, sorted by tiles so that every group is a contiguous range."""
    tiles, counts, padded, split = [], [], [], []
    for s, ch in enumerate(ladders):
        order = np.lexsort(tuple(ch.tiles[:, k] for k in range(L - 1, 0, -1)))
        tiles.append(ch.tiles[order])
        counts.append(ch.counts[order])
        padded.append(ch.padded[order])
        split.append(np.full(len(ch.padded), s, np.int64))
    tiles, counts, padded = np.concatenate(tiles), np.concatenate(counts), np.concatenate(padded)
    key = np.concatenate([np.concatenate(split)[:, None], tiles[:, 1:]], 1)
    n = len(key)
    out = []
    for d in range(L):
        if n:
            new = np.ones(n, bool)
            new[1:] = (key[1:, :d + 1] != key[:-1, :d + 1]).any(1)
            lo = np.nonzero(new)[0]
        else:
            lo = np.zeros(0, np.int64)
        if d == 0:  # one group per split, empty ones included
            lo = np.searchsorted(key[:, 0], np.arange(len(ladders)))
        hi = np.append(lo[1:], n) if d else np.searchsorted(key[:, 0], np.arange(len(ladders)), "right")
        ne = hi > lo
        red = lambda f, a: np.where(ne[:, None] if a.ndim > 1 else ne,
                                    f.reduceat(a, np.minimum(lo, max(n - 1, 0)))
                                    if n else np.ones((len(lo),) + a.shape[1:], np.int64), 1)
        out.append(_Groups(lo, hi, (hi - lo).astype(float), None, None,
                           red(np.maximum, tiles), red(np.minimum, tiles),
                           red(np.maximum, counts), red(np.minimum, padded)))
    for d in range(L - 1):
        g, c = out[d], out[d + 1]
        object.__setattr__(g, "child_lo", np.searchsorted(c.lo, g.lo))
        object.__setattr__(g, "child_hi", np.searchsorted(c.lo, g.hi))
    return out


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every index of the ranges ``[lo[i], hi[i])``, with the range ``i`` it came from:
    ``(parent, index)``, both ``[sum(hi - lo)]``, in range order."""
    fan = hi - lo
    parent = np.repeat(np.arange(len(fan)), fan)
    return parent, np.arange(len(parent)) - np.repeat(np.cumsum(fan) - fan, fan) + lo[parent]


def _metric(pool: _Pool, name: str, key: dict) -> np.ndarray:
    if name == "edp":
        return pool.a["energy"] * pool.a["lat"]
    return pool.a[key[name]]


def search(workload, arch, objective: str = "latency", top: int = 10, *, progress=None,
           **constraints) -> Result:
    """The exact optimum and top-``top`` mappings of ``workload`` on ``arch`` for ``objective``
    ("latency" s, "traffic" off-chip bytes, "energy" J, "edp" J·s) over the declared space,
    restricted by ``constraints`` (see the module doc). ``arch`` is an Arch, a preset name or
    a YAML path. ``progress(done, total)`` is called after each chunk (tile combos).
    Raises CapacityError explaining with numbers why the space is empty."""
    arch = _arch(arch)
    bad = sorted(set(constraints) - set(CONSTRAINTS))
    if bad:
        raise TilewiseError(f"unknown search constraint {', '.join(map(repr, bad))}; valid: "
                            + ", ".join(CONSTRAINTS))
    if objective not in OBJECTIVES:
        raise TilewiseError(f"objective {objective!r} unknown; valid: {', '.join(OBJECTIVES)}")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise TilewiseError(f"top={top!r} must be a positive integer")
    t0 = time.perf_counter()
    engine = Engine(workload, arch, constraints)
    pool, stats = engine.run(objective, top, progress)
    if not len(pool):
        raise CapacityError(explain_empty(engine, stats))
    ranked = pool.take(pool.ranked())
    sols = _solutions(engine, ranked)
    stats["seconds"] = time.perf_counter() - t0
    stats["candidates_per_s"] = stats["candidates"] / max(stats["seconds"], 1e-9)
    smallest = stats.pop("smallest")
    stats["smallest_rejected"] = {k: v[0] for k, v in smallest.items()}

    def front(x, y):
        f = engine.front(x, y, progress)
        return _solutions(engine, f)

    return Result(workload, arch, objective, sols, engine.min_time_s, stats, front)


def _solutions(engine: Engine, pool: _Pool) -> list[Solution]:
    """Re-evaluate the kept candidates with :func:`tilewise.evaluate` (exact Cost objects)."""
    a = pool.a
    if not len(pool):
        return []
    batch = MappingBatch(a["tiles"], a["orders"], np.zeros_like(a["db"]), a["db"],
                         a["sp"][:, 0], a["sp"][:, 1], a["sp"][:, 2], a["sp"][:, 3])
    out = []
    for i in range(len(pool)):
        m = batch.mapping(i, engine.workload, engine.arch)
        cost = evaluate(engine.workload, engine.arch, m)
        energy = None
        if engine.energy is not None or _has_energy(engine.arch):
            e_mac, e_byte = energy_constants(engine.arch)
            levels = [lv.name for lv in engine.arch.levels]
            moved = sum((sum(cost.reads[lv].values()) + sum(cost.writes[lv].values())) * e_byte[k]
                        for k, lv in enumerate(levels) if k > 0)
            pts = sum(cost.padded_points[op.name] * p for op, p in zip(engine.workload.ops, engine.pp))
            energy = moved + pts * e_mac
        out.append(Solution(m, cost, cost.latency_s, cost.offchip_bytes, energy,
                            None if energy is None else energy * cost.latency_s,
                            cost.latency_s / engine.min_time_s))
    return out


def _has_energy(arch) -> bool:
    return arch.compute.energy_pj_per_mac is not None and all(
        lv.energy_pj_per_byte is not None for lv in arch.levels[1:])


def explain_empty(engine: Engine, stats: dict) -> str:
    """Why no mapping is valid, with the smallest rejected candidate's bytes per level."""
    parts = []
    for lv, (total, tiles, bufs, other, cap) in stats["smallest"].items():
        tt = " ".join(f"{d}{t}" for d, t in tiles.items())
        detail = ", ".join(f"{n} {b:,} B" for n, b in bufs.items())
        if other:
            detail += f", intermediates/state {other:,} B"
        parts.append(f"the smallest {lv} tile ({tt}) needs {total:,} B at level {lv} ({detail}) "
                     f"but capacity is {cap:,} B (short by {total - cap:,} B)")
    rej = stats["rejected"]
    if parts:
        return "no mapping fits: " + "; ".join(parts)
    if rej:
        return ("no valid mapping: rejected " + ", ".join(f"{v:,} by {k}" for k, v in rej.items())
                + f" of {stats['candidates']:,} candidates")
    return (f"the declared space is empty ({stats['tile_combos']} tile combos): loosen the "
            "constraints (tiles=, max_core_tile=, orders=, spatial=)")
