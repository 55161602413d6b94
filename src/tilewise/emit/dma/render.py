"""A picture per transfer: which element of a tensor a link moves when (an access-order heat map).

The tensor is viewed in 2-D as the layout pictures view it (:mod:`tilewise.layout.render`:
columns the innermost axis, rows every other axis flattened). Each element is coloured by the
position, in the program, of the first move over the link that carries it (dark: early, light:
late), and black borders (:func:`~tilewise.layout.render.draw_borders`) separate the tiles
of different moves; with ``--order`` the element's place inside its move's stream is drawn
instead, which shows the access pattern of one tile.
"""

from __future__ import annotations

import numpy as np

from ...errors import DmaError
from ...layout.render import draw_borders
from .program import Program

MAX_CELLS = 1 << 22  # elements of a tensor a picture is drawn for


def access_order(program: Program, tensor: str, link: str) -> tuple[np.ndarray, np.ndarray]:
    """(move rank, position in the move's stream) per element of ``tensor`` as moved over
    ``link`` (``"ddr->memtile"``): 2-D arrays, -1 where the link never moves the element."""
    t = program.workload.tensor(tensor)
    rows = int(np.prod(t.shape[:-1], dtype=np.int64)) if len(t.shape) > 1 else 1
    cols = t.shape[-1]
    if rows * cols > MAX_CELLS:
        raise DmaError(f"tensor {tensor} has {rows * cols} elements; pictures are drawn up to {MAX_CELLS}")
    rank = np.full(rows * cols, -1, np.int64)
    pos = np.full(rows * cols, -1, np.int64)
    moves = [mv for mv in program.moves if mv.tensor == tensor
             and f"{program.levels[mv.link[0]]}->{program.levels[mv.link[1]]}" == link]
    if not moves:
        links = sorted({f"{program.levels[m.link[0]]}->{program.levels[m.link[1]]}"
                        for m in program.moves if m.tensor == tensor})
        raise DmaError(f"no move of {tensor} over link {link!r}; its links: {', '.join(links)}")
    pitch = np.cumprod((t.shape[1:] + (1,))[::-1])[::-1]
    for r, mv in enumerate(moves):
        grids = np.meshgrid(*[np.arange(lo, min(hi, n)) for (lo, hi), n in zip(mv.box, t.shape)],
                            indexing="ij")  # a window's row rounded out past the last column
        flat = sum(g * p for g, p in zip(grids, pitch)).reshape(-1)
        fresh = rank[flat] < 0
        rank[flat[fresh]] = r
        pos[flat[fresh]] = np.arange(flat.size)[fresh]
    return rank.reshape(rows, cols), pos.reshape(rows, cols)


def render_transfer(program: Program, tensor: str, link: str, path: str, order: bool = False) -> None:
    """Write the heat map of ``tensor`` over ``link`` to the PNG ``path`` (needs matplotlib)."""
    try:
        import matplotlib
    except ImportError:
        raise DmaError("a DMA picture needs matplotlib: pip install 'tilewise[plot]'") from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rank, pos = access_order(program, tensor, link)
    rows, cols = rank.shape
    cell = max(1.0, min(24.0, 900.0 / max(rows, cols)))
    fig, ax = plt.subplots(figsize=(max(4.0, cols * cell / 100 + 1.5), max(3.0, rows * cell / 100 + 1.2)), dpi=100)
    values = np.ma.masked_less(pos if order else rank, 0)
    im = ax.imshow(values, cmap="viridis", interpolation="nearest", aspect="equal")
    draw_borders(ax, rank, 0.0, cell)
    fig.colorbar(im, ax=ax, label="element's place in its move's stream" if order else "move (program order)")
    t = program.workload.tensor(tensor)
    ax.set_title(f"{tensor} {t.dtype.name}{list(t.shape)} over {link}: {int(rank.max()) + 1} moves")
    ax.set_xlabel(f"axis {len(t.shape) - 1}")
    ax.set_ylabel("other axes" if len(t.shape) > 2 else "axis 0")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
