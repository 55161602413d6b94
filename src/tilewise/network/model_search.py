"""``search_model``: the best mapping of every tileable layer of a network on one arch.

The model is imported (:func:`tilewise.importers.onnx.import_onnx`); identical workloads are
searched once (:func:`tilewise.search_many`, with its solution store and engines) and share
the answer. A fused GEMM chain whose intermediate cannot stay on chip (no mapping fits) falls
back to its two GEMMs. Layers run one after another, so the network's latency, off-chip
traffic and energy are the sums over layers::

    >>> net = search_model("examples/models/resnet18.onnx", "npu1", dtype="bf16",
    ...                    store="solutions.sqlite")
    >>> net.latency_s, net.layers[0].latency_s / net.latency_s   # seconds, share of layer 0
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import CapacityError, ModelError
from ..search.many import search_many


@dataclass(frozen=True)
class LayerCost:
    """One layer's answer: the search result of its workload (or of each GEMM of a chain that
    had to be split: ``fused`` False). Seconds, bytes, joules."""

    layer: object
    results: tuple
    fused: bool = True

    @property
    def latency_s(self) -> float:
        return sum(r.best.latency_s for r in self.results)

    @property
    def offchip_bytes(self) -> int:
        return sum(r.best.offchip_bytes for r in self.results)

    @property
    def energy_j(self) -> float | None:
        e = [r.best.energy_j for r in self.results]
        return None if None in e else sum(e)

    @property
    def min_time_s(self) -> float:
        """The compute-bound minimum of the layer (seconds)."""
        return sum(r.min_time_s for r in self.results)

    @property
    def cached(self) -> bool:
        return all(r.cached for r in self.results)


@dataclass(frozen=True)
class NetworkResult:
    """Every layer's cost in graph order, with totals. ``distinct``: distinct workloads;
    ``searched``: those searched in this run (the rest came from the store)."""

    model: object
    arch: object
    objective: str
    layers: tuple[LayerCost, ...]
    distinct: int
    searched: int
    seconds: float

    @property
    def latency_s(self) -> float:
        return sum(lc.latency_s for lc in self.layers)

    @property
    def offchip_bytes(self) -> int:
        return sum(lc.offchip_bytes for lc in self.layers)

    @property
    def energy_j(self) -> float | None:
        e = [lc.energy_j for lc in self.layers]
        return None if None in e else sum(e)

    def share(self, lc: LayerCost) -> float:
        """``lc``'s share of the network latency (0..1)."""
        total = self.latency_s
        return lc.latency_s / total if total else 0.0

    def to_dict(self) -> dict:
        """Plain JSON-able data: per layer and totals (seconds, bytes, joules)."""
        layers = [{"name": lc.layer.name, "op": lc.layer.op, "nodes": list(lc.layer.nodes),
                   "workload": str(lc.layer.workload), "fused": lc.fused,
                   "mappings": [str(r.best.mapping) for r in lc.results],
                   "latency_s": lc.latency_s, "share": self.share(lc),
                   "offchip_bytes": lc.offchip_bytes, "energy_j": lc.energy_j,
                   "min_time_s": lc.min_time_s, "cached": lc.cached} for lc in self.layers]
        return {"model": self.model.path, "arch": self.arch.name, "objective": self.objective,
                "layers": layers, "distinct": self.distinct, "searched": self.searched,
                "seconds": self.seconds, "skipped": {s.op: s.count for s in self.model.skipped},
                "totals": {"latency_s": self.latency_s, "offchip_bytes": self.offchip_bytes,
                           "energy_j": self.energy_j}}


def search_model(model, arch, objective: str = "latency", *, dims: dict | None = None,
                 dtype: str | None = None, store=None, workers: int | None = None,
                 engine: str = "processes", address: str | None = None, on_done=None,
                 **constraints) -> NetworkResult:
    """Search every layer of ``model`` (an ONNX path or an
    :class:`~tilewise.importers.onnx.ImportedModel`) on ``arch``; see the module doc.
    ``on_done(done, total)`` counts distinct workloads as they finish."""
    from ..arch.loader import load_arch
    from ..importers.onnx import ImportedModel, import_onnx

    t0 = time.perf_counter()
    imported = model if isinstance(model, ImportedModel) else import_onnx(model, dims, dtype)
    arch = load_arch(arch)
    check_dtypes(imported, arch)
    run = dict(store=store, workers=workers, engine=engine, address=address, **constraints)
    unique = {}  # workload key -> the first layer with that workload
    for layer in imported.layers:
        unique.setdefault(layer.workload.key, layer)
    total, done = len(unique), [0]

    def tick(*_):
        done[0] += 1
        if on_done:
            on_done(done[0], total)

    solved, split = _chains(unique, arch, objective, run, tick)
    singles = {k: x.workload for k, x in unique.items() if k not in solved and k not in split}
    for parts in split.values():
        singles.update({w.key: w for w in parts if w.key not in solved})
    keys = list(singles)
    answers = search_many([singles[k] for k in keys], arch, objective, top=1,
                          on_done=lambda i, r: tick(), **run)
    solved.update(zip(keys, answers))
    layers = tuple(
        LayerCost(layer, tuple(solved[w.key] for w in layer.unfused), False)
        if layer.workload.key in split else LayerCost(layer, (solved[layer.workload.key],))
        for layer in imported.layers)
    searched = sum(not r.cached for r in solved.values())
    return NetworkResult(imported, arch, objective, layers, len(unique), searched,
                         time.perf_counter() - t0)


def _chains(unique: dict, arch, objective: str, run: dict, tick) -> tuple[dict, dict]:
    """Search each fused chain alone: ``({key: Result}, {key: unfused parts})`` for the
    chains that fit and those whose intermediate cannot stay on chip."""
    solved, split = {}, {}
    for key, layer in unique.items():
        if not layer.unfused:
            continue
        try:
            (solved[key],) = search_many([layer.workload], arch, objective, top=1, **run)
            tick()
        except CapacityError:
            split[key] = layer.unfused
    return solved, split


def check_dtypes(model, arch) -> None:
    """ModelError naming the layers whose dtype the arch cannot compute, and ``--dtype``."""
    rates = set(arch.compute.macs_per_cycle) | set(arch.compute.vector_ops_per_cycle)
    bad: dict[str, list[str]] = {}
    for layer in model.layers:
        d = layer.workload.ops[0].dtype.name
        if d not in rates:
            bad.setdefault(d, []).append(layer.name)
    if bad:
        what = "; ".join(f"{d} ({len(ls)} layers, e.g. {ls[0]!r})" for d, ls in bad.items())
        pick = next((d for d in ("bf16", "f16", "f32", "i8", "i16") if d in rates), "")
        raise ModelError(f"arch {arch.name!r} computes {', '.join(sorted(rates))}, not {what}; "
                         "search float layers as another type with --dtype (Python: dtype=), "
                         f"e.g. --dtype {pick}")
