"""``tilewise layout``: show where each element of an XLA tiled layout lives in memory."""

from __future__ import annotations

import click

from ._util import console, output_path, parse_int_list

# Terminal colours cycled over first-level tiles (cells of one tile share a colour).
_PALETTE = ("cyan", "yellow", "green", "magenta", "blue", "red")


@click.command("layout")
@click.argument("shapes", nargs=-1, required=True, metavar="SHAPE...")
@click.option("--png", "png", type=click.Path(dir_okay=False), default=None,
              help="Also draw the layouts into this PNG file (tile borders, padding shaded).")
@click.option("--index", "index", default=None, metavar="I,J,...",
              help="Print the buffer offset of this logical element (for every SHAPE).")
@click.option("--mlir", is_flag=True,
              help="Print the equivalent tensor/linalg steps (transpose, collapse, linalg.pack) "
                   "as an MLIR function.")
@click.option("--max-rows", default=32, show_default=True, type=click.IntRange(min=1),
              help="Rows of the grid to print.")
@click.option("--max-cols", default=32, show_default=True, type=click.IntRange(min=1),
              help="Columns of the grid to print.")
def layout_cmd(shapes, png, index, mlir, max_rows, max_cols):
    """Print the grid of buffer offsets of each XLA SHAPE, e.g. "bf16[4,8]{1,0:T(2,4)(2,1)}".

    Rows are all logical dims but the minor-most (flattened), columns the minor-most dim; cells
    hold the element's offset in the buffer (elements), ·n marks padding at offset n, and | / -
    separate first-level tiles. A summary line gives the physical shape, buffer elements,
    padding and bytes.
    """
    from rich.text import Text

    from ..layout.convert import to_mlir
    from ..layout.render import render_png, text_segments
    from ..layout.xla import Shape

    png = output_path(png, "--png")  # before any work
    parsed = [Shape.parse(s) for s in shapes]
    idx = parse_int_list(index, "element index") if index is not None else None
    out = console()
    for k, shape in enumerate(parsed):
        if k:
            out.print()
        for line in text_segments(shape, max_rows, max_cols):
            text = Text()
            for seg, kind in line:
                style = ("bold" if kind == "head" else "dim" if kind in ("label", "sep", "pad")
                         else _PALETTE[kind % len(_PALETTE)])
                text.append(seg, style=style)
            text.rstrip()
            out.print(text)
        if idx is not None:
            out.print(f"offset of element {idx}: {shape.linear_index(idx)}")
        if mlir:
            out.print(to_mlir(shape), markup=False)
    if png:
        render_png(parsed, png)
        out.print(f"wrote {png}")


def register(app: click.Group) -> None:
    """Add ``tilewise layout`` to the root group."""
    app.add_command(layout_cmd)
