"""The DMA-limits verdict from access shapes (no walk) equals the walking check's, on random
mappings of the AIE presets and on tightened limits that reject some of them."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tilewise import conv2d, gemm, gemm_chain, layernorm, load_arch, mha
from tilewise.emit.dma.legal import UNCHECKED, _Checker, dma_verdict, dma_violation
from tilewise.emit.dma.shapes import FALLBACK, dim_walk, shapes_violation

from ..model.strategies import mappings

AIE = ("aie-4x2", "npu1", "npu2")


def _tight(arch, level: int, **changes):
    levels = list(arch.levels)
    levels[level] = dataclasses.replace(levels[level], dma=dataclasses.replace(levels[level].dma, **changes))
    return dataclasses.replace(arch, levels=tuple(levels))


@st.composite
def _workloads(draw, arch):
    kind = draw(st.sampled_from(["gemm", "conv2d", "mha", "layernorm", "gemm_chain"]))
    four = st.integers(1, 6).map(lambda x: 4 * x)
    dt = draw(st.sampled_from(sorted(arch.compute.macs_per_cycle)))
    float_dt = "bf16" if "bf16" in arch.compute.macs_per_cycle else dt
    if kind == "gemm":
        out = draw(st.sampled_from([None, "i8"])) if dt == "i8" else None
        return gemm(draw(st.integers(1, 40)), draw(st.integers(1, 40)), draw(st.integers(1, 40)),
                    dtype=dt, out_dtype=out)
    if kind == "conv2d":  # padding and stride: windows clipped at the borders, rounded out
        r = draw(st.integers(1, 3))
        return conv2d(1, draw(st.integers(1, 8)), draw(st.integers(r, 12)), draw(st.integers(r, 12)),
                      draw(st.integers(1, 8)), r, r, stride=draw(st.integers(1, 2)),
                      padding=draw(st.integers(0, 1)), dtype=draw(st.sampled_from(["i8", "i16"])))
    if kind == "mha":
        return mha(draw(four), draw(four), draw(st.sampled_from([4, 8])), heads=draw(st.integers(1, 2)),
                   dtype=float_dt)
    if kind == "layernorm":
        return layernorm(draw(four), draw(four), dtype=float_dt)
    return gemm_chain(draw(four), draw(four), draw(four), draw(four), dtype=dt)


@st.composite
def _cases(draw):
    arch = load_arch(draw(st.sampled_from(AIE)))
    w = draw(_workloads(arch))
    m = draw(mappings(w, arch))
    tighten = draw(st.sampled_from([None, "max_stride_words", "max_wrap", "bds", "dims"]))
    if tighten is not None:  # limits tight enough to reject some mappings
        level = draw(st.integers(0, len(arch.levels) - 1))
        value = {"max_stride_words": st.integers(4, 64), "max_wrap": st.integers(2, 16),
                 "bds": st.integers(1, 2), "dims": st.integers(1, 2)}[tighten]
        arch = _tight(arch, level, **{tighten: draw(value)})
    return w, arch, m


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_the_shapes_verdict_equals_the_walking_check(case):
    w, arch, m = case
    walked = dma_violation(w, arch, m, max_events=None)
    fast = dma_verdict(w, arch, m)
    assert (fast is None) == (walked is None), (str(m), fast, walked)
    assert (fast == UNCHECKED) == (walked == UNCHECKED)


@st.composite
def _long_dims(draw):
    """GEMMs with dims of up to 40 tiles (walked in part: ``dim_walk``'s ``period``), tight
    limits on one level."""
    arch = load_arch(draw(st.sampled_from(AIE)))
    dt = draw(st.sampled_from(["i8", "i16"]))
    w = gemm(draw(st.integers(60, 160)), draw(st.integers(60, 160)), draw(st.integers(60, 160)),
             dtype=dt, out_dtype=draw(st.sampled_from([None, dt])))
    m = draw(mappings(w, arch))
    level = draw(st.integers(0, len(arch.levels) - 1))
    return w, _tight(arch, level, max_stride_words=draw(st.integers(8, 64))), m


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_long_dims())
def test_the_shapes_of_long_dims_are_the_walks(case):
    w, arch, m = case
    walked = dma_violation(w, arch, m, max_events=None)
    assert (dma_verdict(w, arch, m) is None) == (walked is None), (str(m), walked)


def test_a_long_dim_walks_a_period_of_full_steps_and_its_border():
    full, part = dim_walk(1000, (1000, 64, 8), 1, False, 2), dim_walk(1000, (1000, 64, 8), 1, False, 2, 4)
    assert len(part.chains) < len(full.chains) // 4 and part.iterates == full.iterates
    assert {(c[1][1] - c[1][0], c[1][0] % 4, c[2][1] - c[2][0], c[2][0] % 4) for c in part.chains} == \
        {(c[1][1] - c[1][0], c[1][0] % 4, c[2][1] - c[2][0], c[2][0] % 4) for c in full.chains}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_revisited_outputs_are_the_walks_reloads(case):
    """The partial-sum moves the shapes add (``revisited``) are exactly the levels where the
    walk reloads an output."""
    from tilewise.emit.dma.shapes import revisited
    from tilewise.simulation.walker import walk

    w, arch, m = case
    c = _Checker(w, arch, m, {})
    if shapes_violation(c) == FALLBACK:
        return
    outs = [t for t in c.st.moved if t.name in c.st.outputs]
    told = {(l, t.name) for t in outs for l in range(1, c.n) if t.name in c.kept[l]
            and revisited(c, t, l)}
    walked = {(ev.level, ev.tensor) for ev in walk(w, arch, m) if getattr(ev, "kind", "") == "reload"}
    assert told == walked


@pytest.mark.parametrize("order, stride, fits", [("kmn", 64, True), ("kmn", 32, False),
                                                  ("mnk", 32, True), ("mnk", 8, False)])
def test_partial_sums_are_checked_where_the_output_is_revisited(order, stride, fits):
    """An i8 GEMM's i32 partial sums (k outermost in DDR: stored and reloaded) have rows 4x
    the final rows' words: a stride limit between the two rejects only the revisiting order."""
    from tilewise.mapping import Mapping

    w = gemm(64, 64, 64, dtype="i8", out_dtype="i8")
    arch = _tight(load_arch("aie-4x2"), 0, max_stride_words=stride)
    m = Mapping.parse(f"ddr[m64 n64 k64] {order} | memtile[m32 n32 k16] mnk | core[m16 n16 k16]")
    fast, walked = dma_verdict(w, arch, m), dma_violation(w, arch, m, max_events=None)
    assert (fast is None) == (walked is None) == fits
    if order == "kmn" and not fits:
        assert "ddr.C.acc" in fast


def test_dims_walk_their_tiles_and_core_slices():
    """A dim of 10 tiled 8, then 3 per core cut 2 ways (array tiles of 6): in [0, 8) core 0
    takes [0, 3) and [6, 8), core 1 [3, 6) and nothing; in [8, 10) core 1 is idle."""
    walk = dim_walk(10, (10, 8, 3), 2, True, 2)
    at_core = sorted({c[2] for c in walk.chains})
    assert at_core == [(0, 3), (3, 6), (6, 8), (8, 8), (8, 10), (10, 10)]
    assert walk.iterates == (True, True, False)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_levels_below_the_array_fall_back_to_the_walk(data):
    """Each core's private walk below the array is not derived: the walk answers."""
    from tilewise.arch.spec import DmaLimits

    from ..model.archs import array_in_the_middle

    base = array_in_the_middle()
    dma = DmaLimits(dims=3, max_wrap=1023, max_stride_words=1 << 20, bds=16)
    arch = dataclasses.replace(base, levels=tuple(dataclasses.replace(lv, dma=dma) for lv in base.levels))
    w = gemm(16, 12, 8, dtype="i8")
    m = data.draw(mappings(w, arch))
    assert shapes_violation(_Checker(w, arch, m, {})) == FALLBACK
    assert dma_verdict(w, arch, m) == dma_violation(w, arch, m)
