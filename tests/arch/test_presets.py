"""The shipped presets: they load, validate, carry the issue's numbers, round-trip, cite sources."""

from tilewise.arch.loader import preset_names
import pytest
import yaml

import tilewise
from tilewise.arch.loader import (PRESET_DIR, arch_from_dict, arch_to_dict, arch_to_yaml, load_arch,
                                   load_preset, parse_arch, preset_names, source_of)
from tilewise.arch.spec import Arch
from tilewise.errors import SpecError

KiB, MiB, GiB = 2**10, 2**20, 2**30
PRESETS = ["aie-4x2", "ascend-vec", "cpu-6core", "npu1", "npu2"]


def test_preset_names():
    assert preset_names() == PRESETS
    assert tilewise.Arch is Arch and tilewise.load_arch is load_arch


@pytest.mark.parametrize("name", PRESETS)
def test_round_trip_through_yaml_and_dict(name):
    arch = load_arch(name)
    assert arch.name == name
    again = parse_arch(arch_to_yaml(arch), "again.yaml")
    assert again == arch
    assert arch_from_dict(arch_to_dict(arch)) == arch
    assert arch_to_dict(arch_from_dict(yaml.safe_load(arch_to_yaml(arch)))) == arch_to_dict(arch)
    assert load_arch(PRESET_DIR / f"{name}.yaml") == arch  # the same file by path


def _leaf_paths(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaf_paths(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for i, item in enumerate(value):
            yield from _leaf_paths(item, f"{path}[{i}]")
    else:
        yield path, value


@pytest.mark.parametrize("name", PRESETS)
def test_every_number_in_a_preset_carries_a_source_comment(name):
    arch = load_arch(name)
    raw = yaml.safe_load((PRESET_DIR / f"{name}.yaml").read_text())
    missing = [path for path, value in _leaf_paths(raw)
               if not path.endswith(("name", "description", "array.level"))
               and source_of(arch, path) is None]
    assert missing == []


@pytest.mark.parametrize("name, path", [
    ("cpu-6core", "compute.clock"), ("cpu-6core", "levels[1].bandwidth"),
    ("cpu-6core", "levels[3].bandwidth"), ("ascend-vec", "levels[1].bandwidth"),
    ("ascend-vec", "compute.clock"), ("npu1", "compute.clock"),
])
def test_numbers_not_from_a_document_say_assumption(name, path):
    assert "assumption" in source_of(load_arch(name), path)


def test_aie_4x2_matches_the_seed_overlay():
    a = load_arch("aie-4x2")
    assert [lv.name for lv in a.levels] == ["ddr", "memtile", "core"]
    ddr, memtile, core = a.levels
    assert ddr.capacity_bytes is None and ddr.read_bandwidth == 0
    assert (memtile.capacity_bytes, memtile.instances) == (512 * KiB, 2)  # 512 KB memtile per column
    assert (core.banks, core.bank_bytes, core.bank_granular) == (6, 8 * KiB, True)  # 2 banks each A/B/C
    assert core.capacity_bytes == 3 * 2 * 8 * KiB and core.instances == 8
    assert memtile.read_bandwidth == memtile.write_bandwidth == 8 * GiB  # 8 GiB/s per channel
    assert core.read_bandwidth == 8 * GiB and core.channels == 2
    assert memtile.instances * memtile.channels == 4  # 4 DDR channels
    assert (a.array.rows, a.array.cols, a.array.level, a.cores) == (4, 2, "core", 8)
    assert a.array.broadcast_rows and a.array.broadcast_cols
    assert {k: v if isinstance(v, int) else dict(v) for k, v in a.alignment.items()} == {
        "m": 16, "n": 8, "k": 16, "c_in": {"i8": 8, "default": 16}}
    assert a.compute.clock_hz == 1e9
    # 256/128/64 ops per cycle for 8/16/32-bit outputs = 2 ops per MAC
    assert {d: 2 * n for d, n in a.compute.macs_per_cycle.items()} == {"i8": 256, "i16": 128, "i32": 64}
    assert a.peak_macs_per_second("int8") == 128 * 1e9 * 8


@pytest.mark.parametrize("name, rows, cols", [("npu1", 4, 5), ("npu2", 4, 8)])
def test_npu_presets_are_aie_ml_arrays(name, rows, cols):
    a = load_arch(name)
    ddr, memtile, core = a.levels
    assert (a.array.rows, a.array.cols, a.cores) == (rows, cols, rows * cols)
    assert (core.capacity_bytes, core.banks, core.bank_bytes) == (64 * KiB, 8, 8 * KiB)
    assert core.instances == rows * cols
    assert (memtile.capacity_bytes, memtile.instances) == (512 * KiB, cols)  # per column
    assert dict(a.compute.macs_per_cycle) == {"i8": 256, "i16": 64, "bf16": 128}
    assert a.compute.clock_hz == 1e9
    assert core.read_bandwidth == 4 * a.compute.clock_hz  # 32-bit stream: 4 B/cycle
    assert a.peak_macs_per_second("i8") == 256 * 1e9 * rows * cols


def test_ascend_vec_unified_buffer():
    a = load_arch("ascend-vec")
    gm, ub = a.levels
    assert gm.capacity_bytes is None
    assert (ub.capacity_bytes, ub.block_bytes) == (192 * KiB, 32)  # 192 KB UB, 32-byte blocks
    assert a.array is None and a.cores == 1
    # one repeat = 8 blocks x 32 B = 256 B: 256/sizeof(T) elements (seed 002)
    assert dict(a.compute.vector_ops_per_cycle) == {"f16": 128, "f32": 64, "i16": 128, "i32": 64}


def test_cpu_6core_caches():
    a = load_arch("cpu-6core")
    assert [(lv.name, lv.capacity_bytes, lv.instances) for lv in a.levels] == [
        ("dram", None, 1), ("l3", 12 * MiB, 1), ("l2", 256 * KiB, 6), ("l1", 32 * KiB, 6)]
    assert a.level("l2").read_bandwidth == 70 * GiB  # seed 001 memcpy
    assert (a.array.level, a.cores) == ("l2", 6)
    assert not (a.array.broadcast_rows or a.array.broadcast_cols)


def test_unknown_preset_lists_presets():
    with pytest.raises(SpecError, match=r"unknown architecture preset 'aie-4x4'; did you mean "
                                        r"'aie-4x2'\? presets: aie-4x2, ascend-vec, cpu-6core"):
        load_preset("aie-4x4")
    with pytest.raises(SpecError, match=r"unknown architecture 'tpu': no file of that name and "
                                        r"not a preset; presets: aie-4x2"):
        load_arch("tpu")


def test_load_arch_names_the_argument_and_the_valid_forms():
    for bad in (None, 3, ["aie-4x2"]):
        with pytest.raises(SpecError, match=r"arch must be an Arch, a preset name or a YAML path, "
                                            r"got \w+ .*; presets: aie-4x2, ascend-vec"):
            load_arch(bad)


def test_arch_pickles_without_a_process_wide_pickler():
    import copyreg
    import pickle
    import types

    assert types.MappingProxyType not in copyreg.dispatch_table
    for name in PRESETS:
        a = load_arch(name)
        again = pickle.loads(pickle.dumps(a))
        assert again == a and again.sources == a.sources
        assert isinstance(again.alignment, types.MappingProxyType)
        assert isinstance(again.compute.macs_per_cycle, types.MappingProxyType)


def test_arch_preset_compatibility_binding():
    """``Arch.preset`` / ``Arch.presets`` stay (bound in tilewise/arch/__init__.py) until their
    callers use load_arch; spec.py itself imports nothing of the loader."""
    assert load_arch("npu1") is load_arch("npu1")
    assert preset_names() == PRESETS


def test_level_lookup_and_peak_errors():
    a = load_arch("npu1")
    with pytest.raises(SpecError, match="has no memory level 'l2'; levels: ddr, memtile, core"):
        a.level("l2")
    with pytest.raises(SpecError, match="no MAC rate for 'f32'; compute.macs_per_cycle has: i8, i16, bf16"):
        a.peak_macs_per_second("f32")


def test_to_dict_is_plain_data():
    d = arch_to_dict(load_arch("aie-4x2"))
    assert d["levels"][2] == {
        "name": "core", "capacity": "48 KiB", "instances": 8, "banks": 6, "bank_size": "8 KiB",
        "bank_granular": True, "bandwidth": "8 GiB/s", "channels": 2, "double_buffer": True,
        "read_energy": "2.5 pJ", "write_energy": "2.5 pJ", "transfer_overhead": 32.0,
        "dma": {"dims": 3, "max_wrap": 255, "max_stride": 8192, "word": "4 B", "repeat": 1,
                "bds": 16, "channels": 2, "zero_padding": False}}
    assert d["compute"]["clock"] == "1 GHz"
    assert yaml.safe_load(yaml.safe_dump(d)) == d
