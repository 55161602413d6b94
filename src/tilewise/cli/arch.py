"""``tilewise arch list``, ``show NAME|FILE [--yaml]``, ``host`` and ``calibrate``: machine
descriptions.

``list`` tabulates the shipped presets; ``show`` prints one spec (a preset name or a YAML file):
its levels, array, compute, alignment and, for every number that carries a comment in the YAML,
that comment (where the number comes from). ``show --yaml`` prints the YAML file itself, comments
included. ``host`` writes the preset of this machine (:mod:`tilewise.arch.host`) that
``--arch host`` reads; ``calibrate`` fits a preset's rates to measured runs
(:mod:`tilewise.emit.calibrate`). The library is imported inside the commands so ``tilewise --help`` stays fast.
"""

from __future__ import annotations

from typing import Mapping

import click

from ._util import console


def register(app: click.Group) -> None:
    """Add ``tilewise arch list``, ``show``, ``host`` and ``calibrate`` to the root group."""

    @app.group(name="arch")
    def arch_group() -> None:
        """Machine descriptions: memory levels, core array, compute, alignment."""

    @arch_group.command(name="list")
    def list_command() -> None:
        """List the shipped presets with their peak i8 MAC rate."""
        from ..arch.loader import load_preset, preset_names

        print_preset_table([load_preset(name) for name in preset_names()])

    @arch_group.command(name="show")
    @click.argument("spec", metavar="NAME|FILE")
    @click.option("--yaml", "as_yaml", is_flag=True,
                  help="Print the YAML file itself (a preset's file: its source comments too).")
    def show_command(spec: str, as_yaml: bool) -> None:
        """Show a preset or a YAML spec file: levels, array, compute, alignment, sources."""
        from pathlib import Path

        from ..arch.host import host_path
        from ..arch.loader import HOST, load_arch, preset_names, preset_path

        arch = load_arch(spec)  # validates first: a bad file is an error, not a listing
        if as_yaml:
            path = (preset_path(spec) if spec in preset_names() else
                    host_path() if spec == HOST else Path(spec))
            click.echo(path.read_text(encoding="utf-8"), nl=False)
        else:
            print_arch(arch)


    @arch_group.command(name="host")
    @click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
                  help="Write the YAML here instead of the cache file that --arch host reads.")
    @click.option("--all-levels", is_flag=True,
                  help="Keep the shared caches (L3) as levels (slower search: 4 levels).")
    @click.option("--seconds", type=float, default=0.05, show_default=True,
                  help="Time per copy-benchmark run (best of 3, per level).")
    def host_command(output: str | None, all_levels: bool, seconds: float) -> None:
        """Describe this CPU (sysfs, /proc/cpuinfo, a copy benchmark per cache level) and write
        its preset: by default to the cache file that `--arch host` reads
        ($TILEWISE_CACHE_DIR, else $XDG_CACHE_HOME/tilewise, else ~/.cache/tilewise)."""
        from ..arch.host import write_host
        from ..arch.loader import load_file

        if not seconds > 0:
            raise click.BadParameter(f"{seconds} must be > 0", param_hint="--seconds")
        path = write_host(output, seconds, all_levels)
        console().print(f"wrote {path}", markup=False)
        print_arch(load_file(path))


    @arch_group.command(name="calibrate")
    @click.argument("measured", type=click.Path(dir_okay=False))
    @click.option("--arch", default="host", show_default=True,
                  help="the preset the measured mappings were made for")
    @click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
                  help="write the calibrated preset (YAML) here")
    def calibrate_command(measured: str, arch: str, output: str | None) -> None:
        """Fit ARCH's compute rates, link bandwidths and per-call overhead to the measured runs
        in MEASURED (the JSON of benchmarks/hardware.py) by least squares on every other shape;
        print the rank correlation (model vs measured) of the held-out shapes before and after."""
        from ..arch.loader import arch_to_yaml, load_arch
        from ..emit.calibrate import calibrate, read_measurements

        result = calibrate(load_arch(arch, "--arch"), read_measurements(measured))
        print_calibration(result)
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(f"# {result.arch.name}: `tilewise arch calibrate {measured}` "
                        f"(least squares on {len(result.train)} shapes)\n")
                f.write(arch_to_yaml(result.arch))
            console().print(f"wrote {output}", markup=False)


def print_calibration(result) -> None:
    """The fitted scales, the calibrated rates and the held-out rank correlations."""
    import numpy as np
    from rich.table import Table

    f, out = result.fit, console()
    out.print("fit (measured ≈ Σ scale × model column): "
              + ", ".join([f"compute {k} ×{v:.3g}" for k, v in f.compute.items()]
                          + [f"link {k} ×{v:.3g}" for k, v in f.links.items()]
                          + [f"{f.call_cycles:.3g} cycles per innermost tile",
                             f"{f.constant_s * 1e6:.3g} µs per run"]), markup=False)
    c = result.arch.compute
    out.print("calibrated: macs_per_cycle " + ", ".join(f"{k}: {v}" for k, v in c.macs_per_cycle.items())
              + "; " + ", ".join(f"{lv.name} {lv.read_bandwidth / 1e9:.3g} GB/s"
                                 for lv in result.arch.levels[1:])
              + f"; call_overhead {c.call_overhead_cycles:.3g} cycles", markup=False)
    for title, rows in (("fitted shapes", result.train), ("held-out shapes", result.held_out)):
        table = Table(title=f"Spearman model vs measured, {title}")
        for col in ("shape", "runs", "before", "after"):
            table.add_column(col, justify="left" if col == "shape" else "right")
        for r in rows:
            table.add_row(r.shape, str(r.runs), f"{r.before:.2f}", f"{r.after:.2f}")
        med = [[getattr(r, k) for r in rows if np.isfinite(getattr(r, k))]
               for k in ("before", "after")]
        table.add_row("median", "", *(f"{np.median(m):.2f}" if m else "—" for m in med))
        out.print(table)


def _si(value: float, unit: str) -> str:
    """``2.048e12, "MAC/s"`` -> ``"2.05 TMAC/s"``."""
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def print_preset_table(archs) -> None:
    """One row per arch: name, levels, array, cores, peak i8 MAC/s, description."""
    from rich.table import Table

    table = Table(title="architecture presets (tilewise arch show NAME)")
    for column in ("name", "levels (outer → inner)", "array", "cores", "peak i8", "description"):
        table.add_column(column, justify="right" if column in ("cores", "peak i8") else "left",
                         overflow="fold")
    for arch in archs:
        array = f"{arch.array.rows}×{arch.array.cols} {arch.array.level}" if arch.array else "—"
        peak = (_si(arch.peak_macs_per_second("i8"), "MAC/s")
                if "i8" in arch.compute.macs_per_cycle else "—")
        table.add_row(arch.name, " → ".join(lv.name for lv in arch.levels), array,
                      str(arch.cores), peak, arch.description)
    console().print(table)


_LEAF_MAPPINGS = ("macs_per_cycle", "vector_ops_per_cycle", "alignment")


def _table_text(table) -> str:
    """``m: 16, c_in: {i8: 8, default: 16}`` (a rate or alignment table on one line)."""
    return ", ".join(f"{k}: {{{_table_text(v)}}}" if isinstance(v, Mapping) else f"{k}: {v}"
                     for k, v in table.items())


def _flat(value, path: str = "") -> dict[str, str]:
    """``arch_to_dict()`` flattened to key path -> display text (rate and alignment tables on one line)."""
    if isinstance(value, dict) and not path.endswith(_LEAF_MAPPINGS):
        out: dict[str, str] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{path}.{key}" if path else key))
        return out
    if isinstance(value, list) and value and isinstance(value[0], dict):
        out = {}
        for i, item in enumerate(value):
            out.update(_flat(item, f"{path}[{i}]"))
        return out
    if isinstance(value, dict):
        return {path: _table_text(value)}
    if isinstance(value, list):
        return {path: ", ".join(map(str, value)) or "(none)"}
    return {path: str(value).lower() if isinstance(value, bool) else str(value)}


def print_arch(arch) -> None:
    """Rich tables for one arch: levels, array, compute, alignment, and the source of each number."""
    from rich.table import Table

    from ..arch.units import format_bandwidth, format_frequency, format_size

    out = console()
    out.print(f"[bold]{arch.name}[/bold]: {arch.description}" if arch.description
              else f"[bold]{arch.name}[/bold]")
    levels = Table(title="memory levels, outermost first (sizes per instance; bandwidth per "
                         "channel, parent → level)")
    for column in ("#", "level", "capacity", "instances", "banks", "block", "read bw",
                   "write bw", "channels", "double buffer"):
        levels.add_column(column, justify="left" if column == "level" else "right",
                          overflow="fold")  # a narrow terminal wraps a cell, never cuts it
    for i, lv in enumerate(arch.levels):
        banks = (f"{lv.banks} × {format_size(lv.bank_bytes)}" if lv.bank_bytes else str(lv.banks))
        if lv.bank_granular:
            banks += " (whole banks)"
        link = i > 0
        capacity = format_size(lv.capacity_bytes) if lv.bounded else "unbounded"
        if lv.reserved:
            capacity = ", ".join([f"{k} {format_size(v)}" for k, v in lv.reserved]
                                 + ([f"shared {format_size(lv.shared_bytes)}"]
                                    if lv.shared_bytes else []))
        name = lv.name if lv.holds is None else f"{lv.name} (holds {', '.join(lv.holds)})"
        levels.add_row(
            str(i), name, capacity,
            str(lv.instances), banks, format_size(lv.block_bytes),
            format_bandwidth(lv.read_bandwidth) if link else "—",
            format_bandwidth(lv.write_bandwidth) if link else "—",
            str(lv.channels) if link else "—", "yes" if lv.double_buffer else "no")
    out.print(levels)
    if arch.array is not None:
        a = arch.array
        axes = [ax for ax, on in (("rows", a.broadcast_rows), ("cols", a.broadcast_cols)) if on]
        out.print(f"array: {a.rows} rows × {a.cols} cols of {a.level!r} = {a.cores} cores; "
                  f"broadcast along: {', '.join(axes) or 'none'}; "
                  f"reduce along cols: {'yes' if a.reduce_cols else 'no'}")
    else:
        out.print("array: none (1 core)")
    c = arch.compute
    compute = Table(title=f"compute per core at {format_frequency(c.clock_hz)} "
                          f"(peak: all {arch.cores} cores)")
    for column in ("dtype", "MACs/cycle", "peak MAC/s", "vector ops/cycle"):
        compute.add_column(column, justify="left" if column == "dtype" else "right",
                           overflow="fold")
    for name in list(c.macs_per_cycle) + [n for n in c.vector_ops_per_cycle
                                          if n not in c.macs_per_cycle]:
        macs = c.macs_per_cycle.get(name)
        compute.add_row(name, str(macs) if macs else "—",
                        _si(arch.peak_macs_per_second(name), "MAC/s") if macs else "—",
                        str(c.vector_ops_per_cycle.get(name, "—")))
    out.print(compute)
    out.print("alignment: " + (_table_text(arch.alignment) or "none"))
    _print_sources(arch, out)


def _print_sources(arch, out) -> None:
    from rich.table import Table

    if not arch.sources:
        return
    from ..arch.loader import arch_to_dict

    values = _flat(arch_to_dict(arch))
    for path in list(values):  # a spec may give read_/write_bandwidth where to_dict merges them
        if path.endswith(".bandwidth"):
            base = path[: -len("bandwidth")]
            values.setdefault(base + "read_bandwidth", values[path])
            values.setdefault(base + "write_bandwidth", values[path])
    table = Table(title="where the numbers come from (comments in the YAML)")
    for column in ("key", "value", "source"):
        table.add_column(column, overflow="fold")
    for path, text in arch.sources.items():
        if path in values:
            table.add_row(path, values[path], text)
    out.print(table)
