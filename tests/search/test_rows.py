"""unique_rows: the distinct rows of a table, hashed, exact even when hashes collide."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tilewise.search import rows as R


@settings(max_examples=100, deadline=None)
@given(key=arrays(np.int64, st.tuples(st.integers(0, 60), st.integers(1, 12)),
                  elements=st.integers(-3, 3)))
def test_unique_rows_are_the_distinct_rows(key):
    first, inv = R.unique_rows(key)
    assert np.array_equal(key[first][inv], key)
    assert len({tuple(r) for r in key[first]}) == len(first) == len({tuple(r) for r in key})


def test_a_collision_falls_back_to_the_exact_sort(monkeypatch):
    monkeypatch.setattr(R, "_MIX", np.zeros(64, np.int64))  # every row hashes to 0
    key = np.array([[1, 2], [3, 4], [1, 2]], np.int64)
    first, inv = R.unique_rows(key)
    assert len(first) == 2 and np.array_equal(key[first][inv], key)
