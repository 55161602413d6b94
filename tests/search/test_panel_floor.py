"""The search's floor of a GEMM chain's intermediate panel never exceeds the model's panel
(:meth:`tilewise.search.chain_rules.ChainRules.panel_floor` vs
:func:`tilewise.model.rules.panel_tile`): a footprint stand-in above the true footprint would
prune a mapping that fits."""

import numpy as np
from hypothesis import given, settings, strategies as st

from tilewise.model.legality import ways_of
from tilewise.model.problem import Problem
from tilewise.search.chain_rules import ChainRules

from ..model.strategies import ARCHS, mappings, workloads


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_panel_floor_is_at_most_the_models_panel(data):
    w = data.draw(workloads(kinds=("gemm_chain",)))
    arch = data.draw(ARCHS)
    m = data.draw(mappings(w, arch))
    p = Problem.build(w, arch)
    dims, L = p.st.dims, p.st.n_levels
    tiles = [lv.sizes for lv in m.levels]
    ways = ways_of(m)
    panel = p.panel(tiles, [lv.order for lv in m.levels[:-1]], ways)
    tl = np.array([[[t[d] for d in dims] for t in tiles]], np.int64)
    wv = np.array([[ways.get(d, 1) for d in dims]], np.int64)
    a = p.levels.array
    step = np.stack([tl[:, k + 1] * (wv if k + 1 == a else 1) for k in range(L - 1)], 1)
    real = step < tl[:, :L - 1]
    rules = ChainRules(p.chain.spine, p.chain.forbidden, p.chain.projected)
    floor = rules.panel_floor(tl[:, L - 1], tl, real, wv, a)[0]
    assert (floor <= panel).all(), (str(m), floor, panel)
    assert (floor >= tl[0, L - 1]).all()
