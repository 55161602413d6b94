"""Property tests: the compiled pack/unpack equal the numpy reference bit for bit."""

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tilewise import pack, pack_reference, packed_shape, unpack, unpack_reference

DTYPES = [np.int8, ml_dtypes.bfloat16, np.float32, np.float64]
SIZES = st.sampled_from([1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 31, 32, 33])
TILES = st.sampled_from([1, 2, 3, 4, 5, 7, 8, 16, 32])


@st.composite
def problems(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(SIZES, min_size=rank, max_size=rank)))
    if rank == 4:  # keep examples small
        shape = tuple(min(s, 7) for s in shape)
    pos = tuple(draw(st.permutations(range(rank)))[: draw(st.integers(0, rank))])
    tiles = tuple(draw(TILES) for _ in pos)
    perm = tuple(draw(st.permutations(range(rank)))) if draw(st.booleans()) else ()
    dt = draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    x = (np.random.default_rng(seed).standard_normal(shape) * 100).astype(dt)
    return x, pos, tiles, perm


def _pad_for(x):
    return {np.dtype(np.int8): -128}.get(x.dtype, -3.5)


@given(problems())
def test_pack_equals_reference_and_unpack_inverts(problem):
    x, pos, tiles, perm = problem
    pad = _pad_for(x)
    p = pack(x, pos, tiles, perm, padding_value=pad)
    ref = pack_reference(x, pos, tiles, perm, padding_value=pad)
    assert p.shape == ref.shape == packed_shape(x.shape, pos, tiles, perm)
    assert p.dtype == x.dtype
    assert p.tobytes() == ref.tobytes()  # bit for bit, padding included
    assert unpack(p, pos, tiles, perm, shape=x.shape).tobytes() == x.tobytes()
    assert unpack_reference(p, pos, tiles, perm, shape=x.shape).tobytes() == x.tobytes()


@given(problems(), st.data())
def test_unpack_smaller_shape_drops_tail(problem, data):
    x, pos, tiles, perm = problem
    p = pack(x, pos, tiles, perm, padding_value=_pad_for(x))
    tile_of = dict(zip(pos, tiles))
    # Any shape with the same number of tiles per dim: ceil(shape / tile) == outer.
    shape = tuple(
        data.draw(st.integers((-(-s // tile_of[d]) - 1) * tile_of[d] + 1, s)) if d in tile_of
        else s for d, s in enumerate(x.shape))
    shape = tuple(max(1, s) if x.shape[d] else 0 for d, s in enumerate(shape))
    expected = x[tuple(slice(0, s) for s in shape)]
    out = np.empty(shape, x.dtype)
    got = unpack(p, pos, tiles, perm, shape=shape, out=out)
    assert got is out
    assert got.tobytes() == expected.tobytes()
    assert unpack_reference(p, pos, tiles, perm, shape=shape).tobytes() == expected.tobytes()


@given(problems())
def test_out_is_honoured_and_fully_written(problem):
    x, pos, tiles, perm = problem
    pad = _pad_for(x)
    out = np.full(packed_shape(x.shape, pos, tiles, perm), 77, dtype=x.dtype)
    assert pack(x, pos, tiles, perm, padding_value=pad, out=out) is out
    assert out.tobytes() == pack_reference(x, pos, tiles, perm, padding_value=pad).tobytes()
