"""The model's rules, each defined once: capacity, buffer bytes (footprint), tile legality,
loop steps, chain order legality, compute time, link time, latency and energy.

Everything that costs or checks a mapping calls these: the compiled cost kernel
(:mod:`.kernel`), the search's bounds and capacity stand-ins (:mod:`tilewise.search`), the
executor's allocator (:mod:`tilewise.executor.interpreter`) and the mapping validator
(:mod:`.legality`). The scalar rules are compiled (numba ``@njit``); they are also callable from
Python with numpy scalars and arrays. They are inlined where they are called (``inline="always"``):
a compiled call that takes arrays costs reference-count updates per array, and the kernel calls
them per candidate. Units: bytes, elements, cycles, seconds, joules.

The formulas (per link ``l >= 1``, joining level ``l`` to its parent; ``T_c`` compute seconds)::

    capacity_l   = capacity x instances   above the array (one logical memory), else capacity;
                   per part where the level reserves bytes for some tensors (each part's
                   buffers within its bytes, the shared part the rest)
    buffer bytes = prod over axes of min(sum c*(t-1) + 1, span) x bytes per point,
                   rounded up to the block, then (bank granular) to whole banks; an output's
                   bytes per point are its accumulator type's where it holds partial sums
    panel        = a fused intermediate's extents: the innermost tile x, per dim, the tiles
                   one core writes along it below the first real private loop (seed 004's
                   fused loop tree; :func:`panel_tile`)
    output bytes = final writes x its type + (visits - final writes) x accumulator type
                   (partial sums written and reloaded; the conversion happens once, where the
                   reduction completes; at the array a reduction split through the parent
                   level multiplies the visits by its partials)
    link time    = max(read bytes / read bw + read transfers x overhead,
                       write bytes / write bw + write transfers x overhead)
                   (overhead: the link's fixed seconds per DMA buffer descriptor; a transfer
                   is one tile moved: a load, a partial-sum reload or a store, charged once
                   per BD of it where the levels declare DMA limits, at least once:
                   :mod:`.kernel_bds`)
    latency      = max(T_c + sum_l E_l, max_l T_l) + sum_l O_l / iterations_l
    compute      = sum_ops (points x ops per point / rate + kernel calls x call cycles) / clock
    energy       = sum over (level l, tensor) of fill x (read J/B at its source + write J/B at l
                   + link J/B of l) + drain x (read at l + write at the source + link of l),
                   + sum_ops padded points x J/MAC of the op's dtype x ops per point

with ``T_l`` / ``E_l`` / ``O_l`` the link time of all / of the exposed (not double-buffered) /
of the double-buffered bytes (:mod:`.cost` explains the overlap).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ..errors import SpecError


# ----- per (workload, arch): built once into the problem description ------------------------

def level_capacity(arch) -> np.ndarray:
    """Bytes each level holds, ``[L]`` float (``inf``: unbounded). A level above the array
    (every level but the innermost when there is no array) with several instances is one
    logical memory of ``instances x capacity`` (tiles are spread over the instances); at and
    below the array each core has its own."""
    L = len(arch.levels)
    a = L - 1
    if arch.array is not None:
        a = [lv.name for lv in arch.levels].index(arch.array.level)
    return np.array([np.inf if lv.capacity_bytes is None else
                     float(lv.capacity_bytes) * (lv.instances if l < a else 1)
                     for l, lv in enumerate(arch.levels)], float)


def part_capacity(arch) -> np.ndarray:
    """Bytes of each part of each level ``[L, P]`` float, scaled like :func:`level_capacity`:
    part 0 the bytes shared by the tensors without a reserved part, part ``i + 1`` the
    ``i``-th of ``Level.reserved`` (``inf``: unbounded, or no such part). A level fits when
    every part holds the buffers allocated in it (:attr:`.structure.Structure.part`)."""
    total = level_capacity(arch)
    P = 1 + max((len(lv.reserved) for lv in arch.levels), default=0)
    out = np.full((len(arch.levels), P), np.inf)
    for l, lv in enumerate(arch.levels):
        if lv.capacity_bytes is None:
            continue
        scale = total[l] / lv.capacity_bytes
        out[l, 0] = lv.shared_bytes * scale
        for i, (_, nb) in enumerate(lv.reserved):
            out[l, i + 1] = nb * scale
    return out


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


def rates(arch, workload) -> np.ndarray:
    """:func:`rate` of every op ``[O]``, NaN where the arch gives none (executing a mapping
    needs no rate; costing it does: :func:`rate` names the missing one)."""
    out = []
    for op in workload.ops:
        try:
            out.append(rate(arch, op))
        except SpecError:
            out.append(np.nan)
    return np.array(out, float)


def ops_per_point(op) -> int:
    """Operations per iteration point counted against :func:`rate` (a MAC is one)."""
    return 1 if op.kind == "mac" else op.ops_per_point


def compute_bound_s(workload, arch) -> float:
    """The compute-bound minimum (seconds): every useful point of every op on every core at
    peak rate, no padding, no transfers (NaN when an op has no rate)."""
    cycles = 0.0
    for op, r in zip(workload.ops, rates(arch, workload)):
        points = int(np.prod([workload.sizes[d] for d in op.dims]))
        cycles += points * ops_per_point(op) / r / arch.cores
    return cycles / float(arch.compute.clock_hz)


def transfer_seconds(arch) -> np.ndarray:
    """Seconds of fixed cost per DMA transfer on each link ``[L]`` and instance: the level's
    ``transfer_overhead`` cycles / clock / channels (its channels work in parallel)."""
    clock = float(arch.compute.clock_hz)
    return np.array([lv.transfer_overhead_cycles / clock / lv.channels for lv in arch.levels])


class EnergyTable(NamedTuple):
    """Joules per byte, per level ``[L]`` (Accelergy-style; 0 where the arch gives nothing for a
    level that has other numbers, NaN in ``link`` where a level has none at all): ``read`` per
    byte read from the level's memory, ``write`` per byte written into it, ``link`` per byte
    moved over the link into or out of it (index 0: 0, the outermost level has no link)."""

    read: np.ndarray
    write: np.ndarray
    link: np.ndarray


def energy_table(arch) -> EnergyTable:
    """The arch's per-byte energies in joules (:class:`EnergyTable`)."""
    def pj(v):
        return 0.0 if v is None else v * 1e-12

    link = [0.0] + [np.nan if _no_energy(lv) else pj(lv.energy_pj_per_byte)
                    for lv in arch.levels[1:]]
    return EnergyTable(np.array([pj(lv.read_energy_pj) for lv in arch.levels]),
                       np.array([pj(lv.write_energy_pj) for lv in arch.levels]),
                       np.array(link))


def _no_energy(lv) -> bool:
    return lv.energy_pj_per_byte is None and lv.read_energy_pj is None


def energy_per_point(arch, workload) -> np.ndarray:
    """Joules per padded iteration point of each op ``[O]``: the op's input dtype's energy per
    MAC (or vector op) x ops per point (NaN: no number for that dtype)."""
    out = []
    for op in workload.ops:
        e = arch.compute.mac_energy_pj(op.dtype.name)
        out.append(np.nan if e is None else e * 1e-12 * ops_per_point(op))
    return np.array(out, float)


def require_energy(arch, workload=None) -> None:
    """SpecError naming every missing energy number (objectives energy and edp need them): an
    energy per MAC for each op's dtype (or one for all), and per level below the outermost
    ``energy_per_byte`` or ``read_energy``/``write_energy``."""
    missing = []
    c = arch.compute
    if workload is None:
        if c.energy_pj_per_mac is None and not c.energy_pj_per_mac_dtype:
            missing.append("compute.energy_per_mac")
    else:
        missing += [f"compute.energy_per_mac[{n}]" for n in sorted({op.dtype.name for op in workload.ops})
                    if c.mac_energy_pj(n) is None]
    missing += [f"levels[{lv.name}].energy_per_byte (or read_energy and write_energy)"
                for lv in arch.levels[1:] if _no_energy(lv)]
    if missing:
        raise SpecError(f"objective energy/edp needs energy numbers; arch {arch.name} lacks "
                        + ", ".join(missing))


# ----- per candidate: compiled ---------------------------------------------------------------

@njit(cache=True, inline="always", error_model="numpy")
def loop_step(next_tile, ways, at_array):
    """Step (elements) of a level's loop over a dim: the next level's tile, x the split ways
    when the next level is the array. The loop is *real* (iterates) when step < its tile."""
    return next_tile * ways if at_array else next_tile


@njit(cache=True, inline="always", error_model="numpy")
def tile_fits(tile, parent, ways, align, innermost):
    """Whether ``tile`` is legal under ``parent`` split ``ways`` ways: at the innermost level
    a multiple of ``align`` of at most :func:`innermost_limit`, elsewhere at most the parent's
    share ``ceil(parent / ways)`` (an array level above the innermost: 256 rows on 6 cores
    take tiles of up to 43, the last core's slice clipped to 41)."""
    if innermost:
        return tile <= innermost_limit(parent, ways, align) and tile % align == 0
    return tile <= (parent + ways - 1) // ways


@njit(cache=True, inline="always", error_model="numpy")
def innermost_limit(parent, ways, align):
    """Largest innermost tile under ``parent`` split ``ways`` ways: the parent's share padded up
    to the alignment, ``ceil(ceil(parent / ways) / align) x align`` (elements)."""
    return ((parent + ways - 1) // ways + align - 1) // align * align


@njit(cache=True, inline="always", error_model="numpy")
def buffer_bytes(f, k, tl, sizes, bf, partial=False):
    """Rounded single-buffer bytes of buffer ``f`` of :class:`.problem.Buffers` ``bf`` at level
    ``k`` for that level's tiles ``tl [D]``: per axis the halo extent ``sum c*(t-1) + 1``
    clipped to the span of the padded problem (a window row rounded out to DMA words,
    ``ax_terms[x, 2]`` elements > 1: as many words as such a window can touch,
    :mod:`.contiguity`), x bytes per point (the partial-sum width when
    ``partial``: :func:`holds_partial_sums`), rounded up to the block and, when bank
    granular, to whole banks. (A double-buffered tensor takes two.)"""
    return buffer_bytes_arrays(f, tl, sizes, bf.axes, bf.ax_terms, bf.terms,
                               bf.psum[f, k] if partial else bf.bytes[f, k], bf.block[k],
                               bf.bank[k])


@njit(cache=True, inline="always", error_model="numpy")
def buffer_bytes_arrays(f, tl, sizes, axes, ax_terms, terms, point_bytes, block, bank):
    """:func:`buffer_bytes` over the fields of :class:`.problem.Buffers` (the cost kernel binds
    them once: reading a field of a tuple costs a reference-count update), for ``point_bytes``
    per point and the level's ``block`` and ``bank`` bytes."""
    n = 1
    for x in range(axes[f, 0], axes[f, 1]):
        ext = 1
        span = 1
        for y in range(ax_terms[x, 0], ax_terms[x, 1]):
            d = terms[y, 0]
            c = terms[y, 1]
            t = tl[d]
            ext += c * (t - 1)
            span += c * (max(t, sizes[d]) - 1)
        e = min(ext, span)
        g = ax_terms[x, 2]
        if g > 1:  # a row starting one element past a word touches (e + g - 2) // g + 1 words
            e = min((e + 2 * g - 2) // g * g, (span + g - 1) // g * g)
        n *= e
    return round_up(round_up(n * point_bytes, block), bank)


@njit(cache=True, inline="always", error_model="numpy")
def holds_partial_sums(red, k, step, tiles):
    """Whether a buffer at level ``k`` holds partial sums: a reduction dim of its op (``red
    [D]``, bool) has a real loop at level ``k`` or above (``step [L-1, D]`` vs ``tiles
    [L, D]``), so the tile's reduction is split across its visits or its children's. Its
    bytes per point are then the accumulator type's; the innermost level always accumulates
    there. Depends on the tiles and split only, not on the loop orders."""
    for d in range(red.shape[0]):
        if red[d]:
            for j in range(min(k + 1, step.shape[0])):
                if step[j, d] < tiles[j, d]:
                    return True
    return False


@njit(cache=True, inline="always")
def round_up(nbytes, unit):
    """``nbytes`` rounded up to a multiple of ``unit`` (unchanged when ``unit <= 1``). Units are
    usually powers of two, rounded with a mask: a 64-bit division costs ~30 cycles, and the
    cost kernel rounds every buffer of every candidate."""
    if unit <= 1:
        return nbytes
    if unit & (unit - 1) == 0:
        return (nbytes + unit - 1) & -unit
    return (nbytes + unit - 1) // unit * unit


@njit(cache=True)
def level_bytes(k, tl, sizes, bf):
    """Single-buffer bytes of every buffer level ``k`` keeps, for its tiles ``tl [D]``."""
    tot = 0
    for f in range(bf.level.shape[0]):
        if bf.level[f, k]:
            tot += buffer_bytes(f, k, tl, sizes, bf)
    return tot


@njit(cache=True, inline="always", error_model="numpy")
def chain_violation(orders, real, n_levels, spine, forbidden, projected=False):
    """Chain legality (:mod:`.legality`) of the flattened nest of levels ``0 .. n_levels-1``
    (``orders [L-1, D]`` dim indices outermost first, ``real [L-1, D]`` whether the loop over
    a dim iterates). Returns ``(kind, p, q)``: kind 0 legal; 1 the real private loop at
    flattened position ``p`` encloses the real spine loop at ``q`` (only when not
    ``projected``: a chain whose ops run their own projection of the nest after it diverges,
    :func:`diverges_at`, accepts every order); 2 the loop at ``p`` is over a forbidden dim.
    Position ``p`` is level ``p // D``, loop ``p % D`` of its order."""
    D = orders.shape[1]
    first_private = -1
    for k in range(n_levels):
        for i in range(D):
            d = orders[k, i]
            if not real[k, d]:
                continue
            p = k * D + i
            if forbidden[d]:
                return 2, p, -1
            if spine[d]:
                if first_private >= 0 and not projected:
                    return 1, first_private, p
            elif first_private < 0:
                first_private = p
    return 0, -1, -1


@njit(cache=True, inline="always", error_model="numpy")
def diverges_at(orders, real, spine):
    """Flattened position (level ``p // D``, loop ``p % D``) of the first real loop over a
    private dim (``spine[d]`` False): the ops share every loop above it and each runs, below
    it, the rest of the nest projected onto its own dims, one op after the other (seed 004's
    fused loop tree). ``K x D`` (past the end) when no private loop iterates."""
    K, D = orders.shape
    for k in range(K):
        for i in range(D):
            d = orders[k, i]
            if real[k, d] and not spine[d]:
                return k * D + i
    return K * D


@njit(cache=True, inline="always", error_model="numpy")
def panel_tile(orders, real, spine, step, tiles, a, out, ext, mult):
    """Fill ``out [D]`` with the extents (elements, per core) of a fused intermediate's live
    *panel*: every innermost tile the producer writes on one core under one point of the
    shared loops (above :func:`diverges_at`), each at full tile size, so that the consumer
    finds the whole panel it walks. Per dim: the innermost tile x the tiles one core visits
    along the dim under the first (largest) shared point: its extent there (the size, cut
    by the shared loops over the dim) cut by the steps of the loops over it below the
    divergence point, ``e // s`` pieces of ``s`` and one of ``e % s`` per cut; at the array
    a piece of ``ways x tile`` gives a core one tile, so below the array level ``a`` a
    piece is at most the core's tile (core 0's slice, the largest). The innermost tile
    when no loop over the dim iterates below the divergence point (every spine-first order).
    ``orders [L-1, D]``, ``real [L-1, D]``, ``step [L-1, D]`` (:func:`loop_step`),
    ``tiles [L, D]``; ``ext``/``mult`` work arrays of at least ``L + 1`` entries."""
    K, D = orders.shape
    p = diverges_at(orders, real, spine)
    for d in range(D):
        ext[0] = tiles[0, d]
        mult[0] = 1
        n = 1
        for k in range(K):
            for i in range(D):
                if orders[k, i] != d:
                    continue
                s = step[k, d]
                if k * D + i < p:  # a shared loop: its first iteration, at most s
                    ext[0] = min(ext[0], s)
                    continue
                full = 0
                m = n
                for x in range(n):
                    full += mult[x] * (ext[x] // s)
                    r = ext[x] % s
                    mult[x] = mult[x] * (r > 0)
                    ext[x] = r
                ext[m] = s
                mult[m] = full
                n = m + 1
            if k + 1 == a:  # a core's slice of the array tile
                for x in range(n):
                    ext[x] = min(ext[x], tiles[a, d])
        count = 0
        for x in range(n):
            count += mult[x] * (ext[x] > 0)
        out[d] = tiles[K, d] * max(count, 1)


@njit(cache=True, inline="always", error_model="numpy")
def passes_at(passes, level, real, spine):
    """Walks of a tensor's tiles into ``level``: ``passes`` (its readers, LayerNorm's X: 2)
    when a loop over a private dim iterates at a level above ``level`` (``real [L-1, D]``;
    the ops then diverge above it and each walks its own tiles there), else 1 (one tile,
    loaded once, serves every reader)."""
    if passes == 1:
        return 1
    for k in range(level):
        for d in range(spine.shape[0]):
            if real[k, d] and not spine[d]:
                return passes
    return 1


@njit(cache=True, inline="always", error_model="numpy")
def compute_cycles(points, steps, op_pp, op_rate, call):
    """Cycles of the busiest core: its padded iteration points per op ``[O]`` x ops per point
    / rate (ops/cycle), plus ``call`` cycles per innermost kernel invocation (its ``steps [O]``
    tiles per op), ops one after another. Seconds are cycles / clock."""
    cyc = 0.0
    for o in range(points.shape[0]):
        cyc += (points[o] * op_pp[o]) / op_rate[o] + steps[o] * call
    return cyc


@njit(cache=True, inline="always", error_model="numpy")
def link_instances(instances, l, link_array, cores_used):
    """Instances that serve link ``l`` in parallel: all of the level's above the array; at and
    below it (``l >= link_array``) only the cores a mapping uses. Bandwidth per link = bytes/s
    per instance (x channels) x this."""
    return instances[l] if l < link_array else min(instances[l], cores_used)


@njit(cache=True, inline="always", error_model="numpy")
def link_time(read_bytes, write_bytes, read_bw, write_bw, reads=0.0, writes=0.0, per_transfer=0.0):
    """Seconds a link needs: reads and writes in parallel, each direction its bytes at its
    bandwidth (bytes/s) plus ``per_transfer`` seconds of fixed cost for each of its
    ``reads``/``writes`` transfers (descriptor set-up and lock hand-off serialize with the
    data on a channel)."""
    r = read_bytes / read_bw if read_bytes > 0 else 0.0
    w = write_bytes / write_bw if write_bytes > 0 else 0.0
    return max(r + reads * per_transfer, w + writes * per_transfer)


@njit(cache=True, inline="always", error_model="numpy")
def latency(compute_s, exposed_s, slowest_link_s, fill_s):
    """``max(T_c + sum E_l, max T_l) + sum O_l / iterations_l`` (seconds, module doc)."""
    return max(compute_s + exposed_s, slowest_link_s) + fill_s


@njit(cache=True, inline="always", error_model="numpy")
def transfer_energy(fill, drain, src_read, src_write, read, write, link):
    """Joules of moving ``fill`` bytes into a level and ``drain`` bytes out of it, to and from
    its source (the nearest level above that keeps the tensor), Accelergy-style: each byte is
    read from one memory and written into another (J/byte ``src_read``/``src_write`` at the
    source, ``read``/``write`` at the level) and crosses the level's link (``link`` J/byte)."""
    return fill * (src_read + write + link) + drain * (read + src_write + link)


@njit(cache=True, inline="always", error_model="numpy")
def compute_energy(points, e_point):
    """Joules of the padded points per op ``[O]`` at ``e_point [O]`` J/point."""
    e = 0.0
    for o in range(points.shape[0]):
        e += points[o] * e_point[o]
    return e
