"""``tilewise pack`` / ``tilewise unpack``: MLIR linalg.pack shape inference and verification.

    tilewise pack 128x256xf32 --inner-dims-pos 0,1 --inner-tiles 32,32

prints the packed type (``tensor<4x8x32x32xf32>``), the equivalent ``linalg.pack`` op and
the equivalent XLA layout. ``tilewise unpack`` takes the packed type and prints the unpacked
one. Illegal attributes give MLIR's verifier message on one ``error:`` line.
"""

from __future__ import annotations

import math

import click

from ._util import console, parse_int_list

_ATTRS = [
    click.option("--inner-dims-pos", "inner_dims_pos", required=True, metavar="LIST",
                 help="Dims to tile, e.g. 0,1 (the tile dims go last, in this order)."),
    click.option("--inner-tiles", "inner_tiles", required=True, metavar="LIST",
                 help="Tile size per entry of --inner-dims-pos, e.g. 32,32."),
    click.option("--outer-dims-perm", "outer_dims_perm", default="", metavar="LIST",
                 help="Permutation of the outer dims (source rank), e.g. 1,0."),
]


def _attrs(f):
    for option in reversed(_ATTRS):
        f = option(f)
    return f


def _number(text: str):
    from ..errors import ParseError

    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    raise ParseError("padding value", text, 0, "a number such as 0, -1 or 0.5")


def _show(rows: list[tuple[str, str]], op_line: str) -> None:
    """A key/value table, then the op on a line of its own (to copy into MLIR)."""
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    out = console()
    out.print(table)
    out.print(op_line, markup=False, crop=False)


def register(app: click.Group) -> None:
    """Add ``pack`` and ``unpack`` to the root group."""

    @app.command("pack")
    @click.argument("tensor_type", metavar="TYPE")
    @_attrs
    @click.option("--padding-value", default=None, metavar="NUMBER",
                  help="Pad value for tiles that do not divide their dim (required then).")
    def pack_cmd(tensor_type, inner_dims_pos, inner_tiles, outer_dims_perm, padding_value):
        """Packed type of TYPE (e.g. 128x256xf32 or tensor<128x256xf32>) under linalg.pack."""
        from ..layout.convert import pack_to_xla
        from ..layout.pack import (padding_scalar, pack_op_text, parse_tensor_type,
                                   require_full_tiles, type_str, verify)

        shape, dt = parse_tensor_type(tensor_type)
        packing = verify(shape, parse_int_list(inner_dims_pos, "--inner-dims-pos"),
                         parse_int_list(inner_tiles, "--inner-tiles"),
                         parse_int_list(outer_dims_perm, "--outer-dims-perm"))
        pad = None
        if padding_value is not None:
            pad = padding_scalar(_number(padding_value), dt.numpy, "linalg.pack")
        elif packing.needs_padding:
            require_full_tiles(packing)
        element = dt.mlir_name
        packed = packing.packed_shape
        total = math.prod(packed)
        share = f" ({100 * packing.padding_elements / total:.2f} %)" if total else ""
        xla = pack_to_xla(shape, dt, packing.inner_dims_pos, packing.inner_tiles,
                          packing.outer_dims_perm)
        _show([
            ("source", type_str(shape, element)),
            ("packed", type_str(packed, element)),
            ("padding", f"{packing.padding_elements} elements{share}"
                        + (f", value {pad.item()!r}" if pad is not None else "")),
            ("bytes", f"{total * dt.bytes} packed, {(total - packing.padding_elements) * dt.bytes}"
                      f" source"),
            ("XLA layout", str(xla)),
        ], pack_op_text(packing, element, pad))

    @app.command("unpack")
    @click.argument("tensor_type", metavar="TYPE")
    @_attrs
    @click.option("--shape", "shape", default=None, metavar="DIMS",
                  help="Unpacked shape, e.g. 500x1000 (default: whole tiles); drops padding.")
    def unpack_cmd(tensor_type, inner_dims_pos, inner_tiles, outer_dims_perm, shape):
        """Unpacked type of a packed TYPE (e.g. 4x8x32x32xf32) under linalg.unpack."""
        from ..layout.pack import parse_tensor_type, type_str, unpack_op_text, unpack_packing

        packed, dt = parse_tensor_type(tensor_type)
        dims = None
        if shape is not None:
            dims = parse_int_list(shape.replace("x", ","), "--shape", allow_empty=False)
        packing = unpack_packing(packed, parse_int_list(inner_dims_pos, "--inner-dims-pos"),
                                 parse_int_list(inner_tiles, "--inner-tiles"),
                                 parse_int_list(outer_dims_perm, "--outer-dims-perm"), dims)
        element = dt.mlir_name
        _show([
            ("packed", type_str(packed, element)),
            ("unpacked", type_str(packing.shape, element)),
            ("dropped", f"{packing.padding_elements} padding elements"),
        ], unpack_op_text(packing, element))
