"""Architecture specs from YAML: parse, validate, write back; the shipped presets.

A spec is plain YAML (every key, type, unit and default: docs/usage/arch.md)::

    name: tiny
    levels:                       # outermost first
      - {name: dram, capacity: unbounded}
      - {name: sram, capacity: 64 KiB, bandwidth: 16 GB/s, instances: 4}
    array: {level: sram, rows: 2, cols: 2}
    compute: {clock: 1 GHz, macs_per_cycle: {i8: 64}}
    alignment: {m: 8}

``load_arch("aie-4x2")`` loads a preset, ``load_arch("my.yaml")`` a file. Every error is one
:class:`~tilewise.errors.SpecError` line naming the file, the key path, the value and what is
allowed, e.g. ``aie.yaml: levels[1]: unknown key 'capcity'; did you mean 'capacity'? valid
keys: ...``; a YAML syntax error names the file, line and column. Duplicate keys are errors too
(plain ``yaml.safe_load`` silently keeps the last one).

The comment beside a number (``capacity: 512 KiB  # seed 003 §III.B``) is kept in
``Arch.sources`` under the key path (``levels[1].capacity``) so ``tilewise arch show`` can say
where each number comes from.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import yaml

from ..dtypes import dtype as lookup_dtype
from ..errors import DTypeError, SpecError
from .spec import Arch, Compute, DmaLimits, Level, SpatialArray
from .units import (
    format_bandwidth, format_energy, format_frequency, format_size, parse_bandwidth,
    parse_energy, parse_frequency, parse_size,
)

PRESET_DIR = Path(__file__).with_name("presets")
HOST = "host"  # this machine's preset, written on first use (arch/host.py)

TOP_KEYS = ("name", "description", "levels", "array", "compute", "alignment")
LEVEL_KEYS = (
    "name", "capacity", "instances", "banks", "bank_size", "bank_granular", "block",
    "bandwidth", "read_bandwidth", "write_bandwidth", "channels", "double_buffer",
    "energy_per_byte", "read_energy", "write_energy", "transfer_overhead", "holds", "dma",
)
# the limits of the DMA that addresses a level's memory (DmaLimits): YAML key -> field
DMA_KEYS = {"dims": "dims", "max_wrap": "max_wrap", "max_stride": "max_stride_words",
            "word": "word_bytes", "repeat": "max_repeat", "max_length": "max_length_words",
            "bds": "bds", "channels": "channels", "zero_padding": "zero_padding"}
# operand roles a level's ``holds`` / per-tensor capacity may name besides tensor names
# (Level.holds): an op's first / second / third input, every final output
ROLES = ("in1", "in2", "in3", "out")
ARRAY_KEYS = ("level", "rows", "cols", "broadcast", "reduce_cols")
COMPUTE_KEYS = ("clock", "macs_per_cycle", "vector_ops_per_cycle", "energy_per_mac",
                "call_overhead")
BROADCAST_AXES = ("rows", "cols")
_DIM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --------------------------------------------------------------------------- where + errors


@dataclass(frozen=True)
class _Where:
    """A key path inside one source file, for error messages."""

    source: str
    path: str = ""

    def key(self, name: str) -> "_Where":
        return _Where(self.source, f"{self.path}.{name}" if self.path else name)

    def item(self, index: int) -> "_Where":
        return _Where(self.source, f"{self.path}[{index}]")

    def error(self, message: str) -> SpecError:
        return SpecError(f"{self.source}: {self.path or '(top level)'}: {message}")


def _choices(word: str, valid, label: str) -> str:
    """``"; did you mean 'capacity'? valid keys: name, capacity, ..."`` (the hint when close)."""
    valid = list(valid)
    close = difflib.get_close_matches(word, valid, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"; {hint}{label}: {', '.join(valid) or '(none)'}"


def _mapping(value: Any, where: _Where, allowed, required=()) -> Mapping[str, Any]:
    """Check that ``value`` is a mapping with only ``allowed`` keys and all ``required`` ones."""
    if not isinstance(value, Mapping):
        raise where.error(f"expected a mapping with keys {', '.join(allowed)}; got {value!r}")
    for key in value:
        if key not in allowed:
            raise where.error(f"unknown key {key!r}{_choices(str(key), allowed, 'valid keys')}")
    for key in required:
        if key not in value:
            raise where.error(f"missing required key {key!r}; required keys: {', '.join(required)}")
    return value


def _int(value: Any, where: _Where, what: str = "a positive integer") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise where.error(f"{value!r} is not valid; expected {what}")
    return value


def _bool(value: Any, where: _Where) -> bool:
    if not isinstance(value, bool):
        raise where.error(f"{value!r} is not valid; expected true or false")
    return value


def _text(value: Any, where: _Where, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"{value!r} is not valid; expected {what}")
    return value.strip()


def _unit(parse, value: Any, where: _Where, *args) -> Any:
    """Run a units parser, re-raising its error with the file and key path in front."""
    try:
        return parse(value, *args)
    except SpecError as e:
        raise where.error(str(e)) from None


# --------------------------------------------------------------------------- dict -> Arch


def _compute(data: Any, where: _Where) -> Compute:
    d = _mapping(data, where, COMPUTE_KEYS, required=("clock",))
    clock = _unit(parse_frequency, d["clock"], where.key("clock"))
    rates = {key: _rates(d.get(key, {}), where.key(key)) for key in COMPUTE_KEYS[1:3]}
    energy, by_dtype = _mac_energy(d.get("energy_per_mac"), where.key("energy_per_mac"))
    call = _cycles(d.get("call_overhead", 0), where.key("call_overhead"), "kernel call")
    return Compute(clock, rates["macs_per_cycle"], rates["vector_ops_per_cycle"], energy,
                   call, by_dtype)


def _cycles(value: Any, where: _Where, per: str) -> float:
    """A fixed cost in cycles, a finite number in [0, 1e9)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e9:
        raise where.error(f"expected a number of cycles in [0, 1e9) per {per}; got {value!r}")
    return float(value)


def _mac_energy(data: Any, where: _Where) -> tuple[float | None, dict[str, float]]:
    """``energy_per_mac``: one energy for every dtype (``0.25 pJ``) or a table per input dtype
    (``{i8: 0.1 pJ, bf16: 0.4 pJ}``, Accelergy-style); returns (default, per dtype)."""
    if data is None:
        return None, {}
    if not isinstance(data, Mapping):
        return _unit(parse_energy, data, where, "MAC"), {}
    return None, _dtype_table(data, where, lambda v, w: _unit(parse_energy, v, w, "MAC"))


def _rates(data: Any, where: _Where) -> dict[str, int]:
    """``{i8: 256, bf16: 128}`` with dtype names made canonical (``int8`` -> ``i8``)."""
    if not isinstance(data, Mapping):
        raise where.error(f"expected a mapping dtype -> count per cycle such as {{i8: 256}}; "
                          f"got {data!r}")
    return _dtype_table(data, where, lambda v, w: _int(v, w, "a positive integer count per cycle"))


def _dtype_table(data: Mapping, where: _Where, parse: Callable[[Any, _Where], Any]) -> dict:
    """``{dtype: parse(value)}`` with dtype names made canonical (``int8`` -> ``i8``); an
    unknown dtype or one given twice is an error at its key."""
    out: dict = {}
    for key, value in data.items():
        try:
            name = lookup_dtype(str(key)).name
        except DTypeError as e:
            raise where.error(str(e)) from None
        if name in out:
            raise where.error(f"dtype {name!r} given twice (as {key!r} too)")
        out[name] = parse(value, where.key(str(key)))
    return out


def _level(data: Any, where: _Where, index: int, clock_hz: float) -> Level:
    d = _mapping(data, where, LEVEL_KEYS, required=("name", "capacity"))
    name = _text(d["name"], where.key("name"), "a level name")
    holds = _holds(d["holds"], where.key("holds"), index) if "holds" in d else None
    capacity, reserved = _capacity(d["capacity"], where.key("capacity"), holds)
    banks = _int(d["banks"], where.key("banks")) if "banks" in d else None
    bank_bytes = _unit(parse_size, d["bank_size"], where.key("bank_size")) if "bank_size" in d else None
    if capacity is None and (banks is not None or bank_bytes is not None):
        raise where.error("an unbounded level has no banks; remove 'banks'/'bank_size' "
                          "or give a capacity")
    if capacity is not None and bank_bytes is None and banks is not None:
        if capacity % banks:
            raise where.key("banks").error(
                f"capacity {capacity} B is not divisible into {banks} equal banks; "
                "give 'bank_size' or a banks count that divides the capacity")
        bank_bytes = capacity // banks
    if capacity is not None and banks is None and bank_bytes is not None:
        if capacity % bank_bytes:
            raise where.key("bank_size").error(
                f"capacity {capacity} B is not a multiple of bank_size {bank_bytes} B")
        banks = capacity // bank_bytes
    level: dict[str, Any] = dict(name=name, capacity_bytes=capacity, banks=banks or 1,
                                 bank_bytes=bank_bytes, holds=holds, reserved=reserved)
    for key in ("bank_granular", "double_buffer"):
        if key in d:
            level[key] = _bool(d[key], where.key(key))
    for key in ("instances", "channels"):
        if key in d:
            level[key] = _int(d[key], where.key(key))
    if "block" in d:
        level["block_bytes"] = _unit(parse_size, d["block"], where.key("block"))
    for key, field_name in (("energy_per_byte", "energy_pj_per_byte"),
                            ("read_energy", "read_energy_pj"), ("write_energy", "write_energy_pj")):
        if d.get(key) is not None:
            level[field_name] = _unit(parse_energy, d[key], where.key(key), "B")
    if ("read_energy" in d) != ("write_energy" in d):
        raise where.error(f"level {name!r}: give read_energy and write_energy together "
                          "(pJ per byte read from / written into this level)")
    if "transfer_overhead" in d:
        if index == 0:
            raise where.key("transfer_overhead").error(
                f"level {name!r} is the outermost level: it has no parent link, so no transfer "
                "overhead; it belongs to the inner level a link feeds")
        level["transfer_overhead_cycles"] = _cycles(d["transfer_overhead"],
                                                    where.key("transfer_overhead"), "DMA transfer")
    if "dma" in d:
        level["dma"] = _dma(d["dma"], where.key("dma"))
    level.update(_bandwidths(d, where, index, name, clock_hz))
    return Level(**level)


def _dma(data: Any, where: _Where) -> DmaLimits:
    """``dma: {dims, max_wrap, max_stride, word, repeat, max_length, bds, channels,
    zero_padding}``: counts are positive integers (strides and lengths in words), ``word`` a
    size (``4 B``)."""
    d = _mapping(data, where, tuple(DMA_KEYS), required=("dims", "max_wrap", "max_stride"))
    out: dict[str, Any] = {}
    for key, value in d.items():
        if key == "word":
            out["word_bytes"] = _unit(parse_size, value, where.key(key))
        elif key == "zero_padding":
            out["zero_padding"] = _bool(value, where.key(key))
        else:
            out[DMA_KEYS[key]] = _int(value, where.key(key))
    return DmaLimits(**out)


def _holds(value: Any, where: _Where, index: int) -> tuple[str, ...]:
    """``holds: [C]`` / ``[in2, out]``: tensor names or roles (:data:`ROLES`), each once."""
    if index == 0:
        raise where.error("the outermost level holds every tensor; give 'holds' to an inner "
                          "level")
    if not isinstance(value, list) or not value:
        raise where.error(f"{value!r} is not valid; expected a non-empty list of tensor names "
                          f"or roles ({', '.join(ROLES)}), e.g. [out] or [A, C]")
    for word in value:
        if not isinstance(word, str) or not _DIM_NAME.fullmatch(word):
            raise where.error(f"{word!r} is not a tensor name or role (letters, digits, _)")
    if len(set(value)) != len(value):
        raise where.error(f"{value!r} names a tensor twice")
    return tuple(value)


def _capacity(value: Any, where: _Where, holds) -> tuple[int | None, tuple]:
    """``capacity``: ``unbounded``, one size shared by every tensor, or a mapping of bytes
    reserved per held tensor (name or role) with ``default`` the size the others share
    (``{out: 2 B, in2: 128 B}``, ``{C: 256 B, default: 32 KiB}``). Returns (total bytes,
    reserved parts)."""
    if value == "unbounded":
        return None, ()
    if not isinstance(value, Mapping):
        return _unit(parse_size, value, where), ()
    if not value:
        raise where.error("an empty mapping; expected a size or {tensor or role: size, "
                          "default: size}")
    parts = {str(k): _unit(parse_size, v, where.key(str(k))) for k, v in value.items()}
    shared = parts.pop("default", 0)
    for word in parts:
        if holds is not None and word not in holds:
            raise where.key(word).error(
                f"{word!r} is not held by this level; holds: {', '.join(holds)}")
        if not _DIM_NAME.fullmatch(word):
            raise where.key(word).error(f"{word!r} is not a tensor name or role")
    if not shared and (holds is None or any(w not in parts for w in holds)):
        rest = "every other tensor" if holds is None else ", ".join(w for w in holds if w not in parts)
        raise where.error(f"no bytes left for {rest}: give 'default: SIZE' (shared by the "
                          "tensors without their own size)")
    return shared + sum(parts.values()), tuple(parts.items())


def _bandwidths(d: Mapping, where: _Where, index: int, name: str, clock_hz: float) -> dict:
    given = [k for k in ("bandwidth", "read_bandwidth", "write_bandwidth") if k in d]
    if index == 0:
        if given:
            raise where.key(given[0]).error(
                f"level {name!r} is the outermost level: it has no parent link, so no bandwidth; "
                "bandwidths belong to the inner level they feed")
        return {}
    if "bandwidth" in d and len(given) > 1:
        raise where.error("give either 'bandwidth' (both directions) or 'read_bandwidth' and "
                          "'write_bandwidth', not both")
    if "bandwidth" in d:
        bw = _unit(parse_bandwidth, d["bandwidth"], where.key("bandwidth"), clock_hz)
        return {"read_bandwidth": bw, "write_bandwidth": bw}
    if len(given) < 2:
        raise where.error(
            f"level {name!r} needs the bandwidth of its link to the parent level: give "
            "'bandwidth' (both directions) or both 'read_bandwidth' and 'write_bandwidth'")
    return {k: _unit(parse_bandwidth, d[k], where.key(k), clock_hz) for k in given}


def _array(data: Any, where: _Where) -> SpatialArray:
    d = _mapping(data, where, ARRAY_KEYS, required=("level", "rows", "cols"))
    axes = d.get("broadcast", list(BROADCAST_AXES))
    bw = where.key("broadcast")
    if not isinstance(axes, list) or any(a not in BROADCAST_AXES for a in axes):
        raise bw.error(f"{axes!r} is not valid; expected a list of axes from "
                       f"{list(BROADCAST_AXES)}, e.g. [rows, cols] or []")
    if len(set(axes)) != len(axes):
        raise bw.error(f"{axes!r} names an axis twice")
    return SpatialArray(
        level=_text(d["level"], where.key("level"), "a level name"),
        rows=_int(d["rows"], where.key("rows")),
        cols=_int(d["cols"], where.key("cols")),
        broadcast_rows="rows" in axes,
        broadcast_cols="cols" in axes,
        reduce_cols=_bool(d.get("reduce_cols", False), where.key("reduce_cols")),
    )


def _alignment(data: Any, where: _Where) -> dict[str, int | dict[str, int]]:
    """``{m: 16, c: {i8: 8, default: 16}}``: per role (a dim name or a workload's role, see
    :attr:`tilewise.ir.workload.Chain.roles`) one multiple, or one per input dtype with an
    optional ``default`` for the others (dtype names made canonical)."""
    if not isinstance(data, Mapping):
        raise where.error(f"expected a mapping dim -> multiple such as {{m: 16, n: 8}}; got {data!r}")
    for key in data:
        if not isinstance(key, str) or not _DIM_NAME.fullmatch(key):
            raise where.error(f"{key!r} is not a dim name (letters, digits, _; quote names "
                              "such as 'on' or 'no' that YAML reads as booleans)")
    return {k: _by_dtype(v, where.key(k)) if isinstance(v, Mapping) else
            _int(v, where.key(k), "a positive multiple in elements, or a mapping dtype -> "
                 "multiple such as {i8: 8, default: 16}") for k, v in data.items()}


def _by_dtype(data: Mapping, where: _Where) -> dict[str, int]:
    """``{i8: 8, default: 16}``: a multiple per input dtype, ``default`` for the others."""
    if not data:
        raise where.error("expected a mapping dtype -> multiple such as {i8: 8, default: 16}; "
                          "got an empty mapping")
    out: dict[str, int] = {}
    for key, value in data.items():
        if key == "default":
            name = "default"
        else:
            try:
                name = lookup_dtype(str(key)).name
            except DTypeError as e:
                raise where.error(f"{e} (or 'default' for every other dtype)") from None
        if name in out:
            raise where.error(f"dtype {name!r} given twice (as {key!r} too)")
        out[name] = _int(value, where.key(str(key)), "a positive multiple in elements")
    return out


def arch_from_dict(data: Any, source: str = "<dict>", sources: Mapping[str, str] | None = None,
                   ) -> Arch:
    """Build and validate an :class:`Arch` from parsed YAML (``source`` names it in errors)."""
    top = _Where(source)
    d = _mapping(data, top, TOP_KEYS, required=("name", "levels", "compute"))
    compute = _compute(d["compute"], top.key("compute"))
    levels_where = top.key("levels")
    if not isinstance(d["levels"], list) or not d["levels"]:
        raise levels_where.error(f"expected a non-empty list of levels, outermost first; "
                                 f"got {d['levels']!r}")
    levels = [_level(item, levels_where.item(i), i, compute.clock_hz)
              for i, item in enumerate(d["levels"])]
    description = d.get("description", "")
    if not isinstance(description, str):
        raise top.key("description").error(f"{description!r} is not valid; expected text")
    arch = Arch(
        name=_text(d["name"], top.key("name"), "a name"),
        levels=tuple(levels),
        compute=compute,
        array=_array(d["array"], top.key("array")) if d.get("array") is not None else None,
        alignment=_alignment(d.get("alignment") or {}, top.key("alignment")),
        description=description.strip(),
        sources=sources or {},
    )
    validate_arch(arch, source)
    return arch


# --------------------------------------------------------------------------- validation


def validate_arch(arch: Arch, source: str = "<arch>") -> None:
    """Check the rules that tie values together; SpecError naming the key path otherwise.

    Also for an Arch built in Python. Rules: level names unique; only the outermost level may be
    unbounded; capacity == banks × bank_size and a multiple of block; bank_granular needs banks;
    each level's instances divide the next inner level's (a tree); the outermost level has no
    bandwidth, every other level a positive one; the array sits on a level other than the
    outermost whose instances are rows × cols; clock and rates positive.
    """
    top = _Where(source)
    seen: dict[str, int] = {}
    for i, lv in enumerate(arch.levels):
        where = top.key("levels").item(i)
        if lv.name in seen:
            raise where.key("name").error(
                f"level name {lv.name!r} is already used by levels[{seen[lv.name]}]; "
                "level names must be unique")
        seen[lv.name] = i
        _validate_level(lv, where, i, arch.levels[i - 1] if i else None)
    if arch.array is not None:
        _validate_array(arch, top.key("array"))
    if not arch.compute.clock_hz > 0:
        raise top.key("compute").key("clock").error(
            f"{arch.compute.clock_hz!r} is not valid; expected a positive clock in Hz")


def _validate_level(lv: Level, where: _Where, index: int, parent: Level | None) -> None:
    label = f"level {lv.name!r}"
    if lv.capacity_bytes is None:
        if index:
            raise where.key("capacity").error(
                f"{label} is unbounded, which only the outermost level (levels[0]) may be; "
                "give a size such as '256 KiB'")
    elif lv.capacity_bytes < 1:
        raise where.key("capacity").error(f"{lv.capacity_bytes!r} is not a positive size in bytes")
    for key, value in (("instances", lv.instances), ("banks", lv.banks),
                       ("channels", lv.channels), ("block", lv.block_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise where.key(key).error(f"{value!r} is not valid; expected a positive integer")
    cap = lv.capacity_bytes
    if lv.bank_bytes is not None and cap is not None and lv.banks * lv.bank_bytes != cap:
        raise where.key("capacity").error(
            f"capacity {format_size(cap)} ({cap} B) != banks × bank_size = {lv.banks} × "
            f"{format_size(lv.bank_bytes)} = {lv.banks * lv.bank_bytes} B; make them agree "
            "(or give only two of the three)")
    if lv.bank_granular and lv.bank_bytes is None:
        raise where.key("bank_granular").error(
            f"{label} is bank_granular but has no bank size; give 'banks' or 'bank_size'")
    for key, size in (("capacity", cap), ("bank_size", lv.bank_bytes)):
        if size is not None and size % lv.block_bytes:
            raise where.key(key).error(
                f"{size} B is not a multiple of block {lv.block_bytes} B")
    if parent is not None and lv.instances % parent.instances:
        raise where.key("instances").error(
            f"{lv.instances} is not a multiple of the parent level {parent.name!r}'s "
            f"{parent.instances} instances; each parent instance must feed a whole number of "
            f"{lv.name!r} instances")
    if parent is None:
        if lv.read_bandwidth or lv.write_bandwidth:
            raise where.key("bandwidth").error(
                f"{label} is the outermost level and has no parent link; its bandwidths "
                "must be 0")
    else:
        for key in ("read_bandwidth", "write_bandwidth"):
            if not getattr(lv, key) > 0:
                raise where.key(key).error(
                    f"{getattr(lv, key)!r} is not valid; expected a positive bandwidth in bytes/s")
    _validate_holds(lv, where, index)
    if lv.energy_pj_per_byte is not None and lv.energy_pj_per_byte < 0:
        raise where.key("energy_per_byte").error(
            f"{lv.energy_pj_per_byte!r} is not valid; expected pJ >= 0")
    if lv.dma is not None:
        _validate_dma(lv.dma, where.key("dma"))


def _validate_dma(dma: DmaLimits, where: _Where) -> None:
    """Every count of a DMA's limits is a finite positive integer (None: no length limit)."""
    for key, name in DMA_KEYS.items():
        value = getattr(dma, name)
        if key == "zero_padding" or (key == "max_length" and value is None):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise where.key(key).error(f"{value!r} is not valid; expected a positive integer")


def _validate_holds(lv: Level, where: _Where, index: int) -> None:
    """``holds`` only below the outermost level; reserved parts of held tensors, positive,
    within a bounded capacity."""
    if lv.holds is not None and index == 0:
        raise where.key("holds").error("the outermost level holds every tensor; give 'holds' to "
                                       "an inner level")
    if lv.holds is not None and not lv.holds:
        raise where.key("holds").error("holds nothing; give at least one tensor name or role")
    if not lv.reserved:
        return
    if lv.capacity_bytes is None:
        raise where.key("capacity").error("an unbounded level has no per-tensor capacity")
    for word, nb in lv.reserved:
        if lv.holds is not None and word not in lv.holds:
            raise where.key("capacity").key(word).error(
                f"{word!r} is not held by this level; holds: {', '.join(lv.holds)}")
        if nb < 1:
            raise where.key("capacity").key(word).error(f"{nb!r} is not a positive size in bytes")
    if lv.shared_bytes < 0:
        raise where.key("capacity").error(
            f"the reserved parts ({sum(v for _, v in lv.reserved)} B) exceed the capacity "
            f"{lv.capacity_bytes} B")


def _validate_array(arch: Arch, where: _Where) -> None:
    names = [lv.name for lv in arch.levels]
    array = arch.array
    if array.level not in names:
        raise where.key("level").error(
            f"{array.level!r} is not a level name{_choices(array.level, names, 'levels')}")
    index = names.index(array.level)
    if index == 0:
        raise where.key("level").error(
            f"{array.level!r} is the outermost level; the array's cores must be fed by a parent "
            f"level, so pick one of: {', '.join(names[1:]) or '(no other level)'}")
    for key in ("rows", "cols"):
        value = getattr(array, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise where.key(key).error(f"{value!r} is not valid; expected a positive integer")
    instances = arch.levels[index].instances
    if instances != array.rows * array.cols:
        raise where.error(
            f"rows × cols = {array.rows} × {array.cols} = {array.cores} but level "
            f"{array.level!r} has instances: {instances}; they must be equal (one array cell "
            "per instance)")


# --------------------------------------------------------------------------- YAML files


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key].line + 1})",
                key_node.start_mark)
        seen[key] = key_node.start_mark
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as e:
        from ..textfile import yaml_problem

        raise SpecError(yaml_problem(e, source)) from None
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: YAML error: {' '.join(str(e).split())}") from None
    finally:
        loader.dispose()
    if data is None:
        raise SpecError(f"{source}: empty spec; expected a mapping with keys "
                        + ", ".join(TOP_KEYS))
    return data, node


def parse_arch(text: str, source: str = "<string>") -> Arch:
    """Parse and validate YAML text; ``source`` names it in errors."""
    data, node = _parse_yaml(text, source)
    return arch_from_dict(data, source, comments(node, text.splitlines()))


def load_file(path: str | os.PathLike) -> Arch:
    """Load and validate a YAML spec file."""
    from ..textfile import read_text

    path = Path(path)
    return parse_arch(read_text(path, "architecture file", SpecError), path.name)


def preset_names() -> list[str]:
    """Names of the shipped presets (``arch/presets/*.yaml``), sorted."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def preset_path(name: str) -> Path:
    """The YAML file of preset ``name``; SpecError listing the presets otherwise."""
    names = preset_names()
    if name not in names:
        raise SpecError(f"unknown architecture preset {name!r}{_choices(name, names, 'presets')}")
    return PRESET_DIR / f"{name}.yaml"


@functools.lru_cache(maxsize=None)
def load_preset(name: str) -> Arch:
    """A shipped preset by name (cached: an Arch is immutable)."""
    return load_file(preset_path(name))


def load_arch(spec: str | os.PathLike | Arch, argument: str = "arch") -> Arch:
    """The one arch coercion of every entry point: an Arch is returned as is, a string or path
    is a preset name (``"aie-4x2"``), ``"host"`` (this machine: the cached file of :mod:`tilewise.arch.host`, written when missing)
    or a YAML file. SpecError names ``argument``, the value and the presets otherwise."""
    if isinstance(spec, Arch):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        raise SpecError(f"{argument} must be an Arch, a preset name or a YAML path, got "
                        f"{type(spec).__name__} {spec!r}; presets: {', '.join(preset_names())}")
    text = os.fspath(spec)
    if not text.strip():
        raise SpecError(f"{argument} is empty; give a preset name ({', '.join(preset_names())}) "
                        "or a YAML path")
    if text in preset_names():
        return load_preset(text)
    if text == HOST:
        from .host import host_path, write_host

        path = host_path()
        if not path.is_file():
            write_host(path)
        return load_file(path)
    path = Path(text)
    if path.exists():  # a file, or a folder or device that load_file refuses with one line
        return load_file(path)
    raise SpecError(f"unknown architecture {text!r}: no file of that name and not a preset"
                    + _choices(text, preset_names() + [HOST], "presets"))


# --------------------------------------------------------------------------- comments


_COMMENT = re.compile(r"\s*#\s?(.*)")


def comments(node: yaml.Node | None, lines: list[str]) -> dict[str, str]:
    """Key path -> the comment beside its value (``levels[1].capacity`` -> ``"seed 003 ..."``).

    A scalar or flow value takes the comment that ends its last line, continued by the
    comment-only lines right below it whose ``#`` is indented deeper than its key; a sequence
    item or a key opening a block takes the comment-only lines right above it.
    """
    out: dict[str, str] = {}

    def beside(line: int, column: int, key_column: int) -> str | None:
        m = _COMMENT.match(lines[line][column:])
        parts = [m.group(1).strip()] if m else []
        for nxt in lines[line + 1:]:
            if not nxt.strip().startswith("#") or nxt.index("#") <= key_column:
                break
            parts.append(nxt.strip()[1:].strip())
        return " ".join(parts) or None

    def above(line: int) -> str | None:
        parts = []
        while line > 0 and lines[line - 1].strip().startswith("#"):
            line -= 1
            parts.append(lines[line].strip()[1:].strip())
        return " ".join(reversed(parts)) or None

    def walk(n: yaml.Node, path: str, key: yaml.Mark | None, in_flow: bool = False) -> None:
        if key is not None and not in_flow:
            block = isinstance(n, (yaml.MappingNode, yaml.SequenceNode)) and not n.flow_style
            end = n.end_mark
            text = (above(key.line) if block else
                    beside(end.line, end.column, key.column) if end.line < len(lines) else None)
            if text:
                out[path] = text
        flow = in_flow or bool(getattr(n, "flow_style", False))
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                walk(v, f"{path}.{k.value}" if path else str(k.value), k.start_mark, flow)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, f"{path}[{i}]", item.start_mark, flow)

    if node is not None:
        walk(node, "", None)
    return out


def source_of(arch: Arch, path: str) -> str | None:
    """The comment for ``path`` or, failing that, for its nearest parent path that has one."""
    while path:
        if path in arch.sources:
            return arch.sources[path]
        path = re.sub(r"(\.[^.\[\]]+|\[\d+\])$", "", path) if re.search(r"[.\[]", path) else ""
    return None


# --------------------------------------------------------------------------- Arch -> dict


def arch_to_dict(arch: Arch) -> dict[str, Any]:
    """The spec as plain objects in the YAML schema, units written out exactly."""
    out: dict[str, Any] = {"name": arch.name}
    if arch.description:
        out["description"] = arch.description
    out["levels"] = [_level_to_dict(lv, i) for i, lv in enumerate(arch.levels)]
    if arch.array is not None:
        a = arch.array
        out["array"] = {
            "level": a.level, "rows": a.rows, "cols": a.cols,
            "broadcast": [ax for ax, on in zip(BROADCAST_AXES, (a.broadcast_rows, a.broadcast_cols))
                          if on],
            "reduce_cols": a.reduce_cols,
        }
    c = arch.compute
    compute: dict[str, Any] = {"clock": format_frequency(c.clock_hz)}
    if c.macs_per_cycle:
        compute["macs_per_cycle"] = dict(c.macs_per_cycle)
    if c.vector_ops_per_cycle:
        compute["vector_ops_per_cycle"] = dict(c.vector_ops_per_cycle)
    if c.energy_pj_per_mac_dtype:
        compute["energy_per_mac"] = {k: format_energy(v) for k, v in c.energy_pj_per_mac_dtype.items()}
    elif c.energy_pj_per_mac is not None:
        compute["energy_per_mac"] = format_energy(c.energy_pj_per_mac)
    if c.call_overhead_cycles:
        compute["call_overhead"] = c.call_overhead_cycles
    out["compute"] = compute
    if arch.alignment:
        out["alignment"] = {k: v if isinstance(v, int) else dict(v)
                            for k, v in arch.alignment.items()}
    return out


def _level_to_dict(lv: Level, index: int) -> dict[str, Any]:
    d: dict[str, Any] = {"name": lv.name}
    if lv.holds is not None:
        d["holds"] = list(lv.holds)
    d["capacity"] = format_size(lv.capacity_bytes) if lv.bounded else "unbounded"
    if lv.reserved:
        d["capacity"] = {k: format_size(v) for k, v in lv.reserved}
        if lv.shared_bytes:
            d["capacity"]["default"] = format_size(lv.shared_bytes)
    d["instances"] = lv.instances
    if lv.bank_bytes is not None:
        d["banks"] = lv.banks
        d["bank_size"] = format_size(lv.bank_bytes)
        d["bank_granular"] = lv.bank_granular
    elif lv.banks != 1 or lv.bank_granular:
        d["banks"] = lv.banks
        d["bank_granular"] = lv.bank_granular
    if lv.block_bytes != 1:
        d["block"] = format_size(lv.block_bytes)
    if index or lv.read_bandwidth or lv.write_bandwidth:
        if lv.read_bandwidth == lv.write_bandwidth:
            d["bandwidth"] = format_bandwidth(lv.read_bandwidth)
        else:
            d["read_bandwidth"] = format_bandwidth(lv.read_bandwidth)
            d["write_bandwidth"] = format_bandwidth(lv.write_bandwidth)
    if index or lv.channels != 1:
        d["channels"] = lv.channels
    d["double_buffer"] = lv.double_buffer
    for key, value in (("energy_per_byte", lv.energy_pj_per_byte),
                       ("read_energy", lv.read_energy_pj), ("write_energy", lv.write_energy_pj)):
        if value is not None:
            d[key] = format_energy(value)
    if lv.transfer_overhead_cycles:
        d["transfer_overhead"] = lv.transfer_overhead_cycles
    if lv.dma is not None:
        d["dma"] = {key: (format_size(lv.dma.word_bytes) if key == "word" else getattr(lv.dma, name))
                    for key, name in DMA_KEYS.items() if getattr(lv.dma, name) is not None}
    return d


class _FlowDumper(yaml.SafeDumper):
    """Writes ``{i8: 256}`` and ``[rows, cols]`` on one line, everything else as blocks."""


class _FlowDict(dict):
    pass


class _FlowList(list):
    pass


_FlowDumper.add_representer(
    _FlowDict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
_FlowDumper.add_representer(
    _FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def arch_to_yaml(arch: Arch) -> str:
    """The spec as YAML text; ``parse_arch`` gives back an equal Arch."""
    d = arch_to_dict(arch)
    for lv in d["levels"]:
        for key in ("holds", "capacity"):
            if isinstance(lv.get(key), (list, dict)):
                lv[key] = _FlowList(lv[key]) if key == "holds" else _FlowDict(lv[key])
    for section, keys in (("array", ("broadcast",)),
                          ("compute", ("macs_per_cycle", "vector_ops_per_cycle"))):
        for key in keys:
            if key in d.get(section, {}):
                value = d[section][key]
                d[section][key] = _FlowList(value) if isinstance(value, list) else _FlowDict(value)
    if "alignment" in d:
        d["alignment"] = _FlowDict({k: v if isinstance(v, int) else _FlowDict(v)
                                    for k, v in d["alignment"].items()})
    return yaml.dump(d, Dumper=_FlowDumper, sort_keys=False, allow_unicode=True, width=100)
