"""Small ONNX graphs built with onnx.helper for the importer tests."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

F32 = TensorProto.FLOAT
I8 = TensorProto.INT8


def model(nodes, inputs, outputs, opset: int = 17, initializers=()):
    """A ModelProto (not run through onnx.checker, which wants output shapes); ``inputs``/``outputs`` are (name, elem_type, shape) triples."""
    vi = helper.make_tensor_value_info
    outs = [vi(n, t, s) for n, t, s in outputs]  # shape None: left to shape inference
    graph = helper.make_graph(nodes, "g", [vi(n, t, s) for n, t, s in inputs], outs,
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def save(m, tmp_path, name: str = "m.onnx") -> str:
    path = str(tmp_path / name)
    onnx.save(m, path)
    return path


def one(op_type: str, inputs, outputs, attrs=None, opset: int = 17, domain: str = ""):
    """A graph of one node reading ``inputs`` (name, type, shape) with one output (shape
    inferred: given as None)."""
    node = helper.make_node(op_type, [n for n, _, _ in inputs], [outputs[0][0]], name="n0",
                            domain=domain, **(attrs or {}))
    return model([node], inputs, outputs, opset)
