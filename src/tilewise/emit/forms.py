"""Which linalg op a workload becomes, and how its tensors map onto that op's operands.

A :class:`LinalgForm` names the op (``linalg.matmul``, ``linalg.batch_matmul``,
``linalg.conv_2d_nhwc_hwcf`` or a ``linalg.generic`` contraction), its loops as tilewise dims
in the op's iteration order (the order of the tile-size lists of a lowering config), which of
them are reductions, and per operand the shape the MLIR function takes and the numpy
conversion from the tilewise tensor (conv2d: NCHW -> zero-padded NHWC, KCRS -> HWCF; the
result NHWC -> NCHW).

Supported: GEMM, batched GEMM, conv2d and any single-``mac``-op workload whose tensors are
indexed by plain dims (einsum). Everything else is one :class:`~tilewise.errors.TilewiseError`
naming what IREE is not given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import TilewiseError

# tilewise dtype -> MLIR element type; input dtypes the emitted ops take
MLIR_TYPES = {"f32": "f32", "f16": "f16", "i8": "i8", "i16": "i16", "i32": "i32"}
_CONV_LOOPS = ("n", "p", "q", "k", "r", "s", "c")  # (n, oh, ow, f, kh, kw, c) of nhwc_hwcf


@dataclass(frozen=True)
class Operand:
    """One function argument: its name, shape (elements), element type, and the numpy
    conversion from the tilewise tensor of the same name."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    convert: Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class LinalgForm:
    """The linalg op of a workload. ``loops``: tilewise dims in the op's iteration order;
    ``reductions``: those summed over; ``result_back``: the op's result -> the tilewise output
    layout. ``attrs``: the op's attribute text (conv strides/dilations); ``maps``: indexing
    maps per operand and result for a ``linalg.generic`` (else empty)."""

    op: str
    loops: tuple[str, ...]
    reductions: frozenset[str]
    inputs: tuple[Operand, ...]
    result: Operand
    result_back: Callable[[np.ndarray], np.ndarray]
    attrs: str = ""
    maps: tuple[tuple[str, ...], ...] = ()


def _type(t) -> str:
    name = t.dtype.name
    if name not in MLIR_TYPES:
        raise TilewiseError(f"tensor {t.name} is {name}; MLIR emission takes "
                            + ", ".join(MLIR_TYPES) + " (bf16 has no numpy type IREE's runtime takes)")
    return MLIR_TYPES[name]


def _same(x: np.ndarray) -> np.ndarray:
    return x


def linalg_form(workload) -> LinalgForm:
    """The linalg op of ``workload``; TilewiseError naming what is not supported."""
    from ..ir.kinds import params_of

    if len(workload.ops) != 1 or workload.ops[0].kind != "mac":
        kinds = ", ".join(f"{op.name}: {op.kind}" for op in workload.ops)
        raise TilewiseError(f"MLIR emission takes one multiply-accumulate op (GEMM, batched GEMM, "
                            f"conv2d, einsum); workload {workload.name} has {kinds}")
    op = workload.ops[0]
    if op.output.dtype.name != op.accumulator.name:
        raise TilewiseError(f"output {op.output} is narrower than its {op.accumulator.name} "
                            "accumulator; MLIR emission writes the accumulator type only "
                            f"(out_dtype={op.accumulator.name})")
    found = params_of(workload)
    kind = found[0] if found else None
    if kind == "conv2d":
        return _conv(workload, found[1])
    if any(not a.is_plain for t in op.tensors for a in t.axes):
        raise TilewiseError(f"workload {workload.name} indexes a tensor by an affine expression "
                            "other than conv2d's; MLIR emission takes plain dims (einsum) or conv2d")
    if kind == "gemm":
        return _named(workload, "linalg.matmul")
    if kind == "batched-gemm":
        return _named(workload, "linalg.batch_matmul")
    return _generic(workload)


def _operand(t) -> Operand:
    return Operand(t.name, t.shape, _type(t), _same)


def _named(workload, name: str) -> LinalgForm:
    op = workload.ops[0]
    loops = tuple(workload.sizes)  # (m, n, k) / (b, m, n, k): the named ops' loop order
    return LinalgForm(name, loops, frozenset(op.reduction_dims),
                      tuple(_operand(t) for t in op.inputs), _operand(op.output), _same)


def _generic(workload) -> LinalgForm:
    op = workload.ops[0]
    loops = tuple(workload.sizes)
    maps = tuple(tuple(str(a) for a in t.axes) for t in op.inputs + (op.output,))
    return LinalgForm("linalg.generic", loops, frozenset(op.reduction_dims),
                      tuple(_operand(t) for t in op.inputs), _operand(op.output), _same,
                      maps=maps)


def _conv(workload, params: dict) -> LinalgForm:
    op = workload.ops[0]
    image, weights = op.inputs
    n, c, h, w = image.shape
    s = workload.sizes
    pads = [-a.const for a in image.axes[2:]]
    strides = [dict(a.terms)[d] for a, d in zip(image.axes[2:], "pq")]
    dilations = [dict(a.terms)[d] for a, d in zip(image.axes[2:], "rs")]
    padded = (n, h + 2 * pads[0], w + 2 * pads[1], c)

    def to_nhwc(x: np.ndarray) -> np.ndarray:
        x = np.transpose(x, (0, 2, 3, 1))
        return np.pad(x, ((0, 0), (pads[0], pads[0]), (pads[1], pads[1]), (0, 0)))

    attrs = (f"dilations = dense<[{dilations[0]}, {dilations[1]}]> : tensor<2xi64>, "
             f"strides = dense<[{strides[0]}, {strides[1]}]> : tensor<2xi64>")
    out = op.output
    return LinalgForm(
        "linalg.conv_2d_nhwc_hwcf", _CONV_LOOPS, frozenset(op.reduction_dims),
        (Operand(image.name, padded, _type(image), to_nhwc),
         Operand(weights.name, (s["r"], s["s"], s["c"], s["k"]), _type(weights),
                 lambda x: np.transpose(x, (2, 3, 1, 0)))),
        Operand(out.name, (s["n"], s["p"], s["q"], s["k"]), _type(out), _same),
        lambda y: np.transpose(y, (0, 3, 1, 2)), attrs)
