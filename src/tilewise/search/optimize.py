"""Exact search: the optimum, the top-k and the Pareto front over the declared space.

The space (:mod:`.space`) is a product of per-dim tile chains, spatial splits, canonical loop
orders and double-buffer choices. The search streams over it in numpy chunks:

1. Tile combos (one chain per dim, under one split) get an exact lower bound: their compute
   time (cycles of the busiest core / clock, padding included; it does not depend on orders
   or buffering), and ``latency >= compute time`` by the model's formula. Combos are taken in
   bands of increasing bound: a band ``(lo, hi]`` is enumerated (per-dim chains whose padded
   extent alone would exceed ``hi`` are skipped first), filtered by capacity with single
   buffers, sorted by bound and evaluated in chunks; the search stops as soon as the k-th best
   objective found is <= the next band's bound, so nothing unseen can beat or tie it.
   Objectives without a useful bound (traffic, energy) take one band: the whole space.
2. A chunk of combos is expanded by the canonical loop orders of each level and evaluated by
   :func:`tilewise.evaluate_batch` once (traffic, compute and link times do not depend on
   double buffering); every double-buffer choice is then costed from the same traffic with the
   model's latency formula (:func:`latency_variants`, checked against :func:`tilewise.evaluate`
   by the tests) and its capacity checked from the per-tensor buffer sizes.
3. A running top-k keeps the best (objective, larger innermost tile = more work per subvolume,
   higher 𝔽 = min over links of compute time / transfer time, enumeration order) with
   ``np.lexsort``; nothing loops in Python per candidate.

Constraints (keyword arguments of :func:`search`): ``spatial`` ("any", "none" or a list such
as ``["rows=n4 cols=m2"]``), ``double_buffer`` ("any", "all", "none" or ``{level: [tensors]}``),
``orders`` (allowed loop orders, e.g. ``["mnk", "nmk"]``, at every level), ``tiles``
(``{level: {dim: elements}}`` fixed tiles), ``max_core_tile`` (``{dim: elements}`` bound on
the innermost tile).

    >>> r = search(gemm(512, 768, 768, dtype="i8"), "aie-4x2", objective="latency", top=5)
    >>> print(r.best.mapping); r.best.xslowdown
"""

from __future__ import annotations

import time
import numpy as np

from ..errors import CapacityError, SpecError, TilewiseError
from ..model.batch import MappingBatch
from ..model.cost import evaluate, evaluate_batch
from ..model.plan import rate
from .result import METRICS, Result, Solution
from .space import Space

OBJECTIVES = ("latency", "traffic", "energy", "edp")
CONSTRAINTS = ("double_buffer", "max_core_tile", "orders", "spatial", "tiles")
_CHUNK = 4096        # tile combos per model call (times their loop orders)
_PRODUCT = 1 << 21   # tile combos built at once from per-dim chains
_ROWS = 1 << 16      # mappings (combo x loop orders) per model call


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
    sum (T_l - E_l) / iterations_l`` with ``T_l`` / ``E_l`` the link times of all / of the
    not double-buffered bytes (reads into level l, writes out of it)."""
    B, L, T = reads.shape
    r, w = reads.astype(float), writes.astype(float)
    Tt = np.maximum(_time(r.sum(2), rbw), _time(w.sum(2), wbw))            # [B, L]
    keep = (~db).astype(float)                                             # [V, L, T]
    rx = np.einsum("blt,vlt->vbl", r, keep)
    wx = np.einsum("blt,vlt->vbl", w, keep)
    ex = np.maximum(_time(rx, rbw[None]), _time(wx, wbw[None]))
    ex[:, :, 0] = 0.0
    Tt[:, 0] = 0.0
    fill = ((Tt[None] - ex)[:, :, 1:] / np.maximum(iterations[None, :, 1:], 1)).sum(2)
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
    """Kept candidates: parallel arrays, merged and cut by rank."""

    KEYS = ("obj", "vol", "F", "seq", "lat", "traffic", "energy", "tiles", "orders", "db", "sp")

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

    def ranked(self):
        return np.lexsort((self.a["seq"], -self.a["F"], -self.a["vol"], self.a["obj"]))

    def best(self, top: int) -> "_Pool":
        """The ``top`` best kept candidates, in rank order."""
        return self.take(self.ranked()[:top]) if len(self) else self

    def kth(self, top: int) -> float:
        """Objective of the ``top``-th best candidate; inf while fewer are kept."""
        return float(self.a["obj"][self.ranked()[top - 1]]) if len(self) >= top else np.inf


class Engine:
    """One (workload, arch, space) with the per-dim chains and model constants precomputed."""

    def __init__(self, workload, arch, constraints: dict):
        self.workload, self.arch = workload, arch
        self.space = Space.build(workload, arch, **constraints)
        st = self.st = self.space.st
        self.L, self.D = st.n_levels, len(st.dims)
        self.T = len(st.tensors)
        dbv = self.space.db_variants()
        self.db = np.zeros((len(dbv), self.L, self.T), bool)
        self.db[:, :, self.space.moved] = dbv
        self.dbm = dbv  # [V, L, moved]
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
        self.chains = [[self.space.dim_chains(s, j) for j in range(self.D)]
                       for s in range(len(self.space.splits))]
        self.cap = np.array([np.inf if lv.capacity_bytes is None else lv.capacity_bytes * (
            lv.instances if st.array_level is not None and k < st.array_level else 1)
            for k, lv in enumerate(arch.levels)])
        self.split_arr = np.array([[sp.rows[0] if sp.rows else -1, sp.rows[1] if sp.rows else 1,
                                    sp.cols[0] if sp.cols else -1, sp.cols[1] if sp.cols else 1]
                                   for sp in self.space.splits], np.int64)
        self._orders: dict = {}
        self.energy = None
        # compulsory bytes per link: every final output element is written out of every level
        # at least once; every element of an input indexed by plain axes only is read in once
        comp_r = comp_w = 0
        for t in st.moved:
            nbytes = int(np.prod(t.shape)) * t.element_bytes
            if t.name in st.outputs:
                comp_w += nbytes
            elif all(ax.is_plain for ax in t.axes):
                comp_r += nbytes
        used = self.split_arr[:, 1] * self.split_arr[:, 3]
        rbw, wbw = link_bandwidths(arch, st.array_level, used)
        self.comp_time = np.maximum(_time(np.full(rbw.shape, float(comp_r)), rbw),
                                    _time(np.full(wbw.shape, float(comp_w)), wbw))  # [splits, L]
        self.comp_time[:, 0] = 0.0

    def tile_combos(self) -> int:
        return int(sum(np.prod([len(c.padded) for c in ch], dtype=np.int64) for ch in self.chains))

    def compute_s(self, padded: np.ndarray) -> np.ndarray:
        """Compute seconds of the busiest core from padded extents ``[n, D]`` (= the model's)."""
        out = np.zeros(len(padded))
        for idx, c in zip(self.op_dims, self.op_c):
            out += np.prod(padded[:, idx], axis=1).astype(float) * c
        return out

    def bound(self, s: int, padded: np.ndarray, counts: np.ndarray, objective: str) -> np.ndarray:
        """Lower bound of the objective for tile combos (any order, any double buffering):
        latency >= T_c + sum_l T_l / iterations_l >= T_c + sum_l (compulsory bytes time)_l /
        iterations_l (module doc); 0 for the other objectives."""
        if objective == "latency":
            it = np.prod(counts, axis=2).astype(float)  # [n, L]
            return self.compute_s(padded) + (self.comp_time[s][None, 1:] / np.maximum(it[:, 1:], 1)).sum(1)
        return np.zeros(len(padded))

    # ----- enumeration of a band of tile combos -----

    def band(self, lo: float, hi: float, objective: str, stats: dict):
        """Tile combos with bound in ``(lo, hi]``, all splits, sorted by bound: compact
        ``s [n]``, per-dim chain indices ``idx [n, D]`` (int32) and ``lb [n]``. Tiles, counts and
        buffers are materialized per evaluation chunk (:meth:`materialize`), so a band of
        millions of combos costs ~40 bytes each."""
        out = []
        for s, ch in enumerate(self.chains):
            keep = [np.arange(len(c.padded)) for c in ch]
            if objective == "latency" and np.isfinite(hi):
                mins = [c.padded.min() if len(c.padded) else 0 for c in ch]
                for j in range(self.D):
                    b = np.inf
                    for idx, c in zip(self.op_dims, self.op_c):
                        if j in idx:
                            other = float(np.prod([mins[i] for i in idx if i != j]))
                            b = min(b, hi / (c * other))
                    keep[j] = keep[j][ch[j].padded[keep[j]] <= b * (1 + 1e-12)]
            sizes = [len(k) for k in keep]
            total = int(np.prod(sizes, dtype=np.int64))
            for start in range(0, total, _PRODUCT):
                flat = np.arange(start, min(total, start + _PRODUCT))
                idx = np.unravel_index(flat, sizes)
                rows = [keep[j][idx[j]] for j in range(self.D)]
                padded = np.stack([ch[j].padded[rows[j]] for j in range(self.D)], 1)
                counts = np.stack([ch[j].counts[rows[j]] for j in range(self.D)], 2)  # [n, L, D]
                lb = self.bound(s, padded, counts, objective)
                sel = (lb > lo) & (lb <= hi)
                if sel.any():
                    out.append(dict(s=np.full(int(sel.sum()), s, np.int32),
                                    idx=np.stack([r[sel] for r in rows], 1).astype(np.int32),
                                    lb=lb[sel]))
        if not out:
            return None
        band = {k: np.concatenate([o[k] for o in out]) for k in out[0]}
        order = np.argsort(band["lb"], kind="stable")
        return {k: v[order] for k, v in band.items()}

    def materialize(self, c: dict, stats: dict) -> dict | None:
        """Tiles, counts and single-buffer sizes of a chunk of a band; drops (and counts in
        ``stats``) the combos that do not fit single-buffered."""
        tiles = np.empty((len(c["s"]), self.L, self.D), np.int64)
        counts = np.empty_like(tiles)
        for s in np.unique(c["s"]):
            m = c["s"] == s
            for j in range(self.D):
                ch = self.chains[s][j]
                tiles[m, :, j] = ch.tiles[c["idx"][m, j]]
                counts[m, :, j] = ch.counts[c["idx"][m, j]]
        stats["examined_combos"] += len(tiles)
        ok, bufs, fixed = self.space.fits_single(tiles, stats)
        if not ok.any():
            return None
        return dict(s=c["s"][ok].astype(np.int64), tiles=tiles[ok], counts=counts[ok],
                    bufs=bufs[ok], fixed=fixed[ok], lb=c["lb"][ok])

    # ----- evaluation of a chunk -----

    def orders(self, real_key: tuple) -> np.ndarray:
        """``[m, L-1, D]`` products of the canonical orders of every level for one real mask."""
        if real_key not in self._orders:
            per = [self.space.orders_for(r) for r in real_key]
            grids = np.meshgrid(*[np.arange(len(p)) for p in per], indexing="ij")
            idx = [g.ravel() for g in grids]
            self._orders[real_key] = (np.stack([per[k][idx[k]] for k in range(len(per))], 1)
                                      if all(len(p) for p in per) else
                                      np.zeros((0, len(per), self.D), np.int64))
        return self._orders[real_key]

    def evaluate_chunk(self, c: dict, seq0: int, stats: dict, kth: float = np.inf,
                       top: int | None = None) -> _Pool:
        """All candidates (orders x double-buffer variants) of a chunk of combos, as a pool of
        valid ones with their objective metrics."""
        st, L, D = self.st, self.L, self.D
        sp = self.split_arr[c["s"]]
        ways = np.ones((len(sp), D), np.int64)
        for dcol, wcol in ((0, 1), (2, 3)):
            has = sp[:, dcol] >= 0
            ways[np.nonzero(has)[0], sp[has, dcol]] = sp[has, wcol]
        real = np.zeros((len(sp), L - 1, D), bool)
        for k in range(L - 1):
            step = c["tiles"][:, k + 1, :] * (ways if k + 1 == st.array_level else 1)
            real[:, k, :] = step < c["tiles"][:, k, :]
        keys = np.packbits(real.reshape(len(real), -1), axis=1, bitorder="little")
        _, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.ravel()
        rows, ords = [], []
        for g in range(inv.max() + 1):
            members = np.nonzero(inv == g)[0]
            o = self.orders(tuple(tuple(bool(x) for x in r) for r in real[members[0]]))
            rows.append(np.repeat(members, len(o)))
            ords.append(np.tile(o, (len(members), 1, 1)))
        rows = np.concatenate(rows)
        ords = np.concatenate(ords) if ords else np.zeros((0, L - 1, D), np.int64)
        pools = []
        for start in range(0, len(rows), _ROWS):  # bounded memory: <= _ROWS mappings per model call
            if pools and top is not None:
                pools = [_Pool.concat(pools).best(top)]
                kth = min(kth, pools[0].kth(top))
            pools.append(self._evaluate_rows(c, sp, rows[start:start + _ROWS],
                                             ords[start:start + _ROWS], seq0 + start * len(self.db),
                                             stats, kth, top))
        return _Pool.concat(pools)

    def _evaluate_rows(self, c: dict, sp: np.ndarray, rows: np.ndarray, ords: np.ndarray,
                       seq0: int, stats: dict, kth: float, top: int | None) -> _Pool:
        """Evaluate combos ``c[rows]`` under loop orders ``ords`` (every double-buffer choice)."""
        st, L, D = self.st, self.L, self.D
        B = len(rows)
        if B == 0:
            return _Pool()
        spb = sp[rows]
        batch = MappingBatch(c["tiles"][rows], ords, np.zeros((B, L, self.T), bool),
                             np.zeros((B, L, self.T), bool), spb[:, 0], spb[:, 1], spb[:, 2], spb[:, 3])
        cb = evaluate_batch(self.workload, self.arch, batch)
        V = len(self.db)
        stats["evaluated"] += B
        stats["candidates"] += B * V
        illegal = ~cb.legal
        if illegal.any():
            stats["rejected"]["chain order"] = stats["rejected"].get("chain order", 0) + int(illegal.sum()) * V
        used = spb[:, 1] * spb[:, 3]
        rbw, wbw = link_bandwidths(self.arch, st.array_level, used)
        iterations = np.prod(c["counts"][rows], axis=2).astype(float)
        r, w = cb.reads.astype(float), cb.writes.astype(float)
        Tt = np.maximum(_time(r.sum(2), rbw), _time(w.sum(2), wbw))
        Tt[:, 0] = 0.0
        # for every double-buffer choice: latency >= max(T_c, max_l T_l) and
        # latency >= T_c + sum_l E_l + sum_l (T_l - E_l) / iterations_l >= T_c + sum_l T_l / iterations_l
        lb = np.maximum(np.maximum(cb.compute_s, Tt.max(1)),
                        cb.compute_s + (Tt[:, 1:] / np.maximum(iterations[:, 1:], 1)).sum(1))
        live = cb.legal & ((lb <= kth) if self.objective == "latency" else True)
        stats["pruned_candidates"] += int((cb.legal & ~live).sum()) * V
        rows_v = np.nonzero(live)[0]
        if len(rows_v) == 0:
            return _Pool()
        # capacity per double-buffer variant: [b, V, L]
        bufs, fixed = c["bufs"][rows][rows_v], c["fixed"][rows][rows_v]
        total = np.einsum("blt,vlt->bvl", bufs, self.dbm.astype(np.int64)) + (bufs.sum(2) + fixed)[:, None, :]
        over = total > self.cap[None, None, :]
        fits = ~over.any(2)
        for k in range(1, L):
            n_bad = int((over[:, :, k] & ~over[:, :, :k].any(2)).sum())
            if n_bad:
                key = f"capacity at {self.arch.levels[k].name} (double buffering)"
                stats["rejected"][key] = stats["rejected"].get(key, 0) + n_bad
        stats["valid"] += int(fits.sum())
        lat = latency_variants(cb.compute_s[rows_v], r[rows_v], w[rows_v], rbw[rows_v],
                               wbw[rows_v], iterations[rows_v], self.db)
        n = len(rows_v)
        traffic = np.broadcast_to(cb.offchip_bytes[rows_v, None].astype(float), (n, V))
        if self.energy is not None:
            e_mac, e_byte = self.energy
            moved = (r[rows_v] + w[rows_v]).sum(2) @ e_byte
            pts = (cb.padded_points[rows_v] * np.array(self.pp)[None, :]).sum(1)
            energy = np.broadcast_to((moved + pts * e_mac)[:, None], (n, V))
        else:
            energy = np.full((n, V), np.nan)
        ratio = cb.ratio[rows_v, 1:]
        F = np.where(np.isfinite(ratio), ratio, np.inf).min(1) if L > 1 else np.full(n, np.inf)
        obj = {"latency": lat, "traffic": traffic, "energy": energy, "edp": energy * lat}[self.objective]
        obj = np.where(fits, obj, np.inf)
        if top is not None and obj.size > top:  # keep the chunk's top-k and its ties only
            cut = min(np.partition(obj.ravel(), top - 1)[top - 1], kth)
            fits = fits & (obj <= cut)
        bi, vi = np.nonzero(fits)
        if len(bi) == 0:
            return _Pool()
        g = rows_v[bi]
        vol = np.prod(batch.tiles[:, L - 1, :], axis=1).astype(float)
        return _Pool(obj=obj[bi, vi], vol=vol[g], F=F[bi], seq=seq0 + g * V + vi,
                     lat=lat[bi, vi], traffic=traffic[bi, vi], energy=energy[bi, vi],
                     tiles=batch.tiles[g], orders=ords[g], db=self.db[vi], sp=spb[g])

    # ----- the searches -----

    def run(self, objective: str, top: int, progress=None) -> tuple[_Pool, dict]:
        self.objective = objective
        if objective in ("energy", "edp"):
            self.energy = energy_constants(self.arch)
        stats = {"tile_combos": self.tile_combos(), "examined_combos": 0, "evaluated": 0,
                 "candidates": 0, "valid": 0, "rejected": {}, "smallest": {}, "passes": 0,
                 "pruned_candidates": 0}
        best = _Pool()
        if objective == "latency":
            mins = [float(self.compute_s(np.array([[c.padded.min() for c in ch]]))[0])
                    for ch in self.chains if all(len(c.padded) for c in ch)]
            lo, hi = -np.inf, (min(mins) if mins else 0.0) * 1.001
        else:
            lo, hi = -np.inf, np.inf
        while True:
            stats["passes"] += 1
            band = self.band(lo, hi, objective, stats)
            if band is not None:
                start, size = 0, 64  # small first chunks find a good k-th best early
                while start < len(band["lb"]):
                    kth = best.kth(top)
                    sl = slice(start, start + size)
                    start, size = start + size, min(size * 4, _CHUNK)
                    chunk = {k: v[sl] for k, v in band.items()}
                    chunk = {k: v[chunk["lb"] <= kth] for k, v in chunk.items()}
                    if len(chunk["lb"]) == 0:
                        break
                    chunk = self.materialize(chunk, stats)
                    if chunk is None:
                        continue
                    pool = self.evaluate_chunk(chunk, stats["candidates"], stats, kth, top)
                    best = _Pool.concat([best, pool]).best(top)
                    if progress:
                        progress(stats["examined_combos"], stats["tile_combos"])
            kth = best.kth(top)
            if not np.isfinite(hi) or kth <= hi:
                break
            lo, hi = hi, (kth if np.isfinite(kth) else hi * 1.1)
            if stats["examined_combos"] >= stats["tile_combos"] and not np.isfinite(kth):
                hi = np.inf
        stats["pruned_by_bound"] = stats["tile_combos"] - stats["examined_combos"]
        return best, stats

    def front(self, x: str, y: str, progress=None) -> _Pool:
        """Exact Pareto front of (x, y) over the whole space (one full pass)."""
        if "energy" in (x, y) or "edp" in (x, y):
            self.energy = energy_constants(self.arch)
        self.objective = "latency"
        key = {"latency": "lat", "traffic": "traffic", "energy": "energy"}
        stats = {"examined_combos": 0, "evaluated": 0, "candidates": 0, "valid": 0,
                 "rejected": {}, "smallest": {}, "tile_combos": self.tile_combos(),
                 "pruned_candidates": 0}
        band = self.band(-np.inf, np.inf, "traffic", stats)
        front = _Pool()
        for start in range(0, 0 if band is None else len(band["lb"]), _CHUNK):
            chunk = self.materialize({k: v[start:start + _CHUNK] for k, v in band.items()}, stats)
            if chunk is None:
                continue
            pool = self.evaluate_chunk(chunk, stats["candidates"], stats)
            merged = _Pool.concat([front, pool])
            if len(merged):
                mx = _metric(merged, x, key)
                my = _metric(merged, y, key)
                order = np.lexsort((merged.a["seq"], -merged.a["F"], -merged.a["vol"], my, mx))
                ys = my[order]
                prev_min = np.minimum.accumulate(np.concatenate([[np.inf], ys[:-1]]))
                front = merged.take(order[ys < prev_min])
            if progress:
                progress(stats["examined_combos"], stats["tile_combos"])
        return front


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
