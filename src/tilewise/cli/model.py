"""``tilewise evaluate``: the cost of one mapping, as tables or JSON, optionally proven by simulation.

One subcommand per workload kind (the parameters of the registry :mod:`tilewise.ir.kinds`)::

    tilewise evaluate gemm --m 512 --n 768 --k 768 --arch aie-4x2 \\
        --mapping "ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk | core[m64 n64 k128] db:A,B ; rows=n4 cols=m2"

prints the footprint per level against its capacity, the bytes moved per level and tensor, the
link times and seed 003's 𝔽, then compute cycles, latency and utilization. ``--json`` prints
the same numbers as one JSON object (bytes, cycles, seconds; an unbounded capacity is null).
``--simulate`` also walks the nest tile by tile (:func:`tilewise.simulate`, plain Python:
small problems or large tiles) and says whether every count agrees; a disagreement exits 1.
A mapping that is malformed, illegal or over a level's capacity is one ``error:`` line, exit 2.
"""

from __future__ import annotations

import json
import math

import click

from ._util import console, first_run_notice
from ._workload import workload_group


def register(app: click.Group) -> None:
    """Add ``tilewise evaluate`` to the root click group."""
    options = [
        click.option("--arch", "arch_spec", required=True,
                     help="architecture: a preset name (tilewise arch list) or a YAML file"),
        click.option("--mapping", "mapping_text", required=True,
                     help="the mapping's text form, e.g. \"ddr[m512 n768 k768] mnk | ... ; rows=n4\""),
        click.option("--json", "as_json", is_flag=True, help="print one JSON object instead of tables"),
        click.option("--simulate", is_flag=True,
                     help="also walk the loop nest tile by tile and check that every count agrees"),
    ]
    app.add_command(workload_group(
        "evaluate", "Cost of one mapping of a workload on an architecture (tables or --json).",
        options, _run, rated_default=True))


def _run(workload, arch_spec: str, mapping_text: str, as_json: bool, simulate: bool) -> int:
    from ..arch.loader import load_arch
    from ..mapping import Mapping
    from ..model.cost import evaluate

    arch = load_arch(arch_spec, "--arch")
    mapping = Mapping.parse(mapping_text)
    first_run_notice()
    cost = evaluate(workload, arch, mapping)
    mismatches = None
    if simulate:
        from ..simulation.trace import simulate as walk_and_count

        mismatches = _compare(cost, walk_and_count(workload, arch, mapping))
    if as_json:
        out = {"workload": str(workload), "arch": arch.name, "mapping": str(mapping),
               "cost": _jsonable(cost.__dict__)}
        if mismatches is not None:
            out["simulation_agrees"] = not mismatches
            out["mismatches"] = mismatches
        click.echo(json.dumps(out, indent=2))
    else:
        _print(workload, arch, mapping, cost, mismatches)
    return 1 if mismatches else 0


def _compare(cost, trace) -> list[str]:
    """Fields where the model and the simulation differ (empty: they agree)."""
    pairs = [("reads", cost.reads, trace.reads), ("writes", cost.writes, trace.writes),
             ("reloads", cost.reloads, trace.reloads), ("fills", cost.fills, trace.fills),
             ("drains", cost.drains, trace.drains),
             ("fill_bds", cost.fill_bds, _nonempty(trace.fill_bds)),
             ("drain_bds", cost.drain_bds, _nonempty(trace.drain_bds)),
             ("footprint", cost.footprint, trace.peak),
             ("steps", cost.steps, trace.steps),
             ("padded_points", cost.padded_points, trace.padded_points),
             ("useful_points", cost.useful_points, trace.useful_points)]
    return [f"{name}: model {model} != simulation {sim}" for name, model, sim in pairs if model != sim]


def _nonempty(table: dict) -> dict:
    return {level: row for level, row in table.items() if row}


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def _bytes(n: float) -> str:
    """Bytes with thousands separators; an unbounded capacity is ``unbounded``."""
    return "unbounded" if math.isinf(n) else f"{int(n):,}"


def _seconds(s: float) -> str:
    if s == 0:
        return "0"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= scale:
            return f"{s / scale:.3f} {unit}"
    return f"{s:.3e} s"


def _traffic_table(cost, levels):
    """Bytes and transfers per level and tensor, and energy where the arch gives numbers."""
    from rich.table import Table

    parts = cost.energy_breakdown
    traffic = Table(title="traffic (bytes and transfers into / out of each level)")
    cols = ["level", "tensor", "reads", "writes", "of which reloads", "transfers in/out"]
    for col in cols + (["energy µJ"] if parts else []):
        traffic.add_column(col, justify="left" if col in ("level", "tensor") else "right")
    for name in levels[1:]:
        for t in dict.fromkeys([*cost.reads[name], *cost.writes[name]]):
            row = [name, t, _bytes(cost.reads[name].get(t, 0)), _bytes(cost.writes[name].get(t, 0)),
                   _bytes(cost.reloads[name].get(t, 0)),
                   f"{_count(cost.fills, cost.fill_bds, name, t)} / "
                   f"{_count(cost.drains, cost.drain_bds, name, t)}"]
            if parts:
                row.append(f"{parts.get(name, {}).get(t, 0.0) * 1e6:,.3f}")
            traffic.add_row(*row)
    for t, p in cost.pack.items():  # pack / unpack passes (bytes read + written, seconds)
        row = [f"{levels[0]} pack pass", t, _bytes(p["bytes"]), "", "", _seconds(p["s"])]
        traffic.add_row(*row, *([f"{(p['j'] or 0.0) * 1e6:,.3f}"] if parts else []))
    if parts:
        traffic.add_row("compute", "", "", "", "", "", f"{parts['compute'] * 1e6:,.3f}")
    return traffic


def _count(transfers: dict, bds: dict, level: str, tensor: str) -> str:
    """Transfers of ``tensor`` into or out of ``level``, with their buffer descriptors where
    they are more (the fixed per-transfer cost is charged per BD)."""
    n = transfers[level].get(tensor, 0)
    b = bds.get(level, {}).get(tensor, n) if level in bds else n
    return f"{n:,}" if b == n else f"{n:,} ({b:,} BDs)"


def _pack_lines(workload, arch, mapping) -> list[str]:
    """Each packed tensor's layout at the outermost level in MLIR's and XLA's notation: packed
    by its tile at the first level below that keeps it (:mod:`tilewise.model.contiguity`)."""
    from ..layout.convert import pack_to_xla
    from ..layout.pack import pack_op_text, verify
    from ..model.batch import stated

    m = stated(workload, arch, mapping)
    lines = []
    for name in sorted(m.levels[0].pack):
        t = workload.tensor(name)
        c0 = next((k for k in range(1, len(m.levels)) if name not in m.levels[k].bypass),
                  len(m.levels) - 1)
        tiles = [min(m.levels[c0].sizes[ax.dims[0]], n) for ax, n in zip(t.axes, t.shape)]
        packing = verify(t.shape, tuple(range(len(tiles))), tiles)
        op = pack_op_text(packing, t.dtype.mlir_name, 0 if packing.needs_padding else None)
        lines.append(f"layout {name}: packed by its {m.levels[c0].level} tile, XLA "
                     f"{pack_to_xla(t.shape, t.dtype, packing.inner_dims_pos, tiles, ())}; {op}")
    return lines


def _print(workload, arch, mapping, cost, mismatches) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    out.print(f"[bold]{escape(str(workload))}[/bold] on [bold]{escape(arch.name)}[/bold]")
    from ..model.batch import stated

    out.print(f"mapping: {escape(str(stated(workload, arch, mapping)))}")
    for line in _pack_lines(workload, arch, mapping):
        out.print(escape(line))
    levels = list(cost.footprint)
    memory = Table(title="levels (bytes per instance; link l joins level l to its parent)")
    for col in ("level", "footprint B", "capacity B", "used", "link time", "𝔽"):
        memory.add_column(col, justify="left" if col == "level" else "right")
    for i, name in enumerate(levels):
        cap = cost.capacity[name]
        ratio = cost.ratio.get(name, math.inf)
        memory.add_row(name, _bytes(cost.footprint[name]), _bytes(cap),
                       "-" if math.isinf(cap) else f"{cost.footprint[name] / cap:.1%}",
                       _seconds(cost.transfer_s[name]) if i else "-",
                       ("inf" if math.isinf(ratio) else f"{ratio:.3f}") if i else "-")
    out.print(memory)
    out.print(_traffic_table(cost, levels))
    summary = Table(title="compute and time", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    for op, steps in cost.steps.items():
        summary.add_row(f"op {op}: innermost steps per core", f"{steps:,}")
        summary.add_row(f"op {op}: useful / padded points",
                        f"{cost.useful_points[op]:,} / {cost.padded_points[op]:,}")
    summary.add_row("compute cycles (busiest core)", f"{cost.compute_cycles:,.0f}")
    summary.add_row("compute time", _seconds(cost.compute_s))
    summary.add_row("off-chip bytes", _bytes(cost.offchip_bytes))
    summary.add_row("latency", _seconds(cost.latency_s))
    summary.add_row("utilization", f"{cost.utilization:.1%}")
    for what, seconds in cost.fixed_s.items():
        label = ("kernel calls" if what == "kernel calls" else
                 f"BDs into {what}" if what in cost.fill_bds or what in cost.drain_bds else
                 f"transfers into {what}")
        summary.add_row(f"fixed cost: {label}",
                        f"{_seconds(seconds)} ({seconds / cost.latency_s:.1%} of latency)")
    if cost.energy_j is not None:
        summary.add_row("energy", f"{cost.energy_j * 1e6:,.3f} µJ")
    out.print(summary)
    if mismatches is not None:
        if mismatches:
            out.print("[red]simulation disagrees:[/red]")
            for m in mismatches:
                out.print(f"  {escape(m)}")
        else:
            out.print("simulation agrees: reads, writes, reloads, transfers, BDs, footprint, "
                      "steps and points are equal")
