"""``tilewise run solution.json``: execute a mapping numerically and check it against the reference."""

from __future__ import annotations

import click

from ._util import console


def register(app: click.Group) -> None:
    """Add ``run`` to the root click group."""

    @app.command("run")
    @click.argument("solution", type=click.Path(dir_okay=False))
    @click.option("--seed", type=int, default=None, help="Seed of the random inputs (default: the file's, else 0).")
    def run(solution: str, seed: int | None) -> int:
        """Execute SOLUTION (JSON: workload, arch, mapping) tile by tile and compare every output
        with the plain numpy reference: max error per output, PASS/FAIL (exit 1 on FAIL).

        Schema: {"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2" |
        "my.yaml" | {spec}, "mapping": "<text form>" | {Mapping.to_json}, "seed": 0}.
        """
        from rich.table import Table

        from ..arch.loader import load_arch
        from ..executor.interpreter import verify
        from ..executor.solution import SolutionFile

        sol = SolutionFile.load(solution)
        seed = sol.seed if seed is None else seed
        if seed < 0:
            raise click.BadParameter(f"{seed} must be >= 0", param_hint="--seed")
        report = verify(sol.workload, sol.mapping, seed=seed, arch=load_arch(sol.arch))
        out = console()
        arch_name = sol.arch if isinstance(sol.arch, str) else sol.arch.name
        out.print(f"{sol.workload}\narch {arch_name}: {sol.mapping}\ninputs: random, seed {seed}", markup=False)
        table = Table(title="executed vs reference")
        for col in ("output", "dtype", "shape", "max |error|", "max rel error", "tolerance", "result"):
            table.add_column(col, justify="left" if col in ("output", "dtype", "result") else "right")
        for o in report.outputs:
            table.add_row(o.name, o.dtype, "x".join(map(str, o.shape)), f"{o.max_abs:.3g}",
                          f"{o.max_rel:.3g}", "exact" if o.tolerance == 0 else f"{o.tolerance:.1e}",
                          "PASS" if o.passed else "FAIL")
        out.print(table)
        out.print("PASS" if report.passed else "FAIL")
        return 0 if report.passed else 1
