"""How many buffer descriptors (BDs) a DMA needs for one strided access: the splitting rule.

One access (an offset and per dim a size and a stride, innermost last) becomes the BDs a DMA
with :class:`~tilewise.arch.spec.DmaLimits` can run, in its words: size-1 dims dropped,
contiguous dims merged (:func:`byte_dims`), a dim over the wrap limit factored into two when
the DMA has a dim to spare, the outermost dim folded into the repeat count when the DMA has
one, and whatever still exceeds a limit unrolled along its outermost dim into more BDs
(:func:`split`). The DMA program's emitter (:mod:`tilewise.emit.dma.pattern`) builds its
descriptors with this rule; :func:`count_bds` counts them without building them (compiled,
the same steps: the cost kernel calls it for every distinct tile shape, :func:`bd_count` and so
``simulate`` for every transfer; the tests hold ``len(split(...)) == bd_count(...)``), and the
model charges a link's fixed per-transfer cost once per BD.

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
from numba import njit

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
    ``element_bytes`` bytes, innermost last (:func:`split`'s count, by :func:`count_bds`; an
    empty access needs none). The offset does not change the count (it shifts every BD
    alike)."""
    n = len(sizes)
    work = np.zeros((4, MAX_DIMS), np.int64)
    return int(count_bds(np.asarray(sizes, np.int64).reshape(n),
                         np.asarray(strides, np.int64).reshape(n), n, element_bytes,
                         limits_row(lim), work))


# the compiled count: limits as a row of int64 (:func:`limits_row`), dims in work arrays
LIM_DIMS, LIM_WRAP, LIM_STRIDE, LIM_REPEAT, LIM_LENGTH, LIM_WORD = range(6)
MAX_DIMS = 24  # dims of one access, factoring included (a tensor's axes + lanes + the DMA's)


def limits_row(lim) -> np.ndarray:
    """``lim`` (a :class:`~tilewise.arch.spec.DmaLimits`) as the int64 row :func:`count_bds`
    takes: dims, max wrap, max stride (words), max repeat, max length (words; -1: none), word
    bytes."""
    return np.array([lim.dims, lim.max_wrap, lim.max_stride_words, lim.max_repeat,
                     -1 if lim.max_length_words is None else lim.max_length_words,
                     lim.word_bytes], np.int64)


@njit(cache=True, error_model="numpy")
def _violates(sz, st, lo, n, lim):
    """:func:`violation` of dims ``lo .. n-1`` (words, outermost first) is not None."""
    if n - lo > lim[LIM_DIMS]:
        return True
    words = 1
    for i in range(lo, n):
        if i > lo and sz[i] > lim[LIM_WRAP]:
            return True
        if st[i] > lim[LIM_STRIDE]:
            return True
        words *= sz[i]
    return lim[LIM_LENGTH] >= 0 and words > lim[LIM_LENGTH]


@njit(cache=True, error_model="numpy")
def _factor_in_place(sz, st, lo, n, lim):
    """:func:`_factor` of dims ``lo .. n-1``; returns the new end."""
    i = n - 1
    while i >= lo + 1 and n - lo < lim[LIM_DIMS]:
        size, stride = sz[i], st[i]
        if size > lim[LIM_WRAP]:
            inner = 1
            for d in range(lim[LIM_WRAP], 0, -1):
                if size % d == 0:
                    inner = d
                    break
            if inner > 1:
                for x in range(n, i + 1, -1):  # shift the inner dims one place in
                    sz[x] = sz[x - 1]
                    st[x] = st[x - 1]
                sz[i], st[i] = size // inner, inner * stride
                sz[i + 1], st[i + 1] = inner, stride
                n += 1
                i += 1
                continue
        i -= 1
    return n


@njit(cache=True, error_model="numpy")
def count_bds(sizes, strides, n, element_bytes, lim, work):
    """BDs of one access (:func:`bd_count`, compiled; the steps of :func:`byte_dims`,
    :func:`word_dims` and :func:`split`): ``sizes``/``strides [n]`` in elements of
    ``element_bytes`` bytes, innermost last; ``lim`` a :func:`limits_row`; ``work [4,
    MAX_DIMS]`` scratch. 0 for an empty access."""
    sz, st = work[0], work[1]
    m = 0
    for i in range(n):  # byte dims, size-1 dims dropped
        if sizes[i] == 0:
            return 0
        if sizes[i] != 1:
            sz[m] = sizes[i]
            st[m] = strides[i] * element_bytes
            m += 1
    if m == 0 or st[m - 1] != element_bytes:
        sz[m] = element_bytes
        st[m] = 1
        m += 1
    else:
        sz[m - 1] *= element_bytes
        st[m - 1] = 1
    osz, ost = work[2], work[3]  # merge contiguous neighbours (innermost first, in o*)
    k = 1
    osz[0], ost[0] = sz[m - 1], st[m - 1]
    for i in range(m - 2, -1, -1):
        if st[i] == osz[k - 1] * ost[k - 1]:
            osz[k - 1] *= sz[i]
        else:
            osz[k], ost[k] = sz[i], st[i]
            k += 1
    word = lim[LIM_WORD]
    for x in range(k):  # outermost first, in words
        sz[x] = osz[k - 1 - x]
        st[x] = ost[k - 1 - x] // word
    sz[k - 1] //= word
    st[k - 1] = 1
    n2 = k
    total = 1  # split: unroll the outermost dim while the rest is over a limit
    lo, hi = 0, n2
    while True:
        hi = _factor_in_place(sz, st, lo, hi, lim)
        if not _violates(sz, st, lo, hi, lim):
            return total
        if (hi - lo > 1 and lim[LIM_REPEAT] >= sz[lo] and st[lo] <= lim[LIM_STRIDE]
                and not _violates(sz, st, lo + 1, hi, lim)):
            return total
        if hi - lo == 1:
            chunk = lim[LIM_LENGTH]
            return total * ((sz[lo] + chunk - 1) // chunk)
        total *= sz[lo]
        lo += 1


def transfer_bds(side_counts) -> int:
    """BDs one transfer costs: the most of its sides' (:func:`bd_count` of the read and of each
    write side): the sides run at once on their DMAs' channels, so the longest chain of BDs
    sets the transfer's fixed time. 0 for a transfer that moves nothing."""
    return max(side_counts, default=0)
