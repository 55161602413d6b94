"""``evaluate`` / ``evaluate_batch``: the cost model over a batch of candidate mappings.

For a workload, an arch and mappings, one compiled loop over the batch (:mod:`.kernel`) gives:

- ``footprint[l]``: bytes allocated at level ``l`` per instance (:mod:`.footprint`; above the
  array a level is one logical memory of ``instances x capacity``), and whether it fits;
- ``reads/writes/reloads[l][t]``: bytes moved into / out of level ``l`` per tensor
  (exact, equal to :func:`tilewise.simulate`);
- compute: per op, ``steps`` = innermost tiles per core, ``cycles`` = steps x padded tile points
  x ops per point / rate (padding and idle cores counted as waste);
- link times, latency and the ratio 𝔽 per link; ``utilization`` = ideal compute time of the
  useful work on every core at peak / latency.

Link ``l`` (``l >= 1``) joins level ``l`` to its parent. A transfer into level ``c`` comes from
the nearest level above that keeps the tensor, so with bypassing it crosses several links; it
counts on each. Per link, with ``bw = bandwidth x channels x instances`` (instances: all of them
above the array, the cores used at and below it)::

    T_l = max(bytes read into l / read bw, bytes written out of l / write bw)       seconds
    E_l = the same with only the bytes of tensors *not* double-buffered at the receiving level
    O_l = the same with only the double-buffered bytes (the overlapped transfers)
    latency = max(T_c + sum_l E_l, max_l T_l) + sum_l O_l / iterations_l

Double-buffered transfers overlap compute, the others stall it; ``T_c`` is the compute time
(cycles of the busiest core / clock, ops one after another) and the last term the pipeline
fill: one tile's worth of each overlapped link (``iterations_l`` = tiles visited at level l).
``O_l`` is timed like ``T_l`` (reads and writes in parallel), so the latency never falls when a
tensor moves more bytes (until 2026-11 the fill was ``(T_l - E_l) / iterations_l``, which can:
fewer bytes of a tensor that is not double buffered lowered ``E_l`` and raised the fill when
the other direction dominated ``T_l``; the two agree when a link's tensors are all or none
double buffered).
Nothing double-buffered gives ``T_c + sum_l T_l``. Seed 003's ratio 𝔽 per link is
``T_u / T_l`` (> 1: compute bound), with ``T_u`` the useful compute: every useful point of
every op on every core of the arch at peak, no padding (:func:`.rules.compute_bound_s`; seed
003 Eq. 16 counts the subvolume's operations, m·n·k). Until 2026-11-25 it was ``T_c / T_l``,
whose maximum favours padded points and idle cores (both raise ``T_c``): the ``ratio``
objective picked mappings 22x slower than the latency optimum.

Example::

    >>> cost = tilewise.evaluate(gemm(512, 768, 768), load_arch("aie-4x2"), mapping)
    >>> cost.reads["memtile"]["A"], cost.latency_s, cost.ratio["core"]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import CapacityError, MappingError, SpecError, TilewiseError
from .batch import MappingBatch
from .breakdown import energy_breakdown, fixed_seconds, pack_breakdown
from .kernel import CostArrays, evaluate_into
from .legality import merged_ways, ways_of
from .problem import Problem


@dataclass(frozen=True)
class Cost:
    """The cost of one mapping. Bytes, cycles, seconds; dicts keyed by level and tensor names."""

    footprint: dict
    capacity: dict
    fits: bool
    reads: dict
    writes: dict
    reloads: dict
    offchip_bytes: int
    compute_cycles: float
    padded_points: dict
    useful_points: dict
    steps: dict
    compute_s: float
    transfer_s: dict
    latency_s: float
    utilization: float
    ratio: dict
    energy_j: float | None = None  # joules; None when the arch gives no energy numbers
    # {level: {tensor: transfers into it (loads and reloads)}} / out of it (stores)
    fills: dict = field(default_factory=dict)
    drains: dict = field(default_factory=dict)
    # {level: {tensor: buffer descriptors of those transfers}}, levels whose links have DMA
    # limits on both sides (:mod:`.kernel_bds`, equal to simulate's Trace.fill_bds/drain_bds);
    # the per-transfer fixed cost is charged per BD
    fill_bds: dict = field(default_factory=dict)
    drain_bds: dict = field(default_factory=dict)
    # joules per part: {"compute": J, level: {tensor: J}} (evaluate() only; None: no energy)
    energy_breakdown: dict | None = None
    # seconds of fixed costs: {"kernel calls": s, level: s per link} (evaluate() only)
    fixed_s: dict = field(default_factory=dict)
    # the pack / unpack passes of packed tensors: {tensor: {"bytes", "s", "j"}} (evaluate() only;
    # already in latency_s, offchip_bytes and energy_j)
    pack: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CostBatch:
    """Array form of :class:`Cost` for a batch; ``valid`` = legal and fits."""

    levels: tuple[str, ...]
    tensors: tuple[str, ...]
    ops: tuple[str, ...]
    footprint: np.ndarray      # [B, L] bytes
    capacity: np.ndarray       # [L] bytes (inf when unbounded)
    fits: np.ndarray           # [B]
    legal: np.ndarray          # [B]
    reads: np.ndarray          # [B, L, T] bytes
    writes: np.ndarray
    reloads: np.ndarray
    fills: np.ndarray          # [B, L, T] transfers into level l (loads and reloads)
    drains: np.ndarray         # [B, L, T] transfers out of level l (stores)
    fill_bds: np.ndarray       # [B, L, T] buffer descriptors of the fills (1 per transfer
    drain_bds: np.ndarray      # where no DMA limits are given) and of the drains
    bd_levels: np.ndarray      # [L] levels whose BDs are counted (it and every level above declare DMA limits)
    fill_fixed: np.ndarray     # [B, L, T] fixed costs charged: per BD, at least 1 per transfer
    drain_fixed: np.ndarray    # [B, L, T]
    offchip_bytes: np.ndarray  # [B]
    steps: np.ndarray          # [B, ops]
    padded_points: np.ndarray  # [B, ops]
    useful_points: np.ndarray  # [ops]
    compute_cycles: np.ndarray  # [B]
    compute_s: np.ndarray
    transfer_s: np.ndarray     # [B, L]
    latency_s: np.ndarray
    utilization: np.ndarray
    ratio: np.ndarray          # [B, L]
    energy_j: np.ndarray       # [B] joules (NaN: the arch gives no energy numbers)
    pack_s: np.ndarray | None = None  # [B] seconds of pack / unpack passes (in latency_s)

    @property
    def valid(self) -> np.ndarray:
        return self.legal & self.fits

    def __len__(self) -> int:
        return self.footprint.shape[0]

    def item(self, i: int) -> Cost:
        L, T = self.levels, self.tensors
        per = lambda arr: {L[l]: {T[t]: int(arr[i, l, t]) for t in range(len(T)) if arr[i, l, t]}
                           for l in range(1, len(L))}
        bds = lambda arr: {L[l]: row for l, row in enumerate(per(arr).values(), 1)
                           if self.bd_levels[l] and row}
        return Cost(
            footprint={L[l]: int(self.footprint[i, l]) for l in range(len(L))},
            capacity={L[l]: float(self.capacity[l]) for l in range(len(L))},
            fits=bool(self.fits[i]), reads=per(self.reads), writes=per(self.writes),
            reloads=per(self.reloads), fills=per(self.fills), drains=per(self.drains),
            fill_bds=bds(self.fill_bds), drain_bds=bds(self.drain_bds),
            offchip_bytes=int(self.offchip_bytes[i]),
            compute_cycles=float(self.compute_cycles[i]),
            padded_points={o: int(self.padded_points[i, j]) for j, o in enumerate(self.ops)},
            useful_points={o: int(self.useful_points[j]) for j, o in enumerate(self.ops)},
            steps={o: int(self.steps[i, j]) for j, o in enumerate(self.ops)},
            compute_s=float(self.compute_s[i]),
            transfer_s={L[l]: float(self.transfer_s[i, l]) for l in range(1, len(L))},
            latency_s=float(self.latency_s[i]), utilization=float(self.utilization[i]),
            ratio={L[l]: float(self.ratio[i, l]) for l in range(1, len(L))},
            energy_j=None if np.isnan(self.energy_j[i]) else float(self.energy_j[i]),
        )


def evaluate(workload, arch, mapping, check_capacity: bool = True) -> Cost:
    """Cost of one mapping (validated: MappingError names the culprit) on ``arch`` (an Arch,
    a preset name or a YAML path).

    With ``check_capacity`` a footprint over a level's capacity raises CapacityError naming the
    level and the bytes; without, the cost is returned with ``fits=False``.
    """
    if isinstance(arch, str):  # a preset name or a YAML path, as search() takes
        from ..arch.loader import load_arch

        arch = load_arch(arch)
    batch = MappingBatch.from_mappings(workload, arch, [mapping])
    problem = Problem.build(workload, arch)
    cb = evaluate_batch(workload, arch, batch, problem=problem)
    cost = cb.item(0)
    pack = pack_breakdown(problem, batch)
    parts = energy_breakdown(cost, problem, batch.bypass[0])
    if parts is not None and pack:
        parts["pack pass"] = {t: p["j"] for t, p in pack.items()}
    cost = replace(cost, energy_breakdown=parts, fixed_s=fixed_seconds(cost, problem, batch,
                                                                  cb.fill_fixed[0], cb.drain_fixed[0]),
                   pack=pack)
    if check_capacity and not cost.fits:
        raise CapacityError(_overflow(problem, mapping, cost))
    return cost


def _overflow(problem: Problem, mapping, cost: Cost) -> str:
    """The first level (and part of it, where it reserves bytes for some tensors) whose
    buffers exceed its capacity, with the bytes."""
    names = problem.buffer_names()
    tiles = [m.sizes for m in mapping.levels]
    panel = problem.panel(tiles, [m.order for m in mapping.levels[:-1]], ways_of(mapping))
    for l, name in enumerate(cost.footprint):
        lv = problem.arch.levels[l]
        for p, cap in enumerate(problem.levels.part_cap[l]):
            held = {n: problem.buffer_bytes(n, l, tiles, merged_ways(mapping, problem.arch),
                                            n in mapping.levels[l].double_buffer, panel=panel)
                    for f, n in enumerate(names) if problem.buffers.part[f, l] == p
                    and n not in mapping.levels[l].bypass}
            need = sum(held.values())
            if problem.chain.memory_max:  # Chimera's MU: the max over ops
                need = max(sum(v for n, v in held.items() if n in {t.name for t in op.tensors + op.state})
                           for op in problem.workload.ops)
            if need > cap:
                what = ("" if not lv.reserved else " (shared part)" if p == 0 else
                        f" (the part reserved for {lv.reserved[p - 1][0]})")
                return (f"level {name}{what}: the tiles need {need} bytes per instance but it "
                        f"holds {int(cap)}")
    return "the tiles do not fit"


def evaluate_batch(workload, arch, candidates: MappingBatch, only=None,
                   problem: Problem | None = None) -> CostBatch:
    """Evaluate a batch of mappings at once (one compiled loop, :mod:`.kernel`).

    Candidates are assumed well-formed: arrays shaped for this workload and arch, orders that
    are permutations, bypass/double-buffer flags and spatial splits that
    :func:`tilewise.model.legality.check_mapping` would accept. ``legal`` flags tiles over
    their parent, misaligned innermost tiles, illegal chain orders and non-positive tiles or
    ways (whose other fields are left zero); ``fits`` the capacity. ``only`` (tensor indices
    of the workload's tensors ``[B]``, -1 for all): count each candidate's traffic of that one
    tensor (the search's per-tensor bounds); link times and latency then cover it alone.
    ``problem``: the (workload, arch) description when the caller holds it (the search
    evaluates thousands of batches of one problem); built here otherwise.
    """
    p = Problem.build(workload, arch) if problem is None else problem
    p.require_rates()
    st = p.st
    b = candidates
    L, D, T, O = st.n_levels, len(st.dims), len(st.tensors), len(workload.ops)
    tiles = np.ascontiguousarray(b.tiles, np.int64)
    B = tiles.shape[0]
    if tiles.shape[1:] != (L, D):
        raise MappingError(f"batch tiles have shape {tiles.shape[1:]} per candidate; "
                           f"{workload.name} on {arch.name} needs ({L}, {D}) (levels, dims)")
    i64 = lambda x: np.ascontiguousarray(x, np.int64)
    flag = lambda x: np.ascontiguousarray(x, np.bool_)
    orders = i64(b.orders)
    arrays = {"orders": (orders, (B, L - 1, D)), "bypass": (b.bypass, (B, L, T)),
              "double_buffer": (b.double_buffer, (B, L, T))}
    arrays.update({f: (getattr(b, f), (B,)) for f in ("rows_dim", "rows_ways", "cols_dim", "cols_ways")})
    for name, (arr, shape) in arrays.items():  # the kernel indexes without bounds checks
        if np.shape(arr) != shape:
            raise MappingError(f"batch {name} has shape {np.shape(arr)}; expected {shape}")
    only_arr = np.full(B, -1, np.int64) if only is None else i64(only)
    if only_arr.shape != (B,) or ((only_arr < -1) | (only_arr >= T)).any():
        raise MappingError(f"only= must be {B} tensor indices in [-1, {T}); got shape "
                           f"{only_arr.shape}")
    out = _empty_outputs(B, L, T, O)  # the kernel writes every element
    flags = np.zeros(3, np.int64)
    bypass = flag(b.bypass | p.forced[None]) if p.forced.any() else flag(b.bypass)
    evaluate_into(tiles, orders, bypass, flag(b.double_buffer), i64(b.rows_dim),
                  i64(b.rows_ways), i64(b.cols_dim), i64(b.cols_ways), only_arr, flag(b.pack),
                  *p.kernel_args, out, flags)
    _raise_flags(flags, st, arch, D)
    return CostBatch(
        levels=tuple(lv.name for lv in arch.levels), tensors=tuple(t.name for t in st.tensors),
        ops=tuple(op.name for op in workload.ops), capacity=p.levels.capacity,
        useful_points=p.useful_points, footprint=out.footprint, fits=out.fits, legal=out.legal,
        reads=out.reads, writes=out.writes, reloads=out.reloads, fills=out.fills,
        drains=out.drains, fill_bds=out.fill_bds, drain_bds=out.drain_bds,
        bd_levels=np.cumprod(p.dma.has).astype(bool), fill_fixed=out.fill_fixed,
        drain_fixed=out.drain_fixed, offchip_bytes=out.offchip,
        steps=out.steps, padded_points=out.padded, compute_cycles=out.cycles,
        compute_s=out.compute_s, transfer_s=out.transfer_s, latency_s=out.latency_s,
        utilization=out.util, ratio=out.ratio, energy_j=out.energy, pack_s=out.pack_s)


def _empty_outputs(B: int, L: int, T: int, O: int) -> CostArrays:
    return CostArrays(
        footprint=np.empty((B, L), np.int64), fits=np.empty(B, bool), legal=np.empty(B, bool),
        reads=np.empty((B, L, T), np.int64), writes=np.empty((B, L, T), np.int64),
        reloads=np.empty((B, L, T), np.int64), fills=np.empty((B, L, T), np.int64),
        drains=np.empty((B, L, T), np.int64), fill_bds=np.empty((B, L, T), np.int64),
        drain_bds=np.empty((B, L, T), np.int64), fill_fixed=np.empty((B, L, T), np.int64),
        drain_fixed=np.empty((B, L, T), np.int64), offchip=np.empty(B, np.int64),
        steps=np.empty((B, O), np.int64), padded=np.empty((B, O), np.int64),
        cycles=np.empty(B), compute_s=np.empty(B), transfer_s=np.empty((B, L)),
        latency_s=np.empty(B), util=np.empty(B), ratio=np.empty((B, L)), energy=np.empty(B),
        pack_s=np.empty(B))


def _raise_flags(flags: np.ndarray, st, arch, D: int) -> None:
    """The kernel's error flags (:func:`.kernel.evaluate_into`) as clear errors."""
    if flags[2]:
        raise MappingError(f"batch candidate {flags[2] - 1}: orders and split dims must be dim "
                           f"indices in [0, {D}) (-1: no split)")
    if flags[0]:
        raise TilewiseError(f"traffic of {st.tensors[flags[0] - 1].name} overflows int64 bytes; "
                            "the problem is too large")
    if flags[1]:
        raise SpecError(f"arch {arch.name}: level {arch.levels[flags[1] - 1].name} moves data but "
                        "has no bandwidth; give it read_bandwidth and write_bandwidth")
