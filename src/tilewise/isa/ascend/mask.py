"""Vector masks of the Ascend-style vector unit: which lanes of a repeat take part.

One repeat of a vector instruction reads 8 blocks of 32 bytes = 256 bytes, i.e.
``lanes = 256 // sizeof(T)`` lanes: 128 for 16-bit types, 64 for 32-bit, 32 for 64-bit.
Lane ``i`` is element ``i % (32 // sizeof(T))`` of block ``i // (32 // sizeof(T))``.

Three kinds of mask, with the ranges of Ascend C's ``SetVectorMask`` / ``Add`` documentation
(asc-devkit ``docs/api/context/SetVectorMask.md`` and ``Add.md``):

- :class:`ContinuousMask` ``n`` (normal mode, "连续模式"): lanes ``0 .. n-1`` of every repeat,
  ``1 <= n <= lanes``.
- :class:`BitMask` ``{low, high}`` (normal mode, "逐bit模式"): lane ``i`` takes part iff bit ``i`` of
  ``low`` (``i < 64``) or bit ``i - 64`` of ``high`` is set.  16-bit types: both words in
  ``[0, 2**64 - 1]`` and not both 0; 32-bit types: ``high == 0`` and ``low != 0``; 64-bit types:
  ``high == 0`` and ``low`` in ``(0, 2**32 - 1]``.
- :class:`CounterMask` ``count`` (counter mode, ``SetMaskCount`` + ``SetVectorMask<T,
  MaskMode::COUNTER>(count)``): the instruction processes ``count`` elements in total; the
  repeat field is ignored and the unit infers ``ceil(count / lanes)`` repeats, the last one
  holding ``count % lanes`` lanes (or all of them).

Example (the seed's bitwise example, int16): ``BitMask(0x5555555555555555, 0x5555555555555555)``
selects the even lanes 0, 2, ..., 126 of each repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError

BLOCK_BYTES = 32
"""Bytes per data block (the unit of block and repeat strides)."""
BLOCKS_PER_REPEAT = 8
"""Blocks read by one repeat."""
REPEAT_BYTES = BLOCK_BYTES * BLOCKS_PER_REPEAT
"""Bytes per repeat (256)."""
U64 = (1 << 64) - 1
COUNT_MAX = (1 << 31) - 1
"""Largest counter-mode element count (Ascend C passes it as ``int32_t calCount``)."""


def lanes(dt: "str | DType") -> int:
    """Lanes (elements) per repeat for element type ``dt``: ``256 // sizeof(T)``."""
    d = _dtype(dt)
    if d.bits not in (16, 32, 64):
        raise ISAError(
            f"the vector unit has no lanes of {d.bits}-bit type {d.name}; valid element widths: "
            "16, 32, 64 bits"
        )
    return REPEAT_BYTES // d.bytes


def block_elems(dt: "str | DType") -> int:
    """Elements per 32-byte block for element type ``dt``."""
    return BLOCK_BYTES // _dtype(dt).bytes


@dataclass(frozen=True)
class ContinuousMask:
    """Normal mode, the first ``n`` lanes of every repeat (``uint64_t mask = n``)."""

    n: int

    def validate(self, dt: "str | DType") -> None:
        """Raise :class:`ISAError` unless ``1 <= n <= lanes(dt)``."""
        top = lanes(dt)
        if not isinstance(self.n, (int, np.integer)) or not 1 <= self.n <= top:
            raise ISAError(
                f"continuous mask {self.n!r} out of range for {_dtype(dt).name}: valid 1..{top} "
                f"(lanes per repeat = 256 / sizeof(T))"
            )

    def lane_bits(self, dt: "str | DType") -> np.ndarray:
        """Boolean vector of length ``lanes(dt)``: True where the lane takes part."""
        out = np.zeros(lanes(dt), dtype=bool)
        out[: self.n] = True
        return out

    def ascend_c(self) -> str:
        return str(self.n)


@dataclass(frozen=True)
class BitMask:
    """Normal mode, bit ``i`` selects lane ``i`` (``uint64_t mask[2] = {low, high}``)."""

    low: int
    high: int = 0

    def validate(self, dt: "str | DType") -> None:
        """Raise :class:`ISAError` unless the words are in Ascend C's documented ranges."""
        d = _dtype(dt)
        top = lanes(d)
        for name, word in (("mask[0] (low)", self.low), ("mask[1] (high)", self.high)):
            if not isinstance(word, (int, np.integer)) or not 0 <= word <= U64:
                raise ISAError(f"bitwise {name} = {word!r} is not a uint64; valid 0..2**64-1")
        if top == 128:
            if self.low == 0 and self.high == 0:
                raise ISAError(
                    f"bitwise mask {{0, 0}} selects no lane for {d.name}; mask[0] and mask[1] "
                    "must not both be 0"
                )
            return
        if self.high != 0:
            raise ISAError(
                f"bitwise mask[1] (high) = {self.high:#x} must be 0 for {d.bits}-bit type "
                f"{d.name} (only {top} lanes per repeat)"
            )
        limit = U64 if top == 64 else (1 << 32) - 1
        if not 0 < self.low <= limit:
            raise ISAError(
                f"bitwise mask[0] (low) = {self.low:#x} out of range for {d.name}: valid "
                f"(0, {limit:#x}]"
            )

    def lane_bits(self, dt: "str | DType") -> np.ndarray:
        """Boolean vector of length ``lanes(dt)``: bit ``i`` of ``low | high << 64``."""
        word = self.low | (self.high << 64)
        n = lanes(dt)
        return np.array([(word >> i) & 1 == 1 for i in range(n)], dtype=bool)

    def ascend_c(self) -> str:
        return f"{{{self.low:#018x}, {self.high:#018x}}}"


@dataclass(frozen=True)
class CounterMask:
    """Counter mode: ``count`` elements in total; the instruction's repeat field is ignored."""

    count: int

    def validate(self, dt: "str | DType") -> None:
        """Raise :class:`ISAError` unless ``1 <= count <= 2**31 - 1``."""
        lanes(dt)
        if not isinstance(self.count, (int, np.integer)) or not 1 <= self.count <= COUNT_MAX:
            raise ISAError(
                f"counter-mode element count {self.count!r} out of range: valid 1..{COUNT_MAX}"
            )

    def repeats(self, dt: "str | DType") -> int:
        """Repeats the unit infers: ``ceil(count / lanes)``."""
        return -(-self.count // lanes(dt))

    def ascend_c(self) -> str:
        return "MASK_PLACEHOLDER"


Mask = ContinuousMask | BitMask | CounterMask


def as_mask(value: "Mask | int | tuple[int, int] | list[int]") -> Mask:
    """Coerce ``128`` to a continuous mask and ``(low, high)`` to a bitwise mask."""
    if isinstance(value, (ContinuousMask, BitMask, CounterMask)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return ContinuousMask(int(value))
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return BitMask(int(value[0]), int(value[1]))
    raise ISAError(
        f"mask {value!r} is neither a continuous mask (an int), a bitwise mask (low, high) nor "
        "a ContinuousMask/BitMask/CounterMask"
    )
