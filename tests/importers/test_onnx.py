"""ONNX import: each tileable op's workload, checked numerically against ONNX's reference
evaluator (onnx.reference) and PyTorch's own outputs shipped with ONNX's backend test models."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import tilewise as tw  # noqa: E402
from tilewise.cli import main  # noqa: E402
from tilewise.errors import ModelError  # noqa: E402
from tilewise.executor.reference import reference  # noqa: E402
from tilewise.importers.onnx import import_onnx  # noqa: E402

from .graphs import F32, I8, model, one, save  # noqa: E402

BACKEND = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "models")


def _check_against_onnx(m, tmp_path, data_inputs=(0, 1), seed=0):
    """Import the one-node model ``m``, run ONNX's reference evaluator and tilewise's reference
    on the same random inputs (reshaped to the workload's tensors), compare."""
    (layer,) = import_onnx(save(m, tmp_path)).layers
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    (want,) = ReferenceEvaluator(m).run(None, feeds)
    w = layer.workload
    names = [m.graph.node[0].input[i] for i in data_inputs]
    ins = {t.name: feeds[n].reshape(t.shape) for t, n in zip(w.ops[0].inputs, names)}
    (got,) = reference(w, ins).values()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-4)
    return layer


@pytest.mark.parametrize("attrs, x, w", [
    ({}, [1, 3, 9, 9], [4, 3, 3, 3]),
    ({"strides": [2, 1], "pads": [1, 0, 2, 1]}, [2, 4, 10, 9], [6, 4, 3, 2]),  # asymmetric pads
    ({"dilations": [2, 2], "pads": [2, 2, 2, 2]}, [1, 2, 9, 9], [3, 2, 3, 3]),
    ({"group": 3, "pads": [1, 1, 1, 1]}, [1, 6, 7, 7], [9, 2, 3, 3]),
    ({"group": 4}, [1, 4, 6, 6], [4, 1, 3, 3]),  # depthwise
    ({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, [1, 2, 8, 8], [3, 2, 4, 4]),
    ({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, [1, 2, 8, 8], [3, 2, 4, 4]),
    ({"auto_pad": "VALID"}, [1, 2, 7, 5], [3, 2, 3, 2]),
    ({"strides": [2], "pads": [1, 2]}, [2, 3, 11], [4, 3, 3]),  # 1-D
])
def test_conv_matches_onnx_reference(tmp_path, attrs, x, w):
    m = one("Conv", [("X", F32, x), ("W", F32, w)], [("Y", F32, None)], attrs)
    layer = _check_against_onnx(m, tmp_path)
    assert layer.op == "Conv" and layer.workload.name == "conv2d"
    if attrs.get("group", 1) > 1:
        assert layer.workload.sizes["g"] == attrs["group"]


@pytest.mark.parametrize("a, b, name", [
    ([5, 7], [7, 3], "gemm"),
    ([2, 4, 5, 7], [7, 3], "gemm"),          # batch flattened into rows
    ([2, 5, 7], [2, 7, 3], "batched_gemm"),
    ([5, 7], [4, 7, 3], "einsum"),           # A shared by every batch of B
    ([7], [7, 3], "gemm"),                    # 1-D A
])
def test_matmul_matches_onnx_reference(tmp_path, a, b, name):
    m = one("MatMul", [("A", F32, a), ("B", F32, b)], [("Y", F32, None)])
    assert _check_against_onnx(m, tmp_path).workload.name == name


@pytest.mark.parametrize("ta, tb", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_transposes_match_onnx_reference(tmp_path, ta, tb):
    a, b = ([7, 5] if ta else [5, 7]), ([3, 7] if tb else [7, 3])
    m = one("Gemm", [("A", F32, a), ("B", F32, b)], [("Y", F32, None)],
            {"transA": ta, "transB": tb})
    layer = _check_against_onnx(m, tmp_path)
    assert layer.workload.sizes == ({"m": 5, "n": 3, "k": 7} if not (ta or tb) else
                                    {"k": 7, "m": 5, "n": 3} if ta else {"m": 5, "k": 7, "n": 3})


@pytest.mark.parametrize("eq, shapes", [
    ("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
    ("...ij,jk", [[2, 3, 4], [4, 5]]),        # implicit output, ellipsis
    ("BiJ,BJk->Bki", [[2, 3, 4], [2, 4, 5]]),  # uppercase letters, transposed output
])
def test_einsum_matches_onnx_reference(tmp_path, eq, shapes):
    ins = [(n, F32, s) for n, s in zip("XY", shapes)]
    m = one("Einsum", ins, [("Z", F32, None)], {"equation": eq}, opset=17)
    assert _check_against_onnx(m, tmp_path).workload.name == "einsum"


def test_layernorm_axis_and_dtype_override(tmp_path):
    m = one("LayerNormalization", [("X", F32, [2, 3, 8]), ("S", F32, [3, 8])],
            [("Y", F32, None)], {"axis": -2, "epsilon": 1e-6})
    (layer,) = import_onnx(save(m, tmp_path), dtype="bf16").layers
    assert layer.workload == tw.layernorm(2, 24, dtype="bf16", eps=1e-6, out_dtype="bf16")


def test_quantized_ops_are_i8(tmp_path):
    s, z = ("s", F32, []), ("z", I8, [])
    qmm = one("QLinearMatMul", [("a", I8, [4, 8]), s, z, ("b", I8, [8, 6]),
                                ("bs", F32, []), ("bz", I8, []), ("ys", F32, []),
                                ("yz", I8, [])], [("y", I8, None)])
    (layer,) = import_onnx(save(qmm, tmp_path)).layers
    assert layer.workload == tw.gemm(4, 6, 8, dtype="i8", out_dtype="i8")
    mmi = one("MatMulInteger", [("a", TensorProto.UINT8, [4, 8]), ("b", I8, [8, 6])],
              [("y", TensorProto.INT32, None)])
    (layer,) = import_onnx(save(mmi, tmp_path, "i.onnx"), dtype="bf16").layers
    assert layer.workload == tw.gemm(4, 6, 8, dtype="i8", out_dtype="i32")
    qc = one("QLinearConv", [("x", I8, [1, 4, 6, 6]), s, z, ("w", I8, [8, 4, 3, 3]),
                             ("ws", F32, []), ("wz", I8, []), ("ys", F32, []), ("yz", I8, [])],
             [("y", I8, None)], {"pads": [1, 1, 1, 1]})
    (layer,) = import_onnx(save(qc, tmp_path, "c.onnx")).layers
    assert layer.workload == tw.conv2d(1, 4, 6, 6, 8, 3, 3, padding=1, dtype="i8", out_dtype="i8")


def _attention_graph(heads=2, L=8, d=4, scale=True, e=None):
    e = e or d
    nodes = [helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 1, 3, 2], name="kt"),
             helper.make_node("MatMul", ["Q", "Kt"], ["S"], name="qk")]
    last = "S"
    if scale:
        nodes.append(helper.make_node("Div", ["S", "c"], ["S2"], name="scale"))
        last = "S2"
    nodes += [helper.make_node("Softmax", [last], ["P"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["P", "V"], ["O"], name="pv")]
    c = numpy_helper.from_array(np.array(2.0, np.float32), "c")
    return model(nodes, [("Q", F32, [1, heads, L, d]), ("K", F32, [1, heads, L, d]),
                         ("V", F32, [1, heads, L, e])], [("O", F32, None)], initializers=[c])


def test_attention_pattern_becomes_one_mha(tmp_path):
    imp = import_onnx(save(_attention_graph(), tmp_path))
    (layer,) = imp.layers
    assert layer.op == "attention" and layer.workload == tw.mha(8, 8, 4, heads=2, dtype="f32",
                                                                out_dtype="f32")
    assert layer.nodes == ("qk", "scale", "softmax", "pv")
    assert [(s.op, s.count) for s in imp.skipped] == [("Transpose", 1)]
    # a value head dim other than the query's (seed 003's r != d): still one mha
    (layer,) = import_onnx(save(_attention_graph(e=6), tmp_path, "e.onnx")).layers
    assert layer.workload == tw.mha(8, 8, 4, heads=2, dtype="f32", out_dtype="f32", dv=6)


def test_onnx_attention_op(tmp_path):
    m = one("Attention", [("Q", F32, [2, 3, 8, 4]), ("K", F32, [2, 3, 10, 4]),
                          ("V", F32, [2, 3, 10, 4])], [("Y", F32, None)], opset=23)
    (layer,) = import_onnx(save(m, tmp_path)).layers
    assert layer.workload == tw.mha(8, 10, 4, heads=6, dtype="f32", out_dtype="f32")
    m = one("Attention", [("Q", F32, [2, 3, 8, 4]), ("K", F32, [2, 3, 10, 4]),
                          ("V", F32, [2, 3, 10, 6])], [("Y", F32, None)], opset=23)
    (layer,) = import_onnx(save(m, tmp_path, "dv.onnx")).layers
    assert layer.workload == tw.mha(8, 10, 4, heads=6, dtype="f32", out_dtype="f32", dv=6)


def test_two_gemms_in_a_row_become_a_chain(tmp_path):
    nodes = [helper.make_node("MatMul", ["A", "B"], ["C"], name="mm1"),
             helper.make_node("MatMul", ["C", "D"], ["E"], name="mm2")]
    m = model(nodes, [("A", F32, [16, 8]), ("B", F32, [8, 32]), ("D", F32, [32, 4])],
              [("E", F32, None)])
    (layer,) = import_onnx(save(m, tmp_path)).layers
    assert layer.op == "chain" and layer.workload == tw.gemm_chain(16, 8, 32, 4, dtype="f32",
                                                                   out_dtype="f32")
    assert layer.unfused == (tw.gemm(16, 32, 8, "f32", "f32"), tw.gemm(16, 4, 32, "f32", "f32"))
    # C also a graph output: not fused
    m.graph.output.append(helper.make_tensor_value_info("C", F32, [16, 32]))
    assert [x.op for x in import_onnx(save(m, tmp_path, "o.onnx")).layers] == ["MatMul", "MatMul"]


def test_bad_inputs_get_one_clear_line(tmp_path, capsys):
    text = tmp_path / "x.onnx"
    text.write_text("not a model\n")
    with pytest.raises(ModelError, match="is not an ONNX model"):
        import_onnx(text)
    dyn = one("MatMul", [("A", F32, ["batch", 4]), ("B", F32, [4, 3])], [("Y", F32, None)])
    path = save(dyn, tmp_path)
    with pytest.raises(ModelError, match=r"dynamic dims without values; give each one, e.g. "
                                         r"--dim batch=1"):
        import_onnx(path)
    assert import_onnx(path, dims={"batch": 5}).layers[0].workload == tw.gemm(5, 3, 4, "f32", "f32")
    with pytest.raises(ModelError, match="no dynamic input dim is called seq"):
        import_onnx(path, dims={"batch": 5, "seq": 2})
    relu = one("Relu", [("X", F32, [4])], [("Y", F32, None)])
    with pytest.raises(ModelError, match=r"no tileable op .* found Relu x1"):
        import_onnx(save(relu, tmp_path, "r.onnx"))
    with pytest.raises(ModelError, match="dtype 'f8' unknown"):
        import_onnx(path, dtype="f8")
    capsys.readouterr()
    assert main(["import", str(text)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_skipped_ops_are_counted_with_a_reason(tmp_path):
    f64 = TensorProto.DOUBLE
    nodes = [helper.make_node("Conv", ["X", "W"], ["Y"], name="c", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["Y"], ["Z"], name="r"),
             helper.make_node("MaxPool", ["Z"], ["P"], name="p", kernel_shape=[2, 2]),
             helper.make_node("MatMul", ["D1", "D2"], ["D3"], name="mm64"),
             helper.make_node("Conv", ["V"], ["U"], name="c3")]
    m = model(nodes, [("X", F32, [1, 2, 6, 6]), ("W", F32, [2, 2, 3, 3]), ("D1", f64, [4, 4]),
                      ("D2", f64, [4, 4]), ("V", F32, [1, 1, 4, 4, 4])],
              [("P", F32, None), ("D3", f64, None)])
    m.graph.node[4].input.append("W5")
    m.graph.input.append(helper.make_tensor_value_info("W5", F32, [1, 1, 3, 3, 3]))
    imp = import_onnx(save(m, tmp_path))
    assert [x.name for x in imp.layers] == ["c"]
    reasons = {s.op: (s.reason, s.nodes) for s in imp.skipped}
    assert "elementwise" in reasons["Relu"][0] and "pooling" in reasons["MaxPool"][0]
    assert reasons["MatMul"] == ("dtype DOUBLE has no tilewise type (i8, i16, i32, bf16, f16, "
                                 "f32)", ("mm64",))
    assert reasons["Conv"] == ("3-D convolution (tilewise has conv2d only)", ("c3",))


def _backend(pattern):
    return sorted(glob.glob(os.path.join(BACKEND, "*", pattern, "model.onnx")))


@pytest.mark.parametrize("path", _backend("test_Conv[12]d*"), ids=lambda p: p.split(os.sep)[-2])
def test_backend_conv_models_match_pytorchs_outputs(path):
    """ONNX's backend test models (exported from PyTorch) with PyTorch's own output: the
    workload's reference on the same input, weights and bias (a conv2d bias input) equals it."""
    m = onnx.load(path)
    (layer,) = import_onnx(path).layers
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    data = os.path.join(os.path.dirname(path), "test_data_set_0")
    x = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "input_0.pb")))
    want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
    node = m.graph.node[0]
    w = layer.workload
    I, W = w.ops[0].factors
    feed = {"I": x.reshape(I.shape), "W": inits[node.input[1]].reshape(W.shape)}
    assert (w.ops[0].bias is not None) == (len(node.input) > 2)
    if len(node.input) > 2:
        feed["bias"] = inits[node.input[2]].reshape(w.ops[0].bias.shape)
    (got,) = reference(w, feed).values()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-4, atol=1e-5)


def test_every_backend_model_imports_or_says_why():
    """Every model of ONNX's backend test data: layers with workloads, or one ModelError line
    (nothing tileable, dynamic shapes); never another exception."""
    paths = _backend("*")
    assert len(paths) > 100
    kinds = {}
    for path in paths:
        try:
            for layer in import_onnx(path).layers:
                kinds[layer.op] = kinds.get(layer.op, 0) + 1
        except ModelError as e:
            assert "\n" not in str(e) and ("no tileable op" in str(e) or "dynamic" in str(e))
    assert kinds["Conv"] >= 20 and kinds["Gemm"] >= 2 and kinds["MatMul"] >= 1


def test_resnet18_and_bert_encoder():
    r = import_onnx(os.path.join(MODELS, "resnet18.onnx"), dtype="bf16")
    assert len(r.layers) == 21 and len(r.distinct()) == 12
    assert r.layers[0].workload == tw.conv2d(1, 3, 224, 224, 64, 7, 7, stride=2, padding=3,
                                             dtype="bf16", out_dtype="bf16")
    assert sum(layer.workload.macs for layer in r.layers) == 1_814_073_344  # torchvision: 1.82 GMACs
    b = import_onnx(os.path.join(MODELS, "bert-encoder.onnx"), dims={"batch": 1}, dtype="bf16")
    assert [layer.op for layer in b.layers].count("attention") == 2
    assert len(b.layers) == 18 and len(b.distinct()) == 5
    assert b.layers[3].workload == tw.mha(128, 128, 64, heads=12, dtype="bf16", out_dtype="bf16")


def test_import_cli_table_and_json(capsys):
    import json

    path = os.path.join(MODELS, "resnet18.onnx")
    assert main(["import", path, "--dtype", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "21 tileable layers (12 distinct) of 69 nodes" in out
    assert "skipped BatchNormalization x20: elementwise" in out
    assert main(["import", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["distinct"] == 12 and data["layers"][0]["workload"]["kind"]["conv2d"]["k"] == 64


def test_docstring_examples():
    import doctest

    from tilewise.importers import equation
    from tilewise.network import vary

    for module in (equation, vary):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("groups, pads", [(2, (1, 0, 2, 1)), (4, 1)])
def test_grouped_and_asymmetric_conv_search_model_equals_simulation_and_executes(groups, pads):
    """conv2d's new group dim and begin/end pads go through the one model: the best mapping's
    cost equals the loop-nest simulation, and executing it equals the numpy reference."""
    from tilewise.model.cost import evaluate
    from tilewise.simulation.trace import simulate

    # H 6, W 8: i8 rows of whole 4-byte words, so the DMAs can program them (search checks)
    w = tw.conv2d(1, 8, 6, 8, 8, 3, 3, padding=pads, groups=groups, dtype="i8")
    r = tw.search(w, "aie-4x2", top=1)
    arch = tw.load_arch("aie-4x2")
    cost, trace = evaluate(w, arch, r.best.mapping), simulate(w, arch, r.best.mapping)
    assert (cost.reads, cost.writes, cost.footprint) == (trace.reads, trace.writes, trace.peak)
    assert tw.verify(w, r.best.mapping, arch="aie-4x2").passed
