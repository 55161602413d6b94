import numpy as np
import pytest

from tilewise.dtypes import DTYPES, dtype, from_mlir, from_numpy
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


@pytest.mark.parametrize("d", list(DTYPES.values()), ids=list(DTYPES))
def test_numpy_and_mlir_spellings_lead_back(d):
    assert from_numpy(d.numpy) is d and from_numpy(np.zeros(2, d.numpy)) is d
    # Integers are signless in MLIR, so u8 reads back as i8 (the bits are the same).
    assert from_mlir(d.mlir_name).bits == d.bits
    assert from_mlir(d.mlir_name) is d or d.kind == "uint"


def test_mlir_spellings():
    assert [dtype(n).mlir_name for n in ("u8", "i8", "bool", "f8e4m3fn", "c64")] == \
        ["i8", "i8", "i1", "f8E4M3FN", "complex<f32>"]
    assert from_mlir("ui8") is dtype("u8") and from_mlir("si16") is dtype("i16")
    assert from_mlir("complex<f64>") is dtype("c128") and from_mlir("u8") is dtype("u8")


def test_unknown_numpy_dtype_names_it():
    with pytest.raises(DTypeError, match="numpy dtype <U1 has no tilewise element type; valid: "
                                         "bool, i4"):
        from_numpy(np.array(["x"]))
