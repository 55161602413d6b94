"""Access patterns and the buffer descriptors (BDs) that carry them within a DMA's limits.

An :class:`Access` is one side of a transfer: a buffer, an offset and per dim a size and a
stride, in elements of the buffer's type, innermost dim last (numpy order; AIE documents number
the dims innermost first). :func:`descriptors` turns it into the BDs a DMA with
:class:`~tilewise.arch.spec.DmaLimits` can run, in 32-bit words: size-1 dims dropped,
contiguous dims merged, a dim over the wrap limit factored into two when a dim is free, the
outermost dim folded into the repeat count when the DMA has one, and whatever still exceeds a
limit unrolled along its outermost dim into more BDs. What no split can fix (a sub-word element
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


@dataclass(frozen=True)
class Descriptor:
    """One BD: ``offset`` words into its buffer, ``sizes`` (the innermost in words, the others in
    steps) and ``strides`` in words, innermost last; run ``repeat`` times, each ``repeat_stride``
    words further on (the iteration dim)."""

    offset: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    repeat: int = 1
    repeat_stride: int = 0

    @property
    def words(self) -> int:
        return int(np.prod(self.sizes, dtype=np.int64)) * self.repeat

    def byte_indices(self, word_bytes: int) -> np.ndarray:
        """Flat byte indices this BD touches, in stream order."""
        idx = np.full((), self.offset, dtype=np.int64)
        for size, stride in ((self.repeat, self.repeat_stride),) + tuple(zip(self.sizes, self.strides)):
            idx = idx[..., None] + np.arange(size, dtype=np.int64) * stride
        words = idx.reshape(-1)
        return (words[:, None] * word_bytes + np.arange(word_bytes)).reshape(-1)


def descriptors(access: Access, limits, name: str) -> tuple[Descriptor, ...]:
    """The BDs that move ``access`` on a DMA with ``limits`` (a DmaLimits); ``name`` says which
    transfer, for errors. An empty access (a window tile wholly in the padding) needs none."""
    if access.elements == 0:
        return ()
    w = limits.word_bytes
    offset, dims = _in_bytes(access)
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
    words = [(size, stride // w) for size, stride in dims[:-1]] + [(run // w, 1)]
    return tuple(_fit(offset // w, words, limits))


def _in_bytes(a: Access) -> tuple[int, list[tuple[int, int]]]:
    """(offset, [(size, stride)] outermost first) in bytes; the innermost dim is a contiguous run
    (size = bytes, stride 1); size-1 dims dropped, contiguous neighbours merged."""
    eb = a.element_bytes
    dims = [(s, t * eb) for s, t in zip(a.sizes, a.strides) if s != 1]
    if not dims or dims[-1][1] != eb:
        dims.append((eb, 1))  # each element its own run (or a single element)
    else:
        dims[-1] = (dims[-1][0] * eb, 1)
    merged = [dims[-1]]
    for size, stride in reversed(dims[:-1]):
        inner_size, inner_stride = merged[0]
        if stride == inner_size * inner_stride:
            merged[0] = (size * inner_size, inner_stride)
        else:
            merged.insert(0, (size, stride))
    return a.offset * eb, merged


def _violation(dims, lim) -> str | None:
    """The first limit ``dims`` (words, outermost first) exceed, None when the BD is valid."""
    if len(dims) > lim.dims:
        return "dims"
    for i, (size, stride) in enumerate(dims):
        if i and size > lim.max_wrap:
            return "sizes"
        if stride > lim.max_stride_words:
            return "strides"
    words = int(np.prod([s for s, _ in dims]))
    if lim.max_length_words is not None and words > lim.max_length_words:
        return "length"
    return None


def _factor(dims, lim):
    """Split inner dims over the wrap limit into two (the largest divisor within it inside)
    while the DMA has a dim to spare."""
    out = list(dims)
    i = len(out) - 1
    while i >= 1 and len(out) < lim.dims:
        size, stride = out[i]
        if size > lim.max_wrap:
            inner = max(d for d in range(1, lim.max_wrap + 1) if size % d == 0)
            if inner > 1:
                out[i:i + 1] = [(size // inner, inner * stride), (inner, stride)]
                i += 1
                continue
        i -= 1
    return out


def _fit(offset: int, dims, lim) -> list[Descriptor]:
    dims = _factor(dims, lim)
    if _violation(dims, lim) is None:
        return [Descriptor(offset, tuple(s for s, _ in dims), tuple(t for _, t in dims))]
    outer, rest = dims[0], dims[1:]
    if (rest and lim.max_repeat >= outer[0] and outer[1] <= lim.max_stride_words
            and _violation(rest, lim) is None):
        return [Descriptor(offset, tuple(s for s, _ in rest), tuple(t for _, t in rest),
                           outer[0], outer[1])]
    if not rest:  # one contiguous run over the length limit: chunks of the limit
        chunk = lim.max_length_words
        return [Descriptor(offset + s, (min(chunk, outer[0] - s),), (1,))
                for s in range(0, outer[0], chunk)]
    out: list[Descriptor] = []
    for i in range(outer[0]):
        out += _fit(offset + i * outer[1], rest, lim)
    return out
