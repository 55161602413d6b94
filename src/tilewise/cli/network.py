"""``tilewise import MODEL.onnx``: the tileable layers of a network model.

    tilewise import resnet18.onnx --dtype bf16
    tilewise import bert.onnx --dim batch=1 --dim seq=128 --json
"""

from __future__ import annotations

import click

from ._util import console

IMPORT_OPTIONS = [
    click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
                 help="value of a symbolic (dynamic) input dim, e.g. batch=1 (repeatable)"),
    click.option("--dtype", default=None,
                 help="search float layers (f32/f16/bf16) as this dtype, e.g. bf16 on an NPU "
                      "without f32 MACs (quantized layers keep i8)"),
]


def options(opts):
    def deco(f):
        for o in reversed(opts):
            f = o(f)
        return f
    return deco


def parse_dims(dims: tuple[str, ...]) -> dict[str, int]:
    """``("batch=1", "seq=128")`` -> ``{"batch": 1, "seq": 128}`` (ParseError at the bad char)."""
    from ..ir.kinds import parse_sizes

    return parse_sizes(",".join(dims), "--dim") if dims else {}


def short(workload) -> str:
    """``conv2d c=64 h=56 ...`` from the kind registry, else the workload's dims."""
    from ..ir.kinds import params_of

    found = params_of(workload)
    if found is None:
        return str(workload).split(":")[0]
    kind, params = found
    text = " ".join(f"{k}={_value(v)}" for k, v in params.items() if k not in ("dtype", "out_dtype"))
    return f"{kind} {text}"


def _value(v) -> str:
    if isinstance(v, dict):
        return ",".join(f"{k}{n}" for k, n in v.items())
    if isinstance(v, (list, tuple)):
        return "x".join(map(str, v))
    return str(v)


def model_dict(model) -> dict:
    """The import as plain JSON-able data."""
    from ..ir.kinds import params_of

    def wl(w):
        found = params_of(w)
        return {"text": str(w), "kind": found and {found[0]: found[1]}, "macs": w.macs}

    return {"path": model.path, "nodes": model.nodes,
            "layers": [{"name": layer.name, "op": layer.op, "nodes": list(layer.nodes),
                        "workload": wl(layer.workload), "note": layer.note,
                        "unfused": [wl(w) for w in layer.unfused]} for layer in model.layers],
            "distinct": len(model.distinct()),
            "skipped": [{"op": s.op, "reason": s.reason, "count": s.count, "nodes": list(s.nodes)}
                        for s in model.skipped]}


def print_skipped(model, out) -> None:
    for s in model.skipped:
        out.print(f"skipped {s.op} x{s.count}: {s.reason}")


def register(app: click.Group) -> None:
    @app.command(name="import")
    @click.argument("model", type=click.Path(dir_okay=False))
    @options(IMPORT_OPTIONS)
    @click.option("--json", "as_json", is_flag=True, help="print the layers as JSON")
    def import_command(model, dims, dtype, as_json):
        """List the tileable layers of an ONNX model as tilewise workloads."""
        import json

        from rich.markup import escape
        from rich.table import Table

        from ..importers.onnx import import_onnx

        m = import_onnx(model, parse_dims(dims), dtype)
        if as_json:
            click.echo(json.dumps(model_dict(m)))
            return
        groups = {id(layer): len(ls) for ls in m.distinct().values() for layer in ls}
        table = Table(title=f"{model}: {len(m.layers)} tileable layers ({len(m.distinct())} "
                            f"distinct) of {m.nodes} nodes")
        for col in ("#", "layer", "op", "workload", "dtype", "MMACs", "same", "note"):
            table.add_column(col, justify="right" if col in ("#", "MMACs", "same") else "left")
        for i, layer in enumerate(m.layers, 1):
            w = layer.workload
            table.add_row(str(i), escape(layer.name), layer.op, escape(short(w)),
                          f"{w.ops[0].dtype.name}->{w.ops[-1].output.dtype.name}",
                          f"{w.macs / 1e6:,.2f}", str(groups[id(layer)]), escape(layer.note))
        out = console()
        if not out.is_terminal:
            out.width = 200
        out.print(table)
        print_skipped(m, out)
