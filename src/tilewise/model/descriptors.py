"""How many buffer descriptors (BDs) a DMA needs for one strided access: the splitting rule.

One access (an offset and per dim a size and a stride, innermost last) becomes the BDs a DMA
with :class:`~tilewise.arch.spec.DmaLimits` can run, in its words: size-1 dims dropped,
contiguous dims merged (:func:`byte_dims`), a dim over the wrap limit factored into two when
the DMA has a dim to spare, the outermost dim folded into the repeat count when the DMA has
one, and whatever still exceeds a limit unrolled along its outermost dim into more BDs
(:func:`split`). The DMA program's emitter (:mod:`tilewise.emit.dma.pattern`) builds its
descriptors with this rule, and :func:`bd_count` is the number the model charges a fixed
per-transfer cost for.

Example (aie-4x2: a 64x48 int8 tile of a 512x768 row-major matrix on the shim DMA is one BD;
a 4-D tile of an NCHW int8 tensor of 16x32x32 images needs 4 dims: the shim folds the outer one
into its repeat count while it is at most 64, else one BD per image; the core's 3-D DMA
without repeat unrolls it)::

    >>> from tilewise.arch.loader import load_arch
    >>> aie = load_arch("aie-4x2")
    >>> shim, core = aie.level("ddr").dma, aie.level("core").dma
    >>> bd_count((64, 48), (768, 1), 1, shim)
    1
    >>> [bd_count((n, 3, 4, 8), (16384, 1024, 32, 1), 1, shim) for n in (2, 100)]
    [1, 100]
    >>> bd_count((2, 3, 4, 8), (16384, 1024, 32, 1), 1, core)
    2
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Dims = list[tuple[int, int]]  # (size, stride) per dim, outermost first


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


def byte_dims(offset: int, sizes, strides, element_bytes: int) -> tuple[int, Dims]:
    """An access in bytes: ``(offset, [(size, stride)] outermost first)`` from its offset, sizes
    and strides in elements of ``element_bytes`` bytes (innermost last). The innermost dim is a
    contiguous run (size in bytes, stride 1); size-1 dims are dropped and contiguous
    neighbours merged."""
    eb = element_bytes
    dims = [(s, t * eb) for s, t in zip(sizes, strides) if s != 1]
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
    return offset * eb, merged


def word_dims(dims: Dims, word_bytes: int) -> Dims:
    """:func:`byte_dims`' dims in words (the run and every stride whole words: the caller
    checks, :func:`tilewise.emit.dma.pattern.descriptors` names the field that is not)."""
    run = dims[-1][0]
    return [(size, stride // word_bytes) for size, stride in dims[:-1]] + [(run // word_bytes, 1)]


def violation(dims: Dims, lim) -> str | None:
    """The first limit ``dims`` (words, outermost first) exceed, None when one BD holds them."""
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


def _factor(dims: Dims, lim) -> Dims:
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


def split(offset: int, dims: Dims, lim) -> list[Descriptor]:
    """The BDs that move ``dims`` (words, outermost first) from ``offset`` words on a DMA with
    ``lim`` (a DmaLimits), in stream order (module doc)."""
    dims = _factor(dims, lim)
    if violation(dims, lim) is None:
        return [Descriptor(offset, tuple(s for s, _ in dims), tuple(t for _, t in dims))]
    outer, rest = dims[0], dims[1:]
    if (rest and lim.max_repeat >= outer[0] and outer[1] <= lim.max_stride_words
            and violation(rest, lim) is None):
        return [Descriptor(offset, tuple(s for s, _ in rest), tuple(t for _, t in rest),
                           outer[0], outer[1])]
    if not rest:  # one contiguous run over the length limit: chunks of the limit
        chunk = lim.max_length_words
        return [Descriptor(offset + s, (min(chunk, outer[0] - s),), (1,))
                for s in range(0, outer[0], chunk)]
    out: list[Descriptor] = []
    for i in range(outer[0]):
        out += split(offset + i * outer[1], rest, lim)
    return out


def bd_count(sizes, strides, element_bytes: int, lim) -> int:
    """BDs one access needs on a DMA with ``lim``: ``sizes`` and ``strides`` in elements of
    ``element_bytes`` bytes, innermost last (:func:`split`'s count; an empty access needs
    none). The offset does not change the count (it shifts every BD alike)."""
    if int(np.prod(sizes, dtype=np.int64)) == 0:
        return 0
    _, dims = byte_dims(0, sizes, strides, element_bytes)
    return len(split(0, word_dims(dims, lim.word_bytes), lim))


def transfer_bds(side_counts) -> int:
    """BDs one transfer costs: the most of its sides' (:func:`bd_count` of the read and of each
    write side): the sides run at once on their DMAs' channels, so the longest chain of BDs
    sets the transfer's fixed time. 0 for a transfer that moves nothing."""
    return max(side_counts, default=0)
