"""``sweep``: arch parameters varied over a model or a workload set; per point the exact
optimum of every workload, the set's totals, and the Pareto fronts.

Points are the product of the ``--vary`` values (:mod:`.vary`). Every (point, distinct
workload) pair is one search of :func:`tilewise.search_many` (one batch on the engine, the
store keyed by each point's arch), so a rerun or a widened sweep searches only what is new. A
point where some workload has no valid mapping is *infeasible* (its reason kept) and on no
front. Per point: latency, off-chip traffic and energy summed over the workloads (a model's
layers run one after another; identical layers counted as often as they occur), and two area
proxies: ``on_chip_bytes`` (capacity x instances summed over every level below the outermost)
and ``cores``. Fronts: latency against each area proxy, and against energy where the arch gives
energy numbers (all minimized)::

    >>> s = sweep("examples/models/bert-encoder.onnx", "npu1",
    ...           ["levels.memtile.capacity=256KiB,512KiB", "array=4x4,4x5"], dims={"batch": 1},
    ...           dtype="bf16")
    >>> [p.settings for p in s.front("on_chip_bytes")]
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

from ..errors import TilewiseError
from ..search.many import Failure, Problem, search_many
from .vary import Vary, parse_vary, point_arch

AREAS = ("on_chip_bytes", "cores")


@dataclass(frozen=True)
class Point:
    """One arch of the sweep and its answers (a Result per workload; empty when infeasible,
    ``error`` then says why). Seconds, bytes, joules."""

    settings: tuple[tuple[str, str], ...]
    arch: object
    results: tuple
    counts: tuple[int, ...]
    error: str = ""

    @property
    def feasible(self) -> bool:
        return not self.error

    def _total(self, attr: str):
        values = [getattr(r.best, attr) for r in self.results]
        if not self.feasible or None in values:
            return None
        return sum(c * v for c, v in zip(self.counts, values))

    @property
    def latency_s(self) -> float | None:
        return self._total("latency_s")

    @property
    def offchip_bytes(self) -> int | None:
        return self._total("offchip_bytes")

    @property
    def energy_j(self) -> float | None:
        return self._total("energy_j")

    @property
    def on_chip_bytes(self) -> int:
        """Capacity x instances summed over the levels below the outermost (bytes)."""
        return sum(lv.capacity_bytes * lv.instances for lv in self.arch.levels[1:])

    @property
    def cores(self) -> int:
        return self.arch.cores


@dataclass(frozen=True)
class SweepResult:
    """Every point in product order; the workloads (with their counts) it was run over."""

    base: object
    varies: tuple[Vary, ...]
    objective: str
    workloads: tuple
    points: tuple[Point, ...]
    searched: int
    seconds: float

    def front(self, x: str = "on_chip_bytes") -> list[Point]:
        """The Pareto front of latency against ``x`` (``on_chip_bytes``, ``cores`` or
        ``energy_j``), both minimized, sorted by ``x``; feasible points only."""
        if x not in AREAS + ("energy_j",):
            raise TilewiseError(f"sweep front axis {x!r} unknown; valid: "
                                f"{', '.join(AREAS)}, energy_j")
        pts = [p for p in self.points if p.feasible and getattr(p, x) is not None]
        pts.sort(key=lambda p: (getattr(p, x), p.latency_s))
        front, best = [], float("inf")
        for p in pts:
            if p.latency_s < best:
                front.append(p)
                best = p.latency_s
        return front

    def to_dict(self) -> dict:
        fronts = {x: [self.points.index(p) for p in self.front(x)] for x in AREAS}
        if any(p.energy_j is not None for p in self.points):
            fronts["energy_j"] = [self.points.index(p) for p in self.front("energy_j")]
        return {"arch": self.base.name, "objective": self.objective,
                "vary": {v.key: list(v.values) for v in self.varies},
                "workloads": [{"workload": str(w), "count": c} for w, c in self.workloads],
                "points": [{"settings": dict(p.settings), "feasible": p.feasible,
                            "error": p.error, "latency_s": p.latency_s,
                            "offchip_bytes": p.offchip_bytes, "energy_j": p.energy_j,
                            "on_chip_bytes": p.on_chip_bytes, "cores": p.cores,
                            "mappings": [str(r.best.mapping) for r in p.results]}
                           for p in self.points],
                "fronts": fronts, "searched": self.searched, "seconds": self.seconds}


def workload_set(target, dims=None, dtype=None) -> tuple[list, str | None]:
    """``([(Problem, count)], arch or None)`` from an ImportedModel, an ONNX path, a problem
    list YAML path (its arch is returned) or a list of workloads / Problems."""
    from ..importers.onnx import ImportedModel, import_onnx
    from ..search.many import load_problems

    if isinstance(target, (list, tuple)):
        return [(p if isinstance(p, Problem) else Problem(p), 1) for p in target], None
    if isinstance(target, str) and target.endswith((".yaml", ".yml")):
        spec = load_problems(target)
        return [(p, 1) for p in spec["problems"]], spec["arch"]
    model = target if isinstance(target, ImportedModel) else import_onnx(target, dims, dtype)
    return [(Problem(ls[0].workload), len(ls)) for ls in model.distinct().values()], None


def sweep(target, arch, vary, objective: str = "latency", *, dims=None, dtype=None,
          store=None, workers=None, engine: str = "processes", address=None, on_done=None,
          **constraints) -> SweepResult:
    """Every point of ``vary`` (texts ``KEY=V1,V2`` or :class:`Vary`) on ``arch`` (the base;
    None: a problem list's own) over ``target`` (see :func:`workload_set`);
    ``on_done(done, total)`` counts searches."""
    from ..arch.loader import arch_to_dict, load_arch

    t0 = time.perf_counter()
    varies = tuple(v if isinstance(v, Vary) else parse_vary(v) for v in vary)
    if not varies:
        raise TilewiseError("sweep needs at least one --vary KEY=V1,V2,...")
    problems, listed = workload_set(target, dims, dtype)
    if arch is None and listed is None:
        raise TilewiseError("sweep needs a base arch (--arch), e.g. npu1")
    base = load_arch(arch if arch is not None else listed)
    base_dict = arch_to_dict(base)
    settings = [tuple(zip((v.key for v in varies), combo))
                for combo in itertools.product(*(v.values for v in varies))]
    archs = [point_arch(base_dict, s) for s in settings]
    flat = [Problem(p.workload, p.constraints, a) for a in archs for p, _ in problems]
    done = [0]

    def tick(i, result):
        done[0] += 1
        if on_done:
            on_done(done[0], len(flat))

    answers = search_many(flat, base, objective, top=1, store=store, workers=workers,
                          engine=engine, address=address, failures=True, on_done=tick,
                          **constraints)
    counts = tuple(c for _, c in problems)
    points = []
    for i, (s, a) in enumerate(zip(settings, archs)):
        mine = answers[i * len(problems):(i + 1) * len(problems)]
        bad = [r for r in mine if isinstance(r, Failure)]
        error = f"{str(bad[0].workload).split(':')[0]}: {bad[0].message}" if bad else ""
        points.append(Point(s, a, () if bad else tuple(mine), counts, error))
    searched = sum(not isinstance(r, Failure) and not r.cached for r in answers)
    return SweepResult(base, varies, objective, tuple((p.workload, c) for p, c in problems),
                       tuple(points), searched, time.perf_counter() - t0)
