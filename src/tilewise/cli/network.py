"""``tilewise import MODEL.onnx`` (the tileable layers of a network model), ``tilewise
search-model MODEL.onnx`` (the best mapping of every layer, each distinct layer once) and
``tilewise sweep`` (arch parameters varied over a model or a problem list).

    tilewise import examples/models/resnet18.onnx --dtype bf16
    tilewise import examples/models/bert-encoder.onnx --dim batch=1 --json
    tilewise search-model examples/models/resnet18.onnx --arch npu1 --dtype bf16
    tilewise sweep examples/models/bert-encoder.onnx --arch npu1 --dim batch=1 --dtype bf16 \
        --vary levels.memtile.capacity=256KiB,512KiB,1MiB --vary array=4x2,4x4,4x5,4x8 \
        --vary compute.clock=1GHz,1.25GHz --plot sweep.png
"""

from __future__ import annotations

import click

from ._util import console, output_path, progress, save_figure

IMPORT_OPTIONS = [
    click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE",
                 help="value of a symbolic (dynamic) input dim, e.g. batch=1 (repeatable)"),
    click.option("--dtype", default=None,
                 help="search float layers (f32/f16/bf16) as this dtype, e.g. bf16 on an NPU "
                      "without f32 MACs (quantized layers keep i8)"),
]


OBJECTIVE = click.option(
    "--objective", default="latency", show_default=True,
    type=click.Choice(["latency", "traffic", "energy", "edp", "space", "ratio"]),
    help="what each layer's search minimizes")


def store_option(what: str):
    return click.option("--store", default="solutions.sqlite", show_default=True,
                        help=f"SQLite solution store ({what} already solved are not searched "
                             "again)")


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
    """Add ``tilewise import``, ``tilewise search-model`` and ``tilewise sweep``."""
    register_search(app)
    register_sweep(app)

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


def register_search(app: click.Group) -> None:
    from .search import engine_options

    @app.command(name="search-model")
    @click.argument("model", type=click.Path(dir_okay=False))
    @click.option("--arch", default="npu1", show_default=True, help="preset name or YAML file")
    @options(IMPORT_OPTIONS)
    @OBJECTIVE
    @click.option("--spatial", multiple=True, help="allowed spatial split (repeatable)")
    @click.option("--double-buffer", "double_buffer", default="any", show_default=True,
                  type=click.Choice(["any", "all", "none"]), help="double-buffering choices")
    @store_option("layers")
    @engine_options
    @click.option("--json", "as_json", is_flag=True, help="print the network result as JSON")
    def search_model_command(model, arch, dims, dtype, objective, spatial, double_buffer, store,
                             workers, engine, address, as_json):
        """Search every tileable layer of an ONNX model (each distinct layer once)."""
        import json

        from ..network.model_search import search_model

        constraints = {"double_buffer": double_buffer}
        if spatial:
            constraints["spatial"] = list(spatial)
        bar, cb = progress("searching distinct layers")
        try:
            net = search_model(model, arch, objective, dims=parse_dims(dims), dtype=dtype,
                               store=store, workers=workers, engine=engine, address=address,
                               on_done=cb, **constraints)
        finally:
            if bar is not None:
                bar.stop()
        if as_json:
            click.echo(json.dumps(net.to_dict()))
        else:
            print_network(net)


def print_network(net) -> None:
    """The per-layer table and the totals."""
    from rich.markup import escape
    from rich.table import Table

    from ..arch.units import format_size

    table = Table(title=f"{net.model.path} on {net.arch.name}: {len(net.layers)} layers, "
                        f"best by {net.objective}")
    for col in ("#", "layer", "op", "workload", "time µs", "share", "off-chip", "energy µJ",
                "× min", "stored"):
        table.add_column(col, justify="left" if col in ("layer", "op", "workload") else "right")
    for i, lc in enumerate(net.layers, 1):
        op = lc.layer.op if lc.fused else f"{lc.layer.op} (split)"
        table.add_row(str(i), escape(lc.layer.name), op, escape(short(lc.layer.workload)),
                      f"{lc.latency_s * 1e6:,.2f}", f"{net.share(lc):.1%}",
                      format_size(lc.offchip_bytes, 3), _energy(lc.energy_j),
                      f"{lc.latency_s / lc.min_time_s:.3f}", "yes" if lc.cached else "no")
    out = console()
    if not out.is_terminal:
        out.width = 200
    out.print(table)
    energy = (f"energy {net.energy_j * 1e6:,.2f} µJ" if net.energy_j is not None
              else "energy — (the arch gives no energy numbers)")
    out.print(f"total: latency {net.latency_s * 1e6:,.2f} µs · off-chip traffic "
              f"{format_size(net.offchip_bytes, 3)} · {energy}")
    out.print(f"{len(net.layers)} layers, {net.distinct} distinct workloads: {net.searched} "
              f"searched, {net.distinct - net.searched} from the store · {net.seconds:.1f} s")
    print_skipped(net.model, out)


def _energy(e) -> str:
    return "—" if e is None else f"{e * 1e6:,.3f}"


def register_sweep(app: click.Group) -> None:
    from .search import engine_options

    @app.command(name="sweep")
    @click.argument("target", type=click.Path(dir_okay=False))
    @click.option("--arch", default=None, help="base preset or YAML (default: a problem list's "
                                                "own arch)")
    @click.option("--vary", "vary", multiple=True, required=True, metavar="KEY=V1,V2,...",
                  help="arch parameter and its values, e.g. levels.memtile.capacity=256KiB,1MiB, "
                       "array=4x4,4x8, compute.clock=1GHz,1.5GHz (repeatable: the product)")
    @options(IMPORT_OPTIONS)
    @OBJECTIVE
    @store_option("points")
    @engine_options
    @click.option("--plot", type=click.Path(dir_okay=False),
                  help="write latency against on-chip bytes and cores (fronts marked) to this PNG")
    @click.option("--json", "as_json", is_flag=True, help="print every point as JSON")
    def sweep_command(target, arch, vary, dims, dtype, objective, store, workers, engine,
                      address, plot, as_json):
        """Vary arch parameters over a model (.onnx) or a problem list (.yaml): per point the
        exact optimum of every workload, the totals and the Pareto fronts."""
        import json

        from ..network.sweep import sweep

        plot = output_path(plot, "--plot")
        bar, cb = progress("searching (point x workload)")
        try:
            result = sweep(target, arch, vary, objective, dims=parse_dims(dims), dtype=dtype,
                           store=store, workers=workers, engine=engine, address=address,
                           on_done=cb)
        finally:
            if bar is not None:
                bar.stop()
        if as_json:
            click.echo(json.dumps(result.to_dict()))
        else:
            print_sweep(result)
        if plot:
            plot_sweep(result, plot)
            click.echo(f"sweep plot written to {plot}")


def print_sweep(result) -> None:
    from rich.markup import escape
    from rich.table import Table

    from ..arch.units import format_size

    fronts = {x: {id(p) for p in result.front(x)} for x in ("on_chip_bytes", "cores")}
    table = Table(title=f"sweep of {result.base.name}: {len(result.points)} points x "
                        f"{len(result.workloads)} workloads, best by {result.objective}")
    keys = [v.key for v in result.varies]
    for col in ("#", *keys, "latency µs", "off-chip", "energy µJ", "on-chip", "cores", "front"):
        table.add_column(col, justify="right")
    for i, p in enumerate(result.points, 1):
        mark = "".join(c for x, c in (("on_chip_bytes", "B"), ("cores", "C"))
                       if id(p) in fronts[x]) or "—"
        values = [v for _, v in p.settings]
        if not p.feasible:
            table.add_row(str(i), *values, "infeasible", "", "", format_size(p.on_chip_bytes, 3),
                          str(p.cores), escape(p.error[:60]))
            continue
        table.add_row(str(i), *values, f"{p.latency_s * 1e6:,.2f}",
                      format_size(p.offchip_bytes, 3), _energy(p.energy_j),
                      format_size(p.on_chip_bytes, 3), str(p.cores), mark)
    out = console()
    if not out.is_terminal:
        out.width = 200
    out.print(table)
    for x, what in (("on_chip_bytes", "on-chip bytes (B)"), ("cores", "cores (C)")):
        pts = ", ".join(f"#{result.points.index(p) + 1}" for p in result.front(x))
        out.print(f"Pareto front, latency vs {what}: {pts}")
    if any(p.energy_j is not None for p in result.points):
        pts = ", ".join(f"#{result.points.index(p) + 1}" for p in result.front("energy_j"))
        out.print(f"Pareto front, latency vs energy: {pts}")
    bad = sum(not p.feasible for p in result.points)
    out.print(f"{len(result.points)} points ({bad} infeasible) · {result.searched} searches run, "
              f"the rest from the store · {result.seconds:.1f} s")


def plot_sweep(result, path: str) -> None:
    """Two panels: latency against on-chip bytes and against cores; fronts as steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    pts = [p for p in result.points if p.feasible]
    for ax, x, label, scale in ((axes[0], "on_chip_bytes", "on-chip memory (MiB)", 2**-20),
                                (axes[1], "cores", "cores", 1)):
        ax.scatter([getattr(p, x) * scale for p in pts], [p.latency_s * 1e6 for p in pts],
                   color="lightgray", label="sweep points")
        front = result.front(x)
        ax.step([getattr(p, x) * scale for p in front], [p.latency_s * 1e6 for p in front],
                where="post", marker="o", color="C0", label="Pareto front")
        ax.set_xlabel(label)
        ax.legend()
    axes[0].set_ylabel("latency (µs), sum over workloads")
    fig.suptitle(f"sweep of {result.base.name}: " + ", ".join(v.key for v in result.varies))
    fig.tight_layout()
    save_figure(fig, path, "--plot")
    plt.close(fig)
