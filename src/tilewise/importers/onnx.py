"""``import_onnx``: the tileable layers of an ONNX model as tilewise workloads.

Every node of the (shape-inferred) graph becomes a :class:`Layer` with a workload
(:mod:`.ops`), is fused into one (:mod:`.fuse`: attention, chains of two GEMMs), or is counted
in :attr:`ImportedModel.skipped` with the reason it has no tiling::

    >>> model = import_onnx("examples/models/resnet18.onnx", dtype="bf16")
    >>> len(model.layers), len(model.distinct()), model.skipped[0].op, model.skipped[0].count
    (21, 12, 'BatchNormalization', 20)

``dims`` gives symbolic input dims values (``{"batch": 1}``); ``dtype`` replaces every float
type (f32, f16, bf16) of a layer, e.g. to search an f32 model as bf16 on an NPU without f32
MACs (quantized layers keep i8). Errors (:class:`~tilewise.errors.ModelError`, one line): the
file is not ONNX, an input dim is dynamic without a value, a tileable node's shapes are unknown,
nothing in the model is tileable.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError
from ..ir.library import SUPPORTED_DTYPES
from ..ir.workload import Chain
from . import fuse
from .graph import Graph, Skip, load_graph, node_label
from .ops import TILEABLE, Converted, convert, layer_types, no_tiling


@dataclass(frozen=True)
class Layer:
    """One tileable layer: its name (the first node's), what it is (the ONNX op type, or
    ``attention`` / ``chain`` for fused patterns), the workload, the ONNX node names it covers,
    the separate workloads of a fused chain (the fallback when it cannot stay on chip) and a
    note on what the workload leaves out."""

    name: str
    op: str
    workload: Chain
    nodes: tuple[str, ...]
    unfused: tuple[Chain, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    """Nodes of one op type left out for one reason."""

    op: str
    reason: str
    nodes: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True)
class ImportedModel:
    """The layers of a model in graph order and what was skipped (grouped by op and reason)."""

    path: str
    layers: tuple[Layer, ...]
    skipped: tuple[Skipped, ...]
    nodes: int

    def distinct(self) -> dict[str, list[Layer]]:
        """Layers grouped by identical workload (canonical text -> layers, first seen first)."""
        groups: dict[str, list[Layer]] = {}
        for layer in self.layers:
            groups.setdefault(layer.workload.key, []).append(layer)
        return groups


def import_onnx(path, dims: dict | None = None, dtype: str | None = None) -> ImportedModel:
    """The :class:`ImportedModel` of the ONNX file ``path`` (see the module doc)."""
    if dtype is not None and dtype not in SUPPORTED_DTYPES:
        raise ModelError(f"dtype {dtype!r} unknown; valid: {', '.join(SUPPORTED_DTYPES)}")
    path = str(path)
    g = load_graph(path, dims)
    done: dict[int, Layer] = {}  # index of a layer's first node -> layer
    claimed: set[int] = set()
    index = {id(n): i for i, n in enumerate(g.nodes)}

    for att in fuse.attentions(g, lambda node, tensor: layer_types(g, node, tensor, dtype)):
        first = index[id(att.nodes[0])]
        done[first] = Layer(_name(att.nodes[0], first), "attention", att.workload,
                            tuple(_name(n, index[id(n)]) for n in att.nodes))
        claimed |= {index[id(n)] for n in att.nodes}
    converted: dict[int, Converted] = {}
    skipped: dict[tuple[str, str], list[str]] = {}
    for i, node in enumerate(g.nodes):
        if i in claimed:
            continue
        try:
            converted[i] = _checked(g, node, convert(g, node, dtype))
        except Skip as s:
            skipped.setdefault((node.op_type, s.reason), []).append(_name(node, i))
    _layers(g, converted, index, done)
    if not done:
        found = ", ".join(f"{op} x{len(n)}" for (op, _), n in skipped.items())
        raise ModelError(f"{path}: no tileable op (tilewise tiles {', '.join(TILEABLE)}); "
                         f"found {found}")
    return ImportedModel(path, tuple(done[i] for i in sorted(done)),
                         tuple(Skipped(op, why, tuple(n)) for (op, why), n in skipped.items()),
                         len(g.nodes))


def _layers(g: Graph, converted: dict, index: dict, done: dict) -> None:
    """One layer per converted node; two GEMMs in a row become a chain."""
    used: set[int] = set()
    for i, c in converted.items():
        if i in used:
            continue
        node = g.nodes[i]
        nxt = g.sole_consumer(node.output[0])
        j = index.get(id(nxt)) if nxt is not None else None
        if j in converted and j not in used and fuse.chainable(g, node, nxt, c.workload,
                                                               converted[j].workload):
            w2 = converted[j].workload
            done[i] = Layer(_name(node, i), "chain", fuse.gemm_chain(c.workload, w2),
                            (_name(node, i), _name(nxt, j)), (c.workload, w2))
            used |= {i, j}
            continue
        done[i] = Layer(_name(node, i), node.op_type, c.workload, (_name(node, i),), note=c.note)
        used.add(i)


def _checked(g: Graph, node, c: Converted) -> Converted:
    """``c`` when its output has as many elements as ONNX's inferred output; ModelError
    otherwise (an importer bug, never a silently wrong layer)."""
    out = g.infos.get(node.output[0])
    mine = c.workload.ops[-1].output.shape
    if out is not None and _count(out.shape) != _count(mine):
        raise ModelError(f"{g.path}: node {node_label(node)}: workload output {mine} does not "
                         f"match ONNX's inferred {out.shape}: {c.workload}")
    return c


def _count(shape) -> int:
    n = 1
    for x in shape:
        n *= x
    return n


def _name(node, i: int) -> str:
    return node.name or f"{node.op_type}_{i}"


__all__ = ["ImportedModel", "Layer", "Skipped", "import_onnx", "no_tiling"]
