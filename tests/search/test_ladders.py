"""The compiled ladder enumeration (search/ladders.py) equals a plain recursive one."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tilewise.search.ladders import core0_padded, ladders


def reference(size, w, a, L, array_level, vals):
    """The recursion the search used before it was compiled: (extent, multiplicity) pairs."""
    rows_t, rows_c, rows_a = [], [], []

    def rec(k, parent, tl, ladder, counts):
        if k == L:
            rows_t.append(ladder)
            rows_c.append(counts)
            rows_a.append(sum(m for _, m in tl) * ladder[-1])
            return
        ww = w if k == array_level else 1
        lim = -(-(-(-parent // ww)) // a) * a if k == L - 1 else -(-parent // ww)
        for t in vals[k - 1]:
            if t > lim:
                continue
            step = t * ww
            it = [(step, sum(m * (e // step) for e, m in tl))] + [(e % step, m) for e, m in tl if e % step]
            child = it
            if k == array_level and ww > 1:
                full = sum(m * min(e // t, ww) for e, m in it)
                child = [(t, full)] + [(e - min(e // t, ww) * t, m) for e, m in it
                                       if e - min(e // t, ww) * t > 0]
            rec(k + 1, t, [(e, m) for e, m in child if m and e], ladder + [t],
                counts + [sum(m for e, m in it if e)])

    rec(1, size, [(size, 1)], [size], [1])
    return rows_t, rows_c, rows_a


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 5000), w=st.integers(1, 8), a=st.sampled_from([1, 2, 4, 8, 16]),
       L=st.integers(1, 5), data=st.data())
def test_compiled_ladders_equal_the_recursion(size, w, a, L, data):
    array_level = data.draw(st.integers(-1, max(L - 1, 1)))  # -1, 0: no array level cut
    vals = [sorted(set(data.draw(st.lists(st.integers(1, size + 3), min_size=1, max_size=8))),
                   reverse=True) for _ in range(L - 1)]
    n = np.array([len(v) for v in vals], np.int64)
    flat = np.array([t for v in vals for t in v], np.int64)
    tiles, counts, padded_all = ladders(size, w, a, L, array_level, flat, np.cumsum(n) - n,
                                        np.cumsum(n))
    rt, rc, ra = reference(size, w, a, L, array_level, vals)
    assert tiles.tolist() == rt and counts.tolist() == rc and padded_all.tolist() == ra


def core0_reference(size, ladder, w, array_level):
    """Core 0's innermost extent, walking the dim's ranges: at the array level core 0 takes the
    first ``t`` of each array tile of ``w x t``; elsewhere each range is cut by the tile."""
    ranges = [(0, size)]
    for k in range(1, len(ladder)):
        t = ladder[k]
        step = t * w if k == array_level else t
        ranges = [(s, min(s + step, hi)) for lo, hi in ranges for s in range(lo, hi, step)]
        if k == array_level:
            ranges = [(lo, min(lo + t, hi)) for lo, hi in ranges]
    return len(ranges) * ladder[-1]


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 300), w=st.integers(1, 6), L=st.integers(2, 5), data=st.data())
def test_core0_padded_walks_core_0s_slices(size, w, L, data):
    """Below the array the busiest core (core 0) walks its own slices: its padded extent."""
    a = data.draw(st.integers(1, L - 1))
    ladder = [size]
    for k in range(1, L):
        top = -(-ladder[-1] // w) if k == a else ladder[-1]
        ladder.append(data.draw(st.integers(1, top)))
    got = core0_padded(size, np.array([ladder], np.int64), w, a)
    assert got.tolist() == [core0_reference(size, ladder, w, a)]
