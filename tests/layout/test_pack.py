"""linalg.pack / linalg.unpack: MLIR's documented examples and its verifier's diagnostics."""

import ml_dtypes
import numpy as np
import pytest

import tilewise
from tilewise import PackError, pack, pack_reference, packed_shape, unpack, unpack_reference
from tilewise.errors import ParseError
from tilewise.layout.pack import (pack_op_text, parse_tensor_type, type_str,
                                  unpack_op_text, unpack_packing, verify)


# --- shape inference: MLIR docs and the seed's examples -------------------------------------

@pytest.mark.parametrize("shape, pos, tiles, perm, expected", [
    ((128, 256), (0, 1), (32, 32), (), (4, 8, 32, 32)),  # seed: tensor<4x8x32x32xf32>
    ((128, 256), (0, 1), (8, 32), (), (16, 8, 8, 32)),  # op doc "NC to NCnc"
    ((128, 256), (0, 1), (8, 32), (1, 0), (8, 16, 8, 32)),  # op doc "CK to KCck"
    ((200, 127, 256), (1,), (2,), (2, 1, 0), (256, 64, 200, 2)),  # op doc, padded
    ((128, 256, 512), (1, 2), (16, 8), (), (128, 16, 64, 16, 8)),  # seed
    ((1024, 512), (0, 1), (16, 64), (), (64, 8, 16, 64)),  # seed's reshape/transpose picture
    ((127, 255), (0, 1), (8, 32), (), (16, 8, 8, 32)),  # memref-pack-unpack.mlir, padded
    ((13, 15), (0, 1), (8, 2), (), (2, 8, 8, 2)),  # invalid.mlir's pad_and_pack shapes
    ((256, 128), (1, 0), (32, 16), (), (16, 4, 32, 16)),  # invalid.mlir: expected shape
    ((256, 128), (1, 0), (16, 32), (), (8, 8, 16, 32)),
    ((7,), (), (), (), (7,)),  # no tiles: a copy
])
def test_packed_shape_examples(shape, pos, tiles, perm, expected):
    assert packed_shape(shape, pos, tiles, perm) == expected


def test_seed_outer_dims_perm_has_source_rank():
    # The seed says outer_dims_perm has the packed rank; MLIR permutes only the outer dims.
    assert packed_shape((128, 256, 512), (1, 2), (16, 8), (0, 2, 1)) == (128, 64, 16, 16, 8)
    with pytest.raises(PackError, match=r"invalid outer_dims_perm vector \[0, 4, 1, 3, 2\] \(5 "
                                        r"positions for rank 3\)"):
        packed_shape((128, 256, 512), (1, 2), (16, 8), (0, 4, 1, 3, 2))


def test_pack_values_match_definition():
    x = np.arange(6 * 10, dtype=np.int32).reshape(6, 10)
    p = pack(x, (0, 1), (4, 4), padding_value=-1)
    assert p.shape == (2, 3, 4, 4)
    for o0, o1, t0, t1 in np.ndindex(p.shape):
        i, j = o0 * 4 + t0, o1 * 4 + t1
        assert p[o0, o1, t0, t1] == (x[i, j] if i < 6 and j < 10 else -1)


def test_seed_reshape_transpose_picture():
    # 1024x512 / [16, 64]: reshape to 64x16x8x64, transpose to 64x8x16x64.
    x = np.random.default_rng(1).standard_normal((1024, 512)).astype(np.float32)
    expected = x.reshape(64, 16, 8, 64).transpose(0, 2, 1, 3)
    assert np.array_equal(pack(x, (0, 1), (16, 64)), expected)


def test_mlir_doc_padded_example_roundtrip():
    x = np.random.default_rng(2).standard_normal((20, 127, 6)).astype(np.float32)
    p = pack(x, (1,), (2,), (2, 1, 0), padding_value=0.0)
    assert p.shape == (6, 64, 20, 2)
    assert np.all(p[:, 63, :, 1] == 0)  # the one padded element at the end of dim 1
    assert np.array_equal(p[:, :, :, 0].transpose(2, 1, 0)[:, :64], x[:, 0::2])
    assert np.array_equal(unpack(p, (1,), (2,), (2, 1, 0), shape=x.shape), x)


def test_inner_dims_pos_order_transposes_tiles():
    x = np.arange(8 * 6, dtype=np.float64).reshape(8, 6)
    p = pack(x, (1, 0), (3, 4))  # dim 1 tiled by 3, dim 0 by 4; tile dims in that order
    assert p.shape == (2, 2, 3, 4)
    assert np.array_equal(p, x.reshape(2, 4, 2, 3).transpose(0, 2, 3, 1))


# --- the verifier: invalid.mlir cases, MLIR's wording, in MLIR's order ----------------------

@pytest.mark.parametrize("shape, pos, tiles, perm, message", [
    # pack_invalid: inner_tiles = [0, 2]
    ((256, 128), (1, 0), (0, 2), (), r"invalid zero tile factor in inner_tiles = \[0, 2\]"),
    ((256, 128), (1, 0), (-4, 2), (), r"invalid tile factor -4 .*must be positive"),
    # pack_invalid_inner_dims_pos_vector: [2, 0] on rank 2
    ((256, 128), (2, 0), (2, 2), (), r"invalid inner_dims_pos vector \[2, 0\] \(position 2 is "
                                     r"out of range \[0, 2\)\)"),
    # pack_invalid_duplicate_element_in_inner_dims: [1, 1]
    ((256, 128), (1, 1), (2, 2), (), r"invalid inner_dims_pos vector \[1, 1\] \(position 1 is "
                                     r"repeated\)"),
    ((256, 128), (-1,), (2,), (), r"invalid inner_dims_pos vector \[-1\]"),
    ((256, 128), (0, 1, 0), (2, 2, 2), (), r"invalid inner_dims_pos vector .*3 positions for "
                                           r"rank 2"),
    # pack_invalid_duplicate_element_in_outer_perm: [1, 1]
    ((256, 128), (0, 1), (2, 2), (1, 1), r"invalid outer_dims_perm vector \[1, 1\] \(position 1"
                                         r" is repeated\)"),
    # unpack_invalid_out_of_bound_outer_perm: [2, 1]
    ((256, 128), (0, 1), (2, 2), (2, 1), r"invalid outer_dims_perm vector \[2, 1\]"),
    # pack_invalid_outer_dims_perm: [0] on rank 2
    ((128, 256), (0, 1), (32, 16), (0,), r"outer_dims_perm must be a permutation or empty: got "
                                         r"\[0\]"),
    # tiling factors vs rank and vs inner_dims_pos
    ((32, 32), (0,), (2, 1, 4), (), r"tiling factors must be less than or equal to the input "
                                    r"rank for pack or output rank for unpack: 3 inner_tiles"),
    ((32, 32), (0,), (2, 1), (), r"tiling factors must equal the number of dimensions to tile: "
                                 r"inner_tiles = \[2, 1\] has 2, inner_dims_pos = \[0\] has 1"),
])
def test_verifier_errors(shape, pos, tiles, perm, message):
    with pytest.raises(PackError, match=message) as info:
        packed_shape(shape, pos, tiles, perm)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("linalg.pack: ")


def test_verifier_checks_zero_tiles_before_positions():
    # MLIR's order: zero tile, inner_dims_pos, outer_dims_perm, perm size, tile counts.
    with pytest.raises(PackError, match="zero tile"):
        packed_shape((4, 4), (5, 5), (0, 2), (9,))
    with pytest.raises(PackError, match="inner_dims_pos"):
        packed_shape((4, 4), (5,), (2, 2), (9,))
    with pytest.raises(PackError, match="invalid outer_dims_perm"):
        packed_shape((4, 4), (0,), (2, 2), (9,))


@pytest.mark.parametrize("bad", [(32.5,), ("8",), 1.0])
def test_non_integer_attributes(bad):
    with pytest.raises(PackError, match="inner_tiles must be a list of integers"):
        packed_shape((64,), (0,), bad)


def test_a_bad_attribute_is_named_on_one_short_line():
    with pytest.raises(PackError, match=r"got a 2-D float64 array of shape \(100, 100\)$"):
        packed_shape((64, 64), (0, 1), np.zeros((100, 100)))
    with pytest.raises(PackError) as err:
        packed_shape((64,), (0,), list(range(500)) + [0.5])
    assert "\n" not in str(err.value) and str(err.value).endswith("...")
    assert len(str(err.value)) < 160


def test_padding_required_when_tile_does_not_divide():
    # pack_invalid_no_padding_no_full_tiles: 256x128, [1, 0] / [16, 33]
    x = np.zeros((256, 128), np.float32)
    with pytest.raises(PackError, match=r"invalid tile factor or output size provided\. Only full "
                                        r"tiles are supported when padding_value is not set: dim "
                                        r"0 of tensor<256x128> has size 256, not a multiple of its"
                                        r" tile 33"):
        pack(x, (1, 0), (16, 33))
    with pytest.raises(PackError, match="padding_value is not set"):
        pack_reference(x, (1, 0), (16, 33))
    assert pack(x, (1, 0), (16, 33), padding_value=0.0).shape == (8, 8, 16, 33)


@pytest.mark.parametrize("dt, value, why", [
    (np.int8, 300, "out of range for i8"),
    (np.int8, 1.5, "not exactly representable in i8"),
    (np.uint8, -1, r"out of range for u8 \[0, 255\]"),
    (np.int8, -129, r"out of range for i8 \[-128, 127\]"),
    (np.bool_, 2, "not exactly representable in i1"),
    (np.float16, 1e6, "overflows f16"),
    (np.float32, 1 + 2j, "complex value for a real type"),
    (np.float32, "0", "a number is expected"),
    (np.float32, np.zeros(1), "a number is expected"),
])
def test_padding_value_type(dt, value, why):
    # pad_and_pack_invalid_type: "expected padding_value has 'f32' but got: 'i32'"
    x = np.zeros((3, 5), dt)
    with pytest.raises(PackError, match=f"expected padding_value has '.*' but got: .*{why}"):
        pack(x, (0,), (2,), padding_value=value)


def test_padding_value_rounds_to_float_type():
    x = np.ones((3,), ml_dtypes.bfloat16)
    p = pack(x, (0,), (2,), padding_value=0.1)
    assert p[1, 1] == ml_dtypes.bfloat16(0.1)
    assert np.isnan(pack(x, (0,), (2,), padding_value=float("nan"))[1, 1])


def test_out_of_wrong_type_or_layout():
    x = np.zeros((9,), np.float32)
    # pack_with_artificial_padding: tensor<9xf32> into tensor<3x8xf32>
    with pytest.raises(PackError, match=r"expected 'tensor<2x8xf32>' for the packed domain value,"
                                        r" got 'tensor<3x8xf32>' \(out=\)"):
        pack(x, (0,), (8,), padding_value=0.0, out=np.empty((3, 8), np.float32))
    with pytest.raises(PackError, match=r"expected 'tensor<2x8xf32>' .* got 'tensor<2x8xf64>'"):
        pack(x, (0,), (8,), padding_value=0.0, out=np.empty((2, 8), np.float64))
    with pytest.raises(PackError, match="C-contiguous"):
        pack(x, (0,), (8,), padding_value=0.0, out=np.empty((8, 2), np.float32).T)
    with pytest.raises(PackError, match="must be a numpy array"):
        pack(x, (0,), (8,), padding_value=0.0, out=[[0.0] * 8] * 2)
    buf = np.zeros(32, np.float32)
    with pytest.raises(PackError, match="overlaps the source"):
        pack(buf[:9], (0,), (8,), padding_value=0.0, out=buf[8:24].reshape(2, 8))


def test_out_is_honoured():
    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    out = np.full((2, 2, 2, 2), 99, np.int16)
    assert pack(x, (0, 1), (2, 2), padding_value=-7, out=out) is out
    assert np.array_equal(out, pack_reference(x, (0, 1), (2, 2), padding_value=-7))
    back = np.empty((3, 4), np.int16)
    assert unpack(out, (0, 1), (2, 2), out=back) is back
    assert np.array_equal(back, x)


# --- unpack ---------------------------------------------------------------------------------

@pytest.mark.parametrize("packed, pos, tiles, perm, shape, message", [
    # unpack_invalid_output_rank
    ((64, 32, 16), (0, 1), (32, 16), (), (256, 128),
     r"packed rank != \(unpacked rank \+ num tiling factors\), got 3 != 4"),
    # unpack_with_artifical_tiles_that_are_dropped: 3x8 -> 9
    ((3, 8), (0,), (8,), (), (9,),
     r"expected 'tensor<2x8>' for the packed domain value, got 'tensor<3x8>'"),
    # unpack_invalid_source_shape: 8x8x4x32 -> 256x128 with [1, 0] / [4, 32]
    ((8, 8, 4, 32), (1, 0), (4, 32), (), (256, 128),
     r"expected 'tensor<8x32x4x32>' for the packed domain value, got 'tensor<8x8x4x32>'"),
    # unpack_invalid_outer_dims_perm: [1] on rank 2
    ((16, 4, 32, 16), (0, 1), (32, 16), (1,), (128, 256),
     r"outer_dims_perm must be a permutation or empty"),
    # unpack_mismatch_inner_tile_size_and_output_shape (static version)
    ((4, 4, 8, 8), (0, 1), (8, 4), (), None,
     r"mismatch in inner tile sizes specified and shaped of tiled dimension in the packed type: "
     r"the last 2 dims of tensor<4x4x8x8> are \[8, 8\], inner_tiles = \[8, 4\]"),
    ((8, 2), (0,), (2, 2), (), None,
     r"tiling factors must be less than or equal to the input rank for pack or output rank for "
     r"unpack: 2 inner_tiles"),
    ((8, 8, 2), (0, 1), (2,), (), None, r"tiling factors must equal the number of dimensions"),
])
def test_unpack_errors(packed, pos, tiles, perm, shape, message):
    with pytest.raises(PackError, match=message) as info:
        unpack(np.zeros(packed, np.float32), pos, tiles, perm, shape=shape)
    assert str(info.value).startswith("linalg.unpack: ")
    with pytest.raises(PackError, match=message):
        unpack_reference(np.zeros(packed, np.float32), pos, tiles, perm, shape=shape)


def test_unpack_default_shape_is_whole_tiles_and_shape_drops_tail():
    x = np.random.default_rng(3).standard_normal((10, 7)).astype(np.float32)
    p = pack(x, (0, 1), (4, 4), (1, 0), padding_value=0.0)
    whole = unpack(p, (0, 1), (4, 4), (1, 0))
    assert whole.shape == (12, 8)
    assert np.array_equal(whole[:10, :7], x)
    assert np.all(whole[10:] == 0) and np.all(whole[:, 7:] == 0)
    assert np.array_equal(unpack(p, (0, 1), (4, 4), (1, 0), shape=(10, 7)), x)
    assert np.array_equal(unpack(p, (0, 1), (4, 4), (1, 0), shape=(9, 5)), x[:9, :5])
    with pytest.raises(PackError, match=r"expected 'tensor<1x3x4x4>' for the packed domain value, "
                                        r"got 'tensor<2x3x4x4>' \(unpacking to tensor<10x4>\)"):
        unpack(p, (0, 1), (4, 4), (1, 0), shape=(10, 4))  # would drop a whole tile of dim 1
    with pytest.raises(PackError, match=r"unpacked domain value, got 'tensor<10x6xf32>' \(out=\)"):
        unpack(p, (0, 1), (4, 4), (1, 0), shape=(10, 7), out=np.empty((10, 6), np.float32))


def test_unpack_packing_mlir_doc_examples():
    assert unpack_packing((16, 8, 8, 32), (0, 1), (8, 32)).shape == (128, 256)
    assert unpack_packing((8, 16, 8, 32), (0, 1), (8, 32), (1, 0)).shape == (128, 256)


# --- dtypes, layouts, edge cases ------------------------------------------------------------

@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.float16, ml_dtypes.bfloat16,
                                np.float32, np.int64, np.float64, np.complex128, np.bool_,
                                ml_dtypes.float8_e4m3fn])
def test_every_dtype_bit_exact(dt):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((11, 13)) * 20).astype(dt)
    for tiles in [(4, 2), (3, 5), (16, 1)]:
        p = pack(x, (0, 1), tiles, padding_value=1)
        assert p.tobytes() == pack_reference(x, (0, 1), tiles, padding_value=1).tobytes()
        assert unpack(p, (0, 1), tiles, shape=x.shape).tobytes() == x.tobytes()


def test_structured_and_object_dtypes():
    rec = np.zeros((5, 3), dtype=[("a", np.int8), ("b", np.float32)])  # itemsize 5
    rec["a"] = np.arange(15).reshape(5, 3)
    p = pack(rec, (0,), (2,), padding_value=0)
    assert p.tobytes() == pack_reference(rec, (0,), (2,), padding_value=0).tobytes()
    obj = np.array([[1, "a"], [None, 2.5], [3, 4]], dtype=object)
    p = pack(obj, (0,), (2,), padding_value="pad")
    assert p.shape == (2, 2, 2) and p[1, 0, 1] == "pad" and p[0, 0, 1] is None
    assert np.array_equal(unpack(p, (0,), (2,), shape=(3, 2)), obj)


def test_non_contiguous_source_and_empty_shapes():
    x = np.arange(64, dtype=np.float32).reshape(8, 8).T  # a transposed view
    assert np.array_equal(pack(x, (0, 1), (4, 2)), pack_reference(x, (0, 1), (4, 2)))
    empty = np.zeros((0, 5), np.float32)
    assert pack(empty, (1,), (5,)).shape == (0, 1, 5)
    assert unpack(np.zeros((0, 1, 5), np.float32), (1,), (5,)).shape == (0, 5)
    assert np.array_equal(pack(np.float32(3.0), (), ()), np.float32(3.0))


def test_unaligned_source():
    buf = np.arange(4 * 16 + 1, dtype=np.uint8)
    x = buf[1:].view(np.uint8).reshape(4, 16)  # odd base address
    assert np.array_equal(pack(x, (0, 1), (2, 8)), pack_reference(x, (0, 1), (2, 8)))
    y = np.frombuffer(buf.tobytes()[1:], dtype=np.uint8).reshape(4, 16)
    assert np.array_equal(pack(y, (0, 1), (2, 8)), pack_reference(y, (0, 1), (2, 8)))


def test_large_streaming_path_matches_reference():
    from tilewise.layout.kernels import STREAMING_BYTES

    x = np.random.default_rng(5).integers(-100, 100, (1500, 1100)).astype(np.float32)
    assert x.nbytes >= STREAMING_BYTES  # written with non-temporal stores
    for tiles in [(32, 32), (16, 2), (128, 128), (8, 128)]:
        p = pack(x, (0, 1), tiles, padding_value=-1.0)
        assert np.array_equal(p, pack_reference(x, (0, 1), tiles, padding_value=-1.0))
        assert np.array_equal(unpack(p, (0, 1), tiles, shape=x.shape), x)


# --- MLIR text ------------------------------------------------------------------------------

def test_tensor_types_and_op_text():
    assert parse_tensor_type("128x256xf32") == ((128, 256), tilewise.dtype("f32"))
    assert parse_tensor_type(" tensor<4x8x32x32xbf16> ")[0] == (4, 8, 32, 32)
    for name in ["i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "i1",
                 "f8E4M3FN", "complex<f32>"]:
        shape, dt = parse_tensor_type(f"2x{name}")
        assert dt.mlir_name == name and shape == (2,)
    # The builtin signed spellings keep their signedness; integers print signless.
    assert parse_tensor_type("2xui8")[1] is tilewise.dtype("u8")
    assert parse_tensor_type("2xsi8")[1] is tilewise.dtype("i8")
    assert tilewise.dtype("u8").mlir_name == "i8"
    assert parse_tensor_type("f32") == ((), tilewise.dtype("f32"))
    assert type_str((), "f32") == "tensor<f32>"
    packing = verify((200, 127, 256), (1,), (2,), (2, 1, 0))
    assert pack_op_text(packing, "f32", 0.0) == (
        "%packed = linalg.pack %source padding_value(%pad : f32) outer_dims_perm = [2, 1, 0] "
        "inner_dims_pos = [1] inner_tiles = [2] into %dest : tensor<200x127x256xf32> -> "
        "tensor<256x64x200x2xf32>")
    assert unpack_op_text(verify((128, 256), (0, 1), (8, 32)), "f32") == (
        "%unpacked = linalg.unpack %packed inner_dims_pos = [0, 1] inner_tiles = [8, 32] into "
        "%dest : tensor<16x8x8x32xf32> -> tensor<128x256xf32>")


@pytest.mark.parametrize("text, pos, expected", [
    ("128x?xf32", 5, "a static dimension size"),
    ("128xax2xf32", 5, "a dimension size"),
    ("tensor<4x4xf32", 15, "'>' closing 'tensor<'"),
    ("4x4xf33", 5, "an element type"),
    ("4x4x", 5, "an element type such as"),
    ("", 1, "dims and an element type"),
])
def test_tensor_type_parse_errors(text, pos, expected):
    with pytest.raises(ParseError, match=f"character {pos} .*expected {expected}"):
        parse_tensor_type(text)
