"""Access patterns and the buffer descriptors (BDs) that carry them within a DMA's limits.

An :class:`Access` is one side of a transfer: a buffer, an offset and per dim a size and a
stride, in elements of the buffer's type, innermost dim last (numpy order; AIE documents number
the dims innermost first). :func:`descriptors` turns it into the BDs a DMA with
:class:`~tilewise.arch.spec.DmaLimits` can run, in 32-bit words: size-1 dims dropped,
contiguous dims merged, a dim over the wrap limit factored into two when a dim is free, the
outermost dim folded into the repeat count when the DMA has one, and whatever still exceeds a
limit unrolled along its outermost dim into more BDs: the model's rule
(:mod:`tilewise.model.descriptors`, whose count the model charges the fixed per-transfer
cost for, once per BD). What no split can fix (a sub-word element
that is not contiguous, an offset or a run that is not a whole number of words) raises
:class:`~tilewise.errors.DmaError` naming the descriptor and the field.

Example (a 64x48 int8 tile of a 512x768 row-major matrix, read by the shim DMA)::

    >>> from tilewise.arch.loader import load_arch
    >>> a = Access("ddr.A", 768 * 64 + 96, (64, 48), (768, 1), 1)
    >>> descriptors(a, load_arch("aie-4x2").level("ddr").dma, "A load")
    (Descriptor(offset=12312, sizes=(64, 12), strides=(192, 1), repeat=1, repeat_stride=0),)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import DmaError
from ...model.descriptors import Descriptor, byte_dims, split, word_dims

__all__ = ["Access", "Descriptor", "descriptors"]


@dataclass(frozen=True)
class Access:
    """Where a tile lies in ``buffer``: ``offset``, ``sizes`` and ``strides`` in elements of
    ``element_bytes`` bytes, innermost dim last. ``pad_after``: zero elements the read side
    adds after each dim to fill a full tile (empty: none)."""

    buffer: str
    offset: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    element_bytes: int
    pad_after: tuple[int, ...] = ()

    @property
    def elements(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.elements * self.element_bytes

    def indices(self) -> np.ndarray:
        """Flat element indices in stream order (innermost fastest)."""
        idx = np.full((), self.offset, dtype=np.int64)
        for size, stride in zip(self.sizes, self.strides):
            idx = idx[..., None] + np.arange(size, dtype=np.int64) * stride
        return idx.reshape(-1)


def descriptors(access: Access, limits, name: str) -> tuple[Descriptor, ...]:
    """The BDs that move ``access`` on a DMA with ``limits`` (a DmaLimits); ``name`` says which
    transfer, for errors. An empty access (a window tile wholly in the padding) needs none."""
    if access.elements == 0:
        return ()
    w = limits.word_bytes
    offset, dims = byte_dims(access.offset, access.sizes, access.strides, access.element_bytes)
    if offset % w:
        raise DmaError(f"{name}: {access.buffer}: field offset = {offset} B is not a multiple of "
                       f"the {w}-byte word the DMA addresses")
    run = dims[-1][0]
    if run % w:
        raise DmaError(f"{name}: {access.buffer}: field sizes[-1] = {run} B (a contiguous run) is "
                       f"not a whole number of {w}-byte words; pad the tile's innermost dim to a "
                       f"multiple of {w // access.element_bytes or 1} elements")
    for i, (_, stride) in enumerate(dims[:-1]):
        if stride % w:
            raise DmaError(f"{name}: {access.buffer}: field strides[{i}] = {stride} B is not a "
                           f"multiple of the {w}-byte word")
    return tuple(split(offset // w, word_dims(dims, w), limits))
