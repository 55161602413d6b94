"""The BD splitting rule (:mod:`tilewise.model.descriptors`), counted by hand."""

from tilewise import load_arch
from tilewise.model.descriptors import bd_count, byte_dims, split, transfer_bds, word_dims

AIE = load_arch("aie-4x2")
SHIM, MEMTILE, CORE = (lv.dma for lv in AIE.levels)


def test_contiguous_dims_merge_and_size_one_dims_drop():
    # a 4 x 16 i16 tile spanning whole rows of 16: one run of 128 B
    assert byte_dims(32, (1, 4, 16), (64, 16, 1), 2) == (64, [(128, 1)])
    # 4 rows of 8 of a 16-wide i16 matrix: 4 runs of 16 B, 32 B apart
    assert byte_dims(0, (4, 8), (16, 1), 2) == (0, [(4, 32), (16, 1)])
    assert word_dims([(4, 32), (16, 1)], 4) == [(4, 8), (4, 1)]


def test_hand_counts_on_aie_4x2():
    # 2-D tile: 64 rows of 12 words, one BD on every DMA
    assert [bd_count((64, 48), (768, 1), 1, lim) for lim in (SHIM, MEMTILE, CORE)] == [1, 1, 1]
    # 4-D (n, c, h, w) i8 tile, nothing merges: 4 dims. The shim (3 dims + repeat 64) folds n
    # into the repeat while n <= 64, else unrolls n: 100 BDs; the memtile has 4 dims: 1 BD;
    # the core (3 dims, no repeat) unrolls n: one BD per image
    four = ((16384, 1024, 32, 1), 1)
    assert bd_count((2, 3, 4, 8), *four, SHIM) == 1
    assert bd_count((100, 3, 4, 8), *four, SHIM) == 100
    assert bd_count((100, 3, 4, 8), *four, MEMTILE) == 1
    assert bd_count((5, 3, 4, 8), *four, CORE) == 5
    # a stride over the core's 8192 words: one BD per row (3 rows)
    assert bd_count((3, 8), (10000, 1), 4, CORE) == 3
    assert bd_count((0, 8), (10, 1), 4, CORE) == 0  # an empty access moves nothing


def test_split_offsets_and_the_transfer_takes_its_longest_side():
    bds = split(7, [(5, 256), (3, 32), (2, 8), (2, 1)], CORE)
    assert [d.offset for d in bds] == [7 + 256 * i for i in range(5)]
    assert {d.sizes for d in bds} == {(3, 2, 2)}
    assert transfer_bds([1, 5]) == 5 and transfer_bds([]) == 0


# ----- the compiled count (what the cost kernel and simulate use) equals the split's length

from hypothesis import given, settings, strategies as st  # noqa: E402

from tilewise.arch.spec import DmaLimits  # noqa: E402
from tilewise.model.descriptors import count_bds, limits_row, MAX_DIMS  # noqa: E402
import numpy as np  # noqa: E402


@st.composite
def _accesses(draw):
    n = draw(st.integers(1, 5))
    sizes = [draw(st.sampled_from([0, 1, 2, 3, 4, 5, 8, 64, 65, 300, 1024, 2048]))
             for _ in range(n)]
    if draw(st.booleans()):  # a row-major box of a larger buffer
        shape = [s + draw(st.sampled_from([0, 0, 1, 4, 100])) for s in sizes]
        strides = [int(np.prod(shape[i + 1:])) for i in range(n)]
    else:
        strides = [draw(st.integers(1, 40000)) for _ in range(n - 1)] + [1]
    eb = draw(st.sampled_from([1, 2, 4]))
    lim = draw(st.sampled_from([SHIM, MEMTILE, CORE, DmaLimits(2, 7, 500, max_repeat=3),
                                DmaLimits(3, 16, 64, max_length_words=1000)]))
    return tuple(sizes), tuple(strides), eb, lim


@settings(max_examples=400, deadline=None)
@given(_accesses())
def test_compiled_count_equals_the_split(case):
    sizes, strides, eb, lim = case
    if 0 in sizes:
        assert bd_count(sizes, strides, eb, lim) == 0
        return
    _, dims = byte_dims(0, sizes, strides, eb)
    if any(s % lim.word_bytes for _, s in dims[:-1]) or dims[-1][0] % lim.word_bytes:
        return  # not whole words: the emitter refuses it (no count to compare)
    work = np.zeros((4, MAX_DIMS), np.int64)
    got = count_bds(np.array(sizes, np.int64), np.array(strides, np.int64), len(sizes), eb,
                    limits_row(lim), work)
    count = bd_count(sizes, strides, eb, lim)
    assert got == count, case
    if count > 5000:
        return  # too many BDs to list here: a narrow limit splits a 2048 dim into hundreds
    assert len(split(0, word_dims(dims, lim.word_bytes), lim)) == count, case
