"""Shared test configuration: hypothesis profiles (``ci`` is used when CI=true)."""

import os

from hypothesis import HealthCheck, settings

# Numba compiles on first call: no per-example deadline; CI runs a bounded number of examples.
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# The layout kernels compile about 200 numba specializations on a fresh clone (~400 CPU s, the
# largest share of a cold run). Tests that call them share one xdist worker (scripts/test.sh runs
# ``--dist loadgroup``), so each specialization compiles once, not once per worker.
_LAYOUT_KERNEL_TESTS = ("tests/layout/", "tests/executor/test_packed_operands.py")


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        if item.nodeid.startswith(_LAYOUT_KERNEL_TESTS):
            item.add_marker(pytest.mark.xdist_group("layout-kernels"))
