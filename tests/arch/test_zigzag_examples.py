"""The ZigZag accelerators translated to tilewise archs (examples/zigzag/) load, round-trip and
hold what the ZigZag files say (benchmarks/zigzag_compare.py compares the traffic itself)."""

from pathlib import Path

import pytest

from tilewise.arch.loader import arch_to_yaml, load_arch, parse_arch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "zigzag"


@pytest.mark.parametrize("name", ["tpu_like", "edge_tpu_like", "gemm_l1_l3"])
def test_zigzag_example_loads_and_round_trips(name):
    arch = load_arch(EXAMPLES / f"{name}.yaml")
    assert parse_arch(arch_to_yaml(arch)) == arch
    assert arch.levels[0].holds is None


def test_zigzag_holds_and_parts():
    tpu = load_arch(EXAMPLES / "tpu_like.yaml")
    assert tpu.level("sram").holds == ("in1", "out")
    assert tpu.level("pe").reserved == (("in2", 128), ("out", 4)) and tpu.level("pe").shared_bytes == 0
    l1l3 = load_arch(EXAMPLES / "gemm_l1_l3.yaml")
    assert l1l3.level("reg").holds == ("out",) and l1l3.level("reg").reserved == (("out", 32),)
    assert l1l3.array.cores == 64  # 8 x 8 cores, 8 output registers each: 512 sums
