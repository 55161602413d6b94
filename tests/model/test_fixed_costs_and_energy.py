"""Per-transfer fixed costs and Accelergy-style energy, against hand counts.

Hand counts use the arithmetic of the docstrings, not the model's rules: transfers are
counted tile by tile from the loop nest, energy as bytes x (read at the source + write at the
target + link) per access, MACs x pJ per MAC of the op's dtype.
"""

import dataclasses
import re

import pytest

from tilewise import Mapping, evaluate, gemm
from tilewise.arch.loader import arch_from_dict, load_arch
from tilewise.errors import SpecError

from .archs import two_level


def _with_transfer_cost(arch, cycles):
    levels = tuple(dataclasses.replace(lv, transfer_overhead_cycles=cycles if i else 0.0)
                   for i, lv in enumerate(arch.levels))
    return dataclasses.replace(arch, levels=levels)


def test_per_transfer_cost_hand_count():
    """gemm 64^3 f32 on GM -> UB, tiles m32 n32 k64, order mnk (n inside m): A (m32 k64)
    changes with m only, 2 loads; B (k64 n32) with n, 4 loads; C stored once per tile, 4
    stores. With 100 cycles per transfer at 1 GHz: reads 49152 B / 100 GB/s + 6 x 100 ns,
    writes 16384 B / 50 GB/s + 4 x 100 ns; nothing double-buffered: latency = T_c + T_link."""
    arch = _with_transfer_cost(two_level(capacity=None), 100)
    wl = gemm(64, 64, 64, dtype="f32", out_dtype="f32")
    c = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] mnk | ub[m32 n32 k64]"))
    assert c.fills["ub"] == {"A": 2, "B": 4} and c.drains["ub"] == {"C": 4}
    Tc = 4 * (32 * 32 * 64 / 16 + 20) / 1e9
    Tl = max(49152 / 100e9 + 6 * 100e-9, 16384 / 50e9 + 4 * 100e-9)
    assert c.transfer_s["ub"] == pytest.approx(Tl)
    assert c.latency_s == pytest.approx(Tc + Tl)
    assert c.fixed_s["kernel calls"] == pytest.approx(4 * 20 / 1e9)
    assert c.fixed_s["ub"] == pytest.approx(Tl - max(49152 / 100e9, 16384 / 50e9))


def test_reorder_changes_transfers_not_only_bytes():
    """Order nmk with k split in two: A (m32 k32) changes every step, B only when n or k
    does; C (m32 n32) is visited twice per tile (k split) -> a reload and two stores each."""
    arch = _with_transfer_cost(two_level(capacity=None), 50)
    wl = gemm(64, 64, 64, dtype="f32", out_dtype="f32")
    c = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] nmk | ub[m32 n32 k32]"))
    # 2 n x 2 m x 2 k = 8 steps: A and B each change at every step (k innermost)
    assert c.fills["ub"]["A"] == 8 and c.fills["ub"]["B"] == 8
    # C: 4 tiles x 2 visits (k inner, kept across k): 4 visits, 0 reloads
    assert c.drains["ub"] == {"C": 4} and "C" not in c.fills["ub"]


def test_accelergy_energy_by_hand():
    """Energy = sum over accesses (bytes x pJ/B) + MACs x pJ/MAC of the dtype."""
    spec = {"name": "e", "compute": {"clock": "1 GHz", "macs_per_cycle": {"i8": 64, "f32": 16},
                                     "energy_per_mac": {"i8": "0.2 pJ", "f32": "4 pJ"}},
            "levels": [{"name": "gm", "capacity": "unbounded", "read_energy": "100 pJ/B",
                        "write_energy": "120 pJ/B"},
                       {"name": "ub", "capacity": "64 KiB", "bandwidth": "100 GB/s",
                        "read_energy": "1 pJ/B", "write_energy": "2 pJ/B",
                        "energy_per_byte": "0.5 pJ/B"}]}
    arch = arch_from_dict(spec, source="test")
    wl = gemm(64, 64, 64, dtype="f32", out_dtype="f32")
    c = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] mnk | ub[m32 n32 k64]"))
    into, out = 49152, 16384  # A and B loaded, C stored (bytes)
    want = (into * (100 + 2 + 0.5) + out * (1 + 120 + 0.5)) * 1e-12 + 64 ** 3 * 4e-12
    assert c.energy_j == pytest.approx(want, rel=1e-12)
    parts = c.energy_breakdown
    assert parts["compute"] == pytest.approx(64 ** 3 * 4e-12)
    assert parts["ub"]["C"] == pytest.approx(out * 121.5e-12)
    total = parts["compute"] + sum(sum(t.values()) for k, t in parts.items() if k != "compute")
    assert total == pytest.approx(c.energy_j, rel=1e-12)


@pytest.mark.parametrize("preset,wl", [("aie-4x2", gemm(512, 768, 768, dtype="i8")),
                                       ("npu1", gemm(256, 512, 384, dtype="bf16"))])
def test_breakdown_adds_up_on_presets(preset, wl):
    import tilewise as tw

    r = tw.search(wl, preset, top=1)
    c = evaluate(wl, preset, r.best.mapping)
    parts = c.energy_breakdown
    total = parts["compute"] + sum(sum(t.values()) for k, t in parts.items() if k != "compute")
    assert total == pytest.approx(c.energy_j, rel=1e-12)
    assert 0 < c.fixed_s["kernel calls"] < c.latency_s
    arch = load_arch(preset)
    assert all(lv.transfer_overhead_cycles > 0 for lv in arch.levels[1:])


@pytest.mark.parametrize("bad,message", [
    ({"read_energy": "1 pJ/B"}, "read_energy and write_energy together"),
    ({"transfer_overhead": -3}, "cycles in [0, 1e9)"),
    ({"transfer_overhead": True}, "cycles in [0, 1e9)"),
    ({"write_energy": "-1 pJ/B", "read_energy": "1 pJ/B"}, "must not be negative"),
])
def test_loader_rejects_bad_energy_and_overheads(bad, message):
    spec = {"name": "e", "compute": {"clock": "1 GHz", "macs_per_cycle": {"i8": 64}},
            "levels": [{"name": "gm", "capacity": "unbounded"},
                       {"name": "ub", "capacity": "64 KiB", "bandwidth": "100 GB/s", **bad}]}
    with pytest.raises(SpecError, match=re.escape(message)):
        arch_from_dict(spec, source="test")


def test_outermost_level_has_no_transfer_cost():
    spec = {"name": "e", "compute": {"clock": "1 GHz", "macs_per_cycle": {"i8": 64}},
            "levels": [{"name": "gm", "capacity": "unbounded", "transfer_overhead": 10},
                       {"name": "ub", "capacity": "64 KiB", "bandwidth": "100 GB/s"}]}
    with pytest.raises(SpecError, match="outermost level"):
        arch_from_dict(spec, source="test")


def test_energy_table_round_trips_through_yaml():
    from tilewise.arch.loader import arch_to_yaml, parse_arch

    arch = load_arch("aie-4x2")
    again = parse_arch(arch_to_yaml(arch))
    assert again.compute.energy_pj_per_mac_dtype == arch.compute.energy_pj_per_mac_dtype
    assert [(lv.read_energy_pj, lv.write_energy_pj, lv.transfer_overhead_cycles)
            for lv in again.levels] == [(lv.read_energy_pj, lv.write_energy_pj,
                                         lv.transfer_overhead_cycles) for lv in arch.levels]


def test_energy_objective_needs_the_workloads_mac_dtype():
    """A per-dtype MAC energy table without the workload's dtype is refused up front (it used
    to pass the check and rank by NaN)."""
    import tilewise as tw

    spec = {"name": "e", "compute": {"clock": "1 GHz", "macs_per_cycle": {"i8": 64, "i16": 32},
                                     "energy_per_mac": {"i8": "0.2 pJ"}},
            "levels": [{"name": "gm", "capacity": "unbounded"},
                       {"name": "ub", "capacity": "64 KiB", "bandwidth": "100 GB/s",
                        "energy_per_byte": "1 pJ"}]}
    arch = arch_from_dict(spec, source="test")
    with pytest.raises(SpecError, match=re.escape("energy_per_mac[i16]")):
        tw.search(gemm(64, 64, 64, dtype="i16"), arch, objective="energy")
    assert tw.search(gemm(64, 64, 64, dtype="i8"), arch, objective="energy", top=1).best.energy_j > 0


def _loose_dma(arch):
    """``arch`` with DMA limits no tile of a small problem exceeds (same words, so the same
    bytes): every transfer one BD."""
    levels = tuple(dataclasses.replace(lv, dma=dataclasses.replace(
        lv.dma, dims=8, max_wrap=10 ** 6, max_stride_words=10 ** 9, max_length_words=None))
        for lv in arch.levels)
    return dataclasses.replace(arch, levels=levels)


def test_a_transfer_of_two_bds_is_charged_twice():
    """Issue 17, by hand (docs/usage/dma.md): conv2d n2 c12 8x8 k8 3x3 i8 on aie-4x2, core
    tiles n2 k8 c8 p4 q4. I moves into the core in 8 tiles (2 in c x 2 in h x 2 in w); the
    core's buffer is the largest window tile, 2 x 8 x 6 x 8 (n, c, rows, row words rounded
    out); the border tile 2 x 4 x 4 x 4 merges no dims, a 4-D pattern on the core's 3-D DMA
    without repeat: one BD per image, 2. So 9 BDs for 8 transfers, and the link into the core
    takes one more fixed cost: 32 cycles / 1 GHz / 2 channels = 16 ns (one core, no split;
    nothing double-buffered, so the latency is T_c + the links' times and grows by it too)."""
    from tilewise import conv2d

    w = conv2d(2, 12, 8, 8, 8, 3, 3, dtype="i8")
    m = Mapping.parse("ddr[n2 k8 c12 p6 q6 r3 s3] nkcpqrs | memtile[n2 k8 c12 p6 q6 r3 s3]"
                      " nkcpqrs | core[n2 k8 c8 p4 q4 r3 s3]")
    aie = load_arch("aie-4x2")
    core = aie.level("core")
    per_bd = core.transfer_overhead_cycles / aie.compute.clock_hz / core.channels
    assert per_bd == 16e-9
    split, loose = evaluate(w, aie, m), evaluate(w, _loose_dma(aie), m)
    assert split.reads == loose.reads and split.writes == loose.writes
    assert split.fills["core"]["I"] == loose.fills["core"]["I"] == 8
    assert (split.fill_bds["core"]["I"], loose.fill_bds["core"]["I"]) == (9, 8)
    assert split.fill_bds["core"]["W"] == 2 and split.drain_bds["core"]["O"] == 8
    # the read side of the core's link binds (data and fixed costs), so each BD into it adds 16 ns
    reads_s = sum(split.reads["core"].values()) / (core.read_bandwidth * core.channels)
    into = sum(split.fill_bds["core"].values())
    out = sum(split.drain_bds["core"].values())
    writes_s = sum(split.writes["core"].values()) / (core.write_bandwidth * core.channels)
    assert reads_s + into * per_bd > writes_s + out * per_bd
    assert split.fixed_s["core"] == pytest.approx(into * per_bd, rel=1e-12)
    assert split.fixed_s["core"] - loose.fixed_s["core"] == pytest.approx(per_bd, rel=1e-9)
    assert split.latency_s - loose.latency_s == pytest.approx(per_bd, rel=1e-9)
