"""Random small archs (built from YAML-schema dicts), small workloads and constraints for the
search-vs-model consistency tests, and the glue between a mapping and the search constraints
that pin it.

Archs go through :func:`tilewise.arch.loader.arch_from_dict` (the YAML loader and its validation), so a
generated arch is one a user could write. Capacities are drawn as fractions of the workload's
bytes, so capacity binds at some tiles and not at others.
"""

from __future__ import annotations

from math import factorial, prod

import numpy as np
from hypothesis import strategies as st

import tilewise as tw
from tilewise.arch.loader import arch_from_dict
from tilewise.model.structure import Structure
from tilewise.model.batch import MappingBatch
from tilewise.search.engine import Engine
from tilewise.search.walk import search_top
from tilewise.search.space import Space

GB = 10**9

# every dtype the workloads below use, for MACs and for the vector ops (layernorm, softmax)
RATES = {"i8": 16, "i16": 8, "i32": 4, "bf16": 8, "f32": 4}


# --------------------------------------------------------------------------- archs


def level(name, capacity, instances=1, bandwidth=8 * GB, write_bandwidth=None, channels=1,
          double_buffer=True, block=None, banks=None, bank_size=None, bank_granular=None,
          energy=None, read_energy=None, write_energy=None, transfer_overhead=None) -> dict:
    """One level in the YAML schema (bytes and bytes/s as plain numbers)."""
    d = {"name": name, "capacity": capacity, "instances": instances, "channels": channels,
         "double_buffer": double_buffer}
    if write_bandwidth is None:
        d["bandwidth"] = bandwidth
    else:
        d["read_bandwidth"], d["write_bandwidth"] = bandwidth, write_bandwidth
    for key, v in (("block", block), ("banks", banks), ("bank_size", bank_size),
                   ("bank_granular", bank_granular), ("energy_per_byte", energy),
                   ("read_energy", read_energy), ("write_energy", write_energy),
                   ("transfer_overhead", transfer_overhead)):
        if v is not None:
            d[key] = v
    return d


def arch(name, levels, array=None, alignment=None, energy_per_mac=None) -> tw.Arch:
    """An Arch from YAML-schema parts, through the loader (validated)."""
    compute = {"clock": "1 GHz", "macs_per_cycle": dict(RATES), "vector_ops_per_cycle": dict(RATES)}
    if energy_per_mac is not None:
        compute["energy_per_mac"] = energy_per_mac
    spec = {"name": name, "levels": [{"name": "ddr", "capacity": "unbounded"}, *levels],
            "compute": compute}
    if array is not None:
        spec["array"] = array
    if alignment:
        spec["alignment"] = alignment
    return arch_from_dict(spec, source=name)


def tensor_bytes(w) -> int:
    """Bytes of every tensor of ``w`` (state included), accumulators not widened: the scale
    the capacities are drawn against."""
    return sum(prod(t.shape) * t.element_bytes for t in (*w.tensors, *w.state))


def _round_up(x, a):
    return max(a, -(-int(x) // a) * a)


FRACTIONS = (1 / 2, 1, 1 / 4, 2, 1 / 8, 4)  # hypothesis starts from the first


@st.composite
def archs(draw, w, depths=(2, 3)):
    """A random small arch for workload ``w``: DDR and ``depths`` - 1 levels under it; no
    array, an array at the innermost level (rows x cols <= 4) or at a level above it;
    instances 1 or 2 (x the parent's) on the levels above the array; double buffering allowed
    or not per level; block / bank sizes; capacities a fraction of ``w``'s bytes (so capacity
    binds); bandwidths, channels and a per-transfer cost (cycles) per level; optionally energy
    numbers (per byte over the link, read and write per level) and an alignment."""
    n = draw(st.sampled_from(sorted(depths, key=lambda d: d != 3)))  # levels with DDR, 3 first
    where = draw(st.sampled_from(["none", "inner"] + (["upper"] if n > 2 else [])))
    names = ["l3", "l2", "l1"][-(n - 1):]
    inst = [1] * (n - 1)
    array = None
    grow = lambda k, ok=lambda x: True: inst[k - 1] * draw(
        st.sampled_from([f for f in (2, 1) if ok(inst[k - 1] * f)])) if k else draw(
        st.sampled_from([f for f in (2, 1) if ok(f)]))
    if where == "none":
        for k in range(n - 1):
            inst[k] = grow(k)
    else:
        rows, cols = draw(st.sampled_from([(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)]))
        a = n - 2 if where == "inner" else draw(st.integers(0, n - 3))
        for k in range(a):
            inst[k] = grow(k, lambda x: (rows * cols) % x == 0)
        inst[a] = rows * cols
        for k in range(a + 1, n - 1):
            inst[k] = grow(k)
        array = {"level": names[a], "rows": rows, "cols": cols,
                 "broadcast": draw(st.sampled_from([[], ["rows"], ["cols"], ["rows", "cols"]])),
                 "reduce_cols": draw(st.booleans())}
    energy = draw(st.booleans())
    scale = tensor_bytes(w) * (4 if len(w.ops) > 1 else 1)  # chains keep private dims whole
    levels = []
    for k, name in enumerate(names):
        inner = k == n - 2
        block = draw(st.sampled_from([1, 1, 4, 16]))
        cap = _round_up(max(16, scale * draw(st.sampled_from(FRACTIONS))), block)
        kw = {}
        if inner and draw(st.booleans()):  # banked, maybe one buffer per bank
            banks = draw(st.integers(2, 6))
            bank = _round_up(cap / banks, block)
            cap = banks * bank
            kw = dict(banks=banks, bank_size=bank, bank_granular=draw(st.booleans()))
        bw = draw(st.sampled_from([1, 2, 4, 8])) * GB
        wbw = draw(st.sampled_from([None, None, 1 * GB, 16 * GB]))
        if energy:
            kw.update(energy=draw(st.sampled_from([0.5, 2, 10])),
                      read_energy=draw(st.sampled_from([0, 0.25, 3])),
                      write_energy=draw(st.sampled_from([0, 0.5, 4])))
        levels.append(level(name, cap, instances=inst[k], bandwidth=bw, write_bandwidth=wbw,
                            channels=draw(st.sampled_from([1, 2])),
                            double_buffer=draw(st.booleans()), block=block,
                            transfer_overhead=draw(st.sampled_from([0, 0, 16, 200])), **kw))
    align = {}
    if draw(st.booleans()):
        d = draw(st.sampled_from(list(w.sizes)))
        align[d] = draw(st.sampled_from([2, 4]))
    return arch(f"rand-{where}-{'x'.join(map(str, inst))}", levels, array, align,
                energy_per_mac=0.25 if energy else None)


# --------------------------------------------------------------------------- workloads


@st.composite
def workloads(draw, hi=8):
    """A small workload of every library constructor; dims at most ``hi`` (conv2d and
    attention smaller: they have 5 to 7 dims)."""
    kind = draw(st.sampled_from(["gemm", "batched_gemm", "conv2d", "gemm_chain", "mha",
                                 "layernorm"]))
    dim = lambda lo=1, h=hi: draw(st.integers(lo, max(lo, h)))
    dt = draw(st.sampled_from(["i8", "i16", "bf16"]))
    if kind == "gemm":
        return tw.gemm(dim(), dim(), dim(), dtype=dt)
    if kind == "batched_gemm":
        return tw.batched_gemm(dim(1, 2), dim(1, hi // 2), dim(1, hi // 2), dim(1, hi // 2), dtype=dt)
    if kind == "conv2d":
        R, S = dim(1, 2), dim(1, 2)
        pad = draw(st.integers(0, 1))
        return tw.conv2d(1, dim(1, 2), dim(max(1, R - 2 * pad), 3), dim(max(1, S - 2 * pad), 3),
                         dim(1, 2), R, S, padding=pad, dtype=dt, bias=draw(st.booleans()))
    if kind == "gemm_chain":
        return tw.gemm_chain(dim(1, hi // 2), dim(1, hi // 2), dim(1, hi // 2), dim(1, hi // 2), dtype=dt)
    if kind == "mha":
        return tw.mha(dim(1, hi // 2), dim(1, hi // 2), dim(1, 4), heads=dim(1, 2), dtype=dt)
    return tw.layernorm(dim(), dim(), dtype=dt)


def order_text(order) -> str:
    return ",".join(order)


@st.composite
def orders(draw, w, arch_, n=2):
    """Up to ``n`` loop orders (texts) allowed at every level: for a chain the first keeps the
    spine loops outside (the legal shape), the others are any permutation."""
    dims = list(w.sizes)
    spine = [d for d in dims if d in Structure(w, arch_).spine] if len(w.ops) > 1 else dims
    first = draw(st.permutations(spine)) + draw(st.permutations([d for d in dims if d not in spine]))
    out = [order_text(first)]
    for _ in range(n - 1):
        o = order_text(draw(st.permutations(dims)))
        if o not in out:
            out.append(o)
    return out


# --------------------------------------------------------------------------- the space


def space_size(w, arch_, **constraints) -> int:
    """Mappings :func:`tilewise.search.space.iter_mappings` enumerates (tile chains x loop
    orders per level x double-buffer choices), counted without enumerating."""
    sp = Space.build(w, arch_, **constraints)
    L, D = sp.st.n_levels, len(sp.st.dims)
    chains = sum(prod(len(sp.dim_ladders(s, j).tiles) for j in range(D))
                 for s in range(len(sp.splits)))
    perms = len(sp.orders_allowed) if sp.orders_allowed is not None else factorial(D)
    return chains * perms ** (L - 1) * len(sp.db_variants())


def shrink(w, arch_, constraints: dict, limit: int) -> dict | None:
    """``constraints`` narrowed step by step (one loop order, no split, no double buffering)
    until the space has at most ``limit`` mappings; None if it never does."""
    c = dict(constraints)
    steps = [("orders", lambda o: o[:1] if o else o), ("spatial", lambda _: "none"),
             ("double_buffer", lambda _: "none")]
    for key, f in [(None, None)] + steps:
        if key is not None:
            c[key] = f(c.get(key))
        if space_size(w, arch_, **c) <= limit:
            return c
    return None


def key(m) -> tuple:
    """A mapping without its loop orders: tiles per level, split, double buffering (the search
    drops orders that provably cost the same, so compare mappings up to their orders)."""
    return (tuple(lv.tiles for lv in m.levels), m.rows, m.cols,
            tuple(tuple(sorted(lv.double_buffer)) for lv in m.levels))


def pin(m, arch_) -> dict:
    """Search constraints whose space holds ``m`` with its tiles, split and double buffering
    fixed, its loop orders allowed at every level."""
    spatial = " ".join(f"{ax}={s.dim}{s.ways}" for ax, s in (("rows", m.rows), ("cols", m.cols)) if s)
    ords = list(dict.fromkeys(order_text(lv.order) for lv in m.levels[:-1]))
    return {"tiles": {lv.level: dict(lv.tiles) for lv in m.levels[1:]},
            "spatial": [spatial or "none"],
            "double_buffer": {lv.level: sorted(lv.double_buffer) for lv in m.levels[1:]
                              if lv.double_buffer},
            "orders": ords}


def tightest(brute) -> tuple:
    """The accepted (value, mapping, cost) of ``brute`` nearest a capacity: highest footprint
    / capacity over the bounded levels (where a second copy of a capacity rule would bite)."""
    def fill(c):
        return max(c.footprint[l] / c.capacity[l] for l in c.capacity if c.capacity[l] != float("inf"))
    return max(brute, key=lambda e: fill(e[2]))


def ranked_candidates(w, arch_, objective, top, **constraints):
    """The search's own numbers: its ranked pool (the objective, latency, traffic and energy
    it computed itself to rank the candidates) with the mappings, before
    :func:`tilewise.evaluate` re-costs them for the Result."""
    engine = Engine(w, arch_, constraints)
    pool, _, _ = search_top(engine, objective, top)
    if not len(pool):
        return []
    p = pool.take(pool.ranked())
    db, sp = p.double_buffer, p.split
    batch = MappingBatch(p.tiles, p.orders, np.zeros_like(db), db,
                         sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3])
    names = {"obj": p.objective, "lat": p.latency_s, "traffic": p.traffic, "energy": p.energy}
    return [(batch.mapping(i, w, arch_), {k: float(v[i]) for k, v in names.items()})
            for i in range(len(batch))]
