"""Hostile arguments to the Python API: each raises the project's own error type (a
TilewiseError) with the bad value named, or gives a correct answer; never a TypeError,
AttributeError or a silently wrong result."""

import numpy as np
import pytest

import tilewise as tw

W = tw.gemm(32, 32, 32, dtype="i8")
MAP = "ddr[m32 n32 k32] kmn | memtile[m32 n32 k16] mnk | core[m16 n8 k16] ; rows=n4 cols=m2"
S = tw.Shape.parse("f32[4,4]")
A = np.zeros((4, 4), np.float32)


def _isa():
    import tilewise.isa.ascend as isa

    return isa


@pytest.mark.parametrize("call, error, match", [
    (lambda: S.linear_index((1.5, 2)), tw.LayoutError, r"\(1.5, 2\)"),
    (lambda: S.linear_index((True, 2)), tw.LayoutError, r"\(True, 2\)"),
    (lambda: S.linear_index("12"), tw.LayoutError, "'12'"),
    (lambda: S.linear_index(5), tw.LayoutError, "5"),
    (lambda: S.linear_index((1,)), tw.LayoutError, "need 2 integers"),
    (lambda: S.linear_index((-1, 0)), tw.LayoutError, "out of bounds"),
    (lambda: tw.Shape.parse(5), tw.LayoutError, "int 5"),
    (lambda: tw.Shape.parse(None), tw.LayoutError, "NoneType"),
    (lambda: tw.Shape.parse("f32[99999999999999999999]"), tw.LayoutError, "2\\^62"),
    (lambda: S.to_physical(np.zeros((4, 4), np.int8)), tw.LayoutError, "dtype int8"),
    (lambda: S.to_physical(np.zeros((4, 4), np.float64)), tw.LayoutError, "float64"),
    (lambda: S.to_physical(np.zeros((4, 5), np.float32)), tw.LayoutError, r"\(4, 5\)"),
    (lambda: S.to_physical([[0.5] * 4] * 4 if False else "abcd"), tw.LayoutError, "abcd"),
    (lambda: tw.Shape.parse("s8[2]").to_physical([1, 300]), tw.LayoutError, "300"),
    (lambda: S.from_physical(np.zeros(3, np.float32)), tw.LayoutError, "16 elements"),
    (lambda: tw.xla_to_pack("garbage"), tw.ParseError, "garbage"),
    (lambda: tw.to_mlir(7), tw.LayoutError, "int 7"),
    (lambda: tw.pack(A, inner_dims_pos=(True,), inner_tiles=(2,)), tw.PackError, r"\(True,\)"),
    (lambda: tw.pack(A, inner_dims_pos=(0,), inner_tiles=(True,)), tw.PackError, r"\(True,\)"),
    (lambda: tw.pack(A, inner_dims_pos=(0,), inner_tiles=(2.0,)), tw.PackError, r"\(2.0,\)"),
    (lambda: tw.pack(A, inner_dims_pos=(0,), inner_tiles="2"), tw.PackError, "'2'"),
    (lambda: tw.pack(A, inner_dims_pos=(0,), inner_tiles=(3,)), tw.PackError, "multiple"),
    (lambda: tw.pack(A, inner_dims_pos=(0,), inner_tiles=(2,), outer_dims_perm=(0,)),
     tw.PackError, r"\[0\]"),
    (lambda: tw.pack(np.float32(3), inner_dims_pos=(0,), inner_tiles=(2,)), tw.PackError, "rank-0"),
    (lambda: tw.pack(np.zeros((3, 4), np.float32), inner_dims_pos=(0,), inner_tiles=(2,),
                     padding_value="x"), tw.PackError, "'x'"),
    (lambda: tw.unpack(np.zeros((2, 2, 2), np.float32), inner_dims_pos=(0, 1), inner_tiles=(2, 2)),
     tw.PackError, "rank"),
    (lambda: tw.packed_shape((4.5, 4), (0,), (2,)), tw.PackError, r"\(4.5, 4\)"),
    (lambda: tw.packed_shape((4, 4), (0,), (0,)), tw.PackError, "zero tile"),
    (lambda: tw.parse_tensor_type("4x4"), tw.ParseError, "'4x4'"),
    (lambda: tw.gemm(1.5, 2, 2), tw.WorkloadError, "1.5"),
    (lambda: tw.gemm(True, 2, 2), tw.WorkloadError, "True"),
    (lambda: tw.gemm("8", 2, 2), tw.WorkloadError, "'8'"),
    (lambda: tw.gemm(8, 8, 8, dtype="float99"), tw.WorkloadError, "float99"),
    (lambda: tw.gemm(8, 8, 8, dtype=None), tw.WorkloadError, "None"),
    (lambda: tw.search(tw.gemm(2**70, 2, 2), "aie-4x2"), tw.TilewiseError, "2\\^40"),
    (lambda: tw.mha(-1, 8, 8), tw.WorkloadError, "-1"),
    (lambda: tw.einsum("ij,jk->ik", i=4, j=-1, k=2), tw.WorkloadError, "-1"),
    (lambda: tw.einsum("ij,jk->ik", i=4, j=2.5, k=2), tw.WorkloadError, "2.5"),
    (lambda: tw.einsum("ij,jk->ik", i=4, j=2, k=2, z=3), tw.WorkloadError, "z"),
    (lambda: tw.einsum("i j k", i=4), tw.ParseError, "'i j k'"),
    (lambda: tw.conv2d(1, 3, 8, 8, 8, 3, 3, stride=0), tw.WorkloadError, "stride 0"),
    (lambda: tw.search(W, "aie-4x2", spatial=3), tw.TilewiseError, "spatial=3"),
    (lambda: tw.search(W, "aie-4x2", spatial=[1, 2]), tw.TilewiseError, r"\[1, 2\]"),
    (lambda: tw.search(W, "aie-4x2", top=1.5), tw.TilewiseError, "top=1.5"),
    (lambda: tw.search(W, "aie-4x2", top=True), tw.TilewiseError, "top=True"),
    (lambda: tw.search(W, "aie-4x2", objective="fast"), tw.TilewiseError, "'fast'"),
    (lambda: tw.search(W, "aie-4x2", objective=3), tw.TilewiseError, "3"),
    (lambda: tw.search(W, "aie-4x2", colour="red"), tw.TilewiseError, "'colour'"),
    (lambda: tw.search(W, "aie-4x2", double_buffer="maybe"), tw.TilewiseError, "'maybe'"),
    (lambda: tw.search(W, 5), tw.SpecError, "int 5"),
    (lambda: tw.search(W, ""), tw.SpecError, "empty"),
    (lambda: tw.search(W, b"aie-4x2"), tw.SpecError, "bytes"),
    (lambda: tw.load_arch("/tmp"), tw.SpecError, "is a folder"),
    (lambda: tw.evaluate(W, "aie-4x2", None), tw.MappingError, "NoneType"),
    (lambda: tw.evaluate(W, "aie-4x2", 3), tw.MappingError, "int 3"),
    (lambda: tw.evaluate(W, "aie-4x2", {"x": 1}), tw.MappingError, "levels"),
    (lambda: tw.Mapping.from_json("{not json"), tw.MappingError, "does not parse"),
    (lambda: tw.Mapping.from_json("[1, 2]"), tw.MappingError, "malformed"),
    (lambda: tw.Mapping.parse(5), tw.MappingError, "int 5"),
    (lambda: tw.Result.from_json("{bad", W, "aie-4x2"), tw.TilewiseError, "Result"),
    (lambda: tw.Result.from_json('{"top": 3}', W, "aie-4x2"), tw.TilewiseError, "Result"),
    (lambda: tw.verify(W, None), tw.MappingError, "NoneType"),
    (lambda: tw.verify(W, MAP, arch="aie-4x2", seed=-1), tw.WorkloadError, "seed -1"),
    (lambda: tw.verify(W, MAP, arch="aie-4x2", seed=1.5), tw.WorkloadError, "seed 1.5"),
    (lambda: tw.execute(W, MAP, arch="aie-4x2", inputs={"A": np.zeros((3, 3), np.int8)}),
     tw.WorkloadError, "lack B"),
    (lambda: tw.execute(W, MAP, arch="aie-4x2", inputs={"A": np.zeros((32, 32)),
                                                         "B": np.zeros((32, 32), np.int8)}),
     tw.DTypeError, "float64"),
    (lambda: tw.execute(W, MAP, arch="aie-4x2", inputs={"A": np.zeros((31, 32), np.int8),
                                                         "B": np.zeros((32, 32), np.int8)}),
     tw.WorkloadError, "31"),
    (lambda: tw.execute(W, MAP, arch="aie-4x2", inputs=[1, 2]), tw.WorkloadError, "list"),
    (lambda: tw.search_many(W, "aie-4x2"), tw.TilewiseError, "Chain"),
    (lambda: tw.search_many([W], "aie-4x2", workers="2"), tw.TilewiseError, "'2'"),
    (lambda: tw.search_many([W], "aie-4x2", store=5, workers=1), tw.TilewiseError, "store=5"),
    (lambda: tw.random_inputs(None), tw.WorkloadError, "NoneType"),
    (lambda: tw.reference(W, {"A": 1}), tw.WorkloadError, "lack B"),
    (lambda: tw.reference("gemm", {}), tw.WorkloadError, "tilewise.gemm"),
    (lambda: tw.dtype("i7"), tw.DTypeError, "'i7'"),
    (lambda: tw.dtype(7), tw.DTypeError, "7"),
    (lambda: tw.import_onnx("/nope.onnx"), tw.ModelError, "/nope.onnx"),
    (lambda: tw.import_onnx("/tmp"), tw.ModelError, "/tmp"),
    (lambda: tw.simulate(W, "aie-4x2", None), tw.MappingError, "NoneType"),
    (lambda: tw.blocked_attention(np.zeros((4, 8)), np.zeros((5, 8)), np.zeros((4, 8)), 2, 2),
     tw.WorkloadError, r"\(5, 8\)"),
    (lambda: tw.blocked_layernorm(np.zeros((4, 8)), np.zeros(3), np.zeros(8), 2, 2),
     tw.WorkloadError, r"\(3,\)"),
    (lambda: tw.Shape("f32", (True, 2)), tw.LayoutError, "True is not an integer"),
    (lambda: tw.Shape("f32", (2.5, 2)), tw.LayoutError, "2.5 is not an integer"),
    (lambda: tw.Layout((1.0, 0)), tw.LayoutError, "1.0 is not an integer"),
    (lambda: tw.pack(A, (0,), (2,), out=np.zeros((3, 3), np.float32)), tw.PackError, "3x3"),
    (lambda: tw.pack(A, (0,), (2,), out=[1]), tw.PackError, "list"),
    (lambda: tw.unpack(np.zeros((2, 4, 2), np.float32), (0,), (2,), shape=(4.0, 4)),
     tw.PackError, r"\(4.0, 4\)"),
    (lambda: _isa().Tile(0, True, 8), tw.ISAError, "rows = True"),
    (lambda: _isa().tile_copies(_isa().GMTensor((10, 10), "f16"), _isa().UBTile((0.5, 0), (5, 5), 0)),
     tw.ISAError, "0.5 is not an integer"),
    (lambda: _isa().tile_copies(_isa().GMTensor((10, 10), "f16"), _isa().UBTile((0, 0), (5, 5), 0),
                                ub_bytes=10), tw.ISAError, "past the unified buffer of 10"),
    (lambda: _isa().plan("Add", "f16", _isa().Tile(0, 1, 128),
                         [_isa().Tile(256, 1, 128), _isa().Tile(512, 1, 128)], ub_bytes=600),
     tw.ISAError, "src1 tile"),
])
def test_api_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_spatial_as_one_text_is_one_split():
    """`spatial="rows=m4 cols=n2"` is one split (issue 18 found it split into characters)."""
    best = tw.search(W, "aie-4x2", spatial="rows=m4 cols=n2", top=1).best.mapping
    assert (best.rows.dim, best.rows.ways, best.cols.dim, best.cols.ways) == ("m", 4, "n", 2)


def test_lists_convert_to_the_layout_dtype_when_exact():
    buf = tw.Shape.parse("f32[2,2]{0,1}").to_physical([[1, 2], [3, 4]])
    assert buf.dtype == np.float32 and buf.tolist() == [1, 3, 2, 4]
