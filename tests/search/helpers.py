"""Brute force over the unpruned declared space, and small archs for the search tests."""

import math

import numpy as np

from tilewise.arch.spec import Arch, Compute, Level, SpatialArray
from tilewise.errors import MappingError
from tilewise.model.cost import evaluate
from tilewise.search.space import Space, iter_mappings

GiB = 2**30


def small_aie(rows=2, cols=2, core_bytes=4096, bank=512, mem_bytes=16384, alignment=None,
              energy=False, memtile=True) -> Arch:
    """A scaled-down aie-4x2: DDR -> memtile (x2) -> core (banked), rows x cols array, with
    fixed costs per kernel call (12 cycles) and per DMA transfer (20 cycles into the memtile,
    8 into a core); ``energy``: Accelergy-style numbers (:func:`energy_by_hand`);
    ``memtile=False`` drops the memtile (DDR -> core) to keep brute force small."""
    e = {"energy_pj_per_byte": 10.0, "read_energy_pj": 2.0, "write_energy_pj": 3.0} if energy else {}
    mem = (Level("memtile", mem_bytes, instances=2, read_bandwidth=8 * GiB,
                 write_bandwidth=8 * GiB, channels=2, transfer_overhead_cycles=20, **e),) if memtile else ()
    e_ddr = {"read_energy_pj": 40.0, "write_energy_pj": 50.0} if energy else {}
    e_core = {"energy_pj_per_byte": 1.0, "read_energy_pj": 0.25, "write_energy_pj": 0.5} if energy else {}
    return Arch(
        name="small-aie",
        levels=(Level("ddr", None, **e_ddr),
                *mem,
                Level("core", core_bytes, instances=rows * cols, banks=core_bytes // bank,
                      bank_bytes=bank, bank_granular=True, read_bandwidth=4 * GiB,
                      write_bandwidth=4 * GiB, channels=2, transfer_overhead_cycles=8,
                      **e_core)),
        compute=Compute(1e9, {"i8": 16, "i16": 8, "i32": 4, "bf16": 8},
                        {"i8": 32, "i16": 16, "bf16": 16, "i32": 8},
                        **({"energy_pj_per_mac": 0.5} if energy else {}),
                        call_overhead_cycles=12),  # a fixed cost per kernel call
        array=SpatialArray("core", rows, cols, True, True, True),
        alignment=alignment or {},
    )


def energy_by_hand(workload, arch, cost) -> float:
    """Joules of a Cost of a mapping without bypass, counted from the arch's numbers apart
    from the model's rule: each byte moved into level l is read from level l-1 and written
    into l, each byte stored out of l read from l and written into l-1, and both cross l's
    link; each op's padded points x ops per point at its dtype's pJ per MAC."""
    pj = lambda v: 0.0 if v is None else v * 1e-12
    names = [lv.name for lv in arch.levels]
    total = 0.0
    for li in range(1, len(names)):
        lv, up = arch.levels[li], arch.levels[li - 1]
        into = sum(cost.reads[names[li]].values())
        out = sum(cost.writes[names[li]].values())
        total += into * (pj(up.read_energy_pj) + pj(lv.write_energy_pj) + pj(lv.energy_pj_per_byte))
        total += out * (pj(lv.read_energy_pj) + pj(up.write_energy_pj) + pj(lv.energy_pj_per_byte))
    for op in workload.ops:
        per_point = op.ops_per_point if op.kind != "mac" else 1
        total += cost.padded_points[op.name] * per_point * pj(arch.compute.mac_energy_pj(op.dtype.name))
    return total


def brute_force(workload, arch, metric, **constraints):
    """(value, core volume, mapping) of every valid mapping of the unpruned space, evaluated one
    by one with tilewise.evaluate."""
    space = Space.build(workload, arch, **constraints)
    out = []
    for m in iter_mappings(space):
        try:
            c = evaluate(workload, arch, m, check_capacity=False)
        except MappingError:
            continue
        if not c.fits:
            continue
        out.append((metric(c), m, c))
    return out


# ----- plain numpy references of the model's rules (independent of the compiled ones) -----

def numpy_buffer_bytes(space, k: int, tiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Single-buffer bytes per moved tensor ``[n, T]`` and of the other buffers ``[n]`` at level
    ``k`` for tiles ``[n, D]``, at the final widths (accumulator type innermost), written from
    the footprint docs with the numpy reference's halo and rounding rules."""
    from tilewise.model.footprint import element_bytes, in_place

    from ..model.numpy_reference.cost import round_buffer, tile_elements_batch

    st, wl = space.st, space.st.workload
    lv, sizes, inner = st.arch.levels[k], np.array(st.sizes, np.int64), k == st.n_levels - 1
    out = np.zeros((len(tiles), len(space.moved)), np.int64)
    word = max([l.dma.word_bytes for l in st.arch.levels if l.dma is not None] + [1])
    for i, ti in enumerate(space.moved):
        t = st.tensors[ti]
        n = tile_elements_batch(t, st.dims, tiles, sizes)
        if t.name not in st.outputs and not t.axes[-1].is_plain and word > 1:
            n = _window_rows(t, st.dims, tiles, sizes, word // math.gcd(word, t.element_bytes), n)
        out[:, i] = round_buffer(n * element_bytes(t, wl, inner), lv)
    other = np.zeros(len(tiles), np.int64)
    if inner:
        kept = [t for t in st.tensors if t.name in st.intermediate_names
                and t.name not in in_place(wl)] + list(wl.state)
        for t in kept:
            eb = t.element_bytes if t in wl.state else element_bytes(t, wl, True)
            other += round_buffer(tile_elements_batch(t, st.dims, tiles, sizes) * eb, lv)
    return out, other


def _window_rows(t, dims, tiles, sizes, g: int, n: np.ndarray) -> np.ndarray:
    """``n`` elements of ``t``'s tiles with the innermost (window) axis widened to the DMA words
    a window row of that extent can touch, ``g`` elements a word, at most the padded span (the
    footprint docs: padded rows, :mod:`tilewise.model.contiguity`)."""
    full = np.maximum(tiles, sizes[None, :])
    ext = np.ones(len(tiles), np.int64)
    span = np.ones(len(tiles), np.int64)
    for d, c in t.axes[-1].terms:
        ext = ext + c * (tiles[:, dims.index(d)] - 1)
        span = span + c * (full[:, dims.index(d)] - 1)
    e = np.minimum(ext, span)
    words = np.minimum((e + 2 * g - 2) // g * g, -(-span // g) * g)
    return n // e * words


def _time(nbytes, bw):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(nbytes > 0, nbytes / bw, 0.0)


def numpy_latency_variants(compute_s, reads, writes, rbw, wbw, iterations, db, fills=None,
                           drains=None, xfs=None):
    """Latency ``[B, V]`` (seconds) of each candidate under each double-buffer choice ``db
    [V, L, T]``, vectorized from the formula in :mod:`tilewise.model.cost`'s doc:
    ``max(T_c + sum E_l, max T_l) + sum O_l / iterations_l``, each direction of a link its
    bytes / bandwidth + its transfers (``fills``/``drains [B, L, T]``) x ``xfs [B, L]``
    seconds."""
    r, w = reads.astype(float), writes.astype(float)
    nr = np.zeros_like(r) if fills is None else fills.astype(float)
    nw = np.zeros_like(w) if drains is None else drains.astype(float)
    xs = np.zeros_like(rbw) if xfs is None else xfs
    keep = (~db).astype(float)                                             # [V, L, T]

    def times(rb, wb, nrb, nwb):  # [..., L]
        return np.maximum(_time(rb, rbw) + nrb * xs, _time(wb, wbw) + nwb * xs)

    Tt = times(r.sum(2), w.sum(2), nr.sum(2), nw.sum(2))                   # [B, L]
    ex_parts = [np.einsum("blt,vlt->vbl", a, keep) for a in (r, w, nr, nw)]
    ex = times(*ex_parts)
    ov = times(*(a.sum(2)[None] - x for a, x in zip((r, w, nr, nw), ex_parts)))
    ex[:, :, 0] = ov[:, :, 0] = Tt[:, 0] = 0.0
    fill = (ov[:, :, 1:] / np.maximum(iterations[None, :, 1:], 1)).sum(2)
    return (np.maximum(compute_s[None, :] + ex.sum(2), Tt.max(1)[None, :]) + fill).T


def small_held(kind: str, rows=2, cols=1) -> Arch:
    """Levels that hold only some tensors (ZigZag's per-operand memories, scaled down), with
    fixed costs per kernel call and per DMA transfer and energy numbers: ``"out-reg"`` DDR ->
    L1 -> output-only registers per core (gemm_l1_l3: the inputs stream from L1 into the
    cores); ``"tpu"`` DDR -> SRAM holding the first inputs and the outputs -> registers per
    core holding the second inputs (32 B) and the outputs (64 B), bytes reserved per tensor
    (tpu_like: the weights bypass the SRAM)."""
    e = lambda r, w, link: {"read_energy_pj": r, "write_energy_pj": w, "energy_pj_per_byte": link}
    if kind == "out-reg":
        mid = Level("l1", 2048, read_bandwidth=4 * GiB, write_bandwidth=4 * GiB,
                    transfer_overhead_cycles=20, **e(2.0, 3.0, 10.0))
        reg = Level("reg", 64, instances=rows * cols, read_bandwidth=2 * GiB,
                    write_bandwidth=2 * GiB, transfer_overhead_cycles=4, holds=("out",),
                    **e(0.1, 0.2, 0.5))
    else:
        mid = Level("sram", 2048, read_bandwidth=4 * GiB, write_bandwidth=4 * GiB,
                    transfer_overhead_cycles=20, holds=("in1", "out"), **e(2.0, 3.0, 10.0))
        reg = Level("reg", 96, instances=rows * cols, read_bandwidth=2 * GiB,
                    write_bandwidth=2 * GiB, transfer_overhead_cycles=4, holds=("in2", "out"),
                    reserved=(("in2", 32), ("out", 64)), **e(0.1, 0.2, 0.5))
    return Arch(
        name=f"small-{kind}",
        levels=(Level("ddr", None, **e(40.0, 50.0, 0.0)), mid, reg),
        compute=Compute(1e9, {"i8": 4, "i16": 2}, {"i8": 8, "i16": 4}, energy_pj_per_mac=0.5,
                        call_overhead_cycles=2),
        array=SpatialArray("reg", rows, cols, True, True, True),
    )


def random_call_nodes(eng, n: int, seed: int):
    """``n`` random node stand-ins for the engine's kernel-call floors (its
    :class:`~tilewise.search.calls.CallFloors`, each split's lists made): splits ``s [n]``,
    least padded extents, smallest and largest innermost tiles ``[n, D]`` drawn from the
    listed values (the smallest from each dim's lower half)."""
    import numpy as np

    cf = eng.call_floors()
    rng = np.random.default_rng(seed)
    s = rng.integers(0, len(eng.space.splits), n)
    cf._ensure(*np.unique(s, return_counts=True))
    vals = [np.unique(cf.values[cf.value_lo[d]:cf.value_lo[d + 1]]) for d in range(eng.D)]
    small = np.stack([rng.choice(v[: max(1, len(v) // 2)], n) for v in vals], 1)
    whole = np.maximum(small, np.stack([rng.choice(v, n) for v in vals], 1))
    padded = whole * rng.integers(1, 2000, (n, eng.D))
    return cf, s, padded, small, whole
