"""Property tests: for every constructor, random sizes x random valid mappings (the model's own
strategies: non-divisible tiles, loop orders, bypass, double buffering, spatial splits, six
architectures) execute to the reference (exact for integers, dtype tolerance for floats), and
the executor runs out of memory exactly where the simulation's buffers exceed a capacity."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tilewise.executor.interpreter import verify
from tilewise.simulation.trace import simulate
from tilewise.errors import CapacityError
from tilewise.model.cost import evaluate

from ..model.strategies import ARCHS, mappings
from .workloads import KINDS, constructor


def _over_capacity(workload, arch, mapping) -> list[str]:
    """Levels whose simulated peak (the model's footprint rule) exceeds the capacity."""
    peak = simulate(workload, arch, mapping).peak
    st_a = [lv.name for lv in arch.levels].index(arch.array.level) if arch.array else len(arch.levels) - 1
    return [lv.name for l, lv in enumerate(arch.levels) if lv.capacity_bytes is not None
            and peak[lv.name] > lv.capacity_bytes * (lv.instances if l < st_a else 1)]


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_execute_equals_reference(kind, data):
    workload = data.draw(constructor(kind))
    arch = data.draw(ARCHS)
    mapping = data.draw(mappings(workload, arch))
    over = _over_capacity(workload, arch, mapping)
    seed = data.draw(st.integers(0, 2**16))
    if not over and not evaluate(workload, arch, mapping, check_capacity=False).fits:
        over = [lv.name for lv in arch.levels if lv.reserved]  # a part of a level overflows
    if over:
        with pytest.raises(CapacityError, match=rf"^level ({'|'.join(over)})\b.* needs \d+ bytes"):
            verify(workload, mapping, seed=seed, arch=arch)
        return
    with np.errstate(invalid="raise", divide="raise"):  # no NaN from -inf - -inf, no 0/0
        report = verify(workload, mapping, seed=seed, arch=arch)
    assert report.passed, f"{workload}\n{arch.name}: {mapping}\n{report}"
    for check in report.outputs:
        dtype = workload.tensor(check.name).dtype
        assert (check.tolerance == 0) == dtype.is_integer
        assert check.max_rel <= check.tolerance


def test_attention_error_is_scaled_by_the_values_it_mixes():
    """Hypothesis's case: f32 attention, 9 one-key tiles, one value column. O = P·V cancels to
    near 0 for seed 230, so an error of a few f32 units against max |O| read as 5.1e-6
    relative; against P·|V| (the scale a convex combination's error is bounded by) it is
    under 4.6e-7 on seeds 0..2999 (the tolerance is 2.98e-6)."""
    from tilewise.executor.interpreter import magnitude, random_inputs, reference
    from tilewise.ir import library as lib

    from ..model.archs import two_level

    w = lib.mha(2, 9, 5, heads=1, dtype="f32", dv=1)
    report = verify(w, "gm[h1 m2 n9 k5 e1] hmnke | ub[h1 m1 n1 k1 e1]", seed=230,
                    arch=two_level())
    assert report.passed and report.outputs[0].max_rel < 1e-6, report
    data = random_inputs(w, 230)
    scale, ref = magnitude(w, data)["O"], reference(w, data)["O"]
    assert (np.abs(scale) >= np.abs(ref) - 1e-6).all() and np.abs(scale).max() > 3 * np.abs(ref).max()
