"""Element types: one table shared by layouts, workloads, the cost model and the executor.

Canonical names follow the workload convention (``i8``, ``bf16``); XLA's spelling (``s8``,
``pred``) is kept beside each entry. ``bits`` is the storage width in bits; ``accumulator`` is
the type a multiply-accumulate over this type sums into (int -> i32, 16-bit float -> f32).

Each type has one spelling per notation, all here: :func:`dtype` reads tilewise and XLA names,
:func:`from_numpy` maps a numpy dtype back to its entry, ``DType.mlir_name`` writes MLIR and
:func:`from_mlir` reads it. MLIR integers are written signless (``u8`` and ``i8`` are both
``i8``, ``bool`` is ``i1``): the IR tilewise writes is ``linalg``/``tensor``/``arith``, where
``arith.constant`` accepts only signless integers and signedness lives in the ops, and IREE strips
``ui8``/``si8`` to ``i8`` before it reaches linalg. :func:`from_mlir` still reads the builtin
signed spellings (``ui8`` -> ``u8``, ``si8`` -> ``i8``), so a source can keep its signedness.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .errors import DTypeError


@dataclass(frozen=True)
class DType:
    """An element type. ``bits``: storage width in bits; ``numpy``: the numpy dtype holding it."""

    name: str
    xla_name: str
    bits: int
    kind: str  # "bool", "int", "uint", "float", "complex"
    numpy: np.dtype
    accumulator: str

    @property
    def bytes(self) -> int:
        """Storage bytes per element, rounded up for sub-byte types."""
        return (self.bits + 7) // 8

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    @property
    def mlir_name(self) -> str:
        """MLIR element type: ``f32``, ``bf16``, ``f8E4M3FN``, ``complex<f32>``; integers signless
        (``i8`` for i8 and u8, ``i1`` for bool; see the module doc)."""
        if self.kind == "bool":
            return "i1"
        if self.kind in ("int", "uint"):
            return f"i{self.bits}"
        if self.kind == "complex":
            return f"complex<f{self.bits // 2}>"
        return _MLIR_FLOATS.get(self.name, self.name)

    def convert(self, values: np.ndarray) -> np.ndarray:
        """``values`` (an accumulator's, e.g. i32 sums) converted to this type once, where a
        reduction completes: integers saturate to this type's range (no silent wrap), floats
        round to nearest."""
        if self.is_integer and self.numpy.kind in "iu":
            info = np.iinfo(self.numpy)
            return np.clip(values, info.min, info.max).astype(self.numpy)
        return values.astype(self.numpy)

    def __str__(self) -> str:
        return self.name


def _t(name, xla, bits, kind, np_dtype, acc):
    return DType(name, xla, bits, kind, np.dtype(np_dtype), acc)


_TABLE = [
    _t("bool", "pred", 8, "bool", np.bool_, "i32"),
    _t("i4", "s4", 4, "int", ml_dtypes.int4, "i32"),
    _t("i8", "s8", 8, "int", np.int8, "i32"),
    _t("i16", "s16", 16, "int", np.int16, "i32"),
    _t("i32", "s32", 32, "int", np.int32, "i32"),
    _t("i64", "s64", 64, "int", np.int64, "i64"),
    _t("u4", "u4", 4, "uint", ml_dtypes.uint4, "i32"),
    _t("u8", "u8", 8, "uint", np.uint8, "i32"),
    _t("u16", "u16", 16, "uint", np.uint16, "i32"),
    _t("u32", "u32", 32, "uint", np.uint32, "i64"),
    _t("u64", "u64", 64, "uint", np.uint64, "u64"),
    _t("f8e4m3fn", "f8e4m3fn", 8, "float", ml_dtypes.float8_e4m3fn, "f32"),
    _t("f8e5m2", "f8e5m2", 8, "float", ml_dtypes.float8_e5m2, "f32"),
    _t("f16", "f16", 16, "float", np.float16, "f32"),
    _t("bf16", "bf16", 16, "float", ml_dtypes.bfloat16, "f32"),
    _t("f32", "f32", 32, "float", np.float32, "f32"),
    _t("f64", "f64", 64, "float", np.float64, "f64"),
    _t("c64", "c64", 64, "complex", np.complex64, "c64"),
    _t("c128", "c128", 128, "complex", np.complex128, "c128"),
]

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}
XLA_DTYPES: dict[str, DType] = {d.xla_name: d for d in _TABLE}
NUMPY_DTYPES: dict[np.dtype, DType] = {d.numpy: d for d in _TABLE}
_MLIR_FLOATS = {"f8e4m3fn": "f8E4M3FN", "f8e5m2": "f8E5M2"}
# MLIR spellings that are not tilewise names (lower case): i1, the signed and unsigned builtin
# integers, complex<fN>. Signless iN is tilewise's own iN.
_FROM_MLIR = {"i1": "bool", "complex<f32>": "c64", "complex<f64>": "c128",
              **{f"si{b}": f"i{b}" for b in (4, 8, 16, 32, 64)},
              **{f"ui{b}": f"u{b}" for b in (4, 8, 16, 32, 64)}}
_ALIASES = {
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "float": "f32",
    "float64": "f64", "double": "f64", "int4": "i4", "uint4": "u4",
}


def dtype(name: "str | DType") -> DType:
    """Look up an element type by canonical name, XLA name or common alias (``int8``, ``half``).

    Raises :class:`DTypeError` naming the value and the valid names.
    """
    if isinstance(name, DType):
        return name
    key = str(name).strip().lower()
    if key in DTYPES:
        return DTYPES[key]
    if key in XLA_DTYPES:
        return XLA_DTYPES[key]
    if key in _ALIASES:
        return DTYPES[_ALIASES[key]]
    raise DTypeError(
        f"unknown dtype {name!r}; valid: {', '.join(DTYPES)} (XLA spellings s8, s16, s32, pred "
        f"and aliases such as int8, float32 also accepted)"
    )


def from_mlir(name: str) -> DType:
    """The element type of an MLIR spelling (``i8``, ``ui8``, ``si8``, ``i1``, ``bf16``,
    ``f8E4M3FN``, ``complex<f32>``) or of any name :func:`dtype` accepts; DTypeError if none."""
    key = str(name).strip()
    return dtype(_FROM_MLIR.get(key.lower(), key))


def from_numpy(x) -> DType:
    """The element type of a numpy dtype, or of an array's dtype.

    Raises :class:`DTypeError` naming the numpy dtype and the valid names.
    """
    dt = np.dtype(getattr(x, "dtype", x))
    found = NUMPY_DTYPES.get(dt)
    if found is None:
        raise DTypeError(f"numpy dtype {dt} has no tilewise element type; valid: "
                         f"{', '.join(DTYPES)}")
    return found
