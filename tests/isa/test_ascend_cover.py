"""The exhaustive search of the family W (cover.min_cover) against an independent enumeration of
every instruction of W on tiny regions, and the frames it returns against their definition."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tilewise.errors import ISAError
from tilewise.isa.ascend.cover import REACH, min_cover, region_elements


def _naive_sets(S: set, E: int, counter: bool, reach):
    """Element sets of every legal instruction writing only elements of S: start block a,
    block stride k, repeat stride s, repeats n, the largest mask (a cover only ever needs it);
    counter mode: the first `count` lanes, repeat-major.  `reach`: every lane of every executed
    repeat must lie below block nb + reach."""
    L = 8 * E
    nb = max(S) // E + 1
    lim = None if reach is None else nb + reach
    for a in range(nb):
        for k in range(1, nb + 1):
            for s in range(nb + 1):
                for n in range(1, nb + 2):
                    if (s == 0 and n > 1) or (lim is not None and a + 7 * k + (n - 1) * s >= lim):
                        continue
                    got = [E * (a + i * s + b * k) + j for b in range(8) for j in range(E)
                           for i in range(n)
                           if all(E * (a + i2 * s + b * k) + j in S for i2 in range(n))]
                    if got:
                        yield frozenset(got)
            if not counter:
                continue
            for s in range(1, nb + 1):
                written = []
                for t in range(L * (nb + 1)):
                    e = E * (a + (t // L) * s + (t % L // E) * k) + t % E
                    if e not in S:
                        break
                    written.append(e)
                    q = t // L  # repeat of lane t; a partial repeat keeps its masked lanes in reach
                    if lim is None or (t + 1) % L == 0 or a + q * s + 7 * k < lim:
                        yield frozenset(written)


def _naive_min(S: list, E: int, counter: bool, reach) -> int:
    S = set(S)
    sets = set(_naive_sets(S, E, counter, reach))
    index = {e: i for i, e in enumerate(sorted(S))}
    masks = [sum(1 << index[e] for e in x) for x in sets]
    frontier, depth = {(1 << len(S)) - 1}, 0
    while 0 not in frontier:  # breadth-first over the uncovered remainders
        depth += 1
        frontier = {rest & ~m for rest in frontier for m in masks
                    if m >> ((rest & -rest).bit_length() - 1) & 1}
    return depth


@st.composite
def regions(draw):
    dt = draw(st.sampled_from(["i64", "i64", "f32"]))
    E = {"i64": 4, "f32": 8}[dt]
    nb = draw(st.integers(1, 5 if dt == "i64" else 3))
    p = draw(st.sampled_from([0.3, 0.7, 0.9, 1.0]))
    keep = draw(st.lists(st.floats(0, 1), min_size=nb * E, max_size=nb * E))
    S = [e for e, u in enumerate(keep) if u < p] or [nb * E - 1]
    return dt, E, S


@settings(max_examples=120, deadline=None)
@given(r=regions(), counter=st.booleans(), reach=st.sampled_from([None, REACH, REACH, 9]))
def test_min_cover_equals_independent_enumeration(r, counter, reach):
    dt, E, S = r
    frames = min_cover(S, dt, kind="unary", counter=counter, reach=reach)
    assert len(frames) == _naive_min(S, E, counter, reach)
    # the frames write exactly S and keep the footprint rule
    assert {e for f in frames for e in f.elements(E)} == set(S)
    nb = max(S) // E + 1
    for f in frames:
        assert bool(f.count) <= counter
        reps = -(-f.count // (8 * E)) if f.count else f.repeat
        top = f.start + (reps - 1) * f.rep + 7 * f.blk
        full_last = f.count and f.count % (8 * E) == 0
        assert reach is None or full_last or top < nb + reach


def test_overlapping_repeats_and_column_strips():
    # one instruction of 56 overlapping repeats (repeat stride 1) covers 1000 contiguous f16
    (f,) = min_cover(region_elements(1, 1000, 1000), "f16", counter=False)
    assert (f.start, f.blk, f.rep, f.repeat) == (0, 1, 1, 56)
    # 8 rows of 3 blocks at a pitch of 4 blocks: block stride 4 puts the 8 rows in one repeat
    (f,) = min_cover(region_elements(8, 24, 32), "f32", counter=False)
    assert (f.blk, f.rep, f.repeat) == (4, 1, 3)
    # binary ops have uint8 block strides: a 300-block pitch cannot be a block stride
    assert len(min_cover(region_elements(3, 8, 8 * 30), "f32", counter=False)) == 1
    with pytest.raises(ISAError, match="spans 97 blocks"):
        min_cover(np.arange(97 * 8), "f32")
    with pytest.raises(ISAError, match="exceeded 1 states"):  # needs 2 instructions
        min_cover(region_elements(2, 259, 264), "f32", counter=False, limit=1)
