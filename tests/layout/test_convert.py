"""XLA tiling <-> linalg.pack conversions, checked against a plain numpy reference of pack."""

import importlib.util

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tilewise.errors import PackError
from tilewise.layout.convert import (
    Collapse, Expand, PackStep, Transpose, pack_to_xla, to_mlir, xla_to_pack,
)
from tilewise.layout.xla import Shape

from .test_xla_properties import MAX_BUFFER, shape_texts


def ref_pack(x, inner_dims_pos, inner_tiles, outer_dims_perm=(), pad=0):
    """MLIR linalg.pack in numpy: pad high, split tiled dims, outer (permuted) then inner."""
    tiles = dict(zip(inner_dims_pos, inner_tiles))
    padded = [-(-n // tiles[d]) * tiles[d] if d in tiles else n for d, n in enumerate(x.shape)]
    x = np.pad(x, [(0, p - n) for p, n in zip(padded, x.shape)], constant_values=pad)
    split, outer_axis, inner_axis = [], {}, {}
    for d, n in enumerate(padded):
        outer_axis[d] = len(split)
        if d in tiles:
            split += [n // tiles[d], tiles[d]]
            inner_axis[d] = outer_axis[d] + 1
        else:
            split.append(n)
    order = outer_dims_perm or range(x.ndim)
    perm = [outer_axis[d] for d in order] + [inner_axis[d] for d in inner_dims_pos]
    return x.reshape(split).transpose(perm)


def apply(steps, x, pad=0):
    for step in steps:
        if isinstance(step, Transpose):
            x = x.transpose(step.perm)
        elif isinstance(step, (Collapse, Expand)):
            x = x.reshape(step.result_shape(x.shape))
        else:
            expected = step.result_shape(x.shape)
            x = ref_pack(x, step.inner_dims_pos, step.inner_tiles, step.outer_dims_perm, pad)
            assert x.shape == expected
    return x


def test_reference_pack_matches_mlir_doc_shape():
    # linalg.pack docs: 128x256, outer_dims_perm [1,0], inner_dims_pos [0,1], tiles [8,32].
    x = np.zeros((128, 256))
    assert ref_pack(x, (0, 1), (8, 32), (1, 0)).shape == (8, 16, 8, 32)
    assert PackStep((0, 1), (8, 32), (1, 0)).result_shape((128, 256)) == (8, 16, 8, 32)


@pytest.mark.parametrize("text, steps", [
    ("f32[3,5]{1,0}", ()),
    ("f32[3,5]{0,1}", (Transpose((1, 0)),)),
    ("f32[3,5]{1,0:T(2,2)}", (PackStep((0, 1), (2, 2)),)),
    ("f32[3,5]{0,1:T(2,2)}", (PackStep((1, 0), (2, 2), (1, 0)),)),
    ("f32[3,4,5]{0,2,1:T(2)}", (PackStep((0,), (2,), (1, 2, 0)),)),
    ("bf16[4,8]{1,0:T(2,4)(2,1)}", (PackStep((0, 1), (2, 4)), PackStep((2, 3), (2, 1)))),
    ("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
     (Collapse(((0, 1, 2), (3, 4))), PackStep((0, 1), (2, 3)))),
    ("f32[2,3,4]{1,2,0:T(*,2,2)}",
     (Transpose((0, 2, 1)), Collapse(((0, 1), (2,))), PackStep((0, 1), (2, 2)))),
    ("f32[]{:T(128)}", (Expand((), (1,)), PackStep((0,), (128,)))),
])
def test_xla_to_pack_examples(text, steps):
    s = Shape.parse(text)
    assert xla_to_pack(s) == steps
    x = np.arange(s.num_elements).reshape(s.dims).astype(s.dtype.numpy)
    out = apply(steps, x, pad=-1)
    assert out.shape == s.physical_shape
    np.testing.assert_array_equal(out.ravel(), s.to_physical(x, fill=-1))


@given(shape_texts(extras=False), st.integers(0, 2**32 - 1))
def test_xla_tiling_equals_pack_steps(text, seed):
    s = Shape.parse(text)
    assume(s.size_in_elements <= MAX_BUFFER)
    x = np.random.default_rng(seed).integers(0, 100, size=s.dims).astype(s.dtype.numpy)
    steps = xla_to_pack(s)
    out = apply(steps, x, pad=-1)
    assert out.shape == s.physical_shape
    np.testing.assert_array_equal(out.ravel(), s.to_physical(x, fill=-1)[: out.size])


@st.composite
def packs(draw):
    rank = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(0, 7), min_size=rank, max_size=rank)))
    pos = tuple(draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))])
    tiles = tuple(draw(st.integers(1, 5)) for _ in pos)
    perm = tuple(draw(st.permutations(range(rank)))) if draw(st.booleans()) else ()
    return dims, pos, tiles, perm


@given(packs(), st.integers(0, 2**32 - 1))
def test_pack_to_xla_buffer_equals_packed_buffer(pack, seed):
    dims, pos, tiles, perm = pack
    s = pack_to_xla(dims, "f32", pos, tiles, perm)
    assert s.dims == dims
    x = np.random.default_rng(seed).integers(0, 100, size=dims).astype(np.float32)
    np.testing.assert_array_equal(s.to_physical(x, fill=-1), ref_pack(x, pos, tiles, perm, -1).ravel())
    assert Shape.parse(str(s)) == s


@pytest.mark.parametrize("args, text", [
    (((3, 5), "f32", (0, 1), (2, 2)), "f32[3,5]{1,0:T(2,2)}"),
    (((3, 5), "f32", (), ()), "f32[3,5]{1,0}"),
    (((3, 5), "f32", (), (), (1, 0)), "f32[3,5]{0,1}"),
    (((128, 256), "f32", (0, 1), (8, 32), (1, 0)), "f32[128,256]{0,1:T(32,8)(32,1)}"),
    (((16, 32), "bf16", (0,), (8,)), "bf16[16,32]{1,0:T(8,1)}"),
    (((16, 32), "bf16", (1, 0), (8, 4)), "bf16[16,32]{1,0:T(4,8)(4,1)}"),
    (((4, 5, 6), "f32", (2, 0, 1), (2, 3, 4), (1, 2, 0)), "f32[4,5,6]{0,2,1:T(4,2,3)(4,1,1)}"),
])
def test_pack_to_xla_examples(args, text):
    assert str(pack_to_xla(*args)) == text


@pytest.mark.parametrize("args, match", [
    (((3, 5), "f32", (0, 1), (2,)), r"inner_tiles = \[2\] has 1, inner_dims_pos = \[0, 1\] has 2"),
    (((3, 5), "f32", (0, 0), (2, 2)), r"invalid inner_dims_pos vector \[0, 0\] \(position 0 is "
                                      r"repeated\)"),
    (((3, 5), "f32", (2,), (2,)), r"\[2\] \(position 2 is out of range \[0, 2\)\)"),
    (((3, 5), "f32", (0,), (0,)), r"invalid zero tile factor in inner_tiles = \[0\]"),
    (((3, 5), "f32", (0,), (2,), (0,)), r"outer_dims_perm must be a permutation or empty: got "
                                        r"\[0\]"),
])
def test_pack_to_xla_rejects_invalid_packs(args, match):
    # The one pack verifier (tilewise.layout.pack.verify): MLIR's wording plus the values.
    with pytest.raises(PackError, match=match):
        pack_to_xla(*args)


def test_to_mlir_text():
    text = to_mlir(Shape.parse("f32[3,5]{0,1:T(2,2)}"))
    assert "func.func @to_physical(%arg0: tensor<3x5xf32>) -> tensor<3x2x2x2xf32>" in text
    assert ("linalg.pack %arg0 padding_value(%pad : f32) outer_dims_perm = [1, 0] "
            "inner_dims_pos = [1, 0] inner_tiles = [2, 2] into %e0 : tensor<3x5xf32> -> "
            "tensor<3x2x2x2xf32>") in text
    assert "%pad = arith.constant 0.000000e+00 : f32" in text
    even = to_mlir(Shape.parse("s8[4,8]{1,0:T(2,4)(2,1)}"))
    assert "padding_value" not in even and "tensor<4x8xi8>" in even
    m = to_mlir(Shape.parse("pred[2,3,4]{1,2,0:T(*,2,2)}"))
    assert "linalg.transpose ins(%arg0 : tensor<2x3x4xi1>) outs(%e0 : tensor<2x4x3xi1>) " \
           "permutation = [0, 2, 1]" in m
    assert "tensor.collapse_shape %0 [[0, 1], [2]] : tensor<2x4x3xi1> into tensor<8x3xi1>" in m
    assert "%pad = arith.constant false" in m
    assert "tensor.expand_shape %arg0 [] output_shape [1] : tensor<f32> into tensor<1xf32>" in \
        to_mlir(Shape.parse("f32[]{:T(128)}"))


@pytest.mark.skipif(importlib.util.find_spec("tilewise.layout.pack") is None,
                    reason="tilewise.layout.pack (other area) not written yet")
@given(shape_texts(extras=False, max_rank=3), st.integers(0, 2**32 - 1))
def test_steps_agree_with_tilewise_pack(text, seed):
    from tilewise.layout.pack import pack

    s = Shape.parse(text)
    assume(s.size_in_elements <= MAX_BUFFER)
    x = np.random.default_rng(seed).integers(0, 100, size=s.dims).astype(np.float32)
    out = x
    for step in xla_to_pack(s):
        if isinstance(step, PackStep):
            out = np.asarray(pack(out, step.inner_dims_pos, step.inner_tiles, step.outer_dims_perm,
                                  padding_value=-1.0))
        else:
            out = apply((step,), out)
    np.testing.assert_array_equal(out.ravel().astype(s.dtype.numpy),
                                  s.to_physical(x.astype(s.dtype.numpy), fill=-1)[: out.size])
