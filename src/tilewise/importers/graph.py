"""An ONNX graph after shape inference: shapes and dtypes by tensor name, consumers, nodes.

:func:`load_graph` reads a model file (weights may be absent: external data is not loaded, only
shapes are needed), gives symbolic dims the values in ``dims`` (``{"batch": 1}``), runs ONNX
shape inference and answers :class:`TensorInfo` per tensor name. Errors are one
:class:`~tilewise.errors.ModelError` line: a file that is not ONNX, a graph input with a
dynamic dim left without a value, a tensor whose shape inference could not find.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError

# ONNX TensorProto element types -> tilewise dtype names (unsigned 8/16-bit integers move and
# multiply like their signed twins: same bytes, same MAC rate)
DTYPES = {1: "f32", 2: "i8", 3: "i8", 4: "i16", 5: "i16", 6: "i32", 10: "f16", 16: "bf16"}
FLOATS = ("f32", "f16", "bf16")


class Skip(Exception):
    """A node with no tilewise workload; ``reason`` says why (one line)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class TensorInfo:
    """A tensor's static shape (elements per axis) and tilewise dtype (None: no tilewise type,
    e.g. float64; ``onnx_type`` names it)."""

    name: str
    shape: tuple[int, ...]
    dtype: str | None
    onnx_type: str


@dataclass
class Graph:
    """The inferred graph: ``nodes`` in topological order (ONNX requires it), tensor infos."""

    path: str
    nodes: list
    infos: dict
    consumers: dict
    producers: dict
    outputs: set
    constants: dict

    def info(self, name: str, node) -> TensorInfo:
        """The static shape and dtype of tensor ``name`` read by ``node``; ModelError when
        shape inference left it unknown."""
        t = self.infos.get(name)
        if t is None:
            raise ModelError(f"{self.path}: node {node_label(node)}: shape of {name!r} unknown "
                             "after ONNX shape inference; give the model static input shapes")
        return t

    def attr(self, node, name: str, default=None):
        """Attribute ``name`` of ``node`` as a Python value (ints, floats, lists, text)."""
        import onnx

        for a in node.attribute:
            if a.name == name:
                v = onnx.helper.get_attribute_value(a)
                return v.decode() if isinstance(v, bytes) else v
        return default

    def sole_consumer(self, tensor: str):
        """The one node reading ``tensor`` when it is not also a graph output, else None."""
        readers = self.consumers.get(tensor, [])
        return readers[0] if len(readers) == 1 and tensor not in self.outputs else None


def node_label(node) -> str:
    return f"{node.name!r} ({node.op_type})" if node.name else node.op_type


def load_graph(path: str, dims: dict | None = None) -> Graph:
    """Load, fix symbolic dims, infer shapes; see the module doc."""
    import onnx

    model = _read(path)
    _set_dims(model, dict(dims or {}), path)
    try:
        model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:  # onnx raises its own InferenceError, or ValueError on bad protos
        raise ModelError(f"{path}: ONNX shape inference failed: {_first_line(e)}") from None
    g = model.graph
    infos = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = _info(vi)
        if t is not None:
            infos[t.name] = t
    constants = {}
    for init in g.initializer:
        infos[init.name] = TensorInfo(init.name, tuple(init.dims), DTYPES.get(init.data_type),
                                      onnx.TensorProto.DataType.Name(init.data_type))
        constants[init.name] = init
    consumers: dict = {}
    producers = {}
    for node in g.node:
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(node)
        for name in node.output:
            producers[name] = node
    return Graph(path, list(g.node), infos, consumers, producers, {o.name for o in g.output},
                 constants)


def _read(path: str):
    import onnx

    try:
        model = onnx.load(path, load_external_data=False)
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except Exception as e:  # a protobuf DecodeError, or a text file
        raise ModelError(f"{path} is not an ONNX model (protobuf could not parse it: "
                         f"{_first_line(e)})") from None
    if not model.graph.node:
        raise ModelError(f"{path} is not an ONNX model with a graph (no nodes)")
    return model


def _set_dims(model, dims: dict, path: str) -> None:
    """Give symbolic input dims their values; ModelError names the dims still dynamic."""
    missing: dict[str, list[str]] = {}
    used = set()
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value"):
                continue
            key = d.dim_param or f"{vi.name}[{i}]"
            if key in dims:
                d.dim_value = _positive(dims[key], key, path)
                used.add(key)
            else:
                missing.setdefault(vi.name, []).append(key)
    unused = sorted(set(dims) - used)
    if unused:
        raise ModelError(f"{path}: no dynamic input dim is called {', '.join(unused)}"
                         + (f"; dynamic dims: {', '.join(sorted(used))}" if used else
                            "; the model's inputs have static shapes"))
    if missing:
        names = sorted({k for ks in missing.values() for k in ks})
        where = ", ".join(f"{n!r} ({', '.join(ks)})" for n, ks in missing.items())
        verb = "input" if len(missing) == 1 else "inputs"
        raise ModelError(f"{path}: {verb} {where} with dynamic dims without values; give each "
                         f"one, e.g. " + " ".join(f"--dim {k}=1" for k in names)
                         + " (Python: dims={" + ", ".join(f"{k!r}: 1" for k in names) + "})")


def _positive(v, key: str, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ModelError(f"{path}: dim {key}={v!r} must be a positive integer")
    return v


def _info(vi) -> TensorInfo | None:
    import onnx

    if not vi.type.HasField("tensor_type"):
        return None
    tt = vi.type.tensor_type
    if not tt.HasField("shape") or any(not d.HasField("dim_value") for d in tt.shape.dim):
        return None
    return TensorInfo(vi.name, tuple(d.dim_value for d in tt.shape.dim),
                      DTYPES.get(tt.elem_type), onnx.TensorProto.DataType.Name(tt.elem_type))


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else type(e).__name__
