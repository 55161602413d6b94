"""Arch parameters to vary: ``--vary KEY=V1,V2,...`` and the arch of one sweep point.

A key is a path into the arch's YAML (:func:`tilewise.arch.loader.arch_to_dict`) with levels
named, not numbered::

    levels.memtile.capacity=256KiB,512KiB,1MiB   # a level field (capacity, bandwidth, channels, ...)
    array=4x4,4x8                                # rows x cols of the core array
    array.rows=2,4                               # one of them
    compute.clock=1GHz,1.25GHz
    compute.macs_per_cycle.bf16=128,256

Rules that keep a point valid: a new ``capacity`` keeps the level's bank size (more or fewer
banks) when it is a multiple of it, else its bank count (bank size = capacity / banks); a new ``bandwidth`` replaces read and write bandwidths; a new array shape
sets the array level's instances to rows x cols, and a level above it that had one instance per
column (npu1's memtiles) keeps one per column. Bandwidths are bytes/s in the YAML: a new clock
leaves them as they are. Any other broken rule is the loader's one-line SpecError.

    >>> parse_vary("levels.memtile.capacity=256KiB,1MiB")
    Vary(key='levels.memtile.capacity', values=('256KiB', '1MiB'))
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from ..errors import ParseError, SpecError

_KEY = re.compile(r"[a-z_][a-z0-9_]*(\.[A-Za-z0-9_-]+)*\Z")


@dataclass(frozen=True)
class Vary:
    """One arch parameter (a dotted key) and the values it takes (YAML scalars as text)."""

    key: str
    values: tuple[str, ...]


def parse_vary(text: str) -> Vary:
    """``"KEY=V1,V2"`` -> :class:`Vary`; ParseError points at the bad character."""
    key, eq, values = text.partition("=")
    if not eq or not _KEY.match(key.strip()):
        raise ParseError("--vary", text, 0 if not eq else len(key),
                         "KEY=V1,V2,... with KEY a dotted path such as levels.memtile.capacity")
    vals = tuple(v.strip() for v in values.split(","))
    if not all(vals):
        raise ParseError("--vary", text, len(key) + 1, "comma-separated values, none empty")
    return Vary(key.strip(), vals)


def point_arch(base: dict, settings: tuple[tuple[str, str], ...]):
    """The Arch of ``base`` (an arch dict) with each ``(key, value)`` set (see the module doc)."""
    from ..arch.loader import arch_from_dict

    d = copy.deepcopy(base)
    for key, value in settings:
        _set(d, key, _scalar(value))
    d["name"] = base["name"] + "".join(f" {k}={v}" for k, v in settings)
    label = ", ".join(f"{k}={v}" for k, v in settings)
    return arch_from_dict(d, f"sweep point {label}")


def _scalar(text: str):
    """A number when ``text`` reads as one in YAML, else the text (a unit value such as 1GHz)."""
    import yaml

    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text  # not YAML: the arch check says what the key accepts
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else text


def _set(d: dict, key: str, value) -> None:
    parts = key.split(".")
    if parts[0] == "levels" and len(parts) == 3:
        return _set_level(d, parts[1], parts[2], value)
    if parts[0] == "array" and len(parts) <= 2:
        return _set_array(d, parts[1] if len(parts) == 2 else None, value)
    node = d
    for i, p in enumerate(parts[:-1]):
        if not isinstance(node.get(p), dict):
            raise SpecError(f"--vary {key}: {'.'.join(parts[:i + 1])} is not a section of the "
                            f"arch; sections: {', '.join(k for k, v in node.items() if isinstance(v, dict))}")
        node = node[p]
    if parts[-1] not in node and parts[0] != "compute":
        raise SpecError(f"--vary {key}: no key {parts[-1]!r}; keys here: {', '.join(node)}")
    node[parts[-1]] = value


def _set_level(d: dict, name: str, field: str, value) -> None:
    levels = {lv["name"]: lv for lv in d["levels"]}
    if name not in levels:
        raise SpecError(f"--vary levels.{name}.{field}: no level {name!r}; levels: "
                        f"{', '.join(levels)}")
    lv = levels[name]
    lv[field] = value
    if field == "capacity" and "bank_size" in lv:
        from ..arch.units import parse_size

        cap, bank = parse_size(str(value)), parse_size(str(lv["bank_size"]))
        if cap % bank == 0:
            lv["banks"] = cap // bank
        else:
            lv.pop("bank_size")
    if field == "bandwidth":
        lv.pop("read_bandwidth", None)
        lv.pop("write_bandwidth", None)


def _set_array(d: dict, field: str | None, value) -> None:
    array = d.get("array")
    if array is None:
        raise SpecError("--vary array: this arch has no core array")
    old_cols = array["cols"]
    if field is None:
        m = re.fullmatch(r"(\d+)x(\d+)", str(value))
        if not m:
            raise SpecError(f"--vary array={value}: expected ROWSxCOLS, e.g. 4x5")
        array["rows"], array["cols"] = int(m[1]), int(m[2])
    elif field in ("rows", "cols"):
        array[field] = value
    else:
        array[field] = value
        return
    names = [lv["name"] for lv in d["levels"]]
    at = names.index(array["level"]) if array["level"] in names else len(names)
    for i, lv in enumerate(d["levels"][:at]):
        if i and lv.get("instances", 1) == old_cols:
            lv["instances"] = array["cols"]
    if at < len(names):
        d["levels"][at]["instances"] = array["rows"] * array["cols"]
