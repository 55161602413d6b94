"""``tilewise arch host``: this CPU read from sysfs / cpuinfo, its YAML, and ``--arch host``."""

from pathlib import Path

import pytest

from tilewise.arch import host
from tilewise.arch.loader import load_arch, load_file, parse_arch
from tilewise.cli import main
from tilewise.errors import SpecError


def _cache(root: Path, cpu: int, index: int, level: int, kind: str, size: str, shared: str):
    d = root / f"cpu{cpu}" / "cache" / f"index{index}"
    d.mkdir(parents=True)
    for name, value in (("level", level), ("type", kind), ("size", size),
                        ("coherency_line_size", 64), ("shared_cpu_list", shared)):
        (d / name).write_text(f"{value}\n")


def fake_sysfs(root: Path, cpus: int = 4) -> Path:
    """4 CPUs: private L1d, L1i and L2, one shared L3."""
    for c in range(cpus):
        _cache(root, c, 0, 1, "Data", "48K", str(c))
        _cache(root, c, 1, 1, "Instruction", "32K", str(c))
        _cache(root, c, 2, 2, "Unified", "2048K", str(c))
        _cache(root, c, 3, 3, "Unified", "36864K", f"0-{cpus - 1}")
    return root


def test_read_caches_outermost_first_with_instances(tmp_path):
    caches = host.read_caches({0, 1, 2, 3}, fake_sysfs(tmp_path))
    assert [(c.level, c.size_bytes, c.instances) for c in caches] == [
        (3, 36 << 20, 1), (2, 2 << 20, 4), (1, 48 << 10, 4)]  # no instruction cache
    # a process allowed on two CPUs sees two private caches, still one L3
    assert [c.instances for c in host.read_caches({1, 2}, tmp_path)] == [1, 2, 2]


def test_read_caches_without_sysfs_is_one_clear_error(tmp_path):
    with pytest.raises(SpecError, match="no cache levels"):
        host.read_caches({0}, tmp_path)


@pytest.mark.parametrize("flags, width, f32, i8", [
    ({"avx512f", "avx512_vnni", "avx2"}, 64, 32, 128),
    ({"avx512f", "avx2"}, 64, 32, 64),
    ({"avx2", "avx_vnni"}, 32, 16, 64),
    ({"sse2"}, 16, 8, 16),
])
def test_vector_unit_from_flags(flags, width, f32, i8):
    v = host.vector_unit(flags)
    assert (v.bytes, v.macs_per_cycle["f32"], v.macs_per_cycle["i8"]) == (width, f32, i8)
    assert v.macs_per_cycle["f64"] * 2 == f32 and set(v.rules) == set(v.macs_per_cycle)


def _cpu(tmp_path) -> host.HostCPU:
    return host.HostCPU("Test CPU", 4, host.read_caches({0, 1, 2, 3}, fake_sysfs(tmp_path)),
                        host.vector_unit({"avx2"}), 3.0e9, "test")


def test_host_yaml_loads_and_folds_the_shared_cache(tmp_path):
    cpu = _cpu(tmp_path)
    measured = host.Measured({"l3": 20e9, "l2": 40e9, "l1": 80e9},
                             {"l3": 1 << 26, "l2": 1 << 23, "l1": 1 << 19}, "2025-01-02")
    arch = parse_arch(host.host_yaml(cpu, measured), "host.yaml")
    assert [lv.name for lv in arch.levels] == ["dram", "l2", "l1"]
    assert arch.level("l2").capacity_bytes == 2 << 20 and arch.level("l1").instances == 4
    assert arch.level("l1").read_bandwidth == pytest.approx(80e9, rel=1e-3)
    assert (arch.array.level, arch.cores, arch.compute.macs_per_cycle["f32"]) == ("l1", 4, 16)
    assert "measured 2025-01-02" in arch.sources["levels[1].bandwidth"]
    full = parse_arch(host.host_yaml(cpu, measured, all_levels=True), "host.yaml")
    assert [lv.name for lv in full.levels] == ["dram", "l3", "l2", "l1"]
    assert full.array.level == "l1" and full.level("l3").instances == 1


def test_copy_bandwidth_is_positive_and_counts_read_and_write():
    from tilewise.arch.copybench import copy_bandwidth

    rate = copy_bandwidth(1 << 14, min_s=0.002, repeats=1)
    assert rate.size_bytes == 1 << 14 and 1e8 < rate.bytes_per_s < 1e13


def test_cli_arch_host_writes_a_loadable_preset(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILEWISE_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "me.yaml"
    assert main(["arch", "host", "-o", str(out), "--seconds", "0.002"]) == 0
    arch = load_file(out)
    assert arch.name == "host" and arch.levels[0].name == "dram" and arch.cores >= 1
    assert "wrote" in capsys.readouterr().out
    assert not (tmp_path / "cache" / "host.yaml").exists()  # -o: the cache is left alone
    monkeypatch.setattr(host, "write_host", lambda path: out.replace(path) if
                        path.parent.mkdir(parents=True) is None else None)
    assert load_arch("host") == arch  # --arch host: written on first use, then read
    assert (tmp_path / "cache" / "host.yaml").is_file()
