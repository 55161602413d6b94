"""search_model / tilewise search-model: per-layer answers equal tilewise.search, identical
layers share one search, totals are sums, the store makes a rerun free."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

import tilewise as tw  # noqa: E402
from tilewise.cli import main  # noqa: E402
from tilewise.errors import CapacityError, ModelError  # noqa: E402
from tilewise.network import model_search  # noqa: E402
from tilewise.network.model_search import search_model  # noqa: E402

from ..importers.graphs import F32, model, save  # noqa: E402


def tiny_net(tmp_path) -> str:
    """conv -> relu -> conv -> relu -> conv (the same as the second) -> flatten -> two GEMMs;
    8x8 images: i8 rows of whole 4-byte words, which the AIE DMAs can program (6x6 cannot)."""
    n = helper.make_node
    nodes = [n("Conv", ["X", "W1"], ["Y1"], name="c1", pads=[1, 1, 1, 1]),
             n("Relu", ["Y1"], ["Z1"], name="r1"),
             n("Conv", ["Z1", "W2"], ["Y2"], name="c2", pads=[1, 1, 1, 1]),
             n("Relu", ["Y2"], ["Z2"], name="r2"),
             n("Conv", ["Z2", "W2"], ["Y3"], name="c3", pads=[1, 1, 1, 1]),
             n("Flatten", ["Y3"], ["F"], name="flat"),
             n("MatMul", ["F", "M1"], ["G"], name="fc1"),
             n("MatMul", ["G", "M2"], ["H"], name="fc2")]
    m = model(nodes, [("X", F32, [1, 8, 8, 8]), ("W1", F32, [16, 8, 3, 3]),
                      ("W2", F32, [16, 16, 3, 3]), ("M1", F32, [1024, 32]), ("M2", F32, [32, 16])],
              [("H", F32, None)])
    return save(m, tmp_path, "tiny.onnx")


def test_layers_equal_search_and_identical_layers_share(tmp_path):
    db = str(tmp_path / "s.sqlite")
    net = search_model(tiny_net(tmp_path), "aie-4x2", dtype="i8", store=db, workers=1)
    assert [lc.layer.name for lc in net.layers] == ["c1", "c2", "c3", "fc1"]
    assert net.distinct == 3 and net.searched == 3
    for lc in net.layers:
        want = tw.search(lc.layer.workload, "aie-4x2", top=1)
        assert lc.latency_s == want.best.latency_s and lc.offchip_bytes == want.best.offchip_bytes
    assert net.layers[1].results[0] is net.layers[2].results[0]  # one search for c2 and c3
    assert net.layers[3].layer.op == "chain" and net.layers[3].fused
    assert net.latency_s == pytest.approx(sum(lc.latency_s for lc in net.layers))
    assert sum(net.share(lc) for lc in net.layers) == pytest.approx(1.0)
    again = search_model(tiny_net(tmp_path), "aie-4x2", dtype="i8", store=db, workers=1)
    assert again.searched == 0 and all(lc.cached for lc in again.layers)
    assert again.latency_s == net.latency_s


def test_a_chain_that_cannot_stay_on_chip_is_split(tmp_path, monkeypatch):
    real = model_search.search_many

    def no_fused_chain(problems, *a, **k):
        if any(w.name == "gemm_chain" for w in problems):
            raise CapacityError("the intermediate does not fit")
        return real(problems, *a, **k)

    monkeypatch.setattr(model_search, "search_many", no_fused_chain)
    net = search_model(tiny_net(tmp_path), "aie-4x2", dtype="i8", workers=1)
    fc = net.layers[3]
    assert not fc.fused and len(fc.results) == 2
    assert fc.latency_s == sum(tw.search(w, "aie-4x2", top=1).best.latency_s
                               for w in fc.layer.unfused)


def test_dtype_the_arch_cannot_compute_is_one_line(tmp_path):
    with pytest.raises(ModelError, match=r"arch 'aie-4x2' computes i16, i32, i8, not f32 "
                                         r"\(4 layers, e.g. 'c1'\); .* e.g. --dtype i8"):
        search_model(tiny_net(tmp_path), "aie-4x2")


def test_search_model_cli_table_and_json(tmp_path, capsys):
    path, db = tiny_net(tmp_path), str(tmp_path / "s.sqlite")
    args = ["search-model", path, "--arch", "aie-4x2", "--dtype", "i8", "--store", db,
            "--workers", "2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "4 layers, 3 distinct workloads: 3 searched, 0 from the store" in out
    assert "total: latency" in out and "skipped Relu x2: elementwise" in out
    assert main(args + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["searched"] == 0 and len(data["layers"]) == 4
    assert data["totals"]["latency_s"] == pytest.approx(sum(x["latency_s"] for x in data["layers"]))
    assert data["skipped"] == {"Relu": 2, "Flatten": 1}
