"""Fusable patterns of an ONNX graph: attention and chains of two GEMMs.

- Attention: ``MatMul(Q, Kᵀ)`` -> scale/mask (``Div``, ``Mul``, ``Add``, ``Where``, ``Cast``)
  -> ``Softmax`` over the last axis -> ``MatMul(P, V)``, every intermediate read only by the
  next node, becomes one :func:`~tilewise.ir.library.mha` (online softmax; the scale and mask
  are elementwise on the scores and not costed). The batch dims (batch x heads) are its heads.
- GEMM chain (seed 004): a GEMM whose output is read only by the next GEMM as its A operand
  becomes :func:`~tilewise.ir.library.gemm_chain`, the intermediate C kept on chip. The search
  falls back to the two GEMMs when no mapping keeps C on chip (``Layer.unfused``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import library
from .graph import Graph

_SCORE_OPS = ("Div", "Mul", "Add", "Where", "Cast", "Sub")
_PASS_OPS = ("Cast", "Dropout", "Identity")


@dataclass(frozen=True)
class Attention:
    """The nodes of one attention pattern (in graph order) and its workload."""

    nodes: tuple
    workload: object


def attentions(g: Graph, dtype_of) -> list[Attention]:
    """Every attention pattern of ``g``; ``dtype_of(node, tensor)`` gives its (input, output)
    dtypes (a :class:`~.ops.Types`)."""
    found = []
    for sm in g.nodes:
        if sm.op_type != "Softmax":
            continue
        shape = g.infos.get(sm.input[0])
        axis = g.attr(sm, "axis", -1)
        if shape is None or axis not in (-1, len(shape.shape) - 1):
            continue
        back = _walk_back(g, sm)
        fwd = _walk_forward(g, sm)
        if back is None or fwd is None:
            continue
        mm1, mm2 = back[0], fwd[-1]
        wl = _mha(g, mm1, mm2, dtype_of(mm1, mm1.input[0]))
        if wl is not None:
            found.append(Attention(tuple(back + [sm] + fwd), wl))
    return found


def _walk_back(g: Graph, sm) -> list | None:
    """[MatMul, scale/mask nodes...] producing the softmax input through sole consumers."""
    chain, tensor = [], sm.input[0]
    while True:
        node = g.producers.get(tensor)
        if node is None or g.sole_consumer(tensor) is None:
            return None
        chain.insert(0, node)
        if node.op_type == "MatMul":
            return chain
        if node.op_type not in _SCORE_OPS:
            return None
        out = g.infos.get(node.output[0])
        scores = [t for t in node.input if t in g.producers and out is not None
                  and g.infos.get(t) is not None and g.infos[t].shape == out.shape]
        if not scores:
            return None
        tensor = scores[0]


def _walk_forward(g: Graph, sm) -> list | None:
    """[pass-through nodes..., MatMul] reading the softmax output as its first operand."""
    chain, tensor = [], sm.output[0]
    while True:
        node = g.sole_consumer(tensor)
        if node is None:
            return None
        chain.append(node)
        if node.op_type == "MatMul":
            return chain if node.input[0] == tensor else None
        if node.op_type not in _PASS_OPS:
            return None
        tensor = node.output[0]


def _mha(g: Graph, mm1, mm2, types):
    q = g.infos.get(mm1.input[0])
    k = g.infos.get(mm1.input[1])
    v = g.infos.get(mm2.input[1])
    if q is None or k is None or v is None or min(len(q.shape), len(k.shape), len(v.shape)) < 2:
        return None
    (Lq, d), (d2, Lkv), (Lkv2, e) = q.shape[-2:], k.shape[-2:], v.shape[-2:]
    if d != d2 or Lkv != Lkv2 or not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        return None
    heads = 1
    for x in q.shape[:-2]:
        heads *= x
    return library.mha(Lq, Lkv, d, heads=heads, dtype=types.input, out_dtype=types.output,
                       dv=e)


def chainable(g: Graph, first, second, w1, w2) -> bool:
    """True when GEMM ``first`` feeds GEMM ``second`` as its A operand and nothing else reads
    the intermediate (both plain GEMMs over the same rows, same dtype, no bias)."""
    out = first.output[0]
    if g.sole_consumer(out) is not second or second.input[0] != out:
        return False
    if any(n.op_type == "Gemm" and len(n.input) > 2 and n.input[2] for n in (first, second)):
        return False
    return (w1.name == w2.name == "gemm" and w1.sizes["m"] == w2.sizes["m"]
            and w1.sizes["n"] == w2.sizes["k"] and w1.ops[0].dtype == w2.ops[0].dtype)


def gemm_chain(w1, w2):
    """The fused chain of GEMMs ``w1`` (m x k times k x l) then ``w2`` (m x l times l x n)."""
    z1, z2 = w1.sizes, w2.sizes
    return library.gemm_chain(z1["m"], z1["k"], z1["n"], z2["n"], dtype=w1.ops[0].dtype.name,
                              out_dtype=w2.ops[0].output.dtype.name)
