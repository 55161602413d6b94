"""``tilewise run solution.json``: execute a mapping numerically and check it against the reference.

``--backend numpy`` (default) walks the mapping tile by tile (:mod:`tilewise.executor`);
``--backend iree`` compiles it with IREE for this CPU (:mod:`tilewise.emit.iree`), checks the
result against the reference and times it against IREE's default tiling of the same op.
"""

from __future__ import annotations

from contextlib import nullcontext

import click

from ..errors import TilewiseError
from . import interrupt
from ._util import console, progress


def checked_run_size(workload, mapping, arch, force: bool, hint: str):
    """The run's size, or one TilewiseError when it is above the executor's limits and not
    ``force``d (``hint``: what to pass instead)."""
    from ..executor.interpreter import run_size

    size = run_size(workload, mapping, arch)
    why = size.refusal()
    if why and not force:
        raise TilewiseError(f"executing {workload.name} tile by tile: {why}; {hint}")
    return size


def verify_with_progress(workload, mapping, arch, seed: int, size):
    """``verify`` with a progress bar on a terminal (tiles done of ``size.tiles``, with rich's
    time-remaining estimate)."""
    from ..executor.interpreter import verify

    bar, update = progress(f"executing {size.tiles:,} tiles" if size.tiles else "executing")
    try:
        # with a bar, its callback (and the line below) raise Ctrl-C from ordinary code
        with interrupt.deferred() if update is not None else nullcontext():
            report = verify(workload, mapping, seed=seed, arch=arch,
                            progress=None if update is None else
                            (lambda done: update(done, size.tiles)))
        interrupt.check()  # Ctrl-C during the reference: no report
        return report
    finally:
        if bar is not None:
            bar.stop()


def register(app: click.Group) -> None:
    """Add ``run`` to the root click group."""

    @app.command("run")
    @click.argument("solution", type=click.Path(dir_okay=False))
    @click.option("--seed", type=int, default=None, help="Seed of the random inputs (default: the file's, else 0).")
    @click.option("--backend", type=click.Choice(["numpy", "iree"]), default="numpy", show_default=True,
                  help="numpy: the tile-by-tile executor; iree: compile with IREE for this CPU, "
                       "check, and time against IREE's default tiling")
    @click.option("--rounds", type=int, default=20, show_default=True,
                  help="--backend iree: timed calls of each program (interleaved); the median is shown")
    @click.option("--threads", type=click.Choice(["all", "1"]), default="all", show_default=True,
                  help="--backend iree: all cores (IREE's local-task driver) or one thread "
                       "(local-sync: steadier timings on a busy machine)")
    @click.option("--force", is_flag=True,
                  help="execute even above the executor's limits (250,000 core tiles, about 100 "
                       "s; 2 GiB of operands)")
    def run(solution: str, seed: int | None, backend: str, rounds: int, threads: str,
            force: bool) -> int:
        """Execute SOLUTION (JSON: workload, arch, mapping) tile by tile (or compiled by IREE:
        --backend iree) and compare every output with the plain numpy reference: max error per
        output, PASS/FAIL (exit 1 on FAIL).

        Schema: {"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2" |
        "my.yaml" | {spec}, "mapping": "<text form>" | {Mapping.to_json}, "seed": 0}.
        """
        from ..arch.loader import load_arch
        from ..executor.solution import SolutionFile

        sol = SolutionFile.load(solution)
        seed = sol.seed if seed is None else seed
        if seed < 0:
            raise click.BadParameter(f"{seed} must be >= 0", param_hint="--seed")
        if backend == "iree":
            if rounds < 1:
                raise click.BadParameter(f"{rounds} must be >= 1", param_hint="--rounds")
            return run_iree(sol, seed, rounds, "local-sync" if threads == "1" else "local-task")
        arch = load_arch(sol.arch)
        size = checked_run_size(sol.workload, sol.mapping, arch, force,
                                "pass --force to run it anyway, or --backend iree")
        report = verify_with_progress(sol.workload, sol.mapping, arch, seed, size)
        out = console()
        arch_name = sol.arch if isinstance(sol.arch, str) else sol.arch.name
        out.print(f"{sol.workload}\narch {arch_name}: {sol.mapping}\ninputs: random, seed {seed}", markup=False)
        print_checks(report, "executed vs reference")
        return 0 if report.passed else 1


def print_checks(report, title: str) -> None:
    """One row per output: error against the reference, tolerance, PASS/FAIL; then the verdict."""
    from rich.table import Table

    out = console()
    table = Table(title=title)
    for col in ("output", "dtype", "shape", "max |error|", "max rel error", "tolerance", "result"):
        table.add_column(col, justify="left" if col in ("output", "dtype", "result") else "right")
    for o in report.outputs:
        table.add_row(o.name, o.dtype, "x".join(map(str, o.shape)), f"{o.max_abs:.3g}",
                      f"{o.max_rel:.3g}", "exact" if o.tolerance == 0 else f"{o.tolerance:.1e}",
                      "PASS" if o.passed else "FAIL")
    out.print(table)
    out.print("PASS" if report.passed else "FAIL")


def run_iree(sol, seed: int, rounds: int, driver: str = "local-task") -> int:
    """Compile ``sol`` with its mapping and with IREE's default tiling, check both against the
    reference, time them interleaved; 0 when both pass."""
    from ..emit.iree import check, compile, time_interleaved
    from ..executor.reference import random_inputs

    tiled = compile(sol.workload, sol.arch, sol.mapping, driver=driver)
    default = compile(sol.workload, driver=driver)
    inputs = random_inputs(sol.workload, seed)
    out = console()
    out.print(tiled.emitted.text.split("#compilation")[0].rstrip(), markup=False)
    out.print(f"lowering_config: {tiled.emitted.config.attr()}\npipeline: {tiled.emitted.pipeline}"
              f"\ninputs: random, seed {seed}", markup=False)
    reports = [check(sol.workload, p, inputs) for p in (tiled, default)]
    print_checks(reports[0], "IREE, tilewise tiling, vs reference")
    out.print(f"IREE default tiling vs reference: {'PASS' if reports[1].passed else 'FAIL'}")
    times = time_interleaved([tiled, default], inputs, rounds)
    out.print(f"compile: {tiled.compile_s:.2f} s (IREE default {default.compile_s:.2f} s)\n"
              f"median of {rounds} interleaved runs: tilewise {times[0] * 1e6:,.1f} µs, IREE default "
              f"{times[1] * 1e6:,.1f} µs; speed tilewise / default {times[1] / times[0]:.2f}x")
    return 0 if all(r.passed for r in reports) else 1
