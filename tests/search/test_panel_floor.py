"""The search's floor of a GEMM chain's intermediate panel never exceeds the model's panel
(:meth:`tilewise.search.chain_rules.ChainRules.panel_floor` vs
:func:`tilewise.model.rules.panel_tile`): a footprint stand-in above the true footprint would
prune a mapping that fits."""

from typing import NamedTuple

import numpy as np
from hypothesis import given, settings, strategies as st

from tilewise.model.legality import ways_of
from tilewise.model.problem import Problem
from tilewise.search.chain_rules import ChainRules

from ..model.strategies import ARCHS, mappings, workloads


class Drawn(NamedTuple):
    """A random chain mapping as the search sees it: its tiles ``tl [1, L, D]``, split ways
    ``wv [1, D]``, real loops ``real [1, L-1, D]``, the model's panel ``[D]``, the array
    level ``a``, the chain rules, and the mapping (for messages)."""

    tl: np.ndarray
    wv: np.ndarray
    real: np.ndarray
    panel: np.ndarray
    a: int | None
    rules: ChainRules
    mapping: object


def draw_chain_mapping(data) -> Drawn:
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
    rules = ChainRules(p.chain.spine, p.chain.forbidden, p.chain.projected)
    return Drawn(tl, wv, step < tl[:, :L - 1], panel, a, rules, m)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_panel_floor_is_at_most_the_models_panel(data):
    d = draw_chain_mapping(data)
    floor = d.rules.panel_floor(d.tl, d.tl, d.real, d.wv, d.a)[0]
    assert (floor <= d.panel).all(), (str(d.mapping), floor, d.panel)
    assert (floor >= d.tl[0, -1]).all()


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_panel_floor_of_a_node_is_at_most_the_panel_of_every_mapping_below(data):
    """A node fixes each dim's tiles down to some level and leaves the rest open: its
    footprint stand-ins are at most the mapping's tiles there, and only the loops whose two
    tiles are fixed are known to iterate (:meth:`.Engine.fixed_real_loops`). The floor,
    open tiles and all (one core's share of the tile below the first known real private
    loop), stays under the panel of every mapping below the node."""
    d = draw_chain_mapping(data)
    L, D = d.tl.shape[1], d.tl.shape[2]
    depth = np.array(data.draw(st.lists(st.integers(0, L - 1), min_size=D, max_size=D)))
    fixed = np.arange(L)[:, None] <= depth[None, :]                       # [L, D]
    small = d.tl.copy()
    for k, j in zip(*np.nonzero(~fixed)):
        small[0, k, j] = data.draw(st.integers(1, int(d.tl[0, k, j])))
    whole = np.where(fixed[None], d.tl, d.tl[:, :1])   # open tiles at the largest (the size)
    known = d.real & (depth[None, :] >= np.arange(1, L)[:, None])[None]
    floor = d.rules.panel_floor(small, whole, known, d.wv, d.a)[0]
    assert (floor <= d.panel).all(), (str(d.mapping), depth.tolist(), small.tolist(), floor,
                                      d.panel)
    assert (floor >= small[0, -1]).all()
