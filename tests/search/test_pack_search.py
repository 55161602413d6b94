"""The search decides the outermost layouts (``pack=``): enumerated like double-buffer choices,
its optimum and top-k equal brute force over the unpruned space with every pack choice."""

import dataclasses

import pytest

import tilewise as tw
from tilewise.errors import TilewiseError
from tilewise.search.optimize import search

from .helpers import brute_force, small_aie
from .test_exact import assert_top_matches


def lined_aie():
    """small_aie without a memtile, its cores filled in 32 B blocks: a core tile's rows of
    8 i8 move 32 B each unless the operand is packed."""
    arch = small_aie(rows=2, cols=1, memtile=False)
    levels = (arch.levels[0], dataclasses.replace(arch.levels[1], block_bytes=32))
    return dataclasses.replace(arch, levels=levels)


CONS = {"orders": ["mnk", "kmn"], "double_buffer": "none", "pack": "any"}


@pytest.mark.parametrize("objective,metric", [("latency", lambda c: c.latency_s),
                                              ("traffic", lambda c: c.offchip_bytes)])
def test_pack_choices_equal_brute_force(objective, metric):
    w, arch = tw.gemm(16, 8, 32), lined_aie()
    brute = brute_force(w, arch, metric, **CONS)
    values = sorted(v for v, _, _ in brute)
    r = search(w, arch, objective=objective, top=4, **CONS)
    got = [s.metric(objective) for s in r.top]
    assert_top_matches(got, values)
    for s in r.top:  # each reported solution, packs included, is what evaluate says
        assert s.metric(objective) == pytest.approx(metric(tw.evaluate(w, arch, s.mapping)),
                                                    rel=1e-12)
    packed = [v for v, m, _ in brute if m.levels[0].pack]
    row_major = [v for v, m, _ in brute if not m.levels[0].pack]
    assert packed and row_major and min(values) <= min(row_major)


def test_a_bad_pack_constraint_names_the_choices():
    with pytest.raises(TilewiseError, match="pack="):
        search(tw.gemm(16, 8, 32), lined_aie(), pack=["Z"])
