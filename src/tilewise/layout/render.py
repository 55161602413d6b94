"""Pictures of an XLA layout's memory order: a text grid of offsets and a matplotlib PNG.

The logical array is viewed in 2-D: columns are the minor-most logical dim, rows all other dims
flattened (labelled ``i,j`` for rank > 2). Each cell shows the buffer offset (in elements) of
that element. When the first tile applies to whole logical dims (no ``*``), the grid is extended
to the first tile's padded bounds, as in XLA's tiled-layout figures, and padding cells are marked
(``·14`` in text: a padding element at offset 14). Cells are grouped by first-level tile
(``|`` and ``-`` borders in text, colours and black borders in the PNG)::

    >>> print(render_text(Shape.parse("f32[3,5]{1,0:T(2,2)}")))
    f32[3,5]{1,0:T(2,2)}: buffer offset of each element (rows: dim 0, columns: dim 1; ·n = padding)
         0   1 |   2   3 |   4   5
    0    0   1 |   4   5 |   8  ·9
    1    2   3 |   6   7 |  10 ·11
      ---------+---------+--------
    2   12  13 |  16  17 |  20 ·21
    3  ·14 ·15 | ·18 ·19 | ·22 ·23
    physical f32[2,3,2,2]: 24 elements = 15 + 9 padding (37.5 %), 96 bytes

The PNG has two panels per shape: the (padded) logical grid, and the buffer in memory order,
each buffer element coloured by the tile of the element it holds (padding grey).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import LayoutError, TilewiseError
from .xla import Shape

MAX_DRAW_ELEMENTS = 1 << 24  # elements of the (padded) grid a picture is drawn for


@dataclass(frozen=True)
class Grid:
    """The 2-D view of a shape: per cell its buffer ``offset``, whether it is ``padding``, and the
    ``block`` (first-level tile, or memory row when untiled) it belongs to; ``tiled`` says whether
    blocks are tiles. ``rows`` x ``cols`` is the whole grid, of which the arrays may hold a
    top-left window."""

    shape: Shape
    offset: np.ndarray
    padding: np.ndarray
    block: np.ndarray
    row_labels: tuple[str, ...]
    row_dims: str
    col_dim: str
    tiled: bool
    rows: int  # of the whole grid; ``offset`` may be a top-left window of it
    cols: int


def _box(shape: Shape) -> tuple[int, ...]:
    """Logical bounds padded to the first tile when it tiles whole logical dims, else the dims."""
    stages = shape._stages
    if not stages or stages[0].expand or any(len(g) > 1 for g in stages[0].groups):
        return shape.dims
    st = stages[0]
    phys = st.merged[: st.prefix] + tuple(o * t for o, t in zip(st.outer, st.tile))
    box = [0] * shape.rank
    for p, d in enumerate(shape.physical_order):
        box[d] = phys[p]
    return tuple(box)


def grid(shape: Shape, max_rows: int | None = None, max_cols: int | None = None) -> Grid:
    """The 2-D view of ``shape`` (see the module docstring); with ``max_rows``/``max_cols``
    only that top-left window of it, so the text view of any shape costs only the cells it
    shows. A whole grid (the PNG) is limited to ``MAX_DRAW_ELEMENTS`` cells."""
    box = _box(shape)
    cols = box[-1] if box else 1
    rows = math.prod(box[:-1]) if box else 1
    shown_r = rows if max_rows is None else max(0, min(rows, max_rows))
    shown_c = cols if max_cols is None else max(0, min(cols, max_cols))
    if shown_r * shown_c > MAX_DRAW_ELEMENTS:
        raise LayoutError(
            f"{shape} is too large to draw: {math.prod(box)} elements (padded); the limit is "
            f"{MAX_DRAW_ELEMENTS}"
        )
    # Index of every cell of the window along each logical dim, each array (shown_r, shown_c).
    if box:
        row_ix = np.unravel_index(np.arange(shown_r, dtype=np.int64), box[:-1]) if box[:-1] else ()
        idx = [np.broadcast_to(i[:, None], (shown_r, shown_c)) for i in row_ix]
        idx.append(np.broadcast_to(np.arange(shown_c, dtype=np.int64)[None, :], (shown_r, shown_c)))
    else:
        idx = []
    window = (shown_r, shown_c)
    padding = np.zeros(window, dtype=bool)
    for d, i in enumerate(idx):
        padding |= i >= shape.dims[d]
    e = [idx[d] for d in shape.physical_order]
    stages = shape._stages
    if stages:
        e = stages[0].forward(e)
        st = stages[0]
        block = 0
        for i, n in zip(e[: st.prefix + len(st.tile)], st.after):
            block = block * n + i
        for later in stages[1:]:
            e = later.forward(e)
    offset = np.broadcast_to(np.asarray(shape._offset(e), dtype=np.int64), window)
    if not stages:
        block = offset // max(1, shape.physical_shape[-1]) if shape.rank else np.zeros(window, np.int64)
    block = np.broadcast_to(np.asarray(block, dtype=np.int64), window)
    if shape.rank <= 1:
        labels = ("",)[:shown_r]
    elif shape.rank == 2:
        labels = tuple(str(r) for r in range(shown_r))
    else:
        labels = tuple(",".join(str(int(i[r, 0])) for i in idx[:-1]) for r in range(shown_r))
    return Grid(
        shape,
        np.ascontiguousarray(offset),
        padding,
        np.ascontiguousarray(block),
        labels,
        ",".join(str(d) for d in range(shape.rank - 1)) if shape.rank > 1 else "",
        str(shape.rank - 1) if shape.rank else "",
        bool(stages),
        rows,
        cols,
    )


def summary(shape: Shape) -> str:
    """One line: physical shape, buffer elements, padding and bytes."""
    phys = f"{shape.dtype.xla_name}[{','.join(map(str, shape.physical_shape))}]"
    n, pad = shape.size_in_elements, shape.padding_elements
    pct = 100.0 * pad / n if n else 0.0
    bits = f", {shape.element_size_in_bits} bits each" if shape.layout.element_size_in_bits else ""
    return (f"physical {phys}: {n} elements = {shape.num_elements} + {pad} padding "
            f"({pct:.1f} %), {shape.size_in_bytes} bytes{bits}")


def text_segments(shape: Shape, max_rows: int = 32, max_cols: int = 32) -> list[list[tuple[str, object]]]:
    """The text grid as lines of ``(text, kind)`` segments, for plain or coloured printing.

    ``kind`` is ``"head"``, ``"label"``, ``"sep"``, ``"pad"`` or the cell's block number (int).
    At most ``max_rows`` x ``max_cols`` cells are shown (``...`` marks the cut).
    """
    g = grid(shape, max_rows, max_cols)
    rows, cols = g.rows, g.cols
    off, pad, blk = g.offset, g.padding, g.block
    shown_r, shown_c = off.shape
    width = max([len(str(int(v))) + 1 for v in off.flat] + [len(str(shown_c - 1)), 1])
    lw = max(len(s) for s in g.row_labels[:shown_r] + ("",))
    vsep = [g.tiled and bool(np.any(blk[:, j] != blk[:, j + 1])) for j in range(shown_c - 1)]
    hsep = [g.tiled and bool(np.any(blk[r] != blk[r + 1])) for r in range(shown_r - 1)]
    where = (f"rows: dim{'s' if ',' in g.row_dims else ''} {g.row_dims}, columns: dim {g.col_dim}"
             if shape.rank > 1 else f"columns: dim {g.col_dim}" if shape.rank else "scalar")
    lines: list[list[tuple[str, object]]] = [
        [(f"{shape}: buffer offset of each element ({where}; ·n = padding)", "head")]
    ]
    header: list[tuple[str, object]] = [(" " * (lw + 1), "label")]
    for j in range(shown_c):
        header.append((f" {j:>{width}}", "label"))
        if j < shown_c - 1 and vsep[j]:
            header.append((" |", "sep"))
    if shown_c < cols:
        header.append((" ...", "sep"))
    if shape.rank:
        lines.append(header)
    for r in range(shown_r):
        line: list[tuple[str, object]] = [(f"{g.row_labels[r]:>{lw}} ", "label")]
        for j in range(shown_c):
            v = int(off[r, j])
            if pad[r, j]:
                line.append((f" {'·' + str(v):>{width}}", "pad"))
            else:
                line.append((f" {v:>{width}}", int(blk[r, j])))
            if j < shown_c - 1 and vsep[j]:
                line.append((" |", "sep"))
        if shown_c < cols:
            line.append((" ...", "sep"))
        lines.append(line)
        if r < shown_r - 1 and hsep[r]:
            rule = " " * (lw + 1)
            for j in range(shown_c):
                rule += "-" * (width + 1)
                if j < shown_c - 1 and vsep[j]:
                    rule += "-+"
            lines.append([(rule, "sep")])
    if shown_r < rows:
        lines.append([(" " * lw + f" ... ({rows - shown_r} more rows)", "sep")])
    lines.append([(summary(shape), "head")])
    return lines


def render_text(shape: Shape, max_rows: int = 32, max_cols: int = 32) -> str:
    """The grid of buffer offsets as plain text (see the module docstring)."""
    return "\n".join("".join(t for t, _ in line).rstrip()
                     for line in text_segments(shape, max_rows, max_cols))


def _colors(block: np.ndarray, padding: np.ndarray) -> np.ndarray:
    from matplotlib import colormaps

    rgb = colormaps["tab20"](np.asarray(block) % 20)[..., :3]
    rgb = 0.55 * rgb + 0.45  # lighter, so black numbers stay readable
    rgb[np.asarray(padding)] = 0.86
    return rgb


def draw_borders(ax, block: np.ndarray, min_cell_px: float, cell_px: float) -> None:
    """Black lines between neighbouring cells of different ``block`` (2-D ids) on a matplotlib
    ``ax`` whose cells are ``cell_px`` pixels, none when below ``min_cell_px``."""
    from matplotlib.collections import LineCollection

    if cell_px < min_cell_px:
        return
    segs = []
    rr, cc = np.nonzero(block[:, 1:] != block[:, :-1])
    segs += [((c + 0.5, r - 0.5), (c + 0.5, r + 0.5)) for r, c in zip(rr, cc)]
    rr, cc = np.nonzero(block[1:, :] != block[:-1, :])
    segs += [((c - 0.5, r + 0.5), (c + 0.5, r + 0.5)) for r, c in zip(rr, cc)]
    ax.add_collection(LineCollection(segs, colors="black", linewidths=1.2))


def render_png(shapes, path: str, max_text_cells: int = 1024) -> None:
    """Draw each shape (logical grid | buffer in memory order) into one PNG at ``path``.

    Offsets (and, in the buffer panel, the ``row,col`` of the element held) are written in the
    cells when a panel has at most ``max_text_cells`` cells; larger pictures keep the colours.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = [s if isinstance(s, Shape) else Shape.parse(s) for s in shapes]
    grids = [grid(s) for s in shapes]
    fig_w, heights = 12.0, []
    for g in grids:
        rows, cols = g.offset.shape
        heights.append(max(2.5, min(9.0, 6.0 * rows / max(cols, 1)) + 1.2))
    fig, axes = plt.subplots(len(grids), 2, figsize=(fig_w, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights, "width_ratios": [1, 1]})
    dpi = fig.dpi
    for (ax_l, ax_m), g in zip(axes, grids):
        s = g.shape
        rows, cols = g.offset.shape
        ax_l.imshow(_colors(g.block, g.padding), interpolation="nearest", aspect="equal")
        cell_px = min(fig_w / 2 * dpi / max(cols, 1), 9.0 * dpi / max(rows, 1))
        draw_borders(ax_l, g.block if g.tiled else np.zeros_like(g.block), 4.0, cell_px)
        if rows * cols <= max_text_cells:
            fs = max(5.0, min(11.0, cell_px * 0.28))
            for r in range(rows):
                for c in range(cols):
                    ax_l.text(c, r, str(int(g.offset[r, c])), ha="center", va="center", fontsize=fs,
                              color="0.45" if g.padding[r, c] else "black",
                              style="italic" if g.padding[r, c] else "normal")
        ax_l.set_title(f"{s}\nlogical view (rows: {g.row_dims or '-'}, cols: dim {g.col_dim or '-'})"
                       "\n" + summary(s).replace(": ", ":\n", 1), fontsize=9)
        ax_l.set_xticks(range(cols) if cols <= 40 else [])
        ax_l.set_yticks(range(rows) if rows <= 40 else [])
        if rows <= 40 and s.rank > 2:
            ax_l.set_yticklabels(g.row_labels, fontsize=7)
        ax_l.tick_params(labelsize=7)

        n = s.size_in_elements
        if s._stages:
            width = min(math.prod(s._stages[0].tile), 128)
        else:
            width = min(s.physical_shape[-1], 128) if s.rank else 1
        width = max(width, 1)
        mem_rows = max(1, -(-n // width))
        held_block = np.full(mem_rows * width, -1, dtype=np.int64)
        held_rc = np.full((mem_rows * width, 2), -1, dtype=np.int64)
        logical = ~g.padding
        flat = g.offset[logical]
        held_block[flat] = g.block[logical]
        rr, cc = np.nonzero(logical)
        held_rc[flat, 0], held_rc[flat, 1] = rr, cc
        mem_pad = held_block < 0
        img = _colors(np.maximum(held_block, 0), mem_pad).reshape(mem_rows, width, 3)
        if mem_rows * width > n:  # beyond the buffer: white
            img.reshape(-1, 3)[n:] = 1.0
        ax_m.imshow(img, interpolation="nearest", aspect="equal" if mem_rows <= 4 * width else "auto")
        mem_px = min(fig_w / 2 * dpi / width, 9.0 * dpi / mem_rows)
        if g.tiled:
            draw_borders(ax_m, np.where(mem_pad, -2, held_block).reshape(mem_rows, width), 4.0, mem_px)
        if mem_rows * width <= max_text_cells:
            fs = max(4.5, min(9.0, mem_px * 0.22))
            for k in range(n):
                if not mem_pad[k]:
                    label = (f"{held_rc[k, 0]},{held_rc[k, 1]}" if s.rank >= 2
                             else str(held_rc[k, 1]) if s.rank == 1 else "·")
                    ax_m.text(k % width, k // width, label, ha="center", va="center", fontsize=fs)
        ax_m.set_title(f"buffer in memory order, {width} elements per row\n(cell: row,col of the "
                       f"element held; grey = padding)", fontsize=9)
        ax_m.set_xticks([])
        ax_m.set_yticks(range(mem_rows) if mem_rows <= 40 else [])
        if mem_rows <= 40:
            ax_m.set_yticklabels([str(r * width) for r in range(mem_rows)], fontsize=7)
    fig.tight_layout()
    save_png(fig, path, "--png", dpi)
    plt.close(fig)


def save_png(fig, path: str, option: str, dpi: float = 120) -> None:
    """``fig.savefig(path)``, a failed write (a full disk, /dev/full) as one TilewiseError naming
    ``option``: drawn into memory first and written with a plain file write, since the PNG writer
    swallows the error a full device raises when its file is closed."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, dpi=dpi, format="png")
    try:
        with open(path, "wb") as f:
            f.write(buf.getvalue())
    except OSError as e:
        raise TilewiseError(f"{option} {path!r}: writing the picture failed: {e.strerror or e}") from None
