"""Property tests for XLA layouts: text round trips, buffers, and the linear-index bijection."""

import dataclasses

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from tilewise.dtypes import XLA_DTYPES
from tilewise.layout.xla import Shape

MAX_BUFFER = 20_000  # keep generated buffers small (elements)
DTYPES = ["f32", "bf16", "s8", "s4", "u8", "pred", "f16", "s32"]


@st.composite
def shape_texts(draw, max_rank=4, max_tiles=3, extras=True):
    """XLA shape text built field by field in XLA's canonical spelling."""
    name = draw(st.sampled_from(DTYPES))
    rank = draw(st.integers(0, max_rank))
    dims = draw(st.lists(st.integers(0, 7), min_size=rank, max_size=rank))
    dyn = draw(st.lists(st.booleans(), min_size=rank, max_size=rank)) if extras else [False] * rank
    m2m = draw(st.permutations(range(rank)))
    tiles = []
    cur_rank = rank
    for _ in range(draw(st.integers(0, max_tiles))):
        k = draw(st.integers(1, max(1, cur_rank + (1 if cur_rank < 3 else 0))))
        entries = [draw(st.one_of(st.integers(1, 5), st.just("*"))) for _ in range(k - 1)]
        entries.append(draw(st.integers(1, 5)))
        tiles.append("(" + ",".join(map(str, entries)) + ")")
        cur_rank = max(cur_rank, k) - entries.count("*") + (k - entries.count("*"))
    fields = ""
    if tiles:
        fields += "T" + "".join(tiles)
    if extras:
        if draw(st.booleans()):
            fields += f"L({draw(st.integers(2, 64))})"
        if draw(st.booleans()):
            bits = XLA_DTYPES[name].bits if name != "pred" else 1
            fields += f"E({draw(st.integers(bits, 64))})"
        if draw(st.booleans()):
            fields += f"S({draw(st.integers(1, 5))})"
    layout = "{" + ",".join(map(str, m2m)) + (":" + fields if fields else "") + "}"
    dim_text = ",".join(("<=" if d else "") + str(n) for n, d in zip(dims, dyn))
    return f"{name}[{dim_text}]" + ("" if layout == "{}" else layout)


def small(text: str) -> Shape:
    s = Shape.parse(text)
    assume(s.size_in_elements <= MAX_BUFFER)
    return s


@given(shape_texts())
def test_text_round_trips(text):
    s = Shape.parse(text)
    assert str(s) == text
    assert Shape.parse(str(s)) == s


@given(shape_texts(extras=False), st.integers(0, 2**32 - 1))
def test_buffer_round_trip_and_bijection(text, seed):
    s = dataclasses.replace(small(text), dtype="s32")  # values and the -1 fill stay distinct
    x = np.random.default_rng(seed).integers(1, 1000, size=s.dims).astype(np.int32)
    buf = s.to_physical(x, fill=-1)
    assert buf.shape == (s.size_in_elements,)
    np.testing.assert_array_equal(s.from_physical(buf), x)

    offsets = s.linear_indices()
    # buffer[linear_index(i)] == x[i] for every i, computed by an independent path
    np.testing.assert_array_equal(buf[offsets], x)
    # a bijection onto exactly the non-padding offsets
    assert len(set(offsets.ravel().tolist())) == offsets.size
    assert set(np.nonzero(buf != -1)[0].tolist()) == set(offsets.ravel().tolist())
    assert int(np.sum(buf == -1)) == s.padding_elements
    if s.num_elements:
        i = tuple(int(v) for v in np.unravel_index(s.num_elements // 2, s.dims))
        assert s.linear_index(i) == offsets[i]


@given(shape_texts(max_tiles=0, extras=False))
def test_untiled_layout_is_a_strided_permutation(text):
    s = Shape.parse(text)
    perm = s.physical_order
    expected = np.arange(s.num_elements).reshape([s.dims[d] for d in perm])
    np.testing.assert_array_equal(s.linear_indices(), expected.transpose(np.argsort(perm)))
