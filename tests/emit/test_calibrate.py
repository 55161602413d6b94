"""``tilewise arch calibrate``: least squares recovers the rates that produced the times."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

import tilewise as tw
from tilewise.emit.calibrate import Measurement, calibrate, fit, read_measurements, spearman
from tilewise.errors import SpecError, TilewiseError

ARCH = tw.load_arch(str(Path(__file__).with_name("cpu2.yaml")))
SHAPES = {"g1": tw.gemm(64, 96, 128, dtype="f32"), "g2": tw.gemm(96, 64, 64, dtype="f32"),
          "b1": tw.batched_gemm(4, 32, 48, 32, dtype="f32"), "g3": tw.gemm(48, 128, 96, dtype="f32")}


def truth():
    """cpu2 with a slower L2 and L1 link, a quarter of the f32 rate and 200 cycles a call."""
    levels = list(ARCH.levels)
    levels[1] = replace(levels[1], read_bandwidth=levels[1].read_bandwidth / 4,
                        write_bandwidth=levels[1].write_bandwidth / 4)
    levels[2] = replace(levels[2], read_bandwidth=levels[2].read_bandwidth / 2,
                        write_bandwidth=levels[2].write_bandwidth / 2)
    compute = replace(ARCH.compute, macs_per_cycle={"f32": 8, "i8": 128}, call_overhead_cycles=200.0)
    return replace(ARCH, levels=tuple(levels), compute=compute)


def runs() -> list[Measurement]:
    real = truth()
    out = []
    for label, w in SHAPES.items():
        mappings = {str(s.mapping): s.mapping for objective in ("latency", "traffic", "space")
                    for s in tw.search(w, ARCH, top=8, objective=objective).top}
        out += [Measurement(label, w, m, tw.evaluate(w, real, m).latency_s)
                for m in mappings.values()]
    return out


def test_fit_recovers_the_rates_and_ranks_held_out_shapes_exactly():
    result = calibrate(ARCH, runs())
    assert result.fit.compute["f32"] == pytest.approx(4, rel=1e-6)
    assert result.fit.links["l2"] == pytest.approx(4, rel=1e-6)
    assert result.fit.links["l1"] == pytest.approx(2, rel=1e-6)
    assert result.fit.call_cycles == pytest.approx(200, rel=1e-6)
    assert result.arch.compute.macs_per_cycle["f32"] == 8
    assert [r.shape for r in result.held_out] == ["g2", "g3"]
    for r in result.held_out:
        assert r.after == pytest.approx(1.0)


def test_spearman_and_too_few_shapes():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    one = [m for m in runs() if m.shape == "g1"]
    with pytest.raises(TilewiseError, match="at least 2 measured shapes"):
        calibrate(ARCH, one)
    assert fit(ARCH, one).links  # one shape still fits


def test_read_and_cli(tmp_path, capsys):
    from tilewise.cli import main
    from tilewise.executor.solution import workload_to_dict

    rs = runs()
    doc = {"shapes": [{"label": label, "spec": workload_to_dict(w),
                       "points": [{"mapping": str(m.mapping), "measured_s": m.measured_s, "passed": True}
                                  for m in rs if m.shape == label]
                       + [{"mapping": None, "measured_s": 1.0, "passed": True}]}
                      for label, w in SHAPES.items()]}
    path = tmp_path / "hardware.json"
    path.write_text(json.dumps(doc))
    assert len(read_measurements(path)) == len(rs)  # IREE's default (no mapping) left out
    out = tmp_path / "cal.yaml"
    assert main(["arch", "calibrate", str(path), "--arch", str(Path(__file__).with_name("cpu2.yaml")),
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "held-out shapes" in text and "macs_per_cycle f32: 8" in text
    assert tw.load_arch(str(out)).compute.call_overhead_cycles == pytest.approx(200, rel=1e-6)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SpecError, match="not a benchmarks/hardware.py result"):
        read_measurements(tmp_path / "bad.json")
