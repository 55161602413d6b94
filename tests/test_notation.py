"""One helper per notation: bytes (arch.units.format_size), dtype spellings (dtypes)."""

import pytest

from tilewise.arch.units import format_size, parse_size


@pytest.mark.parametrize("nbytes, text", [
    (11_010_048, "10.5 MiB"), (47_616, "46.5 KiB"), (49_152, "48 KiB"), (1000, "1000 B"),
    (0, "0 B"), (1023.6 * 1024, "1024 KiB"), (3 * 2**40, "3 TiB"),
])
def test_format_size_rounded_for_tables(nbytes, text):
    assert format_size(nbytes, 3) == text


def test_format_size_exact_by_default():
    assert format_size(11_010_048) == "10752 KiB" and parse_size("10752 KiB") == 11_010_048
