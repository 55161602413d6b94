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
        """Code from a tiled workload: `emit mlir` (IREE, this CPU)."""

    emit_group.add_command(workload_group(
        "mlir", "The MLIR module (func.func, linalg.fill + the linalg op, IREE's "
        "compilation_info with the mapping's tiles) that `tilewise run --backend iree` compiles.",
        _OPTIONS, _run))
