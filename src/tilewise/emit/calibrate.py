"""Fit a preset's rates to measured runs: ``tilewise arch calibrate``.

The model's latency of a mapping on a CPU preset (no double buffering) is
``compute_s + sum_l transfer_s[l] (+ call_overhead x calls / clock)``: linear in the inverse
rates. Given measured times of compiled mappings (``benchmarks/hardware.py`` writes them), the
fit finds non-negative scales per column by least squares on relative error (each run
weighted by 1 / its measured time, so small and large shapes count alike)::

    measured ~ sum_dtype a_dtype x compute_s[dtype] + sum_l b_l x transfer_s[l]
               + c x calls / clock + d

and writes them back into the preset: ``macs_per_cycle[dtype] / a_dtype`` (rounded to an
integer >= 1), ``bandwidth[l] / b_l``, ``call_overhead = c`` cycles per innermost tile per core.
``d`` (a fixed cost per run: dispatch, thread wake-up) has no place in the preset and is only
reported; it does not change how the mappings of one shape rank.

Held-out shapes validate it: the shapes are split alternately into a fitting half and a held-out
half, and the report gives the Spearman rank correlation of model latency vs measured time on
every held-out shape, before and after.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import SpecError, TilewiseError
from ..textfile import read_text

NOT_LIMITING = 1e15  # bytes/s of a link the fit finds free (a preset needs a positive rate)


@dataclass(frozen=True)
class Measurement:
    """One timed run: the shape's label, its workload, the mapping, the measured median (s)."""

    shape: str
    workload: object
    mapping: object
    measured_s: float


@dataclass(frozen=True)
class Fit:
    """Scales per column (see the module doc) and the constant ``d`` (s)."""

    compute: dict
    links: dict
    call_cycles: float
    constant_s: float
    columns: tuple


@dataclass(frozen=True)
class ShapeCheck:
    shape: str
    runs: int
    before: float
    after: float


@dataclass(frozen=True)
class Calibration:
    """The fit, the calibrated arch, and the held-out shapes' rank correlations."""

    fit: Fit
    arch: object
    train: tuple
    held_out: tuple


def read_measurements(path) -> list[Measurement]:
    """The timed tilewise mappings of a ``benchmarks/hardware.py`` JSON (not IREE's default,
    which has no mapping)."""
    from ..executor.solution import workload_from_dict
    from ..mapping import Mapping

    text = read_text(path, "measurements", SpecError)
    try:
        data = json.loads(text)
        shapes = data["shapes"]
        out = []
        for s in shapes:
            w = workload_from_dict(s["spec"])
            out += [Measurement(s["label"], w, Mapping.parse(p["mapping"]), p["measured_s"])
                    for p in s["points"] if p["mapping"] and p["passed"]
                    and math.isfinite(p["measured_s"])]
    except (KeyError, TypeError, ValueError) as e:
        raise SpecError(f"{path}: not a benchmarks/hardware.py result ({type(e).__name__}: {e}); "
                        "expected shapes[].spec and shapes[].points[].mapping/measured_s") from None
    if not out:
        raise SpecError(f"{path}: no timed mappings to fit")
    return out


def _row(arch, m: Measurement) -> dict:
    from ..model.cost import evaluate

    cost = evaluate(m.workload, arch, m.mapping, check_capacity=False)
    row = {f"compute {m.workload.ops[0].dtype.name}": cost.compute_s}
    row.update({f"link {lv}": t for lv, t in cost.transfer_s.items()})
    row["calls"] = sum(cost.steps.values()) / arch.compute.clock_hz
    row["constant"] = 1.0
    return row


def _nnls(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with x >= 0 (active set: drop the most negative column, solve again)."""
    active = list(range(A.shape[1]))
    x = np.zeros(A.shape[1])
    while active:
        sol = np.linalg.lstsq(A[:, active], y, rcond=None)[0]
        if (sol >= 0).all():
            x[active] = sol
            break
        active.pop(int(np.argmin(sol)))
    return x


def fit(arch, runs: list[Measurement]) -> Fit:
    """Non-negative scales of the model's columns to the measured times (relative error)."""
    rows = [_row(arch, m) for m in runs]
    columns = tuple(dict.fromkeys(k for r in rows for k in r))
    A = np.array([[r.get(c, 0.0) for c in columns] for r in rows])
    y = np.array([m.measured_s for m in runs])
    x = _nnls(A / y[:, None], np.ones(len(y)))
    scale = dict(zip(columns, x))
    return Fit({c.split()[1]: float(v) for c, v in scale.items() if c.startswith("compute")},
               {c.split()[1]: float(v) for c, v in scale.items() if c.startswith("link")},
               float(scale.get("calls", 0.0)), float(scale.get("constant", 0.0)), columns)


def calibrated(arch, f: Fit, name: str | None = None):
    """``arch`` with its rates scaled by the fit (see the module doc)."""
    macs = dict(arch.compute.macs_per_cycle)
    for dt, a in f.compute.items():
        if a > 0 and dt in macs:
            macs[dt] = max(1, int(round(macs[dt] / a)))
    levels = []
    for lv in arch.levels:
        b = f.links.get(lv.name)
        if b is None:
            levels.append(lv)
            continue
        bw = lambda rate: NOT_LIMITING if b <= 0 else float(rate / b)  # noqa: E731
        levels.append(replace(lv, read_bandwidth=bw(lv.read_bandwidth),
                              write_bandwidth=bw(lv.write_bandwidth)))
    compute = replace(arch.compute, macs_per_cycle=macs,
                      call_overhead_cycles=float(min(f.call_cycles, 1e9 - 1)))
    return replace(arch, name=name or f"{arch.name}-calibrated", levels=tuple(levels),
                   compute=compute,
                   description=f"{arch.description} (calibrated to measured runs)")


def spearman(x, y) -> float:
    """Spearman rank correlation of two sequences (ties share their mean rank; NaN under 3)."""
    if len(x) < 3:
        return math.nan

    def ranks(v):
        v = np.asarray(v, float)
        r = np.empty(len(v))
        r[np.argsort(v, kind="stable")] = np.arange(len(v))
        for value in np.unique(v):
            r[v == value] = r[v == value].mean()
        return r

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def rank_check(arch, calibrated_arch, runs: list[Measurement]) -> list[ShapeCheck]:
    """Per shape: Spearman of model latency vs measured time with each arch."""
    from ..model.cost import evaluate

    out = []
    for shape in dict.fromkeys(m.shape for m in runs):
        group = [m for m in runs if m.shape == shape]
        measured = [m.measured_s for m in group]
        rho = [spearman([evaluate(m.workload, a, m.mapping, check_capacity=False).latency_s
                          for m in group], measured) for a in (arch, calibrated_arch)]
        out.append(ShapeCheck(shape, len(group), *rho))
    return out


def calibrate(arch, runs: list[Measurement]) -> Calibration:
    """Fit on every other shape, check the rank correlation on the rest."""
    shapes = list(dict.fromkeys(m.shape for m in runs))
    if len(shapes) < 2:
        raise TilewiseError(f"calibration needs at least 2 measured shapes (one to fit, one held "
                            f"out); got {len(shapes)}")
    train_shapes, held_shapes = set(shapes[::2]), set(shapes[1::2])
    train = [m for m in runs if m.shape in train_shapes]
    f = fit(arch, train)
    new = calibrated(arch, f)
    held = [m for m in runs if m.shape in held_shapes]
    return Calibration(f, new, tuple(rank_check(arch, new, train)),
                       tuple(rank_check(arch, new, held)))
