"""The answer of a search: ranked solutions, the Pareto front on demand, and statistics.

A :class:`Solution` is a mapping with its exact :class:`~tilewise.model.cost.Cost` (re-evaluated
by :func:`tilewise.evaluate`) and the objective numbers: ``latency_s`` (seconds),
``offchip_bytes`` (bytes), ``energy_j`` (joules, None when the arch gives no energy numbers),
``edp`` (joule-seconds) and ``xslowdown`` = latency / the compute-bound minimum time (the time
of the useful work at peak rate on every core; >= 1); from its cost, ``space_bytes`` (the
on-chip footprint: the footprints of levels 1 .. L-1 summed) and ``ratio`` (seed 003's 𝔽, min
over links of compute time / link time; higher is better).

    >>> r = tilewise.search(gemm(512, 768, 768), "aie-4x2", top=5)
    >>> r.best.mapping, r.best.latency_s, r.best.xslowdown
    >>> r.stats["evaluated"], r.stats["valid"], r.stats["rejected"]
    >>> r.pareto(x="traffic", y="latency")      # exact front, computed on first use

:func:`tilewise.search_many` returns one :class:`Result` per problem, the same type;
``cached`` says it came from the solution store (its solutions are rebuilt from the stored JSON,
which carries each full Cost, and ``pareto`` then searches again on first use).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Callable

from ..errors import TilewiseError
from ..mapping import Mapping
from ..model.cost import Cost

METRICS = {"latency": "latency_s", "traffic": "offchip_bytes", "energy": "energy_j", "edp": "edp",
           "space": "space_bytes", "ratio": "ratio"}


@dataclass(frozen=True)
class Solution:
    """One mapping and its cost. Seconds, bytes, joules."""

    mapping: Mapping
    cost: Cost
    latency_s: float
    offchip_bytes: int
    energy_j: float | None
    edp: float | None
    xslowdown: float

    @property
    def space_bytes(self) -> int:
        """Bytes of the on-chip footprint: the cost's footprint per level summed over every
        level but the outermost."""
        return int(sum(list(self.cost.footprint.values())[1:]))

    @property
    def ratio(self) -> float:
        """Seed 003's 𝔽: the least over links of compute time / link time (inf: nothing moves)."""
        return float(min(self.cost.ratio.values(), default=math.inf))

    def metric(self, name: str) -> float:
        """``name``'s value: "latency" s, "traffic" bytes, "energy" J, "edp" J·s, "space"
        bytes, "ratio" 𝔽 (the only one maximized)."""
        if name not in METRICS:
            raise TilewiseError(f"metric {name!r} unknown; valid: {', '.join(METRICS)}")
        v = getattr(self, METRICS[name])
        if v is None:
            raise TilewiseError(f"metric {name!r} needs energy numbers the arch does not give")
        return v

    def to_dict(self) -> dict:
        c = self.cost
        return {"mapping": str(self.mapping), "latency_s": self.latency_s,
                "offchip_bytes": self.offchip_bytes, "energy_j": self.energy_j, "edp": self.edp,
                "xslowdown": self.xslowdown, "utilization": c.utilization,
                "compute_s": c.compute_s, "transfer_s": c.transfer_s, "footprint": c.footprint,
                "reads": c.reads, "writes": c.writes, "ratio": c.ratio,
                "cost": _finite({f.name: getattr(c, f.name) for f in fields(c)})}

    @classmethod
    def from_dict(cls, data: dict, workload, arch) -> "Solution":
        """Inverse of :meth:`to_dict` (the mapping parsed, the Cost rebuilt from ``"cost"``,
        or re-evaluated when a dict lacks it)."""
        mapping = Mapping.parse(data["mapping"])
        if "cost" in data:
            cost = Cost(**_infinite(data["cost"]))
        else:
            from ..model.cost import evaluate

            cost = evaluate(workload, arch, mapping)
        return cls(mapping, cost, data["latency_s"], data["offchip_bytes"], data["energy_j"],
                   data["edp"], data["xslowdown"])


def _finite(value):
    """JSON-safe: an unbounded capacity or an infinite ratio (inf) becomes the string "inf"
    (None stays None: a Cost without energy numbers)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return "inf" if isinstance(value, float) and math.isinf(value) else value


def _infinite(value):
    """Inverse of :func:`_finite`."""
    if isinstance(value, dict):
        return {k: _infinite(v) for k, v in value.items()}
    return math.inf if value == "inf" else value


@dataclass
class Result:
    """Solutions in rank order (:class:`tilewise.search.pool.Ranking`): by the objective,
    objectives within ``tolerance`` (relative) of the optimum tied and ranked by the secondary
    keys ``then``; ties then by larger innermost tile, higher 𝔽."""

    workload: object
    arch: object
    objective: str
    top: list[Solution]
    min_time_s: float
    stats: dict
    _front: Callable[[str, str], list[Solution]] = field(repr=False, default=None)
    _fronts: dict = field(default_factory=dict, repr=False)
    cached: bool = False
    """True when :func:`tilewise.search_many` took this result from its solution store."""
    then: tuple = ()
    tolerance: float = 0.0

    @property
    def best(self) -> Solution:
        return self.top[0]

    def pareto(self, x: str = "traffic", y: str = "latency") -> list[Solution]:
        """The exact Pareto front of the whole space for metrics ``x`` and ``y`` (both
        minimized, but "ratio" 𝔽 maximized), sorted by ``x`` (best first). Computed on first
        use by a full pass over the space."""

        for m in (x, y):
            if m not in METRICS:
                raise TilewiseError(f"pareto metric {m!r} unknown; valid: {', '.join(METRICS)}")
        if x == y:
            raise TilewiseError(f"pareto needs two different metrics, got {x!r} twice")
        if self._front is None:
            raise TilewiseError("this result was read back without its search space: run "
                                "tilewise.search to get its Pareto front")
        if (x, y) not in self._fronts:
            self._fronts[(x, y)] = self._front(x, y)
        return self._fronts[(x, y)]

    def to_dict(self) -> dict:
        """Plain JSON-able data: workload text, arch name, objective, min_time_s, the ranked
        solutions (each with its full cost) and the stats."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        return json.dumps({
            "workload": str(self.workload), "arch": self.arch.name, "objective": self.objective,
            "then": list(self.then), "tolerance": self.tolerance, "min_time_s": self.min_time_s,
            "top": [s.to_dict() for s in self.top],
            "stats": {k: v for k, v in self.stats.items() if k != "smallest"},
        }, default=float)

    @classmethod
    def from_json(cls, text: str | dict, workload, arch, front=None,
                  cached: bool = False) -> "Result":
        """Inverse of :meth:`to_json` for the ``workload`` and ``arch`` it answers; ``front(x,
        y)`` computes a Pareto front on demand (None: :meth:`pareto` is unavailable)."""
        try:
            data = json.loads(text) if isinstance(text, str) else text
            top = [Solution.from_dict(s, workload, arch) for s in data["top"]]
            return cls(workload, arch, data["objective"], top, data["min_time_s"], data["stats"],
                       front, cached=cached, then=tuple(data.get("then", ())),
                       tolerance=data.get("tolerance", 0.0))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            if isinstance(e, TilewiseError):
                raise
            raise TilewiseError(f"not a search Result's JSON ({type(e).__name__}: {e}); expected "
                                "the output of Result.to_json") from None
