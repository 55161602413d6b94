"""The search's records: nodes slice and concatenate field by field, tile-ladder groups nest,
the statistics report keeps the keys ``Result.stats`` has always had."""

import numpy as np

import tilewise as tw
from tilewise.search.engine import Engine
from tilewise.search.nodes import Nodes
from tilewise.search.optimize import search
from tilewise.search.stats import SearchStats

from .helpers import small_aie


def test_nodes_take_and_concat_keep_every_field():
    nd = Nodes(split=np.arange(4), group=np.arange(8).reshape(4, 2),
               orders=np.zeros((4, 1, 2), np.int64), weight=np.full(4, 0.25))
    half = nd.take(np.array([True, False, True, False]))
    assert half.split.tolist() == [0, 2] and half.bound is None and half.threshold is None
    both = Nodes.concat([half.with_bound(np.ones((2, 1))), nd.take(slice(1, 3)).with_bound(np.zeros((2, 1)))])
    assert both.split.tolist() == [0, 2, 1, 2] and both.bound[:, 0].tolist() == [1, 1, 0, 0]
    assert len(both) == 4 and both.group.shape == (4, 2)


def test_tile_groups_nest_and_cover_every_ladder():
    eng = Engine(tw.gemm(32, 16, 48), small_aie(), {})
    for j, per_depth in enumerate(eng.groups):
        assert per_depth[-1].child_lo is None
        # splits that share one ladder set share its groups: each set's ladders once
        sets = {id(eng.ladders[s][j]): s for s in range(len(eng.ladders))}
        n = sum(eng.n_ladders[s, j] for s in sets.values())
        assert (per_depth[-1].hi - per_depth[-1].lo == 1).all() and len(per_depth[-1].lo) == n
        for s in range(len(eng.ladders)):   # a split's depth-0 group: its set's range
            first = sets[id(eng.ladders[s][j])]
            assert per_depth[0].lo[s] == per_depth[0].lo[first]
            assert per_depth[0].hi[s] - per_depth[0].lo[s] == eng.n_ladders[s, j]
        for g, c in zip(per_depth, per_depth[1:]):
            assert (c.lo[g.child_lo[g.hi > g.lo]] == g.lo[g.hi > g.lo]).all()
            assert (g.n_ladders == g.hi - g.lo).all()


def test_stats_report_keys_are_the_results():
    r = search(tw.gemm(32, 16, 48), small_aie(), top=2)
    assert list(r.stats) == ["tile_combos", "examined_combos", "evaluated", "candidates", "valid",
                             "ranked", "rejected", "pruned_candidates", "leaves", "nodes", "passes",
                             "timed_out", "interrupted", "lower_bound", "seconds",
                             "candidates_per_s", "smallest_rejected", "proven_optimal", "time_limit"]
    assert r.stats["lower_bound"] is None and r.stats["time_limit"] is None   # exact: no gap
    s = SearchStats(tile_combos=3)
    s.reject("capacity at core", np.array([True, False, True]), per=2)
    assert s.report(1.0)["rejected"] == {"capacity at core": 4}
