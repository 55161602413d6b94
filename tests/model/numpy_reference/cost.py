"""The numpy cost model as it stood before the numba kernel (issue 3): a frozen test reference.

``evaluate_batch`` here is the vectorized numpy implementation (per-dim tile lists of
:mod:`.tiles`, the tile-change counting of :mod:`.traffic`, links of :mod:`.latency`). The
package's model (:mod:`tilewise.model.kernel`) must give the same integers and the same floats
(to rounding) on random batches; this copy is never imported by the package.
"""

from __future__ import annotations

import numpy as np

from tilewise.errors import SpecError
from tilewise.model.batch import MappingBatch
from tilewise.model.cost import CostBatch
from tilewise.model.footprint import element_bytes, in_place
from tilewise.model.structure import Structure

from .latency import latency, link_times
from .tiles import DimTiles
from .traffic import TrafficCounter, border_windows, groups


def tile_elements_batch(t: Tensor, dims: tuple[str, ...], tiles: np.ndarray,
                        sizes: np.ndarray) -> np.ndarray:
    """Vectorized :func:`tile_elements`: ``tiles`` is int64 ``[batch, dims]``."""
    n = np.ones(tiles.shape[0], dtype=np.int64)
    full = np.maximum(tiles, sizes[None, :])
    for ax in t.axes:
        ext = np.ones(tiles.shape[0], dtype=np.int64)
        span = np.ones(tiles.shape[0], dtype=np.int64)
        for d, c in ax.terms:
            i = dims.index(d)
            ext = ext + c * (tiles[:, i] - 1)
            span = span + c * (full[:, i] - 1)
        n = n * np.minimum(ext, span)
    return n


def round_buffer(nbytes, level):
    """Round buffer bytes (int array) up to the level's block, then to whole banks when bank
    granular (this reference's own copy of the rule)."""
    b = max(int(level.block_bytes), 1)
    nbytes = -(-nbytes // b) * b
    if level.bank_granular and level.bank_bytes:
        bank = int(level.bank_bytes)
        nbytes = -(-nbytes // bank) * bank
    return nbytes


def _rate(arch, op) -> float:
    """Per-core throughput for ``op``: MACs per cycle for mac ops; vector ops per cycle for the
    others (MACs per cycle when the arch lists no vector rate for that type)."""
    c = arch.compute
    table = (c.vector_ops_per_cycle if op.kind != "mac" and op.dtype.name in c.vector_ops_per_cycle
             else c.macs_per_cycle)
    if op.dtype.name not in table:
        raise SpecError(f"arch {arch.name} gives no {'MAC' if op.kind == 'mac' else 'vector'} rate "
                        f"for {op.dtype.name} (op {op.name}); it has: {', '.join(table) or 'none'}")
    return float(table[op.dtype.name])


def evaluate_batch(workload, arch, candidates: MappingBatch) -> CostBatch:
    """Evaluate a batch of mappings at once (numpy over the batch; loops over levels/dims only).

    Candidates are assumed well-formed: arrays shaped for this workload and arch, orders that
    are permutations, bypass/double-buffer flags and spatial splits that
    :func:`tilewise.model.legality.validate` would accept. ``legal`` flags tiles over their
    parent, misaligned innermost tiles and illegal chain orders; ``fits`` the capacity.
    """
    st = Structure(workload, arch)
    b = candidates
    B, L, D = b.tiles.shape
    dims = st.dims
    sizes = np.array(st.sizes, np.int64)
    a = st.array_level if st.array_level is not None else L - 1
    ways = b.ways(D)
    steps = [b.tiles[:, k + 1, :] * (ways if k + 1 == a else 1) for k in range(L - 1)]
    windows: dict = {}
    for t in st.moved:
        for g in groups(t, dims):
            if g.affine:
                for d, (left, right) in border_windows(g, st.workload.sizes).items():
                    l0, r0 = windows.get(d, (0, 0))
                    windows[d] = (None, 0) if left is None or l0 is None else (max(l0, left), max(r0, right))
    dim_tiles = [DimTiles(int(sizes[j]), [s[:, j] for s in steps], b.tiles[:, a, j], ways[:, j],
                          a, windows.get(dims[j])) for j in range(D)]
    reads, writes, reloads = TrafficCounter(st, b, dim_tiles).count()

    # footprint (per instance at and below the array, logical above it)
    footprint = np.zeros((B, L), np.int64)
    shared = in_place(workload)
    panel = _panel(st, b, steps)
    for ti, t in enumerate(st.tensors):
        if t.name in shared:
            continue
        inner_only = t.name in st.intermediate_names
        for l in range(L):
            if inner_only and l != L - 1:
                continue
            eb = element_bytes(t, workload, l == L - 1)
            at = panel if inner_only else b.tiles[:, l, :]
            raw = tile_elements_batch(t, dims, at, sizes) * eb
            buf = round_buffer(raw, arch.levels[l]) * (1 + b.double_buffer[:, l, ti])
            footprint[:, l] += np.where(b.bypass[:, l, ti], 0, buf)
    for t in st.workload.state:
        raw = tile_elements_batch(t, dims, panel, sizes) * t.element_bytes
        footprint[:, L - 1] += round_buffer(raw, arch.levels[L - 1])
    capacity = np.array([np.inf if lv.capacity_bytes is None else
                         lv.capacity_bytes * (lv.instances if l < a else 1)
                         for l, lv in enumerate(arch.levels)], float)
    fits = (footprint <= capacity[None, :]).all(1)

    # compute
    ops = st.workload.ops
    n_steps = np.zeros((B, len(ops)), np.int64)
    padded = np.zeros((B, len(ops)), np.int64)
    useful = np.zeros(len(ops), np.int64)
    cycles = np.zeros(B)
    ideal = 0.0
    for j, op in enumerate(ops):
        idx = [dims.index(d) for d in op.dims]
        s = np.ones(B, np.int64)
        vol = np.ones(B, np.int64)
        nonempty = np.ones(B, np.int64)
        for i in idx:
            s = s * dim_tiles[i].count[L - 1]
            vol = vol * b.tiles[:, L - 1, i]
            nonempty = nonempty * dim_tiles[i].powsum(L - 1, L - 1, 0)
        n_steps[:, j] = s
        padded[:, j] = nonempty * vol
        useful[j] = int(np.prod(sizes[idx]))
        rate = _rate(arch, op)
        per_point = op.ops_per_point if op.kind != "mac" else 1
        cycles += s * vol * per_point / rate + s * arch.compute.call_overhead_cycles
        ideal += useful[j] * per_point / rate / arch.cores
    clock = float(arch.compute.clock_hz)
    compute_s = cycles / clock

    used = b.rows_ways * b.cols_ways
    Tt, Ex, Ov = link_times(st, b, reads, writes, used)
    iterations = np.stack([np.prod([dim_tiles[j].count[l] for j in range(D)], axis=0)
                           for l in range(L)], 1)
    lat = latency(compute_s, Tt, Ex, Ov, iterations)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(Tt > 0, ideal / clock / np.where(Tt > 0, Tt, 1), np.inf)
    ratio[:, 0] = np.inf
    util = np.where(lat > 0, ideal / clock / np.where(lat > 0, lat, 1), 0.0)

    # off-chip: what crosses link 1 (DDR <-> first on-chip level), bypass included
    kept = ~b.bypass
    off = np.zeros(B, np.int64)
    for ti in range(len(st.tensors)):
        for c in range(1, L):
            first = np.ones(B, bool)
            for j in range(1, c):
                first &= ~kept[:, j, ti]
            off += np.where(first, reads[:, c, ti] + writes[:, c, ti], 0)

    # energy (Accelergy-style): each byte moved into level c is read at its source (the nearest
    # kept level above) and written at c; each byte stored out of c is read at c and written at
    # the source; both cross c's link; plus padded points x pJ per MAC of the op's dtype
    pj = lambda v: 0.0 if v is None else v * 1e-12
    rd_e = np.array([pj(lv.read_energy_pj) for lv in arch.levels])
    wr_e = np.array([pj(lv.write_energy_pj) for lv in arch.levels])
    no_energy = [lv.energy_pj_per_byte is None and lv.read_energy_pj is None for lv in arch.levels]
    link_e = np.array([np.nan if no_energy[l] else pj(arch.levels[l].energy_pj_per_byte)
                       for l in range(L)])
    energy = np.zeros(B)
    for ti in range(len(st.tensors)):
        src = np.zeros(B, np.int64)
        for c in range(1, L):
            energy += reads[:, c, ti] * (rd_e[src] + wr_e[c] + link_e[c])
            energy += writes[:, c, ti] * (rd_e[c] + wr_e[src] + link_e[c])
            src = np.where(kept[:, c, ti], c, src)
    for j, op in enumerate(ops):
        per_point = op.ops_per_point if op.kind != "mac" else 1
        e_mac = arch.compute.mac_energy_pj(op.dtype.name)
        energy += padded[:, j] * per_point * (np.nan if e_mac is None else e_mac * 1e-12)

    return CostBatch(
        levels=tuple(lv.name for lv in arch.levels), tensors=tuple(t.name for t in st.tensors),
        ops=tuple(op.name for op in ops), footprint=footprint, capacity=capacity, fits=fits,
        legal=_legal(st, b, ways, steps), reads=reads, writes=writes, reloads=reloads,
        offchip_bytes=off, steps=n_steps, padded_points=padded, useful_points=useful,
        compute_cycles=cycles, compute_s=compute_s, transfer_s=Tt, latency_s=lat,
        utilization=util, ratio=ratio, energy_j=energy, fills=None, drains=None,
        fill_bds=None, drain_bds=None, bd_levels=None, fill_fixed=None, drain_fixed=None)


def _panel(st, b, steps) -> np.ndarray:
    """``[B, D]`` extents of a chain's innermost-only buffers (intermediates, state): per
    candidate and dim, the innermost tile x the tiles one core meets along the dim under the
    first point of the loops above the first real loop over a non-spine dim (seed 004's fused
    loop tree), counted by cutting the dim's range like the walk does (one candidate at a
    time: a reference, not a fast path)."""
    B, L, D = b.tiles.shape
    panel = b.tiles[:, L - 1, :].copy()
    if len(st.workload.ops) == 1:
        return panel
    spine = [d in st.spine for d in st.dims]
    for i in range(B):
        loops = [(k, int(b.orders[i, k, p])) for k in range(L - 1) for p in range(D)]
        real = [int(steps[k][i, d]) < int(b.tiles[i, k, d]) for k, d in loops]
        first = next((x for x, (k, d) in enumerate(loops) if real[x] and not spine[d]), len(loops))
        for d in range(D):
            pieces = [int(b.tiles[i, 0, d])]
            for x, (k, dd) in enumerate(loops):
                if dd != d:
                    continue
                s = int(steps[k][i, d])
                if x < first:
                    pieces = [min(pieces[0], s)]
                else:
                    pieces = [min(s, e - lo) for e in pieces for lo in range(0, e, s)]
            panel[i, d] *= max(len(pieces), 1)
    return panel


def _legal(st, b, ways, steps) -> np.ndarray:
    """Vectorized form of the tile-size and chain rules of :mod:`.legality`."""
    B, L, D = b.tiles.shape
    arch = st.arch
    a = st.array_level if st.array_level is not None else L - 1
    ok = (b.tiles >= 1).all((1, 2)) & (b.tiles[:, 0, :] == np.array(st.sizes)[None, :]).all(1)
    align = np.array([st.workload.alignment(arch.alignment)[d] for d in st.dims], np.int64)
    for k in range(1, L):
        w = ways if k == a else 1
        parent = b.tiles[:, k - 1, :]
        if k == L - 1:
            limit = -(-(-(-parent // w)) // align) * align
            ok &= (b.tiles[:, k, :] <= limit).all(1) & (b.tiles[:, k, :] % align == 0).all(1)
        else:
            ok &= (b.tiles[:, k, :] * w <= parent).all(1)
    wl = st.workload
    if len(wl.ops) > 1:
        spine = np.array([d in st.spine for d in st.dims])
        forbidden = np.zeros(D, bool)
        for t in wl.intermediates:
            for d in wl.producer(t.name).reduction_dims:
                forbidden[st.dims.index(d)] |= d in st.spine
        for t in st.moved:
            readers = [op for op in wl.ops if any(x.name == t.name for x in op.inputs)]
            if len(readers) > 1 and any(set(op.dims) != set(t.dims) for op in readers):
                for d in t.dims:
                    forbidden[st.dims.index(d)] |= d not in st.spine
        first_private = np.full(B, np.iinfo(np.int64).max)
        last_spine = np.full(B, -1)
        pos = 0
        for k in range(L - 1):
            for p in range(D):
                dq = b.orders[:, k, p]
                real = np.take_along_axis(steps[k], dq[:, None], 1)[:, 0] < \
                    np.take_along_axis(b.tiles[:, k, :], dq[:, None], 1)[:, 0]
                ok &= ~(real & forbidden[dq])
                first_private = np.where(real & ~spine[dq], np.minimum(first_private, pos), first_private)
                last_spine = np.where(real & spine[dq], pos, last_spine)
                pos += 1
        if not st.projected:  # a chain of GEMMs accepts every order (seed 004)
            ok &= first_private > last_spine
    return ok
