"""A short copy benchmark: bytes per second through one core for a buffer of a given size.

:func:`copy_bandwidth` copies a ``size`` byte buffer into another of the same size over and
over in one compiled loop (numba) and returns the bytes moved per second, counting the read
and the write (2 x size per copy); the best of ``repeats`` timed runs of at least ``min_s``
seconds each. With both buffers fitting a cache level and not the one inside it, the rate is
that of the link from the level to the core's inner levels, which the preset states as the
bandwidth of the inner level (parent -> level). One core, one thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CopyRate:
    """Bytes per second copying a buffer of ``size_bytes`` (read + write counted)."""

    size_bytes: int
    bytes_per_s: float
    seconds: float


def _kernel():
    import numba

    @numba.njit(cache=False, nogil=True)
    def copy_n(dst, src, times):  # pragma: no cover - compiled
        for _ in range(times):
            for i in range(src.size):
                dst[i] = src[i]
        return dst[0]

    return copy_n


def copy_bandwidth(size_bytes: int, min_s: float = 0.05, repeats: int = 3) -> CopyRate:
    """The copy rate of a ``size_bytes`` buffer (8-byte words), best of ``repeats``."""
    copy_n = _kernel()
    n = max(size_bytes // 8, 8)
    src = np.arange(n, dtype=np.float64)
    dst = np.empty_like(src)
    copy_n(dst, src, 1)  # compile and touch
    times = 1
    while True:
        t0 = time.perf_counter()
        copy_n(dst, src, times)
        dt = time.perf_counter() - t0
        if dt >= min_s / 4 or times > 1 << 30:
            break
        times *= 4
    times = max(1, int(times * min_s / max(dt, 1e-9)))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        copy_n(dst, src, times)
        best = min(best, time.perf_counter() - t0)
    return CopyRate(n * 8, 2 * n * 8 * times / best, best)
