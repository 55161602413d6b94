"""Affine index expressions: parsing, printing, extents, errors pointing at the character."""

import pytest
from hypothesis import given, strategies as st

from tilewise.errors import ParseError
from tilewise.ir.affine import Affine


def test_parse_and_print():
    e = Affine.parse("p*2 + r - 1")
    assert e.terms == (("p", 2), ("r", 1)) and e.const == -1
    assert str(e) == "p*2 + r - 1"
    assert Affine.parse("3*q+s+2") == Affine((("q", 3), ("s", 1)), 2)
    assert Affine.parse("m").is_plain
    assert not Affine.parse("m + 1").is_plain and not Affine.parse("2*m").is_plain


def test_halo_extent_and_bounds():
    e = Affine.parse("p*2 + r*3 - 2")
    assert e.extent({"p": 4, "r": 3}) == 3 * 2 + 2 * 3 + 1
    assert e.bounds({"p": (1, 3), "r": (0, 2)}) == (0, 2 * 2 + 3 - 2)


@pytest.mark.parametrize("text,pos,expected", [
    ("m*n", 2, "product of two dims"),
    ("m-n", 2, "positive coefficients"),
    ("m+", 2, "a dim or an integer"),
    ("M", 0, "lowercase"),
    ("m n", 2, "expected '\\+' or '-'"),
    ("0*m", 0, "positive coefficient"),
    ("3", 0, "at least one dim"),
])
def test_parse_errors_point_at_the_character(text, pos, expected):
    with pytest.raises(ParseError, match=expected) as info:
        Affine.parse(text)
    assert info.value.pos == pos


@given(st.dictionaries(st.sampled_from("pqrs"), st.integers(1, 5), min_size=1),
       st.integers(-5, 5), st.dictionaries(st.sampled_from("pqrs"), st.integers(1, 9), min_size=4))
def test_round_trip_and_extent_is_bounds_width(coeffs, const, tile):
    e = Affine(tuple(coeffs.items()), const)
    assert Affine.parse(str(e)) == e
    lo, hi = e.bounds({d: (0, tile[d]) for d in coeffs})
    assert hi - lo + 1 == e.extent(tile)
