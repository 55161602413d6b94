import numpy as np
import pytest

from tilewise.dtypes import DTYPES, dtype
from tilewise.errors import DTypeError


def test_lookup_by_canonical_xla_and_alias():
    assert dtype("i8") is dtype("s8") is dtype("int8")
    assert dtype("bf16").bits == 16 and dtype("bf16").numpy.itemsize == 2
    assert dtype("pred").name == "bool"


@pytest.mark.parametrize("d", list(DTYPES.values()), ids=list(DTYPES))
def test_numpy_width_matches_bits(d):
    assert d.numpy.itemsize * 8 == max(8, d.bits)
    assert d.accumulator in DTYPES


def test_accumulators():
    assert dtype("i8").accumulator == "i32" and dtype("f16").accumulator == "f32"
    assert dtype("bf16").accumulator == "f32"


def test_unknown_dtype_names_value_and_choices():
    with pytest.raises(DTypeError, match=r"unknown dtype 'f33'.*valid: bool, i4, i8"):
        dtype("f33")
