"""Ties and tolerances: the search's top-k under (objective, secondary keys, tolerance band)
equals brute force over the unpruned space; the space and ratio objectives; the statistics."""

import json
import math

import numpy as np
import pytest

import tilewise as tw
from tilewise.cli import main
from tilewise.errors import TilewiseError
from tilewise.search.optimize import parse_tolerance, search

from .helpers import brute_force, small_aie

GET = {"latency": lambda c: c.latency_s, "traffic": lambda c: float(c.offchip_bytes),
       "energy": lambda c: c.energy_j, "edp": lambda c: c.energy_j * c.latency_s,
       "space": lambda c: float(sum(list(c.footprint.values())[1:])),
       "ratio": lambda c: 1.0 / min(c.ratio.values())}


def _r(x):
    """Round away the last bits: the search ranks by its own compiled numbers, brute force by
    evaluate's (equal up to rounding)."""
    return float(f"{x:.11g}")


def expected_keys(brute, objective, then, tol):
    """The rank keys (without the mapping's identity) of every brute-force mapping, sorted:
    the band ``f <= (1 + tol) f*`` first by (then..., f), the rest by (f, then...); then larger
    innermost tile, higher 𝔽. Written from the definition, independently of the search."""
    f = [GET[objective](c) for _, _, c in brute]
    fstar = min(f)
    keys = []
    for (_, m, c), fv in zip(brute, f):
        g = tuple(_r(GET[k](c)) for k in then)
        band = fv <= (1 + tol) * fstar
        head = (0,) + g + (_r(fv),) if band else (1, _r(fv)) + g
        vol = math.prod(t for _, t in m.levels[-1].tiles)
        keys.append(head + (-vol, -_r(min(c.ratio.values()))))
    return sorted(keys)


def search_keys(r, objective, then, tol):
    f = [GET[objective](s.cost) for s in r.top]
    fstar = min(f)  # the search's best is the optimum (checked against brute force)
    out = []
    for s, fv in zip(r.top, f):
        g = tuple(_r(GET[k](s.cost)) for k in then)
        band = fv <= (1 + tol) * fstar
        head = (0,) + g + (_r(fv),) if band else (1, _r(fv)) + g
        vol = math.prod(t for _, t in s.mapping.levels[-1].tiles)
        out.append(head + (-vol, -_r(min(s.cost.ratio.values()))))
    return out


def assert_same_top(got, want, top):
    """The search's keys are the first of brute force's: sorted, the best equal, and its
    distinct keys the first distinct ones (brute force also lists loop orders the search drops
    as provably equivalent, with equal keys)."""
    assert got == sorted(got)
    assert got[0] == want[0]
    distinct = sorted(set(want))
    assert sorted(set(got)) == distinct[:len(set(got))]
    assert len(got) == min(top, len(want))


ENERGY_ARCH = small_aie(rows=2, cols=1, memtile=False, energy=True)
CASES = [
    (tw.gemm(16, 8, 32), small_aie(rows=2, cols=1, memtile=False), {"orders": ["mnk", "kmn"]}),
    (tw.gemm(24, 16, 20, dtype="i16"), small_aie(rows=1, cols=2, alignment={"m": 8, "n": 8}, memtile=False),
     {"double_buffer": "none"}),
    (tw.gemm(32, 16, 16), ENERGY_ARCH, {"double_buffer": "none", "spatial": ["none", "rows=m2"]}),
    (tw.gemm(16, 8, 32), small_aie(rows=2, cols=1, energy=True),
     {"double_buffer": "none", "tiles": {"memtile": {"n": 8, "k": 16}}, "orders": ["mnk", "kmn"]}),
]
QUESTIONS = [
    ("traffic", None, 0.0), ("traffic", ("latency",), 0.0), ("traffic", ("space", "latency"), 0.0),
    ("latency", None, 0.0), ("latency", ("traffic",), 0.05), ("latency", ("space", "traffic"), 0.2),
    ("traffic", ("latency",), 0.5), ("space", None, 0.0), ("ratio", None, 0.0),
    ("ratio", ("traffic",), 0.1), ("space", ("latency",), 1.0),
]


def _default_then(objective, arch):
    has_energy = arch.compute.energy_pj_per_mac is not None
    return tuple(k for k in ("latency", "energy", "traffic")
                 if k != objective and (k != "energy" or has_energy))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].name if hasattr(c[0], "name") else "")
def test_lexicographic_top_k_with_tolerance_equals_brute_force(case):
    w, arch, cons = case
    brute = brute_force(w, arch, lambda c: 0, **cons)
    questions = QUESTIONS + ([("energy", None, 0.0), ("energy", ("latency",), 0.1),
                              ("traffic", ("energy", "latency"), 0.0)]
                             if arch.compute.energy_pj_per_mac is not None else [])
    for objective, then, tol in questions:
        r = search(w, arch, objective, top=5, then=then, tolerance=tol, **cons)
        keys = then if then is not None else _default_then(objective, arch)
        assert r.then == keys and r.tolerance == tol
        want = expected_keys(brute, objective, keys, tol)
        got = search_keys(r, objective, keys, tol)
        assert_same_top(got, want, 5), (objective, then, tol)
        s = r.stats
        assert s["ranked"] >= 0 and s["pruned_candidates"] >= 0
        assert s["candidates"] == s["ranked"] + s["pruned_candidates"]


def test_many_threshold_passes_keep_the_lexicographic_top_k(monkeypatch):
    """Tiny thresholds: many passes, each resuming from deferred nodes and partial orders
    (whose bounds carry every key): the same keys as brute force, nothing twice, the ranked
    count consistent."""
    from tilewise.search import walk

    monkeypatch.setattr(walk, "_THETA0", 1e-9)
    monkeypatch.setattr(walk, "_THETA_GROWTH", 1.2)
    w, arch, cons = CASES[2]
    brute = brute_force(w, arch, lambda c: 0, **cons)
    passes = []
    for objective, then, tol in [("latency", ("traffic",), 0.05), ("traffic", ("latency",), 0.0),
                                 ("energy", None, 0.02), ("latency", None, 0.0)]:
        r = search(w, arch, objective, top=6, then=then, tolerance=tol, **cons)
        keys = r.then
        assert_same_top(search_keys(r, objective, keys, tol), expected_keys(brute, objective, keys, tol), 6)
        texts = [str(s.mapping) for s in r.top]
        assert len(set(texts)) == len(texts)
        s = r.stats
        passes.append(s["passes"])
        assert s["candidates"] == s["ranked"] + s["pruned_candidates"] and s["ranked"] >= 0
    assert max(passes) > 1, passes


def test_ties_in_latency_break_by_energy_then_traffic_by_default():
    w, arch, cons = CASES[2]
    r = search(w, arch, top=8, **cons)
    assert r.then == ("energy", "traffic")
    lat = [s.latency_s for s in r.top]
    for a, b in zip(r.top, r.top[1:]):
        if a.latency_s == b.latency_s:
            assert (a.energy_j, a.offchip_bytes) <= (b.energy_j, b.offchip_bytes)
    assert lat == sorted(lat)
    # no energy numbers: energy is skipped
    assert search(*CASES[0][:2], top=1, **CASES[0][2]).then == ("traffic",)


def test_space_and_ratio_objectives_and_pareto_axes_equal_brute_force():
    w, arch, cons = CASES[1]
    brute = brute_force(w, arch, lambda c: 0, **cons)
    r = search(w, arch, "space", top=1, **cons)
    assert r.best.space_bytes == min(GET["space"](c) for _, _, c in brute)
    r = search(w, arch, "ratio", top=1, **cons)
    assert r.best.ratio == pytest.approx(max(min(c.ratio.values()) for _, _, c in brute), rel=1e-12)
    assert r.best.metric("ratio") == r.best.ratio and r.best.metric("space") == r.best.space_bytes
    for x, y in [("space", "latency"), ("traffic", "ratio"), ("ratio", "space")]:
        pts = sorted({(_r(GET[x](c)), _r(GET[y](c))) for _, _, c in brute})
        front, best_y = [], np.inf
        for px, py in pts:
            if py < best_y:
                front.append((px, py))
                best_y = py
        got = [(_r(GET[x](s.cost)), _r(GET[y](s.cost))) for s in r.pareto(x, y)]
        assert got == front, (x, y)


def test_the_stats_line_ranked_count_is_never_negative(capsys):
    assert main(["search", "gemm", "--m", "64", "--n", "96", "--k", "80", "--arch", "aie-4x2",
                 "--objective", "traffic", "--top", "2", "--then", "latency", "--tolerance", "1%"]) == 0
    out = capsys.readouterr().out
    ranked = int(out.split("(ranked ")[1].split(",")[0].replace(",", "").split()[0])
    assert ranked >= 0 and "by traffic, latency (within 0.01 tied)" in out


@pytest.mark.parametrize("objective, header", [
    (["--objective", "ratio"], "𝔽"), (["--objective", "traffic"], "off-chip B"),
    (["--objective", "space"], "on-chip B"), (["--objective", "energy"], "energy µJ"),
    (["--objective", "edp"], "EDP J·s"),
    (["--custom", "latency * traffic", "--monotone"], "latency * traffic"),
    (["--objective", "latency"], None)])
def test_the_table_shows_the_value_ranked_by(objective, header, capsys):
    # the objective's own column beside the time (latency has the time column itself),
    # each row's value the same as the solution's, computed independently here
    args = ["search", "gemm", "--m", "64", "--n", "96", "--k", "80", "--arch", "aie-4x2",
            "--top", "2", "--json"]
    assert main(args + objective) == 0
    top = json.loads(capsys.readouterr().out)["top"]
    assert main(args[:-1] + objective + ["--wide"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = [c.strip() for c in lines[2].split("┃")[1:-1]]
    assert (header in head) == (header is not None) and "time µs" in head
    if header is None:
        return
    col = head.index(header)
    assert col == head.index("time µs") + 1
    cells = [[c.strip() for c in line.split("│")[1:-1]][col] for line in lines[4:6]]
    for cell, sol in zip(cells, top):
        ratio = min(v for v in sol["ratio"].values())
        want = {"𝔽": f"{ratio:.4f}", "off-chip B": f"{sol['offchip_bytes']:,}",
                "on-chip B": f"{sum(list(sol['footprint'].values())[1:]):,}",
                "energy µJ": f"{(sol['energy_j'] or 0) * 1e6:,.3f}",
                "EDP J·s": f"{(sol['edp'] or 0):.4g}",
                "latency * traffic": f"{sol['latency_s'] * sol['offchip_bytes']:.4g}"}[header]
        assert cell == want


@pytest.mark.parametrize("text, value", [("0.5%", 0.005), ("0.005", 0.005), ("0", 0.0), (0.02, 0.02),
                                         (" 2 % ", 0.02)])
def test_tolerance_accepts_fractions_and_percentages(text, value):
    assert parse_tolerance(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["abc", "-1%", "nan", "1e400"])
def test_bad_tolerance_and_then_are_one_clear_error_line(bad, capsys):
    args = ["search", "gemm", "--m", "64", "--n", "64", "--k", "64", "--arch", "aie-4x2"]
    assert main(args + ["--tolerance", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: tolerance {bad!r} is not valid: give a relative tolerance >= 0 as a "
                   "fraction (0.005) or a percentage (0.5%)")
    assert main(args + ["--then", "traffic,speed"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: secondary key 'speed' unknown; valid: latency, traffic") and "\n" not in err
    with pytest.raises(TilewiseError, match="tolerance -0.1 is not valid"):
        search(tw.gemm(16, 16, 16), small_aie(), tolerance=-0.1)
