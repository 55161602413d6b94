"""Seed 003's worked solutions (benchmarks/seed_solutions.py) as tilewise mappings on
``aie-4x2``: each is costed by the model, simulated (the model equals the walk), executed
against the reference, and compared with the search's optimum, which never does worse.

Execution keeps each core tile and cuts the outer dims to at most two array tiles (the real
sizes take seconds in the Python walk). Softmax and normalization have no integer body
(quantization scales are not modelled), so attention and LayerNorm execute in bf16 with the
same tiles. Execution checks numerics, not capacity: seed mappings that do not fit in
tilewise's model (documented in docs/seed-cases.md) run on a copy of the arch with 4x larger
memories; ``evaluate`` reports ``fits`` for the real one."""

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import tilewise as tw
from tilewise.executor.interpreter import verify
from tilewise.mapping import LevelMapping, Mapping
from tilewise.model.legality import ways_of
from tilewise.model.rules import compute_bound_s
from tilewise.simulation.trace import simulate

_spec = importlib.util.spec_from_file_location(
    "seed_solutions", Path(__file__).parents[2] / "benchmarks" / "seed_solutions.py")
seed_solutions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seed_solutions)
CASES = seed_solutions.CASES

ARCH = tw.load_arch("aie-4x2")
# the constructor keyword of each dim, per constructor
_SIZE_ARGS = {"gemm": {"m": "M", "n": "N", "k": "K"},
              "mha": {"h": "heads", "m": "Lq", "n": "Lkv", "k": "d", "e": "dv"},
              "layernorm": {"r": "rows", "c": "cols"}}


def _scaled(case, dtype=None):
    """(workload, mapping): outer dims cut to at most two array tiles, core tiles kept."""
    kind, kwargs = case.make
    w = seed_solutions.workload(case)
    m = Mapping.parse(case.mapping)
    ways = ways_of(m)
    core = m.levels[-1].sizes
    size = {d: min(s, 2 * core[d] * ways.get(d, 1)) for d, s in w.sizes.items()}
    args = dict(kwargs, **{_SIZE_ARGS[kind][d]: s for d, s in size.items()})
    if dtype:
        args["dtype"] = dtype
    levels = [dataclasses.replace(lv, tiles=tuple((d, min(t, size[d])) for d, t in lv.tiles))
              for lv in m.levels]
    return getattr(tw, kind)(**args), dataclasses.replace(m, levels=tuple(levels))


def _roomy(arch, factor=4):
    """``arch`` with every bounded level ``factor`` x larger (execution checks numerics)."""
    levels = tuple(lv if lv.capacity_bytes is None else
                   dataclasses.replace(lv, capacity_bytes=lv.capacity_bytes * factor)
                   for lv in arch.levels)
    return dataclasses.replace(arch, levels=levels)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_seed_solution_costed_and_never_better_than_the_optimum(case):
    w = seed_solutions.workload(case)
    cost = tw.evaluate(w, ARCH, case.mapping, check_capacity=False)
    bound = compute_bound_s(w, ARCH)
    assert cost.latency_s >= bound
    best = tw.search(w, ARCH, top=1).best
    assert best.latency_s >= bound
    split = case.mapping.split(";")[1].strip()
    same = tw.search(w, ARCH, top=1, spatial=[split]).best  # the seed's split, named
    if cost.fits:  # in the space the search covers: the optimum is at least as fast
        assert same.latency_s <= cost.latency_s * (1 + 1e-12)
        if not (w.name == "mha" and "rows=n" in split):  # keys over cores: named only
            assert best.latency_s <= cost.latency_s * (1 + 1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_seed_solution_model_equals_simulation(case):
    w, m = _scaled(case)
    c, t = tw.evaluate(w, ARCH, m, check_capacity=False), simulate(w, ARCH, m)
    assert (c.reads, c.writes, c.reloads) == (t.reads, t.writes, t.reloads)
    assert (c.fills, c.drains, c.footprint) == (t.fills, t.drains, t.peak)
    assert (c.steps, c.padded_points, c.useful_points) == (t.steps, t.padded_points, t.useful_points)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_seed_solution_executes_to_the_reference(case):
    kind = case.make[0]
    w, m = _scaled(case, dtype="bf16" if kind in ("mha", "layernorm") else None)
    with np.errstate(invalid="raise", divide="raise"):
        report = verify(w, m, seed=7, arch=_roomy(ARCH))
    assert report.passed, f"{m}\n{report}"


def test_the_seed_attention_splits_keys_over_a_column_on_all_eight_cores():
    case = next(c for c in CASES if c.name.startswith("MHA i16"))
    m = Mapping.parse(case.mapping)
    assert (m.rows.dim, m.rows.ways, m.cols.dim, m.cols.ways) == ("n", 4, "m", 2)
    cost = tw.evaluate(seed_solutions.workload(case), ARCH, m)
    # per core: 512 / (32 x 2 columns) query tiles x 512 / (64 x 4 rows) key slices
    assert cost.fits and cost.steps["O"] == 8 * 2
