"""``tilewise search OP ...`` and ``tilewise search-many problems.yaml``.

``search`` has one subcommand per operator (``_workload.py``): gemm, batched-gemm, conv2d, mha,
layernorm, chain, einsum. It prints the top mappings as a table (tiles per level, i.e. seed
003's P / m / c; loop orders; spatial split; double-buffered tensors; K split; estimated time;
ratio to the compute-bound minimum; utilization; bytes moved into each level) and a stats line;
``--json`` prints the Result JSON instead; ``--plot FILE.png`` draws the exact Pareto front.

    tilewise search gemm --m 512 --n 768 --k 768 --dtype i8 --arch aie-4x2 --top 5
    tilewise search gemm --m 512 --n 768 --k 768 --arch aie-4x2 --objective traffic --then latency
    tilewise search gemm --m 512 --n 768 --k 768 --arch aie-4x2 --tolerance 0.5% --then traffic
    tilewise search-many problems.yaml --store solutions.sqlite --workers 2
"""

from __future__ import annotations

import math
import sys

import click

from ..arch.units import format_size
from ._util import console, output_path, progress, save_figure
from ._workload import workload_group

_OPTIONS = [
    click.option("--arch", default="aie-4x2", show_default=True, help="preset name or YAML file"),
    click.option("--objective", default="latency", show_default=True,
                 type=click.Choice(["latency", "traffic", "energy", "edp", "space", "ratio"]),
                 help="what to minimize (space: on-chip bytes; ratio: seed 003's 𝔽 = useful "
                      "compute time / slowest link time, maximized)"),
    click.option("--custom", default=None, metavar="EXPR",
                 help="minimize an expression of latency, traffic, energy, space, ratio (1/𝔽) "
                      "instead, e.g. 'latency * energy ** 0.5'; exact with --monotone"),
    click.option("--monotone", is_flag=True,
                 help="state that --custom never decreases when a metric grows: the answer is "
                      "then the exact optimum (otherwise the best of latency's top 200)"),
    click.option("--then", "then", default=None,
                 help="secondary keys for ties, comma-separated, e.g. traffic,energy or none "
                      "(default: latency, energy, traffic without the objective; energy only "
                      "where the arch has energy numbers)"),
    click.option("--tolerance", default="0", show_default=True,
                 help="objectives within this relative distance of the optimum count as tied "
                      "(then the secondary keys decide): 0.005 or 0.5%"),
    click.option("--top", default=5, show_default=True, type=int, help="solutions to list"),
    click.option("--spatial", multiple=True,
                 help="allowed spatial split, e.g. 'rows=n4 cols=m2' or 'none' (repeatable; default "
                      "any, which leaves out attention's keys over cores and reductions merged "
                      "through the parent: name them, e.g. 'rows=n4 cols=n2')"),
    click.option("--double-buffer", "double_buffer", default="any", show_default=True,
                 type=click.Choice(["any", "all", "none"]), help="double-buffering choices"),
    click.option("--pack", default="none", show_default=True,
                 help="outermost-level layouts to try: none (row-major), any (every subset of "
                      "the packable tensors; one model call per choice and leaf), or the "
                      "tensors to pack, e.g. A,B"),
    click.option("--dma-limits/--no-dma-limits", "dma_limits", default=True, show_default=True,
                 help="only mappings whose DMA program (tilewise emit dma) fits the arch's dma: "
                      "limits (archs that declare them; about 1 ms per listed mapping); off: rank "
                      "by the model alone"),
    click.option("--time-limit", "time_limit", type=float, default=None, metavar="SECONDS",
                 help="stop the search then and list the best found, with the proven gap to the "
                      "optimum (a dive and a local search find mappings first); default: exact"),
    click.option("--json", "as_json", is_flag=True, help="print the Result as JSON"),
    click.option("--wide", is_flag=True,
                 help="show every column of the table even when the terminal is narrower "
                      "(by default the least important columns are dropped)"),
    click.option("--plot", type=click.Path(dir_okay=False),
                 help="write the traffic/latency Pareto front to this PNG"),
    click.option("--verify", is_flag=True,
                 help="execute the best mapping numerically and compare with the numpy reference "
                      "(exit 1 on a mismatch)"),
]


def _run(workload, arch, objective, custom, monotone, then, tolerance, top, spatial,
         double_buffer, dma_limits, as_json, wide, plot, verify=False, pack="none",
         time_limit=None):
    from ..arch.loader import load_arch
    from ..search.custom import as_custom
    from ..search.optimize import parse_then, parse_tolerance, search

    then, tolerance = parse_then(then), parse_tolerance(tolerance)  # one clear error line
    plot = output_path(plot, "--plot")
    arch = load_arch(arch, "--arch")
    constraints = {"double_buffer": double_buffer}
    if pack != "none":
        constraints["pack"] = pack if pack == "any" else [x.strip() for x in pack.split(",")]
    constraints["dma_limits"] = bool(dma_limits)
    if spatial:
        constraints["spatial"] = list(spatial)
    if monotone and custom is None:
        raise click.UsageError("--monotone applies to a --custom objective")
    if custom is not None:
        objective = as_custom(custom, monotone)
    from ..search.anytime import Interrupt

    bar, cb = progress("searching (tile combos; Ctrl-C: stop with the best found)")
    try:
        with Interrupt() as ctrl_c:
            result = search(workload, arch, objective=objective, top=top, then=then,
                            tolerance=tolerance, progress=cb, time_limit=time_limit,
                            stop=ctrl_c.requested, **constraints)
        if plot:
            front = result.pareto("traffic", "latency")
    finally:
        if bar is not None:
            bar.stop()
    if as_json:
        click.echo(result.to_json())
    else:
        print_result(result, wide)
    if plot:
        _plot(result, front, plot)
        click.echo(f"Pareto front ({len(front)} points) written to {plot}")
    if verify:
        return _verify(result)
    return 0


def _verify(result) -> int:
    """Execute the best mapping tile by tile (random inputs, seed 0) against the reference."""
    from .run import checked_run_size, verify_with_progress

    w, m = result.workload, result.best.mapping
    size = checked_run_size(w, m, result.arch, False, "save the solution and run `tilewise run "
                            "--force` on it, or `tilewise run --backend iree`")
    report = verify_with_progress(w, m, result.arch, 0, size)
    for o in report.outputs:
        err = "exact" if o.tolerance == 0 else f"max rel error {o.max_rel:.3g} (tolerance {o.tolerance:.1e})"
        click.echo(f"verify {o.name} {o.dtype} {'x'.join(map(str, o.shape))}: max |error| "
                   f"{o.max_abs:.3g}, {err}: {'PASS' if o.passed else 'FAIL'}", err=not o.passed)
    click.echo("verify: PASS" if report.passed else "verify: FAIL")
    return 0 if report.passed else 1


def solution_row(rank: int, sol, workload, arch) -> list[str]:
    m = sol.mapping
    tiles = [" ".join(f"{d}{t}" for d, t in lv.tiles) for lv in m.levels]
    orders = " ".join("".join(lv.order) if all(len(d) == 1 for d in lv.order) else ",".join(lv.order)
                      for lv in m.levels[:-1])
    spatial = " ".join(f"{a}={s}" for a, s in (("rows", m.rows), ("cols", m.cols)) if s) or "—"
    db = " ".join(f"{lv.level}:{','.join(sorted(lv.double_buffer))}" for lv in m.levels
                  if lv.double_buffer) or "—"
    if m.levels[0].pack:
        db = ("" if db == "—" else db + " ") + "pack:" + ",".join(sorted(m.levels[0].pack))
    red = {d for op in workload.ops for d in op.reduction_dims}
    ksplit = []
    for d in sorted(red):
        if len(m.levels) > 1 and m.levels[1].sizes[d] < workload.sizes[d]:
            ksplit.append(f"{m.levels[1].level} {d}{m.levels[1].sizes[d]}")
        for axis, s in (("rows", m.rows), ("cols", m.cols)):
            if s and s.dim == d:
                ksplit.append(f"{axis} {d}{s.ways}")
    c = sol.cost
    moved = " ".join(format_size(sum(c.reads[lv].values()) + sum(c.writes[lv].values()), 3)
                     for lv in c.reads)
    return [str(rank), *tiles, orders, spatial, db, ", ".join(ksplit) or "—",
            f"{sol.latency_s * 1e6:,.2f}", f"{sol.xslowdown:.3f}", f"{c.utilization:.1%}", moved]


# The search table's columns after the per-level tiles: (name, priority, numeric); priority 0
# is always shown, higher numbers are dropped first on a narrow terminal (cli._tables).
_RESULT_COLUMNS = (("orders", 4, False), ("spatial", 1, False), ("double buffer", 5, False),
                   ("K split", 6, False), ("time µs", 0, True), ("× min", 2, True),
                   ("util", 3, True), ("bytes in/out per level", 7, False))


def print_result(result, wide: bool = False) -> None:
    """The top mappings as a table fitted to the terminal (``wide``: every column), then the
    search's stats line."""
    from ._tables import Column, print_table

    wl, arch = result.workload, result.arch
    by = result.objective + "".join(f", {k}" for k in result.then)
    tol = f" (within {result.tolerance:.4g} tied)" if result.tolerance else ""
    columns = [Column("#", 0, True), *(Column(lv.name) for lv in arch.levels),
               *(Column(*c) for c in _RESULT_COLUMNS)]
    rows = [solution_row(i, sol, wl, arch) for i, sol in enumerate(result.top, 1)]
    shown = _objective_column(result)
    if shown is not None:  # the ranked-by value beside the time
        at = 1 + len(arch.levels) + [c[0] for c in _RESULT_COLUMNS].index("time µs") + 1
        columns.insert(at, Column(shown[0], 0, True))
        for row, sol in zip(rows, result.top):
            row.insert(at, shown[1](sol))
    out = console()
    print_table(out, f"{wl}  on {arch.name}: top {len(result.top)} by {by}{tol}", columns, rows,
                wide)
    s = result.stats
    rej = ", ".join(f"{k} {v:,}" for k, v in s["rejected"].items()) or "none"
    out.print(f"compute-bound minimum {result.min_time_s * 1e6:,.2f} µs · tile combos "
              f"{s['tile_combos']:,} · branch-and-bound nodes {s['nodes']:,} (with every tile "
              f"fixed {s['examined_combos']:,}) · candidates bounded exactly {s['candidates']:,} "
              f"(ranked {s['ranked']:,}, valid {s['valid']:,}) · "
              f"rejected nodes: {rej} · passes {s['passes']} · {s['seconds']:.2f} s",
              soft_wrap=not out.is_terminal)  # word-wrapped to a terminal, one line in a file
    if s.get("timed_out") and not s.get("proven_optimal", True):
        why = ("interrupted (Ctrl-C)" if s.get("interrupted")
               else f"stopped at the time limit ({s['time_limit']:g} s)")
        out.print(f"[bold]not proven optimal[/]: {why}; "
                  f"no mapping has {result.objective} under {_metric_text(result.objective, s['lower_bound'])}, "
                  f"so the best is within {s['gap']:.1%} of the optimum",
                  soft_wrap=not out.is_terminal)
    elif not s.get("proven_optimal", True):
        out.print(f"[bold]not proven optimal[/]: {result.objective} was not stated monotone, so "
                  "these are the best of the latency optimum's top 200 ranked by it",
                  soft_wrap=not out.is_terminal)


def _objective_column(result):
    """``(header, text of a solution's value)`` for the objective a search ranked by, when it
    is not latency (the time column shows that), else None: 𝔽 (higher is better), off-chip or
    on-chip bytes, energy µJ, EDP J·s, or a custom expression's value."""
    obj = result.objective
    builtin = {"ratio": ("𝔽", lambda s: f"{s.ratio:.4f}"),
               "traffic": ("off-chip B", lambda s: f"{s.offchip_bytes:,}"),
               "space": ("on-chip B", lambda s: f"{s.space_bytes:,}"),
               "energy": ("energy µJ", lambda s: f"{s.energy_j * 1e6:,.3f}"),
               "edp": ("EDP J·s", lambda s: f"{s.edp:.4g}")}
    if obj == "latency":
        return None
    if obj in builtin:
        return builtin[obj]
    from ..search.custom import as_custom

    fn = as_custom(obj)
    value = lambda s: float(fn(s.latency_s, s.offchip_bytes,
                               math.nan if s.energy_j is None else s.energy_j, s.space_bytes,
                               math.inf if s.ratio == 0 else 1.0 / s.ratio))
    return obj, lambda s: f"{value(s):.4g}"


def _metric_text(objective: str, value: float) -> str:
    """A minimized objective's value in its unit (µs, bytes, J, J·s; 1/𝔽 for ratio)."""
    if objective == "latency":
        return f"{value * 1e6:,.2f} µs"
    if objective in ("traffic", "space"):
        return f"{value:,.0f} B"
    units = {"energy": " J", "edp": " J·s", "ratio": " (1/𝔽)"}
    return f"{value:.4g}{units.get(objective, '')}"


def _plot(result, front, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [s.offchip_bytes / 1e6 for s in front]
    ys = [s.latency_s * 1e6 for s in front]
    ax.step(xs, ys, where="post", marker="o")
    ax.axhline(result.min_time_s * 1e6, ls="--", color="gray", label="compute-bound minimum")
    ax.set_xlabel("off-chip traffic (MB)")
    ax.set_ylabel("latency (µs)")
    ax.set_title(f"{result.workload.name} on {result.arch.name}: Pareto front")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path, "--plot")
    plt.close(fig)


def _dtypes(workload) -> str:
    """The element types of a workload's operands, inputs first: ``i8→i32``."""
    names = []
    for op in workload.ops:
        for t in (*op.inputs, op.output):
            if t.dtype.name not in names:
                names.append(t.dtype.name)
    return "→".join(names)


def print_many(results, arch, objective: str, store: str, wide: bool = False) -> None:
    """One row per problem of ``search-many``: workload, dtypes, best mapping, time."""
    from ._tables import Column, print_table

    columns = [Column("workload"), Column("dtype"), Column("best mapping", 1),
               Column("time µs", 0, True), Column("× min", 2, True), Column("from store", 3)]
    rows = [[str(r.workload).split(":")[0], _dtypes(r.workload), str(r.best.mapping),
             f"{r.best.latency_s * 1e6:,.2f}", f"{r.best.xslowdown:.3f}",
             "yes" if r.cached else "no"] for r in results]
    print_table(console(), f"{len(results)} problems on {arch.name} by {objective} (store "
                f"{store})", columns, rows, wide)


def engine_options(f):
    """``--workers``, ``--engine``, ``--address`` (tilewise.search.engines)."""
    f = click.option("--address", default=None, metavar="HOST:PORT",
                     help="Ray cluster to join with --engine ray (default: start a local one)")(f)
    f = click.option("--engine", default="processes", show_default=True,
                     type=click.Choice(["processes", "ray"]),
                     help="local worker processes, or a Ray cluster (pip install tilewise[ray])")(f)
    return click.option("--workers", type=int, default=None,
                        help="worker processes, or CPUs of a local Ray cluster (default: all "
                             "cores)")(f)


def register(app: click.Group) -> None:
    """Add ``tilewise search`` (a group of workload subcommands) and ``tilewise search-many``."""
    app.add_command(workload_group(
        "search", "Exact search of the tiling space: optimum, top-k, Pareto front.", _OPTIONS, _run,
        rated_default=True))

    @app.command(name="search-many")
    @click.argument("problems", type=click.Path(dir_okay=False))
    @click.option("--store", default="solutions.sqlite", show_default=True,
                  help="SQLite solution store (finished problems are not recomputed)")
    @engine_options
    @click.option("--json", "as_json", is_flag=True, help="print all results as JSON")
    @click.option("--wide", is_flag=True, help="show every column of the table even when the "
                  "terminal is narrower")
    def search_many_command(problems, store, workers, engine, address, as_json, wide):
        """Solve every problem of a YAML problem list in worker processes."""
        import json

        from ..arch.loader import load_arch
        from ..search.many import load_problems, search_many

        spec = load_problems(problems)
        arch = load_arch(spec["arch"])
        out = search_many(spec["problems"], arch, objective=spec["objective"], top=spec["top"],
                          workers=workers, store=store, then=spec["then"], engine=engine,
                          address=address,
                          tolerance=spec["tolerance"], **spec["constraints"])
        if as_json:
            click.echo(json.dumps([dict(r.to_dict(), cached=r.cached) for r in out]))
            return
        print_many(out, arch, spec["objective"], store, wide)
