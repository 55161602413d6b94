"""Shared test configuration: hypothesis profiles (``ci`` is used when CI=true)."""

import os

from hypothesis import HealthCheck, settings

# Numba compiles on first call: no per-example deadline; CI runs a bounded number of examples.
settings.register_profile("dev", deadline=None, max_examples=100)
settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))
