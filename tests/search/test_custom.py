"""Custom objectives: exact when stated monotone (brute force over the unpruned space), the
best of the closest objective's top otherwise (and said so); the expression language refuses
anything but metrics, numbers, arithmetic and a few functions."""

import math

import numpy as np
import pytest

import tilewise as tw
from tilewise.cli import main
from tilewise.errors import TilewiseError
from tilewise.search.custom import Custom, Metrics, expression
from tilewise.search.optimize import search

from .helpers import brute_force, small_aie

CASES = [
    (tw.gemm(32, 16, 16), small_aie(energy=True, memtile=False)),
    (tw.gemm(16, 8, 32, dtype="i16"), small_aie(energy=True, memtile=False)),
]
CONS = {"double_buffer": "none", "spatial": ["none", "rows=m2", "cols=n2"]}


def metrics(c) -> Metrics:
    return Metrics(c.latency_s, float(c.offchip_bytes), c.energy_j,
                   float(sum(list(c.footprint.values())[1:])), 1.0 / min(c.ratio.values()))


FUNCTIONS = {
    "latency + energy": lambda m: m.latency * 1e3 + m.energy * 1e6,
    "max(latency, traffic)": lambda m: np.maximum(m.latency * 1e9, m.traffic),
    "latency^2 * space": lambda m: m.latency ** 2 * m.space,
}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_monotone_custom_objective_equals_brute_force(case):
    w, arch = CASES[case]
    brute = [c for _, _, c in brute_force(w, arch, lambda c: 0.0, **CONS)]
    for name, fn in FUNCTIONS.items():
        r = search(w, arch, objective=Custom(fn, monotone=True, name=name), top=1, **CONS)
        assert r.stats["proven_optimal"]
        best = min(float(fn(metrics(c))) for c in brute)
        assert float(fn(metrics(r.best.cost))) == pytest.approx(best, rel=1e-9), name


def test_monotone_expression_is_edp():
    w, arch = CASES[0]
    a = search(w, arch, objective="latency * energy", monotone=True, top=1, **CONS | {"spatial": "any"})
    b = search(w, arch, objective="edp", top=1, spatial="any", double_buffer="none")
    assert a.best.edp == pytest.approx(b.best.edp, rel=1e-12) and a.objective == "latency * energy"


def test_not_monotone_is_the_closest_objectives_top_ranked_and_flagged():
    w, arch = CASES[0]
    fn = lambda m: -m.traffic + m.latency * 1e9  # rewards traffic: not monotone
    r = search(w, arch, objective=Custom(fn, closest="latency", pool=30), top=3,
               double_buffer="none")
    assert not r.stats["proven_optimal"]
    lat = search(w, arch, top=30, double_buffer="none")
    want = sorted(float(fn(metrics(s.cost))) for s in lat.top)[:3]
    assert [float(fn(metrics(s.cost))) for s in r.top] == pytest.approx(want, rel=1e-12)


def test_scalar_only_function_is_applied_entry_by_entry():
    w, arch = CASES[0]
    fn = lambda m: math.sqrt(m.latency) * float(m.energy)  # math.* refuses arrays of size > 1
    r = search(w, arch, objective=fn, monotone=True, top=1, double_buffer="none")
    b = search(w, arch, objective="edp", top=1, double_buffer="none")
    assert r.best.edp == pytest.approx(b.best.edp, rel=1e-12)


@pytest.mark.parametrize("text", ["__import__('os')", "latency.real", "lat", "latency[0]",
                                  "open('x')", "lambda: 1", "latency if 1 else 2", "True * latency",
                                  "max()", "1 +", "min(latency, key=1)"])
def test_expression_refuses_everything_else(text):
    with pytest.raises(TilewiseError, match="objective"):
        expression(text)(Metrics(1.0, 1.0, 1.0, 1.0, 1.0))


def test_expression_values():
    m = Metrics(2.0, 3.0, 5.0, 7.0, 0.5)
    assert expression("latency * energy ** 0.5 + max(traffic, space, 1) - -ratio")(m) == pytest.approx(
        2 * 5 ** 0.5 + 7 + 0.5)
    assert expression("log(exp(latency)) / sqrt(4)")(m) == pytest.approx(1.0)


def test_energy_expression_without_energy_numbers_is_refused():
    w = tw.gemm(32, 16, 16)
    with pytest.raises(TilewiseError, match="gives no energy numbers"):
        search(w, small_aie(memtile=False), objective="latency * energy", monotone=True)


def test_cli_custom(capsys):
    args = ["search", "gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "i8", "--top", "1"]
    assert main(args + ["--custom", "latency * energy", "--monotone"]) == 0
    assert "by latency * energy" in capsys.readouterr().out
    assert main(args + ["--custom", "latency + 0 * traffic"]) == 0
    assert "not proven optimal" in capsys.readouterr().out
    assert main(args + ["--custom", "latency + foo"]) == 2
    assert "'foo' is not allowed" in capsys.readouterr().err
    assert main(args + ["--objective", "energy", "--monotone"]) == 2
