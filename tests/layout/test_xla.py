"""Example tests for XLA shapes/layouts: the seed's figures, XLA's own ToString cases, errors."""

import numpy as np
import pytest

import tilewise
from tilewise.dtypes import dtype
from tilewise.errors import DTypeError, LayoutError, ParseError
from tilewise.layout.xla import Layout, Shape, Tile


# ---- seed examples ------------------------------------------------------------------------------

def test_figure1_3x5_tiled_2x2():
    s = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    assert s.dims == (3, 5) and s.dtype is dtype("f32")
    assert s.layout.minor_to_major == (1, 0)
    assert s.layout.tiles == (Tile((2, 2)),)
    assert s.physical_shape == (2, 3, 2, 2)
    assert s.linear_index((2, 3)) == 17  # tile (1,1), within-tile (0,1): (1*3+1)*4 + 1
    assert s.size_in_elements == 24 and s.size_in_bytes == 96
    # Every element, by hand: tile index (r//2, c//2) in a 2x3 grid of 2x2 tiles.
    expected = np.array([[0, 1, 4, 5, 8], [2, 3, 6, 7, 10], [12, 13, 16, 17, 20]])
    np.testing.assert_array_equal(s.linear_indices(), expected)


def test_figure2_repeated_tiles_4x8():
    s = Shape.parse("bf16[4,8]{1,0:T(2,4)(2,1)}")
    # (2,4) tiles; inside each, (2,1) pairs the two rows of a column (TPU's bf16 packing).
    expected = np.array([
        [0, 2, 4, 6, 8, 10, 12, 14],
        [1, 3, 5, 7, 9, 11, 13, 15],
        [16, 18, 20, 22, 24, 26, 28, 30],
        [17, 19, 21, 23, 25, 27, 29, 31],
    ])
    np.testing.assert_array_equal(s.linear_indices(), expected)
    assert s.physical_shape == (2, 2, 1, 4, 2, 1)
    assert s.size_in_elements == 32 and s.size_in_bytes == 64


def test_second_tile_reaches_cross_tile_dims():
    s = Shape.parse("f32[4,4]{1,0:T(2,2)(2,1,1)}")
    # After T(2,2): [TR, TC, r, c] = [2,2,2,2]. (2,1,1) tiles the last three dims [TC, r, c]:
    # outer [1, r, c], inner [TC, 1, 1] -> [TR, 1, r, c, TC, 1, 1]: the cross-tile column
    # index becomes the innermost dim, so offset = TR*8 + r*4 + c*2 + TC.
    assert s.physical_shape == (2, 1, 2, 2, 2, 1, 1)
    i, j = np.indices((4, 4))
    np.testing.assert_array_equal(
        s.linear_indices(), (i // 2) * 8 + (i % 2) * 4 + (j % 2) * 2 + j // 2
    )


def test_combined_dims():
    s = Shape.parse("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    # 2*7*8 = 112 rows, 11*10 = 110 columns, tiled (2,3).
    assert s.physical_shape == (56, 37, 2, 3)
    assert s.size_in_elements == 56 * 37 * 6
    # (1,6,7,10,9): row (1*7+6)*8+7 = 111, col 10*10+9 = 109 -> (55, 36, 1, 1)
    assert s.linear_index((1, 6, 7, 10, 9)) == ((55 * 37 + 36) * 2 + 1) * 3 + 1
    assert s.linear_index((0, 0, 1, 0, 4)) == (0 * 37 + 1) * 6 + 1 * 3 + 1


def test_column_major_and_minor_to_major_before_tiling():
    cm = Shape.parse("f32[3,5]{0,1}")
    r, c = np.indices((3, 5))
    np.testing.assert_array_equal(cm.linear_indices(), c * 3 + r)
    assert cm.physical_shape == (5, 3)
    t = Shape.parse("f32[3,5]{0,1:T(2,2)}")  # physical [5,3] tiled (2,2) -> [3,2,2,2]
    assert t.physical_shape == (3, 2, 2, 2)
    np.testing.assert_array_equal(
        t.linear_indices(), ((c // 2) * 2 + r // 2) * 4 + (c % 2) * 2 + r % 2
    )


def test_tile_with_fewer_dims_applies_to_most_minor():
    s = Shape.parse("f32[3,4,5]{2,1,0:T(2)}")
    assert s.physical_shape == (3, 4, 3, 2)
    assert s.linear_index((1, 2, 4)) == ((1 * 4 + 2) * 3 + 2) * 2 + 0


def test_tile_with_more_dims_than_shape_pads_leading_unit_dims():
    # As XLA's ShapeUtil::ArraySize: a TPU scalar f32[]{:T(128)} occupies 128 elements.
    s = Shape.parse("f32[]{:T(128)}")
    assert s.physical_shape == (1, 128) and s.size_in_elements == 128
    assert s.linear_index(()) == 0
    v = Shape.parse("f32[5]{0:T(2,4)}")
    assert v.physical_shape == (1, 2, 2, 4)
    np.testing.assert_array_equal(v.linear_indices(), [0, 1, 2, 3, 8])


def _xla_array_size(s: Shape) -> int:
    """XLA's ShapeUtil::ArraySize (first tile only, shape_util.cc), in bytes."""
    n = 1
    tile = s.layout.tiles[0].dims if s.layout.tiles else ()
    m2m = s.layout.minor_to_major
    for i in range(len(tile)):
        d = s.dims[m2m[i]] if i < s.rank else 1
        t = tile[len(tile) - i - 1]
        n *= -(-d // t) * t
    for i in range(len(tile), s.rank):
        n *= s.dims[m2m[i]]
    align = s.layout.tail_padding_alignment
    n = -(-n // align) * align
    if s.layout.element_size_in_bits:
        return -(-n * s.layout.element_size_in_bits // 8)
    return n * s.dtype.bytes


@pytest.mark.parametrize("text, elements, nbytes", [
    ("f32[3,5]", 15, 60),
    ("f32[]", 1, 4),
    ("pred[3]", 3, 3),
    ("s4[5]", 5, 5),  # unpacked: a byte per element
    ("s4[5]{0:E(4)}", 5, 3),  # packed: ceil(5*4/8)
    ("u4[3,5]{1,0:T(2,2)E(4)}", 24, 12),
    ("f32[3,5]{1,0:T(2,2)L(32)}", 32, 128),
    ("f32[3,5]{1,0:L(7)}", 21, 84),
    ("bf16[1,1]{1,0:T(8,128)(2,1)}", 1024, 2048),
    ("s8[0,5]{1,0:T(8,128)}", 0, 0),
    ("f32[4,<=6]{1,0:T(2,4)}", 32, 128),  # bounded dynamic: laid out at its bound
])
def test_sizes_match_xla_array_size(text, elements, nbytes):
    s = Shape.parse(text)
    assert s.size_in_elements == elements
    assert s.size_in_bytes == nbytes == _xla_array_size(s)


# ---- printing (XLA's layout_test.cc ToString cases) ---------------------------------------------

@pytest.mark.parametrize("layout", [
    "{1,2,0}",
    "{3,2,1,0:T(42,123)(4,5)}",
    "{3,2,1,0:T(*,*,42,123)}",
    "{3,2,1,0:L(100)}",
    "{3,2,1,0:E(42)}",
    "{3,2,1,0:S(3)}",
    "{3,2,1,0:T(42,123)(4,5)L(100)E(42)}",
    "{0,1,2,3:T(8,128)(2,1)L(1024)E(64)S(1)}",
])
def test_xla_layout_to_string(layout):
    rank = layout.count(",", 0, layout.index(":") if ":" in layout else len(layout)) + 1
    text = f"f32[{','.join(['7'] * rank)}]{layout}"
    s = Shape.parse(text)
    assert str(s) == text and str(s.layout) == layout
    assert Shape.parse(str(s)) == s


def test_default_layout_and_scalars():
    s = Shape.parse("f32[3,5]")
    assert s.layout == Layout((1, 0)) == Layout.default(2)
    assert str(s) == "f32[3,5]{1,0}"  # XLA prints the (default) layout of an array
    assert s == Shape.parse("f32[3,5]{1,0}") == Shape("f32", (3, 5))
    assert str(Shape.parse("f32[]")) == "f32[]"  # and omits a scalar's "{}"
    assert Shape.parse("f32[]{}") == Shape.parse("f32[]")
    assert str(Shape.parse("pred[]{:T(256)}")) == "pred[]{:T(256)}"
    assert str(Shape.parse(" s8[ 2 , 3 ] { 0 , 1 : T ( 2 , * , 1 ) } ".replace("*", "1"))) == \
        "s8[2,3]{0,1:T(2,1,1)}"


def test_dtype_printed_with_xla_name_and_dense_dim_levels_accepted():
    s = Shape.parse("s8[4]{0:D(D)}")  # all-dense dim level types: a dense layout
    assert s.dtype.name == "i8" and str(s) == "s8[4]{0}"
    assert str(Shape(dtype("bf16"), (2, 2), Layout((0, 1), (Tile((2, Tile.COMBINE, 2)),)))) == \
        "bf16[2,2]{0,1:T(2,*,2)}"
    assert str(Shape.parse("f32[2,<=5]{1,0}")) == "f32[2,<=5]{1,0}"


def test_public_exports():
    assert tilewise.Shape is Shape and tilewise.Tile.COMBINE == Tile.COMBINE == -1


# ---- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, pos, expected", [
    ("f32[3,5]{1,0:T(2,2}", 19, "',' or ')' in the tile"),
    ("f32[3;5]", 6, "',' or ']'"),
    ("q32[3]", 1, "an XLA element type"),
    ("f32[3,5]{1,0", 13, "'}' closing the layout"),
    ("f32[3,5]{1,0} x", 15, "end of text"),
    ("f32[3,5]{1,0:E(4)T(2,2)}", 18, "'}' closing the layout"),
    ("f32[3,5]{1,0:T()}", 16, "a tile dimension"),
    ("f32[3,x]", 7, "a dimension size"),
    ("f32", 4, "'[' after the element type"),
    ("", 1, "an element type"),
    ("f32[3,5]{1,0:T}", 15, "'(' starting a tile"),
    ("f32[3,5]{1,0:L(x)}", 16, "an integer in L(...)"),
])
def test_malformed_text_points_at_character(text, pos, expected):
    with pytest.raises(ParseError) as info:
        Shape.parse(text)
    msg = str(info.value)
    assert f"at character {pos} " in msg and expected in msg and repr(text) in msg


@pytest.mark.parametrize("text, what", [
    ("f32[3]{0:D(C)}", "sparse dim level type 'C'"),
    ("f32[3,4]{1,0:D(D,C+~)}", "sparse dim level type 'C+~'"),
    ("f32[3,4]{1,0:#(u32)}", "sparse index primitive type"),
    ("f32[3,4]{1,0:*(u16)}", "sparse pointer primitive type"),
    ("f32[10,20]{0,1:P(s32[10,20]{1,0})}", "sparse physical shape"),
    ("f32[3,4]{0,1:SC(0:3)(1:0,4)}", "split configs"),
    ("f32[3,4]{0,1:M(123)}", "dynamic shape metadata"),
    ("f32[3,4]{1C,0}", "sparse dim level type suffix 'C'"),
    ("f32[3,?]", "unbounded dynamic dimension"),
    ("(f32[3], f32[4])", "tuple shapes"),
])
def test_sparse_and_other_fields_not_supported(text, what):
    with pytest.raises(LayoutError, match="not supported") as info:
        Shape.parse(text)
    assert what in str(info.value)


@pytest.mark.parametrize("text, match", [
    ("f32[3,5]{1,1}", r"minor_to_major \[1, 1\] is not a permutation of 0..1"),
    ("f32[3,5]{2,0}", r"minor_to_major \[2, 0\] is not a permutation"),
    ("f32[3,5]{0}", r"lists 1 minor_to_major entries \[0\] but the shape has rank 2"),
    ("f32[3,5]{1,0:T(2,0)}", r"tile \(2,0\): dimension sizes must be positive .* got 0"),
    ("f32[3,5]{1,0:T(2,-3)}", r"got -3"),
    ("f32[3,5]{1,0:T(2,*)}", r"most-minor entry cannot be '\*'"),
    ("f32[3,5]{1,0:L(0)}", r"L\(0\) must be a positive"),
    ("f32[3,5]{1,0:E(3)}", r"E\(3\) is smaller than the 32 bits"),
    ("f32[3,5]{1,0:S(-1)}", r"S\(-1\) must be >= 0"),
    ("f32[-3,5]", r"non-negative dimension size"),
])
def test_invalid_layouts_are_named(text, match):
    with pytest.raises((LayoutError, ParseError), match=match):
        Shape.parse(text)


def test_constructor_validation_and_index_errors():
    with pytest.raises(LayoutError, match="permutation"):
        Shape("f32", (3, 5), Layout((0, 0)))
    with pytest.raises(LayoutError, match="empty tile"):
        Tile(())
    with pytest.raises(DTypeError, match="unknown dtype"):
        Shape("f33", (3,))
    s = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    with pytest.raises(LayoutError, match=r"index \(3, 0\) is out of bounds"):
        s.linear_index((3, 0))
    with pytest.raises(LayoutError, match="need 2 integers"):
        s.linear_index((1,))
    with pytest.raises(LayoutError, match=r"array of shape \(5, 3\) does not match"):
        s.to_physical(np.zeros((5, 3), np.float32))
    with pytest.raises(LayoutError, match="expected a 1-D buffer of 24 elements"):
        s.from_physical(np.zeros(15))


def test_to_and_from_physical_example():
    s = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    x = np.arange(15, dtype=np.float32).reshape(3, 5) + 1
    buf = s.to_physical(x, fill=-1)
    assert buf.shape == (24,) and buf.dtype == np.float32
    np.testing.assert_array_equal(
        buf, [1, 2, 6, 7, 3, 4, 8, 9, 5, -1, 10, -1, 11, 12, -1, -1, 13, 14, -1, -1, 15, -1, -1, -1]
    )
    np.testing.assert_array_equal(s.from_physical(buf), x)
    bf = Shape.parse("bf16[4,8]{1,0:T(2,4)(2,1)}")
    y = np.arange(32).reshape(4, 8).astype(bf.dtype.numpy)
    assert list(bf.to_physical(y)[:8]) == [0, 8, 1, 9, 2, 10, 3, 11]


def test_module_docstring_examples():
    import doctest

    from tilewise.layout import convert, render, xla

    for module in (xla, convert, render):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
