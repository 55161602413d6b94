"""Time-limited search (:mod:`tilewise.search.anytime`): a finished walk is the exact answer;
a stopped one returns real candidates and a lower bound that holds against the exact optimum."""

import importlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tilewise as tw
from tilewise.arch.loader import load_arch
from tilewise.errors import TilewiseError

A = importlib.import_module("tilewise.search.anytime")
W = importlib.import_module("tilewise.search.walk")
E = importlib.import_module("tilewise.search.engine")
P = importlib.import_module("tilewise.search.pool")


def _texts(result):
    return [str(s.mapping) for s in result.top]


def test_a_walk_that_finishes_in_time_is_the_exact_top_k():
    w, a = tw.gemm(128, 192, 256, dtype="i8"), load_arch("aie-4x2")
    exact = tw.search(w, a, top=5)
    timed = tw.search(w, a, top=5, time_limit=600)
    assert _texts(timed) == _texts(exact)
    assert [s.latency_s for s in timed.top] == [s.latency_s for s in exact.top]
    assert timed.stats["proven_optimal"] and not timed.stats["timed_out"]
    assert timed.stats["lower_bound"] is None and timed.stats["time_limit"] == 600


class _AfterChecks:
    """A deadline that passes after ``n`` checks by the exact walk (a share below 1, the
    local search's, never passes): a stop at a known point, whatever the machine's speed."""

    finite = True
    stopped = False

    def __init__(self, n):
        self.n = n

    def rebase(self):
        pass

    def passed(self, share=1.0):
        if share < 1.0:
            return False
        self.n -= 1
        return self.n < 0


@pytest.mark.parametrize("checks", [0, 3, 40])
def test_a_stopped_walk_bounds_the_exact_optimum(checks):
    w, a = tw.gemm(256, 256, 256, dtype="f32"), load_arch("cpu-6core")
    optimum = tw.search(w, a, top=1).best.latency_s
    eng = E.Engine(w, a, {})
    pool, stats, _ = W.search_top(eng, "latency", 5, deadline=_AfterChecks(checks))
    assert stats.timed_out and len(pool)
    best = float(pool.latency_s.min())
    # the lower bound holds against the exact optimum, which no found mapping beats
    assert stats.lower_bound <= optimum * (1 + 1e-9)
    assert best >= optimum * (1 - 1e-9)
    # the candidates are real: the model costs each mapping the same
    for i in range(len(pool)):
        m = W_mapping(eng, pool, i)
        assert tw.evaluate(w, a, m).latency_s == pytest.approx(float(pool.latency_s[i]), rel=1e-12)


def W_mapping(eng, pool, i):
    from tilewise.search.programmable import pool_mappings
    return list(pool_mappings(eng, pool.take(np.array([i]))))[0]


def test_the_report_states_the_gap():
    # a stop before the first batch: the answer comes from a short dive and polish
    w, a = tw.gemm(256, 256, 256, dtype="f32"), load_arch("cpu-6core")
    r = tw.search(w, a, top=3, stop=lambda: True)
    s = r.stats
    assert s["timed_out"] and s["interrupted"] and len(r.top)
    assert s["gap"] == pytest.approx(r.best.latency_s / s["lower_bound"] - 1)
    assert s["candidates"] == s["ranked"] + s["pruned_candidates"]   # the polish's count too
    assert s["proven_optimal"] == (s["gap"] == 0)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "2", True])
def test_a_bad_time_limit_is_refused(bad):
    with pytest.raises(TilewiseError, match="time_limit=.* must be a positive number"):
        tw.search(tw.gemm(64, 64, 64), "aie-4x2", time_limit=bad)


def test_a_dive_keeps_the_least_bounds_spread_over_the_tiles_of_a_flat_band():
    class Alive:
        def alive(self, lb):
            return np.isfinite(lb[:, 0])
    d = A.Dive(Alive(), width=2)
    lb = np.array([[5.0], [1.0], [1.0000001], [np.inf], [1.0], [3.0]])
    # flat at 1 (rows 1, 2, 4, in ascending tile order): its smallest and largest tiles
    assert np.nonzero(d.keep(lb))[0].tolist() == [1, 4]
    # fewer flat rows than the width: the least bands, larger tiles first within a band
    lb = np.array([[3.0], [1.0], [3.0], [np.inf], [2.0]])
    assert np.nonzero(A.Dive(Alive(), width=3).keep(lb))[0].tolist() == [1, 2, 4]
    keep, later = d.split(np.array([[2.0], [1.0]]))
    assert keep.tolist() == [True, True] and not later.any()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 3), st.integers(1, 9), st.integers(1, 9)),
                min_size=0, max_size=12),
       st.lists(st.tuples(st.integers(-1, 3), st.integers(1, 9), st.integers(1, 9)),
                min_size=0, max_size=12))
def test_known_matches_a_set_of_mappings(mine, theirs):
    def pool(rows):
        n = len(rows)
        r = np.array(rows, np.int64).reshape(n, 3)
        return P.Pool(objective=np.zeros(n), split=np.stack([r[:, 0], np.ones(n, np.int64), -np.ones(n, np.int64),
                                      np.ones(n, np.int64)], 1),
                      tiles=r[:, 1:].reshape(n, 1, 2), orders=np.zeros((n, 0, 2), np.int64),
                      double_buffer=np.zeros((n, 1, 1), bool), pack=np.zeros((n, 1), bool))
    got = pool(mine).known(pool(theirs))
    assert got.tolist() == [t in set(mine) for t in theirs]


def test_a_stop_request_returns_the_best_found_with_its_gap():
    calls = []

    def stop():   # asked between batches: stop at the fifth question
        calls.append(1)
        return len(calls) > 4
    w, a = tw.gemm(256, 256, 256, dtype="f32"), load_arch("cpu-6core")
    optimum = tw.search(w, a, top=1).best.latency_s
    r = tw.search(w, a, top=2, stop=stop)
    s = r.stats
    assert s["interrupted"] and s["timed_out"] and len(r.top)
    assert s["lower_bound"] <= optimum * (1 + 1e-9) <= r.best.latency_s * (1 + 2e-9)
    assert s["time_limit"] is None


def test_a_stop_that_never_comes_changes_nothing():
    w, a = tw.gemm(128, 192, 256, dtype="i8"), load_arch("aie-4x2")
    r = tw.search(w, a, top=3, stop=lambda: False)
    assert _texts(r) == _texts(tw.search(w, a, top=3))
    assert not r.stats["timed_out"] and r.stats["proven_optimal"]


def test_stop_must_be_a_function():
    with pytest.raises(TilewiseError, match="stop=.* must be a function"):
        tw.search(tw.gemm(64, 64, 64), "aie-4x2", stop=3)


def test_ctrl_c_in_the_cli_lists_the_best_found(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    # a GEMM of 4096^3 f32 on the 4-level cpu-6core: its exact search runs for minutes (at 12 s:
    # 978,868 nodes, the best found within 18 % of its proven bound); seed 001's packed BRGEMM,
    # used here before, now ends in 6-8 s
    cmd = [sys.executable, "-m", "tilewise", "search", "gemm", "--m", "4096", "--n", "4096",
           "--k", "4096", "--dtype", "f32", "--arch", "cpu-6core", "--top", "1"]
    env = dict(os.environ, COLUMNS="200")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(6)   # imports, tables, then well into the walk
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "interrupted (Ctrl-C)" in out and "of the optimum" in out
    assert "│ 1 │" in out


def test_time_spent_compiling_kernels_is_not_counted_against_a_time_limit():
    """On a cold kernel cache the first search compiles for minutes: inside the search (the
    deadline entered) numba's compile events stop the clock; outside it they count."""
    import time
    from numba.core import event
    from tilewise.search.anytime import Deadline

    with Deadline(0.2) as d:
        with event.trigger_event("numba:compile", data={}):
            time.sleep(0.4)   # a compile longer than the whole limit
        assert not d.passed()
        time.sleep(0.25)
        assert d.passed()
    outside = Deadline(0.2)
    with event.trigger_event("numba:compile", data={}):
        time.sleep(0.4)
    assert outside.passed()
