"""Units in specs: exact parsing, exact formatting, clear errors (hypothesis round trips)."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilewise.arch.units import (
    FREQUENCY_UNITS, SIZE_UNITS, format_bandwidth, format_frequency, format_size,
    parse_bandwidth, parse_energy, parse_frequency, parse_size,
)
from tilewise.errors import SpecError


@given(st.integers(1, 10**6), st.sampled_from(sorted(SIZE_UNITS)), st.booleans())
def test_size_with_unit_parses_back(amount, unit, space):
    text = f"{amount}{' ' if space else ''}{unit}"
    assert parse_size(text) == amount * SIZE_UNITS[unit]


@given(st.integers(1, 2**50))
def test_format_size_round_trips(nbytes):
    assert parse_size(format_size(nbytes)) == nbytes


@given(st.integers(1, 10**5), st.integers(0, 3), st.sampled_from(sorted(SIZE_UNITS)))
def test_bandwidth_with_unit_parses_back(mantissa, decimals, unit):
    text = f"{Fraction(mantissa, 10**decimals).__float__():.{decimals}f} {unit}/s"
    expected = float(Fraction(mantissa, 10**decimals) * SIZE_UNITS[unit])
    assert parse_bandwidth(text) == expected


@given(st.floats(1e3, 1e15, allow_nan=False, allow_infinity=False))
def test_format_bandwidth_round_trips(bw):
    assert parse_bandwidth(format_bandwidth(bw)) == bw


@given(st.integers(1, 10**4), st.integers(0, 3), st.sampled_from(sorted(FREQUENCY_UNITS)))
def test_frequency_round_trips(mantissa, decimals, unit):
    value = Fraction(mantissa, 10**decimals)
    hz = parse_frequency(f"{float(value):.{decimals}f} {unit}")
    assert hz == float(value * FREQUENCY_UNITS[unit])
    assert parse_frequency(format_frequency(hz)) == hz


def test_documented_examples():
    assert parse_size("512 KiB") == 524288
    assert parse_size("1.5 kB") == 1500
    assert parse_size(4096) == 4096
    assert parse_size("32") == 32 and parse_size("32 bytes") == 32
    assert parse_bandwidth("8 GiB/s") == 8 * 2**30
    assert parse_bandwidth("4 B/cycle", 1.25e9) == 5e9
    assert parse_bandwidth(1e9) == 1e9 and parse_bandwidth("1e9") == 1e9  # YAML reads 1e9 as text
    assert parse_frequency("1.25 GHz") == 1.25e9
    assert parse_energy("2 fJ/B", "B") == pytest.approx(0.002)
    assert format_size(49152) == "48 KiB" and format_size(1500) == "1500 B"
    assert format_bandwidth(8 * 2**30) == "8 GiB/s" and format_bandwidth(4e9) == "4 GB/s"
    assert format_frequency(1.8e9) == "1.8 GHz"


@pytest.mark.parametrize("parse, text, message", [
    (parse_size, "64 KB", "ambiguous unit 'KB': write 'KiB' (1024 bytes) or 'kB' (1000 bytes)"),
    (parse_size, "12 KX", "unknown size unit 'KX' in '12 KX'; allowed: B, KiB, MiB"),
    (parse_size, "0.5 B", "not a positive whole number of bytes"),
    (parse_size, "-4 KiB", "not a positive whole number of bytes"),
    (parse_size, "lots", "'lots' is not a size; write a number and a unit"),
    (parse_size, True, "True is not a size"),
    (parse_bandwidth, "8 GiB", "unknown bandwidth unit 'GiB' in '8 GiB'; allowed: B/s, KiB/s"),
    (parse_bandwidth, "8 KB/s", "ambiguous unit 'KB/s': write 'KiB/s'"),
    (parse_bandwidth, "4 B/cycle", "in bytes per cycle needs compute.clock"),
    (parse_bandwidth, 0, "bandwidth 0 must be positive"),
    (parse_frequency, "1 Ghz", "unknown frequency unit 'Ghz' in '1 Ghz'; allowed: Hz, kHz, MHz, GHz"),
    (parse_frequency, -1, "frequency -1 must be positive"),
])
def test_unit_errors_name_value_and_allowed(parse, text, message):
    with pytest.raises(SpecError) as info:
        parse(text)
    assert message in str(info.value)
