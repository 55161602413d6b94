"""Where one mapping's energy and fixed costs go: the parts behind ``Cost.energy_j`` and the
share of the time spent in fixed per-call and per-transfer costs.

Both use the model's rules (:mod:`.rules`) on the counts of a :class:`.cost.Cost`, so the
parts add up to the kernel's totals (tests check it): energy per level and tensor by
:func:`.rules.transfer_energy` (each transfer charged to the level it moves into or out of,
from the nearest level above that keeps the tensor), compute by :func:`.rules.compute_energy`;
fixed seconds per link as the difference the per-transfer costs make to that link's time
(:func:`.rules.link_time`), and the kernel-call cycles of the busiest core.
"""

from __future__ import annotations

import numpy as np

from .contiguity import pack_pass
from .rules import compute_energy, link_instances, link_time, transfer_energy


def energy_breakdown(cost, problem, bypass: np.ndarray) -> dict | None:
    """``{"compute": J, level: {tensor: J}}`` for ``cost`` (None without energy numbers).
    ``bypass [L, T]`` the mapping's bypass flags (Structure tensor order)."""
    if cost.energy_j is None:
        return None
    lv, st = problem.levels, problem.st
    names = [x.name for x in st.arch.levels]
    points = np.array([cost.padded_points[op.name] for op in st.workload.ops], float)
    out: dict = {"compute": float(compute_energy(points, problem.compute.e_point))}
    for t, tensor in enumerate(st.tensors):
        src = 0
        for c in range(1, len(names)):
            fill = cost.reads[names[c]].get(tensor.name, 0)
            drain = cost.writes[names[c]].get(tensor.name, 0)
            if fill or drain:
                e = transfer_energy(float(fill), float(drain), lv.e_read[src], lv.e_write[src],
                                    lv.e_read[c], lv.e_write[c], lv.e_link[c])
                out.setdefault(names[c], {})[tensor.name] = float(e)
            if not bypass[c, t]:
                src = c
    return out


def fixed_seconds(cost, problem, batch, fill_fixed, drain_fixed) -> dict:
    """Seconds of fixed costs: ``"kernel calls"`` (the busiest core's call cycles / clock) and,
    per link with a per-transfer cost, how much those costs lengthen the link's time, charged
    ``fill_fixed``/``drain_fixed [L, T]`` times (:attr:`.cost.CostBatch.fill_fixed`: once per
    buffer descriptor, at least once per transfer)."""
    comp, lv, st = problem.compute, problem.levels, problem.st
    steps = sum(cost.steps[op.name] for op in st.workload.ops)
    out = {"kernel calls": steps * comp.call / comp.clock}
    if not lv.has_xfer:
        return out
    names = [x.name for x in st.arch.levels]
    used = int(batch.rows_ways[0] * batch.cols_ways[0])
    bypass = batch.bypass[0]
    for l in range(1, len(names)):
        rb = wb = nr = nw = 0.0
        for t, tensor in enumerate(st.tensors):
            c = _first_keeper(l, t, bypass)
            if c is None:
                continue
            level, name = names[c], tensor.name
            rb += cost.reads[level].get(name, 0)
            wb += cost.writes[level].get(name, 0)
            nr += fill_fixed[c, t]
            nw += drain_fixed[c, t]
        ins = link_instances(lv.instances, l, lv.link_array, used)
        rbw, wbw = lv.read_bw[l] * ins, lv.write_bw[l] * ins
        xs = lv.xfer_s[l] / ins
        extra = link_time(rb, wb, rbw, wbw, nr, nw, xs) - link_time(rb, wb, rbw, wbw)
        if extra > 0:
            out[names[l]] = float(extra)
    return out


def _first_keeper(l: int, t: int, bypass: np.ndarray) -> int | None:
    """The level whose transfers of tensor ``t`` cross link ``l``: the first level ``c >= l``
    that keeps it (None: none does)."""
    for c in range(l, bypass.shape[0]):
        if not bypass[c, t]:
            return c
    return None


def pack_breakdown(problem, batch) -> dict:
    """``{tensor: {"bytes": B, "s": seconds, "j": joules or None}}``: the pack (an output's
    unpack) pass of each tensor candidate 0 of ``batch`` packs at the outermost level
    (:func:`.contiguity.pack_pass`, the kernel's rule; included in the latency, the off-chip
    bytes and the energy)."""
    lv, st, tn = problem.levels, problem.st, problem.tensors
    out: dict = {}
    bypass, used = batch.bypass[0] | problem.forced, int(batch.rows_ways[0] * batch.cols_ways[0])
    ins = link_instances(lv.instances, 1, lv.link_array, used)
    for t, tensor in enumerate(st.tensors):
        if not batch.pack[0, t] or tn.runs[t, 0] == 0:
            continue
        c0 = next((c for c in range(1, st.n_levels) if not bypass[c, t]), st.n_levels - 1)
        nb, sec, joules = pack_pass(t, c0, 0, batch.tiles, problem.dims.sizes, tn.runs,
                                    tn.tbytes, tn.psum[t] > 0, lv.read_bw[1] * ins,
                                    lv.write_bw[1] * ins, lv.e_read[0], lv.e_write[0],
                                    lv.e_link[1])
        out[tensor.name] = {"bytes": int(nb), "s": float(sec),
                            "j": None if np.isnan(joules) else float(joules)}
    return out
