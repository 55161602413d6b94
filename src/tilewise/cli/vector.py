"""``tilewise vector``: plan Ascend-style vector instructions over a UB tile, and DataCopy calls.

    tilewise vector plan add --dtype f16 --rows 30 --cols 100 --pitch 128
    tilewise vector plan muls --dtype f32 --cols 1000 --scalar 2 --in-place --no-counter
    tilewise vector copy --dtype f16 --gm 128,256 --origin 0,64 --size 64,64
"""

from __future__ import annotations

import click

from ._util import parse_int_list


def _pair(text: str, what: str) -> tuple[int, int]:
    from ..errors import ParseError

    vals = parse_int_list(text, what, allow_empty=False)
    if len(vals) != 2:
        raise ParseError(what, text, len(text), "two comma-separated integers")
    return vals


def _ub_bytes() -> int:
    """The unified buffer's capacity (bytes): level ``ub`` of the ``ascend-vec`` preset."""
    from ..arch.loader import load_arch

    return next(lv.capacity_bytes for lv in load_arch("ascend-vec").levels if lv.name == "ub")


@click.group("vector")
def vector() -> None:
    """Ascend-style vector instructions: plan a tile, DataCopy a GM tile."""


@vector.command("plan")
@click.argument("op")
@click.option("--dtype", "dtype_", default="f16", show_default=True, help="Element type.")
@click.option("--rows", type=int, default=1, show_default=True, help="Tile rows.")
@click.option("--cols", type=int, required=True, help="Tile columns (elements).")
@click.option("--pitch", type=int, default=None,
              help="Elements from one row start to the next (default: --cols).")
@click.option("--scalar", type=float, default=None, help="Scalar of Adds/Muls/Maxs/Mins/Duplicate.")
@click.option("--no-counter", is_flag=True, help="Forbid counter mode (SetMaskCount).")
@click.option("--in-place", "in_place", is_flag=True,
              help="dst is the (first) source tile: each element is computed exactly once.")
@click.option("--check", is_flag=True,
              help="Simulate the plan on random data and compare with numpy.")
@click.option("--poison", is_flag=True,
              help="With --check: overwrite masked-off lanes while simulating (the result must "
                   "not depend on them).")
def plan_cmd(op, dtype_, rows, cols, pitch, scalar, no_counter, in_place, check,
             poison) -> None:
    """Print the fewest Ascend C calls applying OP elementwise over a rows x cols UB tile.

    Operands are placed one after another in the UB (dst at byte 0), 256 bytes apart, and must
    fit the unified buffer of the ascend-vec preset (192 KiB); --pitch is in elements."""
    import numpy as np

    from ..dtypes import dtype
    from ..errors import ISAError
    from ..isa.ascend import Tile, op_spec, plan, to_ascend_c

    spec = op_spec(op)
    dt = dtype(dtype_)
    first = Tile(0, rows, cols, pitch)
    # masked-off lanes may reach 224 bytes past a tile: keep 256 bytes between operands
    footprint = -(-((rows - 1) * first.pitch + cols) * dt.bytes // 32) * 32 + 256
    n_src = {"binary": 2, "unary": 1, "scalar": 1, "duplicate": 0}[spec.kind]
    if in_place and n_src == 0:
        raise ISAError(f"{spec.name} has no source to be in place with")
    tiles = [Tile(k * footprint, rows, cols, first.pitch) for k in range(n_src + 1)]
    if in_place:
        tiles[1] = tiles[0]
    value = None if scalar is None else (int(scalar) if dt.is_integer else scalar)
    ub_bytes = _ub_bytes()
    instrs = plan(spec.name, dt, tiles[0], tiles[1:], scalar=value, counter=not no_counter,
                  ub_bytes=ub_bytes)
    click.echo(to_ascend_c(instrs))
    n_ctr = sum(i.counter for i in instrs)
    n_rep = sum(i.repeats() for i in instrs)
    click.echo(f"// {len(instrs)} vector instruction(s), {n_rep} repeat(s), {n_ctr} in counter "
               f"mode; {rows}x{cols} {dt.name}, pitch {first.pitch} elements; operands at UB "
               "bytes " + ", ".join(str(t.base) for t in tiles)
               + (" (in place)" if in_place else ""))
    if check:
        _check(spec, dt, tiles, instrs, value, in_place, poison, ub_bytes)


def _check(spec, dt, tiles, instrs, value, in_place: bool, poison: bool, ub_bytes: int) -> None:
    """Simulate ``instrs`` on a whole unified buffer (``ub_bytes``) of random bytes: dst must
    equal numpy's result and every byte outside dst (sources, gaps, the rest of the UB) stay
    as it was; exit 1 otherwise."""
    import numpy as np

    from ..isa.ascend import simulate

    rng = np.random.default_rng(0)
    ub = rng.integers(0, 256, size=ub_bytes, dtype=np.uint8)
    view = ub.view(dt.numpy)
    idx = [(t.base // dt.bytes + t.element_offsets()) for t in tiles]
    for i in idx[int(in_place):]:
        view[i] = rng.integers(1, 8, size=i.shape).astype(dt.numpy)
    before = ub.copy()
    simulate(instrs, ub, poison=poison)
    args = [before.view(dt.numpy)[i] for i in idx[1:]]
    if value is not None:
        args.append(dt.numpy.type(value))
    with np.errstate(all="ignore"):
        want = (np.full(idx[0].shape, value, dt.numpy) if spec.kind == "duplicate"
                else np.asarray(spec.fn(*args), dtype=dt.numpy))
    got = ub.view(dt.numpy)[idx[0]]
    outside = np.ones(ub.size, bool)
    outside[(idx[0][..., None] * dt.bytes + np.arange(dt.bytes)).ravel()] = False
    same = np.array_equal(got, want, equal_nan=True)
    kept = np.array_equal(ub[outside], before[outside])
    click.echo(f"// check: simulated result {'equals' if same else 'DIFFERS FROM'} numpy; "
               + ("masked-off lanes poisoned" if poison else
                  f"all {ub_bytes - idx[0].size * dt.bytes} UB bytes outside dst "
                  f"{'untouched' if kept else 'CHANGED'}"))
    if not same or not (kept or poison):
        raise SystemExit(1)


@vector.command("copy")
@click.option("--dtype", "dtype_", default="f16", show_default=True, help="Element type.")
@click.option("--gm", "gm_shape", required=True, help="GM tensor shape ROWS,COLS (row-major).")
@click.option("--origin", default="0,0", show_default=True, help="Tile origin ROW,COL in GM.")
@click.option("--size", "tile_size", required=True, help="Tile size ROWS,COLS.")
@click.option("--ub-base", type=int, default=0, show_default=True, help="UB byte address.")
@click.option("--ub-pitch", type=int, default=None,
              help="UB row pitch in elements (default: tile width rounded up to 32 bytes).")
@click.option("--to-gm", is_flag=True, help="Copy UB -> GM instead of GM -> UB.")
@click.option("--no-pad", is_flag=True, help="Reject rows that need DataCopyPad.")
def copy_cmd(dtype_, gm_shape, origin, tile_size, ub_base, ub_pitch, to_gm, no_pad) -> None:
    """Print the DataCopy / DataCopyPad calls moving a tile between GM and the UB."""
    from ..isa.ascend import GMTensor, UBTile, tile_copies

    gm = GMTensor(_pair(gm_shape, "--gm"), dtype_)
    tile = UBTile(_pair(origin, "--origin"), _pair(tile_size, "--size"), ub_base, ub_pitch)
    calls = tile_copies(gm, tile, to_ub=not to_gm, pad=not no_pad, ub_bytes=_ub_bytes())
    for call in calls:
        click.echo(call.ascend_c())
    click.echo(f"// {len(calls)} call(s)")


def register(app: click.Group) -> None:
    """Add ``tilewise vector`` to the root group."""
    app.add_command(vector)
