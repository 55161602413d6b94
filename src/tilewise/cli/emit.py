"""``tilewise emit mlir OP ...``: the MLIR module IREE compiles for a tiled workload.

One subcommand per operator (``_workload.py``; IREE takes gemm, batched-gemm, conv2d and
einsum). The mapping is ``--mapping TEXT``, else the best of ``tilewise search`` on ``--arch``
(default ``host``, this machine); ``--default`` emits the op without a compilation_info (IREE's
own tiling)::

    tilewise emit mlir gemm --m 256 --n 384 --k 512 --dtype f32
    tilewise emit mlir conv2d --n 1 --c 64 --h 28 --w 28 --k 64 --r 3 --s 3 --padding 1 --dtype f32 -o conv.mlir
"""

from __future__ import annotations

import click

from ..errors import TilewiseError
from ._util import output_path
from ._workload import workload_group

_OPTIONS = [
    click.option("--arch", default="host", show_default=True,
                 help="preset name, YAML file or host (this machine: `tilewise arch host`)"),
    click.option("--mapping", default=None,
                 help="the mapping's text form (default: the best of `tilewise search` on --arch)"),
    click.option("--default", "iree_default", is_flag=True,
                 help="no compilation_info: IREE picks its own tiling"),
    click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
                 help="write the module here (default: stdout)"),
]


def best_mapping(workload, arch, mapping: str | None):
    """``mapping`` parsed, or the search's best mapping of ``workload`` on ``arch``."""
    from ..mapping import as_mapping
    from ..search.optimize import search

    return as_mapping(mapping) if mapping else search(workload, arch, top=1).best.mapping


def _run(workload, arch, mapping, iree_default, output):
    from ..arch.loader import load_arch
    from ..emit.iree import host_lanes
    from ..emit.forms import linalg_form
    from ..emit.mlir import emit_mlir

    output = output_path(output, "--output")  # before any work
    linalg_form(workload)  # an op IREE is not given: one error line before any search
    if iree_default:
        emitted = emit_mlir(workload)
    else:
        arch = load_arch(arch, "--arch")
        emitted = emit_mlir(workload, arch, best_mapping(workload, arch, mapping), host_lanes())
    if output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(emitted.text)
        except OSError as e:
            raise TilewiseError(f"--output {output!r}: writing failed: {e.strerror or e}") from None
        click.echo(f"wrote {output}")
    else:
        click.echo(emitted.text, nl=False)


def register(app: click.Group) -> None:
    """Add ``emit mlir`` to the root click group."""

    @app.group(name="emit")
    def emit_group() -> None:
        """Code from a tiled workload: `emit mlir` (IREE, this CPU), `emit dma` (AIE DMA programs)."""

    emit_group.add_command(_dma_command())
    emit_group.add_command(workload_group(
        "mlir", "The MLIR module (func.func, linalg.fill + the linalg op, IREE's "
        "compilation_info with the mapping's tiles) that `tilewise run --backend iree` compiles.",
        _OPTIONS, _run))


def _dma_command() -> click.Command:
    @click.command(name="dma")
    @click.argument("solution", type=click.Path(exists=True, dir_okay=False))
    @click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                  help="write one record per buffer descriptor here")
    @click.option("--run", is_flag=True,
                  help="execute the program in the DMA simulator: result against the numpy "
                       "reference, bytes moved against the model's")
    @click.option("--png", type=click.Path(dir_okay=False), default=None,
                  help="heat map of one transfer (with --tensor and --link)")
    @click.option("--tensor", default=None, help="tensor of the --png picture")
    @click.option("--link", default=None, help="link of the --png picture, e.g. memtile->core")
    @click.option("--order", is_flag=True, help="--png: colour by place in the move's stream")
    def dma(solution, json_path, run, png, tensor, link, order):
        """The AIE data-movement program of SOLUTION (a solution JSON: `tilewise search ...
        --save`): per tile, direction and channel the buffer descriptors (sizes, strides in
        32-bit words, innermost last) within the arch's DMA limits."""
        import json

        from ..emit.dma.api import emit_dma
        from ..emit.dma.listing import listing, to_records
        from ..executor.solution import SolutionFile

        sol = SolutionFile.load(solution)
        program = emit_dma(sol)
        click.echo(listing(program))
        if json_path:
            with open(json_path, "w", encoding="utf-8") as f:
                json.dump(to_records(program), f)
            click.echo(f"wrote {json_path}")
        if png:
            from ..emit.dma.render import render_transfer
            from ..errors import DmaError

            if not tensor or not link:
                raise DmaError("--png needs --tensor NAME and --link SRC->DST (e.g. memtile->core)")
            render_transfer(program, tensor, link, png, order)
            click.echo(f"wrote {png}")
        if run:
            click.echo("")
            click.echo(_run_report(program, sol.seed))

    return dma


def _run_report(program, seed: int) -> str:
    """The simulator's result against the reference and its bytes against the model's."""
    from ..emit.dma.simulator import run_program
    from ..executor.interpreter import compare, magnitude
    from ..executor.reference import check_inputs, random_inputs, reference
    from ..model.cost import evaluate

    w = program.workload
    data = check_inputs(w, random_inputs(w, seed))
    done = run_program(program, data)
    lines = [str(compare(w, done.outputs, reference(w, data), magnitude(w, data)))]
    cost = evaluate(w, program.arch, program.mapping)
    for level in program.levels[1:]:
        for kind, model, moved in (("in", cost.reads, done.reads), ("out", cost.writes, done.writes)):
            for t, b in sorted(model.get(level, {}).items()):
                got = moved.get(level, {}).get(t, 0)
                if b or got:
                    lines.append(f"{level:>8} {kind:<3} {t:<4} moved {got:>10} B, model {b:>10} B "
                                 + ("equal" if got == b else "DIFFERENT"))
    for i, level in enumerate(program.levels[1:], 1):
        for kind, table, inward in (("into", cost.fills, True), ("out of", cost.drains, False)):
            moves = sum(1 for mv in program.moves
                        if (mv.kind != "store") == inward and mv.link[1 if inward else 0] == i)
            model = sum(table.get(level, {}).values())
            if moves or model:
                lines.append(f"transfers {kind} {level}: {moves} moves, model {model} "
                             + ("equal" if moves == model else "DIFFERENT"))
    return "\n".join(lines)
