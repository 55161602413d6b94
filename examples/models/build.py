"""Build the weight-stripped network models of this folder with ``onnx.helper`` (a one-off;
the .onnx files are committed, CI does not run this).

No model zoo file can be downloaded here and torch is not installed, so each graph is written
node by node to a public model definition, with the shapes that definition gives:

- ``resnet18.onnx``: torchvision's ``resnet18()`` (torchvision/models/resnet.py: ``ResNet(
  BasicBlock, [2, 2, 2, 2])``): conv1 7x7/2 pad 3 -> BatchNorm -> ReLU -> MaxPool 3x3/2 pad 1,
  four stages of two BasicBlocks (3x3 convs; the first block of stages 2-4 has stride 2 and a
  1x1/2 conv + BatchNorm downsample), global average pool, flatten, fc 512 -> 1000 as
  ``Gemm(transB=1)`` (what torch.onnx.export writes for nn.Linear). Input 1x3x224x224, f32.
- ``bert-encoder.onnx``: the first 2 of BERT-base's 12 encoder layers (Devlin et al. 2019;
  Hugging Face ``BertLayer``: hidden 768, 12 heads of 64, intermediate 3072, GELU, post-LN),
  as HF's ONNX export lays them out: Q, K, V projections ``MatMul`` + bias, reshape to
  (1, 12, 128, 64), scores ``MatMul(Q, Kᵀ)`` / 8 + mask -> ``Softmax`` -> ``MatMul(P, V)``,
  output projection, residual ``Add``, ``LayerNormalization``, FFN 768 -> 3072 -> 768.
  Input (batch, 128, 768) f32 with a symbolic ``batch`` dim (pass ``--dim batch=1``).

Weights are stripped: every weight is a graph input with its shape (a shape-only value info),
so a file is a few KB; small constants (reshape targets, the scale) stay initializers.
Run: ``python examples/models/build.py`` (needs ``onnx``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
F32 = TensorProto.FLOAT


class Builder:
    """Nodes, weight inputs (shape only) and constants of one graph."""

    def __init__(self):
        self.nodes, self.weights, self.consts = [], [], []
        self.n = 0

    def weight(self, name: str, shape) -> str:
        self.weights.append(helper.make_tensor_value_info(name, F32, list(shape)))
        return name

    def const(self, name: str, value) -> str:
        self.consts.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs, name: str | None = None, **attrs) -> str:
        self.n += 1
        name = name or f"{op_type}_{self.n}"
        out = f"{name}_out"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name, **attrs))
        return out

    def model(self, name, inputs, outputs, opset: int):
        graph = helper.make_graph(self.nodes, name, inputs + self.weights, outputs,
                                  initializer=self.consts)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tilewise examples/models/build.py")
        onnx.checker.check_model(m)
        return m


def _conv_bn(b: Builder, x: str, cin: int, cout: int, k: int, stride: int, name: str,
             relu: bool = True) -> str:
    y = b.op("Conv", [x, b.weight(f"{name}.weight", (cout, cin, k, k))], name=name,
             kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4)
    bn = [b.weight(f"{name}.bn.{p}", (cout,)) for p in ("scale", "bias", "mean", "var")]
    y = b.op("BatchNormalization", [y, *bn], name=f"{name}.bn")
    return b.op("Relu", [y], name=f"{name}.relu") if relu else y


def _basic_block(b: Builder, x: str, cin: int, cout: int, stride: int, name: str) -> str:
    y = _conv_bn(b, x, cin, cout, 3, stride, f"{name}.conv1")
    y = _conv_bn(b, y, cout, cout, 3, 1, f"{name}.conv2", relu=False)
    short = _conv_bn(b, x, cin, cout, 1, stride, f"{name}.downsample", relu=False) \
        if stride != 1 or cin != cout else x
    return b.op("Relu", [b.op("Add", [y, short], name=f"{name}.add")], name=f"{name}.relu")


def resnet18():
    b = Builder()
    x = _conv_bn(b, "input", 3, 64, 7, 2, "conv1")
    x = b.op("MaxPool", [x], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), 1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(b, x, cin, cout, stride, f"layer{stage}.{block}")
            cin = cout
    x = b.op("GlobalAveragePool", [x], name="avgpool")
    x = b.op("Flatten", [x], name="flatten", axis=1)
    y = b.op("Gemm", [x, b.weight("fc.weight", (1000, 512)), b.weight("fc.bias", (1000,))],
             name="fc", transB=1)
    inp = helper.make_tensor_value_info("input", F32, [1, 3, 224, 224])
    out = helper.make_tensor_value_info(y, F32, [1, 1000])
    return b.model("resnet18", [inp], [out], 17)


def _linear(b: Builder, x: str, cin: int, cout: int, name: str) -> str:
    y = b.op("MatMul", [x, b.weight(f"{name}.weight", (cin, cout))], name=name)
    return b.op("Add", [y, b.weight(f"{name}.bias", (cout,))], name=f"{name}.bias")


def _heads(b: Builder, x: str, perm, name: str) -> str:
    y = b.op("Reshape", [x, "heads_shape"], name=f"{name}.reshape")
    return b.op("Transpose", [y], name=f"{name}.transpose", perm=perm)


def _bert_layer(b: Builder, x: str, i: int, hidden=768, heads=12, inter=3072) -> str:
    p = f"encoder.layer.{i}"
    q = _heads(b, _linear(b, x, hidden, hidden, f"{p}.attention.query"), [0, 2, 1, 3], f"{p}.q")
    k = _heads(b, _linear(b, x, hidden, hidden, f"{p}.attention.key"), [0, 2, 3, 1], f"{p}.k")
    v = _heads(b, _linear(b, x, hidden, hidden, f"{p}.attention.value"), [0, 2, 1, 3], f"{p}.v")
    s = b.op("MatMul", [q, k], name=f"{p}.attention.scores")
    s = b.op("Div", [s, "sqrt_head_dim"], name=f"{p}.attention.scale")
    s = b.op("Add", [s, "mask"], name=f"{p}.attention.mask")
    s = b.op("Softmax", [s], name=f"{p}.attention.softmax", axis=-1)
    c = b.op("MatMul", [s, v], name=f"{p}.attention.context")
    c = b.op("Transpose", [c], name=f"{p}.context.transpose", perm=[0, 2, 1, 3])
    c = b.op("Reshape", [c, "hidden_shape"], name=f"{p}.context.reshape")
    a = _linear(b, c, hidden, hidden, f"{p}.attention.output")
    a = b.op("Add", [a, x], name=f"{p}.attention.residual")
    a = b.op("LayerNormalization", [a, b.weight(f"{p}.attention.ln.weight", (hidden,)),
                                    b.weight(f"{p}.attention.ln.bias", (hidden,))],
             name=f"{p}.attention.ln", axis=-1, epsilon=1e-12)
    f = b.op("Gelu", [_linear(b, a, hidden, inter, f"{p}.intermediate")], name=f"{p}.gelu")
    f = _linear(b, f, inter, hidden, f"{p}.output")
    f = b.op("Add", [f, a], name=f"{p}.output.residual")
    return b.op("LayerNormalization", [f, b.weight(f"{p}.output.ln.weight", (hidden,)),
                                       b.weight(f"{p}.output.ln.bias", (hidden,))],
                name=f"{p}.output.ln", axis=-1, epsilon=1e-12)


def bert_encoder(layers: int = 2, seq: int = 128, hidden: int = 768, heads: int = 12):
    b = Builder()
    b.const("heads_shape", np.array([0, 0, heads, hidden // heads], dtype=np.int64))
    b.const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    b.const("sqrt_head_dim", np.array(np.sqrt(hidden // heads), dtype=np.float32))
    x = "hidden_states"
    for i in range(layers):
        x = _bert_layer(b, x, i, hidden, heads)
    inp = helper.make_tensor_value_info("hidden_states", F32, ["batch", seq, hidden])
    mask = helper.make_tensor_value_info("mask", F32, ["batch", 1, 1, seq])
    out = helper.make_tensor_value_info(x, F32, ["batch", seq, hidden])
    return b.model("bert_encoder", [inp, mask], [out], 20)


if __name__ == "__main__":
    for name, model in (("resnet18.onnx", resnet18()), ("bert-encoder.onnx", bert_encoder())):
        onnx.save(model, HERE / name)
        print(f"{name}: {(HERE / name).stat().st_size:,} bytes, {len(model.graph.node)} nodes")
