"""Arch sweeps: --vary parsing and its rules, each point's optimum equal to tilewise.search on
that arch, the Pareto fronts, infeasible points, the store, the CLI and plot, and a 24-point
sweep of a model on a local Ray cluster."""

from __future__ import annotations

import json

import pytest

import tilewise as tw
from tilewise.arch.loader import arch_to_dict, load_arch
from tilewise.cli import main
from tilewise.errors import ParseError, SpecError, TilewiseError
from tilewise.network.sweep import sweep
from tilewise.network.vary import Vary, parse_vary, point_arch

WORKLOADS = [tw.gemm(32, 16, 64), tw.conv2d(1, 8, 6, 6, 8, 3, 3, padding=1)]


def test_parse_vary():
    assert parse_vary("array=4x4, 4x8") == Vary("array", ("4x4", "4x8"))
    with pytest.raises(ParseError, match="KEY=V1,V2"):
        parse_vary("levels.memtile.capacity")
    with pytest.raises(ParseError, match="none empty"):
        parse_vary("compute.clock=1GHz,")


def test_point_rules_keep_the_arch_valid():
    npu1 = arch_to_dict(load_arch("npu1"))
    a = point_arch(npu1, (("levels.memtile.capacity", "1MiB"), ("array", "4x8")))
    mem, core = a.level("memtile"), a.level("core")
    assert (mem.capacity_bytes, mem.banks, mem.bank_bytes) == (2**20, 32, 32 * 1024)  # bank size kept
    assert (a.array.rows, a.array.cols, core.instances, mem.instances) == (4, 8, 32, 8)
    assert a.name == "npu1 levels.memtile.capacity=1MiB array=4x8"
    b = point_arch(npu1, (("compute.clock", "2GHz"), ("levels.core.bandwidth", "8 B/cycle")))
    assert b.compute.clock_hz == 2e9 and b.level("core").read_bandwidth == 16e9
    with pytest.raises(SpecError, match="no level 'l2'; levels: ddr, memtile, core"):
        point_arch(npu1, (("levels.l2.capacity", "1MiB"),))
    with pytest.raises(SpecError, match="expected ROWSxCOLS"):
        point_arch(npu1, (("array", "4by8"),))
    with pytest.raises(SpecError, match="levels\\[2\\].banks: capacity 4096 B is not divisible"):
        point_arch(arch_to_dict(load_arch("aie-4x2")), (("levels.core.capacity", "4KiB"),))


def test_each_point_is_the_exact_optimum_and_fronts_are_non_dominated(tmp_path):
    db = str(tmp_path / "s.sqlite")
    varies = ["levels.core.capacity=16KiB,48KiB", "array=4x2,2x2,1x2"]
    s = sweep(WORKLOADS, "aie-4x2", varies, store=db, workers=1)
    assert len(s.points) == 6 and 2 * sum(p.feasible for p in s.points) <= s.searched < 12
    for p in s.points:
        if not p.feasible:
            assert "CapacityError" in p.error and p.latency_s is None
            continue
        want = sum(tw.search(w, p.arch, top=1).best.latency_s for w in WORKLOADS)
        assert p.latency_s == pytest.approx(want, rel=1e-12)
    assert any(not p.feasible for p in s.points)
    for x in ("on_chip_bytes", "cores"):
        front = s.front(x)
        ok = [p for p in s.points if p.feasible]
        for p in ok:  # every feasible point is on the front or dominated by a front point
            assert p in front or any(getattr(f, x) <= getattr(p, x) and f.latency_s <= p.latency_s
                                     for f in front)
        for f in front:  # no front point is strictly dominated
            assert not any(getattr(p, x) <= getattr(f, x) and p.latency_s < f.latency_s
                           and getattr(p, x) < getattr(f, x) for p in ok)
    again = sweep(WORKLOADS, "aie-4x2", varies, store=db, workers=1)
    assert again.searched == 0 and [p.latency_s for p in again.points] == \
        [p.latency_s for p in s.points]
    with pytest.raises(TilewiseError, match="at least one --vary"):
        sweep(WORKLOADS, "aie-4x2", [])


def test_sweep_cli_table_plot_and_json(tmp_path, capsys):
    problems = tmp_path / "p.yaml"
    problems.write_text("arch: aie-4x2\nproblems:\n  - gemm: {m: 32, n: 16, k: 64}\n"
                        "  - conv2d: {c: 8, h: 6, w: 6, k: 8, padding: 1}\n")
    png, db = tmp_path / "s.png", str(tmp_path / "s.sqlite")
    args = ["sweep", str(problems), "--vary", "levels.core.capacity=16KiB,48KiB", "--vary",
            "array=4x2,2x2", "--store", db, "--workers", "2"]
    assert main(args + ["--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "sweep of aie-4x2: 4 points x 2 workloads" in out and "infeasible" in out
    assert "Pareto front, latency vs on-chip bytes (B):" in out and png.stat().st_size > 10_000
    assert main(args + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["searched"] == 0 and len(data["points"]) == 4 and data["fronts"]["cores"]
    assert main(["sweep", str(problems), "--vary", "levels.l9.capacity=1MiB"]) == 2


def test_a_24_point_sweep_of_a_model_on_local_ray(tmp_path):
    ray = pytest.importorskip("ray")
    pytest.importorskip("onnx")
    from onnx import helper

    from ..importers.graphs import F32, model, save

    nodes = [helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Flatten", ["Y"], ["F"], name="flat"),
             helper.make_node("MatMul", ["F", "M"], ["Z"], name="fc")]
    path = save(model(nodes, [("X", F32, [1, 8, 4, 4]), ("W", F32, [8, 8, 3, 3]),
                              ("M", F32, [128, 16])], [("Z", F32, None)]), tmp_path)
    varies = ["levels.memtile.capacity=64KiB,256KiB,512KiB", "array=4x2,2x2,1x2,1x1",
              "compute.clock=1GHz,2GHz"]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        s = sweep(path, "aie-4x2", varies, dtype="i8", store=str(tmp_path / "s.sqlite"),
                  engine="ray")
    finally:
        ray.shutdown()
    assert len(s.points) == 24 and all(p.feasible for p in s.points)
    assert s.searched == 48
    fastest = min(s.points, key=lambda p: p.latency_s)
    assert dict(fastest.settings)["compute.clock"] == "2GHz"
    assert s.front("cores")[0].cores == 1  # the fewest cores is always on the front
