"""The preset of the machine tilewise runs on: ``tilewise arch host`` and ``--arch host``.

:func:`probe` reads this CPU from the operating system and :func:`host_yaml` writes it in the
preset schema (``arch/presets/*.yaml``), every number with a comment saying where it comes
from:

- cores: ``os.sched_getaffinity`` (the CPUs this process may run on);
- cache levels: ``/sys/devices/system/cpu/cpu0/cache/index*`` (level, type, size, line size,
  ``shared_cpu_list`` -> instances); data and unified caches only, outermost first;
- SIMD width and MACs per cycle: the ``flags`` line of ``/proc/cpuinfo`` (avx512f: 64-byte
  vectors, avx2: 32, else 16) and a stated assumption of two fused multiply-add pipes;
- clock: ``cpuinfo_max_freq`` of cpufreq, else ``cpu MHz`` of ``/proc/cpuinfo``;
- bandwidth per level: a copy benchmark (:mod:`.copybench`) on one core, stated as measured
  with the date.

``--arch host`` (:func:`tilewise.arch.loader.load_arch`) reads ``host.yaml`` in the cache directory
(``$TILEWISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tilewise``, else ``~/.cache/tilewise``) and
writes it first when it is missing (a few seconds: the copy benchmark). ``tilewise arch host
--refresh`` measures again.

The preset's levels are ``dram`` then the private caches (``l2``, ``l1``: one instance per
core), outermost first; shared caches (L3) are folded into ``dram`` unless ``all_levels``
(``--all-levels``): a 4-level CPU space takes minutes to search exactly, 3 levels seconds.
The array sits on the innermost cache (one per core: tilewise splits work across the cores of
the innermost level; the levels above are one logical memory). Registers are not a level: the register
(vector) tile is chosen when emitting code (:mod:`tilewise.emit.mlir`).
"""

from __future__ import annotations

import datetime
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .. import cpuinfo
from ..cpuinfo import field as cpuinfo_field
from ..errors import SpecError

SYSFS_CPU = Path("/sys/devices/system/cpu")
FMA_PIPES = 2  # assumption: two fused multiply-add pipes per core (x86 since Haswell / Zen)


@dataclass(frozen=True)
class Cache:
    """One data (or unified) cache level of core 0. Bytes."""

    level: int
    size_bytes: int
    line_bytes: int
    instances: int
    source: str


@dataclass(frozen=True)
class Vector:
    """The SIMD unit: vector bytes, vector registers, the flag that says so, and the MACs per
    cycle per input dtype with the rule that gave each."""

    bytes: int
    registers: int
    flag: str
    macs_per_cycle: dict
    rules: dict


@dataclass(frozen=True)
class HostCPU:
    """What :func:`probe` found: model name, cores, caches outermost first, SIMD, clock (Hz)."""

    model: str
    cores: int
    caches: tuple[Cache, ...]
    vector: Vector
    clock_hz: float
    clock_source: str


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def _size(text: str) -> int:
    """``"32K"`` -> 32768 (sysfs cache sizes)."""
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    if not m:
        raise SpecError(f"cannot read the cache size {text!r} from sysfs; expected e.g. 32K")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def _cpu_list(text: str) -> set[int]:
    """``"0-3,8"`` -> {0, 1, 2, 3, 8}."""
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def read_caches(cpus: set[int], root: Path = SYSFS_CPU) -> tuple[Cache, ...]:
    """Data and unified caches of the first CPU in ``cpus``, outermost first; instances =
    the distinct ``shared_cpu_list`` groups among ``cpus``."""
    first = min(cpus)
    found = []
    for index in sorted((root / f"cpu{first}" / "cache").glob("index*")):
        if _read(index / "type") not in ("Data", "Unified"):
            continue
        level = int(_read(index / "level"))
        groups = {frozenset(_cpu_list(_read(root / f"cpu{c}" / "cache" / index.name
                                            / "shared_cpu_list")) & cpus) for c in cpus}
        found.append(Cache(level, _size(_read(index / "size")),
                           int(_read(index / "coherency_line_size") or 64), len(groups),
                           f"sysfs cpu{first}/cache/{index.name}: {_read(index / 'size')}, "
                           f"shared by CPUs {_read(index / 'shared_cpu_list')}"))
    if not found:
        raise SpecError(f"no cache levels under {root}/cpu{first}/cache: cannot describe this "
                        "CPU; write a preset by hand (docs/usage/arch.md)")
    return tuple(sorted(found, key=lambda c: -c.level))


def vector_unit(flags: set[str]) -> Vector:
    """SIMD width, registers and MACs per cycle per input dtype from the CPU flags.

    Rules (each stated in the YAML): f32 lanes x FMA pipes; f64 half that; i16 through
    ``vpmaddwd`` (2 products per i32 lane); i8 through ``vpdpbusd`` (4 per i32 lane) with
    avx512_vnni / avx_vnni, else ``vpmaddubsw`` + ``vpmaddwd`` (2 per i16 lane's pair, as i16).
    """
    if "avx512f" in flags:
        width, regs, flag = 64, 32, "avx512f"
    elif "avx2" in flags:
        width, regs, flag = 32, 16, "avx2"
    else:
        width, regs, flag = 16, 16, "sse2"
    f32 = width // 4 * FMA_PIPES
    vnni = next((f for f in ("avx512_vnni", "avx_vnni") if f in flags), None)
    macs = {"f32": f32, "f64": f32 // 2, "i16": 2 * f32}
    rules = {"f32": f"{width // 4} f32 lanes x {FMA_PIPES} FMA pipes (assumption)",
             "f64": "half the f32 rate",
             "i16": "vpmaddwd: 2 products per i32 lane, twice the f32 rate"}
    if vnni:
        macs["i8"] = 4 * f32
        rules["i8"] = f"{vnni}: vpdpbusd, 4 products per i32 lane, 4x the f32 rate"
    else:
        macs["i8"] = 2 * f32
        rules["i8"] = "no VNNI: vpmaddubsw + vpmaddwd, about the i16 rate"
    return Vector(width, regs, flag, macs, rules)


def clock(text: str | None = None) -> tuple[float, str]:
    """The core clock in Hz and where it was read."""
    freq = _read(SYSFS_CPU / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    if freq:
        return int(freq) * 1e3, "cpufreq cpuinfo_max_freq"
    mhz = cpuinfo_field("cpu MHz", text)
    if mhz:
        return float(mhz) * 1e6, "/proc/cpuinfo 'cpu MHz' (no cpufreq: the nominal clock)"
    raise SpecError("cannot read this CPU's clock (no cpufreq, no 'cpu MHz' in /proc/cpuinfo)")


def probe() -> HostCPU:
    """This CPU as the operating system describes it (no benchmark)."""
    cpus = set(os.sched_getaffinity(0))
    text = cpuinfo.text()
    flags = set(cpuinfo_field("flags", text).split())
    hz, source = clock(text)
    return HostCPU(cpuinfo_field("model name", text) or "unknown CPU", len(cpus),
                   read_caches(cpus), vector_unit(flags), hz, source)


def cache_dir() -> Path:
    """Where ``host.yaml`` is kept: ``$TILEWISE_CACHE_DIR``, else ``$XDG_CACHE_HOME/tilewise``,
    else ``~/.cache/tilewise``."""
    if os.environ.get("TILEWISE_CACHE_DIR"):
        return Path(os.environ["TILEWISE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tilewise"


def host_path() -> Path:
    return cache_dir() / "host.yaml"


@dataclass(frozen=True)
class Measured:
    """Copy rates (bytes/s) behind each cache level's bandwidth, and the date measured."""

    rates: dict
    sizes: dict
    date: str


def measure(cpu: HostCPU, min_s: float = 0.05) -> Measured:
    """Copy-benchmark each cache level's parent link (one core): a buffer pair filling half of
    the parent level (dram: four times the outermost cache) and at least twice this level."""
    from .copybench import copy_bandwidth

    rates, sizes = {}, {}
    for i, cache in enumerate(cpu.caches):
        parent = cpu.caches[i - 1].size_bytes // 4 if i else cache.size_bytes * 2
        size = max(parent, cache.size_bytes)  # each of the 2 buffers
        rate = copy_bandwidth(size, min_s)
        rates[f"l{cache.level}"], sizes[f"l{cache.level}"] = rate.bytes_per_s, rate.size_bytes
    return Measured(rates, sizes, datetime.date.today().isoformat())


def _kib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n >> 10} KiB"


def host_yaml(cpu: HostCPU, measured: Measured, all_levels: bool = False) -> str:
    """The preset YAML of ``cpu`` (schema of ``arch/presets``), each number commented.

    Levels: ``dram``, then the private caches (one instance per core), outermost first; the
    shared caches (L3) too with ``all_levels``. Without it they are folded into ``dram``: a
    4-level CPU space takes minutes to search exactly, 3 levels seconds."""
    vec = cpu.vector
    cores = cpu.caches[-1].instances  # private innermost cache: one per physical core
    caches = [c for c in cpu.caches if all_levels or c.instances == cores]
    folded = [c for c in cpu.caches if c not in caches]
    lines = [
        f"# host: this machine, written by `tilewise arch host` on {measured.date}.",
        f"# {cpu.model}; {cpu.cores} CPUs usable by this process, {cores} private L1 caches.",
        "# Sizes per instance; bandwidths per instance, parent -> this level.",
        "name: host",
        f"description: {cpu.model}, {cores} cores, "
        + ", ".join(f"L{c.level} {_kib(c.size_bytes)} x{c.instances}" for c in cpu.caches)
        + f", {vec.flag}" + (" (shared " + ", ".join(f"L{c.level}" for c in folded)
                            + " folded into dram)" if folded else ""),
        "levels:",
        "  - name: dram",
        "    capacity: unbounded            # main memory"
        + "".join(f" and the shared L{c.level} ({_kib(c.size_bytes)}, {c.source})"
                  for c in folded),
    ]
    for c in caches:
        name = f"l{c.level}"
        gbs = measured.rates[name] / 1e9
        lines += [
            f"  - name: {name}",
            f"    capacity: {_kib(c.size_bytes):<22} # {c.source}",
            f"    instances: {c.instances:<21} # distinct shared_cpu_list groups among the usable CPUs",
            f"    block: {c.line_bytes} B{'':<20} # sysfs coherency_line_size",
            f"    bandwidth: {gbs:.1f} GB/s{'':<12} # measured {measured.date}: one-core copy of "
            f"2 x {_kib(measured.sizes[name])}, read + write counted",
            "    double_buffer: false           # caches are not software-managed",
        ]
    lines += [
        "array:",
        f"  level: l{caches[-1].level:<23} # the innermost cache, one per core: tilewise splits "
        "work across cores at the innermost level",
        "  rows: 1",
        f"  cols: {cores}",
        "  broadcast: []                    # each core fetches its own copy of a shared tile",
        "  reduce_cols: false",
        "compute:",
        f"  clock: {cpu.clock_hz / 1e9:.3f} GHz{'':<14} # {cpu.clock_source}",
        "  macs_per_cycle: {" + ", ".join(f"{k}: {v}" for k, v in vec.macs_per_cycle.items())
        + "}",
        "                                   # " + "; ".join(f"{k}: {r}" for k, r in vec.rules.items()),
        f"  vector_ops_per_cycle: {{f32: {vec.bytes // 4 * 2}, i32: {vec.bytes // 4 * 2}}}",
        f"                                   # {vec.flag}: {vec.bytes}-byte vectors, 2 ALU pipes "
        "(assumption)",
        f"alignment: {{n: {vec.bytes // 4}}}{'':<14} # innermost n tiles span whole vectors of "
        "32-bit lanes",
    ]
    return "\n".join(lines) + "\n"


def write_host(path: Path | None = None, min_s: float = 0.05, all_levels: bool = False) -> Path:
    """Probe and measure this machine and write its preset (default :func:`host_path`);
    :func:`tilewise.arch.loader.load_arch` ``("host")`` calls it when the file is missing."""
    path = host_path() if path is None else Path(path)
    cpu = probe()
    text = host_yaml(cpu, measure(cpu, min_s), all_levels)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
