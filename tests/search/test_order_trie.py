"""The order trie holds exactly the level's canonical orders, each depth's ranges nest, and the
free-loop completion keeps the fixed inner loops."""

import numpy as np
from hypothesis import given, settings, strategies as st

import tilewise as tw
from tilewise.search.order_trie import OrderTrie, arrange
from tilewise.search.space import canonical_orders, signatures

W = tw.conv2d(1, 4, 6, 6, 4, 3, 3, padding=1)


def _sig():
    from tilewise.search.engine import Engine
    from .helpers import small_aie

    return signatures(Engine(W, small_aie(), {}).st)


SIG = _sig()


@settings(max_examples=40, deadline=None)
@given(real=st.lists(st.booleans(), min_size=7, max_size=7))
def test_trie_ranges_cover_the_canonical_orders_by_innermost_suffix(real):
    orders = canonical_orders(tuple(real), SIG)
    r = sum(real)
    t = OrderTrie.build(orders, r)
    assert sorted(map(tuple, t.orders)) == sorted(map(tuple, orders))
    for m in range(r + 1):
        lo, hi = t.lo[m], t.hi[m]
        assert lo[0] == 0 and hi[-1] == len(orders) and (lo[1:] == hi[:-1]).all()
        for a, b in zip(lo, hi):  # one range: the same m innermost real loops
            suffix = t.orders[a:b, r - m:r]
            assert (suffix == suffix[0]).all()
        if m < r:  # children partition their parent
            c = t.lo[m + 1]
            assert (c[t.child_lo[m]] == lo).all()
            assert (np.append(c, len(orders))[t.child_hi[m]] == hi).all()
    assert (t.hi[r] - t.lo[r] == 1).all()  # a leaf is one order


@settings(max_examples=40, deadline=None)
@given(perm=st.permutations(range(6)), n_free=st.integers(0, 6))
def test_arrange_sorts_the_free_loops_and_keeps_the_rest(perm, n_free):
    prio = np.array([3, 0, 5, 1, 4, 2])
    out = arrange(np.array([perm]), n_free, prio)[0]
    assert list(out[n_free:]) == list(perm[n_free:])
    assert sorted(out[:n_free]) == sorted(perm[:n_free])
    assert list(prio[out[:n_free]]) == sorted(prio[out[:n_free]])
