"""One ONNX node -> one tilewise workload (ONNX operator semantics, opset 1-23).

Each converter reads the node's attributes and the inferred shapes of its inputs and returns a
:class:`Converted` workload, or raises :class:`Skip` with the reason it has none. Semantics
(onnx.ai/onnx/operators):

- ``MatMul`` is numpy's matmul: 1-D operands get a unit axis, batch dims broadcast. A 2-D B
  (weights) makes one GEMM over the flattened batch x rows; equal batches a batched GEMM; an A
  shared by every batch of B an einsum ``mk,bkn->bmn``.
- ``Gemm``: ``Y = alpha * A' B' + beta * C`` with A' = Aᵀ when ``transA`` (A stored K x M),
  B' = Bᵀ when ``transB`` (B stored N x K); the bias C is an epilogue, not tiled.
- ``Conv``: X (N, C, H, W), W (K, C/group, R, S); ``pads`` = [top, left, bottom, right];
  ``auto_pad`` SAME_UPPER/SAME_LOWER pad to ceil(H/stride) outputs (the odd pad at the end /
  the beginning), VALID pads nothing; 1-D convolutions are 2-D with H = R = 1.
- ``LayerNormalization``: normalizes over the axes from ``axis`` (default -1) on.
- ``Einsum``: one contraction over the equation's letters (``...`` expanded).
- ``MatMulInteger``/``ConvInteger`` (i8 in, i32 out) and ``QLinearMatMul``/``QLinearConv``
  (i8 in, i8 out, requantized from the i32 sum): int8 and uint8 are both i8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import WorkloadError
from ..ir import library
from ..ir.workload import Chain
from .equation import contraction
from .graph import FLOATS, Graph, Skip


@dataclass(frozen=True)
class Converted:
    """A node's workload and a note on what it leaves out (a bias epilogue, ...)."""

    workload: Chain
    note: str = ""


@dataclass(frozen=True)
class Types:
    """Input and output dtypes of a layer (tilewise names)."""

    input: str
    output: str


def layer_types(g: Graph, node, name: str, dtype: str | None, quantized: str | None = None) -> Types:
    """The layer's dtypes: a quantized op's (``quantized`` = its output type), else the
    tensor's, with ``dtype`` replacing a float type (activations stay in that type)."""
    if quantized:
        return Types("i8", quantized)
    t = g.info(name, node)
    if t.dtype is None:
        raise Skip(f"dtype {t.onnx_type} has no tilewise type (i8, i16, i32, bf16, f16, f32)")
    d = dtype if dtype and t.dtype in FLOATS else t.dtype
    return Types(d, d)


def _prod(xs) -> int:
    return math.prod(xs) if xs else 1


def matmul(g: Graph, node, a: str, b: str, types: Types) -> Converted:
    sa, sb = g.info(a, node).shape, g.info(b, node).shape
    if not sa or not sb:
        raise Skip("MatMul of a scalar")
    sa = (1,) + sa if len(sa) == 1 else sa
    sb = sb + (1,) if len(sb) == 1 else sb
    (M, K), (K2, N) = sa[-2:], sb[-2:]
    if K != K2:
        raise Skip(f"MatMul shapes {sa} x {sb} do not agree on K")
    ba, bb = _prod(sa[:-2]), _prod(sb[:-2])
    kw = dict(dtype=types.input, out_dtype=types.output)
    if bb == 1:
        return Converted(library.gemm(ba * M, N, K, **kw))
    if ba == 1:
        return Converted(library.einsum("mk,bkn->bmn", b=bb, m=M, k=K, n=N, **kw))
    if sa[:-2] == sb[:-2]:
        return Converted(library.batched_gemm(ba, M, N, K, **kw))
    raise Skip(f"MatMul batch broadcast {sa[:-2]} x {sb[:-2]} (only equal batches, a 2-D "
               "operand or a shared A are tiled)")


def gemm(g: Graph, node, types: Types) -> Converted:
    sa, sb = g.info(node.input[0], node).shape, g.info(node.input[1], node).shape
    ta, tb = g.attr(node, "transA", 0), g.attr(node, "transB", 0)
    (M, K) = sa[::-1] if ta else sa
    (K2, N) = sb[::-1] if tb else sb
    if K != K2:
        raise Skip(f"Gemm shapes {sa} x {sb} (transA={ta}, transB={tb}) do not agree on K")
    kw = dict(dtype=types.input, out_dtype=types.output)
    if not ta and not tb:
        w = library.gemm(M, N, K, **kw)
    else:
        spec = ("km" if ta else "mk") + "," + ("nk" if tb else "kn") + "->mn"
        w = library.einsum(spec, m=M, n=N, k=K, **kw)
    bias = len(node.input) > 2 and node.input[2]
    return Converted(w, "bias C added after the product (not tiled)" if bias else "")


def conv(g: Graph, node, x: str, w: str, types: Types) -> Converted:
    sx, sw = g.info(x, node).shape, g.info(w, node).shape
    if len(sx) == 5:
        raise Skip("3-D convolution (tilewise has conv2d only)")
    if len(sx) not in (3, 4):
        raise Skip(f"convolution input of rank {len(sx)} (expected 3 or 4)")
    one_d = len(sx) == 3
    if one_d:
        sx, sw = (sx[0], sx[1], 1, sx[2]), (sw[0], sw[1], 1, sw[2])
    N, C, H, W = sx
    K, _, R, S = sw
    spatial = 1 if one_d else 2
    strides = list(g.attr(node, "strides", [1] * spatial))
    dil = list(g.attr(node, "dilations", [1] * spatial))
    pads = _conv_pads(g, node, (H, W)[2 - spatial:], (R, S)[2 - spatial:], strides, dil)
    if one_d:
        strides, dil, pads = [1] + strides, [1] + dil, [0, pads[0], 0, pads[1]]
    groups = g.attr(node, "group", 1)
    at = {"Conv": 2, "QLinearConv": 8}.get(node.op_type)  # the bias input, if any
    bias = at is not None and len(node.input) > at and bool(node.input[at])
    try:
        wl = library.conv2d(N, C, H, W, K, R, S, stride=tuple(strides), padding=tuple(pads),
                            dilation=tuple(dil), groups=groups, dtype=types.input,
                            out_dtype=types.output, bias=bias)
    except WorkloadError as e:
        raise Skip(f"convolution not expressible: {e}") from None
    return Converted(wl, "1-D convolution as 2-D with H = 1" if one_d else "")


def _conv_pads(g: Graph, node, ins, ks, strides, dil) -> list[int]:
    """ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end] for the spatial axes."""
    auto = g.attr(node, "auto_pad", "NOTSET")
    n = len(ins)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for i, s, k, d in zip(ins, strides, ks, dil):
            out = -(-i // s)
            total = max(0, (out - 1) * s + (k - 1) * d + 1 - i)
            small, big = total // 2, total - total // 2
            begin.append(small if auto == "SAME_UPPER" else big)
            end.append(big if auto == "SAME_UPPER" else small)
        return begin + end
    if auto == "VALID":
        return [0] * (2 * n)
    return list(g.attr(node, "pads", [0] * (2 * n)))


def layernorm(g: Graph, node, types: Types) -> Converted:
    shape = g.info(node.input[0], node).shape
    axis = g.attr(node, "axis", -1)
    axis = axis + len(shape) if axis < 0 else axis
    rows, cols = _prod(shape[:axis]), _prod(shape[axis:])
    eps = g.attr(node, "epsilon", 1e-5)
    return Converted(library.layernorm(rows, cols, dtype=types.input, eps=float(f"{eps:.7g}"),
                                       out_dtype=types.output))


def einsum(g: Graph, node, types: Types) -> Converted:
    shapes = [g.info(n, node).shape for n in node.input]
    spec, sizes = contraction(g.attr(node, "equation"), shapes)
    return Converted(library.einsum(spec, dtype=types.input, out_dtype=types.output, **sizes))


def attention_op(g: Graph, node, types: Types) -> Converted:
    """ONNX ``Attention`` (opset 23): Q (B, Hq, Sq, D) or (B, Sq, Hq*D) with ``q_num_heads``;
    K (B, Hkv, Skv, D), V (B, Hkv, Skv, Dv); past_key/past_value add their rows to Skv."""
    q, k, v = (g.info(n, node).shape for n in node.input[:3])
    if len(q) == 3:
        hq, hkv = g.attr(node, "q_num_heads"), g.attr(node, "kv_num_heads")
        if not hq or not hkv:
            raise Skip("3-D Attention inputs without q_num_heads/kv_num_heads")
        B, Sq, D = q[0], q[1], q[2] // hq
        Skv, Dv = k[1], v[2] // hkv
    else:
        B, hq, Sq, D = q
        hkv, Skv, Dv = k[1], k[2], v[3]
    if len(node.input) > 4 and node.input[4]:
        Skv += g.info(node.input[4], node).shape[-2]
    notes = []
    if hkv != hq:
        notes.append(f"grouped-query ({hq} query / {hkv} key-value heads): K and V counted per "
                     "query head")
    if g.attr(node, "is_causal", 0):
        notes.append("causal mask not modeled (every score computed)")
    wl = library.mha(Sq, Skv, D, heads=B * hq, dtype=types.input, out_dtype=types.output,
                     dv=Dv)
    return Converted(wl, "; ".join(notes))


# op type -> (positions of the two data inputs, output dtype of a quantized op or None)
_MATMULS = {"MatMul": (0, 1, None), "MatMulInteger": (0, 1, "i32"), "QLinearMatMul": (0, 3, "i8")}
_CONVS = {"Conv": (0, 1, None), "ConvInteger": (0, 1, "i32"), "QLinearConv": (0, 3, "i8")}
_SINGLE = {"Gemm": gemm, "LayerNormalization": layernorm, "Einsum": einsum,
           "Attention": attention_op}


def convert(g: Graph, node, dtype: str | None) -> Converted:
    """The workload of one tileable node; :class:`Skip` when it has none."""
    op, ins = node.op_type, node.input
    if op in _MATMULS or op in _CONVS:
        a, b, quantized = (_MATMULS.get(op) or _CONVS[op])
        types = layer_types(g, node, ins[a], dtype, quantized)
        return (matmul if op in _MATMULS else conv)(g, node, ins[a], ins[b], types)
    if op in _SINGLE and node.domain in ("", "ai.onnx"):
        return _SINGLE[op](g, node, layer_types(g, node, ins[0], dtype))
    raise Skip(no_tiling(op))


TILEABLE = (*_MATMULS, *_CONVS, *_SINGLE)

_ELEMENTWISE = {"Relu", "Add", "Sub", "Mul", "Div", "Sigmoid", "Tanh", "Gelu", "Erf", "Clip",
                "BatchNormalization", "LeakyRelu", "PRelu", "Elu", "Selu", "HardSigmoid",
                "HardSwish", "Softplus", "Softsign", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs",
                "Where", "Max", "Min", "Sum", "Mean", "Dropout", "QuantizeLinear",
                "DequantizeLinear", "Not", "Equal", "Less", "Greater", "Sign", "Shrink",
                "Reciprocal", "Floor", "Ceil", "Round", "Mod", "And", "Or", "Cast"}
_MOVEMENT = {"Reshape", "Transpose", "Flatten", "Concat", "Split", "Slice", "Gather",
             "Squeeze", "Unsqueeze", "Identity", "Constant", "Shape", "Pad", "Expand", "Tile",
             "ConstantOfShape", "Range", "DepthToSpace", "SpaceToDepth", "Size", "Resize",
             "GatherElements", "ScatterND", "SequenceConstruct", "SplitToSequence"}
_POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"}


def no_tiling(op: str) -> str:
    """Why ``op`` has no tilewise workload (one line)."""
    if op in _ELEMENTWISE:
        return "elementwise: no loop nest to tile (fused into its producer on real targets)"
    if op in _MOVEMENT:
        return "shape or data movement: no arithmetic to tile"
    if op in _POOLS:
        return "pooling: tilewise has no pooling workload"
    if op.startswith("Reduce") or op in ("ArgMax", "ArgMin"):
        return "reduction: tilewise has no standalone reduction workload"
    if op in ("Softmax", "LogSoftmax", "Softmin"):
        return "softmax outside an attention pattern: no standalone softmax workload"
    if op in ("ConvTranspose",):
        return "transposed convolution: no workload"
    return f"no tilewise workload for {op}"
