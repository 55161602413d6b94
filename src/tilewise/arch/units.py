"""Quantities with units in architecture specs: sizes (bytes), bandwidths (bytes/s), clocks (Hz).

A plain number is taken in the documented unit (bytes, bytes per second, hertz, picojoules); a
string carries its unit. Binary prefixes are powers of 1024, SI prefixes powers of 1000, as IEC
80000-13 says::

    parse_size("512 KiB")                  == 524288          # bytes
    parse_size("1.5 kB")                   == 1500
    parse_bandwidth("8 GiB/s")             == 8 * 2**30       # bytes per second
    parse_bandwidth("4 B/cycle", 1.25e9)   == 5e9             # needs the clock
    parse_frequency("1.25 GHz")            == 1.25e9          # hertz

``"KB"`` is refused as ambiguous (vendors write "64 KB" for 65536 bytes): write ``KiB`` or
``kB``. Parsing is exact (``fractions.Fraction``), so ``format_*`` output parses back to the very
same value. Errors are :class:`~tilewise.errors.SpecError` naming the text and the allowed units;
the loader prefixes them with the file and the key.
"""

from __future__ import annotations

import re
import math
from fractions import Fraction

from ..errors import SpecError

SIZE_UNITS: dict[str, int] = {
    "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
    "kB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
}
FREQUENCY_UNITS: dict[str, int] = {"Hz": 1, "kHz": 10**3, "MHz": 10**6, "GHz": 10**9}
# Energies are kept in picojoules.
ENERGY_UNITS: dict[str, Fraction] = {"fJ": Fraction(1, 1000), "pJ": Fraction(1), "nJ": Fraction(1000)}
_SIZE_ALIASES = {"byte": "B", "bytes": "B"}
_AMBIGUOUS = {"KB": ("KiB", "kB")}
_PER_CYCLE = ("B/cycle", "B/cyc")

_QUANTITY = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-z/]*)\s*")


def _split(text: str, what: str, units: str) -> tuple[Fraction, str]:
    m = _QUANTITY.fullmatch(text)
    if not m:
        raise SpecError(f"{text!r} is not a {what}; write a number and a unit, e.g. {units}")
    return Fraction(m.group(1)), m.group(2)


def _number(value, what: str) -> Fraction | None:
    """A YAML int/float as a Fraction; None for a string (parsed by the caller)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SpecError(f"{value!r} is not a {what}")
    if isinstance(value, str):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        raise SpecError(f"{value!r} is not a {what}: give a finite number")
    return Fraction(value)


def _float(amount: Fraction, value) -> float:
    """``amount`` as a float, or one SpecError when it is too large for one (``1e400 GB/s``)."""
    try:
        out = float(amount)
    except OverflowError:
        out = math.inf
    if not math.isfinite(out) or out > 1e30:
        raise SpecError(f"{value!r} is too large: give a number below 1e30 in its unit")
    return out


def _ambiguous(unit: str, suffix: str = "") -> None:
    if unit in _AMBIGUOUS:
        binary, si = _AMBIGUOUS[unit]
        raise SpecError(
            f"ambiguous unit {unit + suffix!r}: write {binary + suffix!r} (1024 bytes) "
            f"or {si + suffix!r} (1000 bytes)"
        )


MAX_SIZE = 2 ** 60  # bytes: every product of a size with counts stays inside int64


def parse_size(value: int | float | str) -> int:
    """A size in bytes from ``524288`` or ``"512 KiB"``; must be a positive whole number of bytes."""
    units = ", ".join(SIZE_UNITS)
    amount = _number(value, "size")
    if amount is None:
        amount, unit = _split(value, "size", "'512 KiB'; units: " + units)
        unit = _SIZE_ALIASES.get(unit, unit) or "B"
        _ambiguous(unit)
        if unit not in SIZE_UNITS:
            raise SpecError(f"unknown size unit {unit!r} in {value!r}; allowed: {units}")
        amount *= SIZE_UNITS[unit]
    if amount.denominator != 1 or amount <= 0:
        raise SpecError(f"size {value!r} is not a positive whole number of bytes")
    if amount > MAX_SIZE:
        raise SpecError(f"size {value!r} is over the largest size tilewise counts, 2^60 bytes "
                        "(1 EiB); give `unbounded` for an unbounded level")
    return int(amount)


def parse_frequency(value: int | float | str) -> float:
    """A clock in Hz from ``1e9``/``1000000000`` or ``"1 GHz"``; must be positive."""
    units = ", ".join(FREQUENCY_UNITS)
    amount = _number(value, "frequency")
    if amount is None:
        amount, unit = _split(value, "frequency", "'1 GHz'; units: " + units)
        unit = unit or "Hz"
        if unit not in FREQUENCY_UNITS:
            raise SpecError(f"unknown frequency unit {unit!r} in {value!r}; allowed: {units}")
        amount *= FREQUENCY_UNITS[unit]
    if amount <= 0:
        raise SpecError(f"frequency {value!r} must be positive")
    return _float(amount, value)


def parse_bandwidth(value: int | float | str, clock_hz: float | None = None) -> float:
    """A bandwidth in bytes/s from ``8589934592``, ``"8 GiB/s"`` or ``"4 B/cycle"`` (× clock)."""
    units = ", ".join([u + "/s" for u in SIZE_UNITS] + ["B/cycle"])
    amount = _number(value, "bandwidth")
    if amount is None:
        amount, unit = _split(value, "bandwidth", "'8 GiB/s'; units: " + units)
        if unit in _PER_CYCLE:
            if clock_hz is None:
                raise SpecError(f"bandwidth {value!r} in bytes per cycle needs compute.clock")
            amount *= Fraction(clock_hz)
        elif unit:
            base = unit[:-2] if unit.endswith("/s") else None
            if base is not None:
                _ambiguous(base, "/s")
            if base not in SIZE_UNITS:
                raise SpecError(f"unknown bandwidth unit {unit!r} in {value!r}; allowed: {units}")
            amount *= SIZE_UNITS[base]
    if amount <= 0:
        raise SpecError(f"bandwidth {value!r} must be positive")
    return _float(amount, value)


def parse_energy(value: int | float | str, per: str) -> float:
    """An energy in pJ from ``0.5`` or ``"0.5 pJ"`` (``"0.5 pJ/<per>"`` also); must be >= 0."""
    units = ", ".join(ENERGY_UNITS)
    amount = _number(value, "energy")
    if amount is None:
        amount, unit = _split(value, "energy", "'0.5 pJ'; units: " + units)
        unit = unit.removesuffix("/" + per) or "pJ"
        if unit not in ENERGY_UNITS:
            raise SpecError(f"unknown energy unit {unit!r} in {value!r}; allowed: {units}")
        amount *= ENERGY_UNITS[unit]
    if amount < 0:
        raise SpecError(f"energy {value!r} must not be negative")
    return _float(amount, value)


def _short(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _pick(value: float, units: list[tuple[str, float]], parse) -> str:
    """The first ``"<n> <unit>"`` with a short n that parses back to exactly ``value``."""
    for unit, scale in units:
        text = f"{_short(value / scale)} {unit}"
        if len(text) - len(unit) <= 8 and parse(text) == value:
            return text
    return _short(value)


def format_size(nbytes: float, digits: int | None = None) -> str:
    """Bytes in binary units: tilewise's one byte notation, for specs and tables alike.

    Exact by default (parses back to the same number of bytes): ``49152`` -> ``"48 KiB"``,
    ``1000`` -> ``"1000 B"``. With ``digits``, rounded to that many significant digits in the
    largest unit not above it, for tables: ``format_size(11010048, 3)`` -> ``"10.5 MiB"``.
    """
    units = ("TiB", "GiB", "MiB", "KiB")
    if digits is None:
        for unit in units:
            if nbytes % SIZE_UNITS[unit] == 0:
                return f"{nbytes // SIZE_UNITS[unit]} {unit}"
        return f"{nbytes} B"
    for unit in units:
        if nbytes >= SIZE_UNITS[unit]:
            value = nbytes / SIZE_UNITS[unit]
            return f"{value:.{digits}g} {unit}" if value < 10**digits else f"{value:.0f} {unit}"
    return f"{nbytes:.0f} B"


def format_bandwidth(bytes_per_s: float) -> str:
    """``8589934592.0`` -> ``"8 GiB/s"``, ``4e9`` -> ``"4 GB/s"``; exact."""
    order = ["GiB", "GB", "MiB", "MB", "KiB", "kB", "TiB", "TB"]
    units = [(u + "/s", SIZE_UNITS[u]) for u in order] + [("B/s", 1)]
    return _pick(bytes_per_s, units, parse_bandwidth)


def format_frequency(hz: float) -> str:
    """``1.25e9`` -> ``"1.25 GHz"``; exact."""
    units = [(u, FREQUENCY_UNITS[u]) for u in ("GHz", "MHz", "kHz", "Hz")]
    return _pick(hz, units, parse_frequency)


def format_energy(pj: float) -> str:
    """Picojoules as ``"0.5 pJ"``."""
    return f"{_short(pj)} pJ"
