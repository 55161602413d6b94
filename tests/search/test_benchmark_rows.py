"""benchmarks/search.py: an ``--only`` run replaces its cases' rows in the table's JSON and
keeps the others in their order."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_search", ROOT / "benchmarks" / "search.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_only_rows_replace_their_cases_and_keep_the_rest():
    bench = _bench()
    assert bench._merged([], [{"case": "a", "v": 1}]) == [{"case": "a", "v": 1}]   # no table yet
    old = [{"case": "a", "v": 1}, {"case": "b", "v": 2}, {"case": "c", "v": 3}]
    got = bench._merged(old, [{"case": "b", "v": 20}, {"case": "new", "v": 4}])
    assert got == [{"case": "a", "v": 1}, {"case": "b", "v": 20}, {"case": "c", "v": 3},
                   {"case": "new", "v": 4}]

