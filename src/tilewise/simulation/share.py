"""Which walker transfers are one hardware transfer: broadcast loads and column-reduced stores.

At the array level, transfers of one step that carry the same tile of the same tensor share one
transfer along a broadcast axis (``broadcast_rows``: every core of a row, ``broadcast_cols``:
every core of a column), and the partial sums of one output tile held by a column of cores are
summed into one store (and one reload) when the array ``reduce_cols``. ``simulate`` counts one
transfer per group; the AIE data-movement program (:mod:`tilewise.emit.dma`) emits one per group.
"""

from __future__ import annotations

from .walker import Transfer


def share_group(ev: Transfer, outputs, array, array_level: int) -> tuple | None:
    """The key shared by every transfer that travels with ``ev`` (None above and below the
    array level: each transfer is its own; below it, on a core's private links).
    ``outputs``: the names of the workload's output tensors."""
    if ev.core is None or array is None or ev.level != array_level:
        return None
    r, c = ev.core
    output = ev.tensor in outputs
    share_r = array.reduce_cols if output else array.broadcast_cols
    share_c = False if output else array.broadcast_rows
    return (ev.step, ev.kind, ev.level, ev.tensor, ev.tile,
            None if share_r else r, None if share_c else c)


def store_key(ev: Transfer, group: tuple | None, through=(False, False)) -> tuple:
    """The identity of an output tile's store across the walk (its level, tensor, tile and the
    core or share group that holds it): the last store of a key moves the converted result,
    the earlier ones partial sums at the accumulator type. ``through``: per axis (rows, cols),
    whether the tensor's partials cut by that axis merge through the parent level (then the
    cores along it store one tile, and the key leaves their index out)."""
    if group is None:
        return (ev.level, ev.tensor, ev.tile, ev.core)
    return (ev.level, ev.tensor, ev.tile) + tuple(None if x else g for x, g in zip(through, group[5:]))
