"""LayerNorm over column tiles with mergeable statistics (Welford's triple, Chan's merge).

``Y[r, c] = (X[r, c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]`` with the population
variance ``var_r = M2_r / count`` (as ``np.var`` and ``torch.nn.LayerNorm``). The statistics of
a row are a Welford triple ``(count, mean, M2)``; each on-chip column tile gives its own triple
(:func:`tile_moments`) and triples of disjoint column ranges combine exactly with Chan, Golub
and LeVeque's parallel merge (:func:`merge_moments`)::

    delta = mean_b - mean_a,  n = n_a + n_b
    mean  = mean_a + delta * n_b / n
    M2    = M2_a + M2_b + delta**2 * n_a * n_b / n

So the statistics need one streaming pass over the column tiles of X, never a second pass over
off-chip data, and never the cancellation-prone ``E[x²] - E[x]²``. Example::

    >>> import numpy as np
    >>> x = np.float32(1e4) + np.arange(8, dtype=np.float32).reshape(1, 8) / 8
    >>> m = merge_moments(tile_moments(x[:, :3]), tile_moments(x[:, 3:]))
    >>> m.count, float(m.mean[0]), float(m.variance[0])   # np.var(np.arange(8) / 8) = 0.08203125
    (8, 10000.4375, 0.08203125)

Statistics are kept in the accumulator type (float32 for f16/bf16/f32 inputs, float64 for f64),
the mean as a double word ``mean + low`` (TwoSum), so that ``x - mean`` does not inherit the
rounding of a mean far larger than the deviations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import dtype as _dtype, from_numpy
from ..errors import DTypeError, MappingError, WorkloadError

_FLOATS = ("f16", "bf16", "f32", "f64")


def _acc(x: np.ndarray) -> np.dtype:
    t = from_numpy(x)
    if t.name not in _FLOATS:
        raise DTypeError(f"layernorm: input is {t.name}; need a float type ({', '.join(_FLOATS)})")
    return _dtype(t.accumulator).numpy


@dataclass(frozen=True)
class Moments:
    """Welford's statistics of ``count`` elements per row: ``mean`` and ``m2`` (sum of squared
    deviations from the mean), arrays of shape (rows,) in the accumulator type. ``low`` (same
    shape, or None for 0) is the part of the mean below ``mean``'s precision (the exact mean is
    ``mean + low``, a double-word value): with it, ``x - mean`` keeps full precision when the
    deviations are small next to the mean (a row near 1000 with std 0.01 in f32)."""

    count: int
    mean: np.ndarray
    m2: np.ndarray
    low: np.ndarray | None = None

    @property
    def variance(self) -> np.ndarray:
        """Population variance ``M2 / count`` per row (NaN-free: 0 rows for count 0)."""
        return self.m2 / max(self.count, 1)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def tile_moments(x: np.ndarray) -> Moments:
    """The Welford triple of each row of an on-chip tile ``x`` (rows, cols).

    Computed from the resident tile in centred form (mean, then the sum of squared deviations,
    both of the differences to the tile's first column): what Welford's update yields in exact
    arithmetic, at least as accurate in floating point; it reads the tile from local memory only.
    """
    x = np.asarray(x)
    if x.ndim != 2:
        raise WorkloadError(f"layernorm: a tile must be 2-d (rows, cols), got shape {x.shape}")
    acc = _acc(x)
    xs = x.astype(acc, copy=False)
    cols = x.shape[1]
    if cols == 0:
        z = np.zeros(x.shape[0], acc)
        return Moments(0, z, z.copy(), z.copy())
    # Shifted by the tile's first column: the differences are exact for nearby values
    # (Sterbenz) and small, so their mean and M2 keep full relative precision at any offset.
    dev = xs - xs[:, :1]
    dmean = dev.mean(axis=1, dtype=acc)
    dev -= dmean[:, None]
    mean, low = _two_sum(xs[:, 0], dmean)
    return Moments(cols, mean, np.einsum("ij,ij->i", dev, dev), low)


def merge_moments(a: Moments, b: Moments) -> Moments:
    """Chan's parallel merge of the statistics of two disjoint column ranges of the same rows
    (the means' low parts carried along: the merged ``mean + low`` is the exact mean to about
    one rounding of the accumulator relative to the deviations, not to the mean)."""
    if a.mean.shape != b.mean.shape:
        raise WorkloadError(f"layernorm: cannot merge statistics of {a.mean.shape[0]} rows with "
                            f"{b.mean.shape[0]} rows")
    if a.count == 0 or b.count == 0:
        return b if a.count == 0 else a
    n = a.count + b.count
    acc = a.mean.dtype.type
    a_low = 0 if a.low is None else a.low
    delta = (b.mean - a.mean) + ((0 if b.low is None else b.low) - a_low)
    mean, err = _two_sum(a.mean, delta * acc(b.count / n))
    m2 = a.m2 + b.m2 + delta * delta * acc(a.count * b.count / n)
    return Moments(n, mean, m2, a_low + err)


def normalize_tile(x: np.ndarray, moments: Moments, gamma: np.ndarray, beta: np.ndarray,
                   eps: float = 1e-5, dtype=None) -> np.ndarray:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` for one tile ``x`` (rows, cols), with
    ``gamma``/``beta`` the tile's (cols,) slices; computed in the accumulator type, returned in
    ``dtype`` (default: x's)."""
    acc = moments.mean.dtype
    rstd = 1 / np.sqrt(moments.variance + acc.type(eps))
    y = x.astype(acc) - moments.mean[:, None]
    if moments.low is not None:
        y -= moments.low[:, None]
    y *= rstd[:, None]
    y *= gamma.astype(acc, copy=False)
    y += beta.astype(acc, copy=False)
    return y.astype(x.dtype if dtype is None else dtype, copy=False)


def blocked_layernorm(X, gamma, beta, col_tile: int, row_tile: int | None = None,
                      eps: float = 1e-5) -> np.ndarray:
    """LayerNorm of each row of ``X`` (rows, cols) streaming ``row_tile x col_tile`` tiles.

    Per row tile: pass 1 reads each column tile once and merges its statistics; pass 2 reads it
    again to normalize. When ``col_tile >= cols`` the whole row is one resident tile and it is
    read once (statistics and normalization from the same tile). Returns X's dtype.
    """
    X, gamma, beta = np.asarray(X), np.asarray(gamma), np.asarray(beta)
    if X.ndim != 2:
        raise WorkloadError(f"layernorm: X must be 2-d (rows, cols), got shape {X.shape}")
    rows, cols = X.shape
    if gamma.shape != (cols,) or beta.shape != (cols,):
        raise WorkloadError(f"layernorm: gamma {gamma.shape} and beta {beta.shape} must both be "
                            f"({cols},), one per column of X {X.shape}")
    if not (isinstance(eps, (int, float, np.floating)) and eps >= 0):
        raise WorkloadError(f"layernorm: eps {eps!r} must be a number >= 0")
    ct = _positive(col_tile, "col_tile")
    rt = rows if row_tile is None else _positive(row_tile, "row_tile")
    _acc(X)
    out = np.empty_like(X)
    for r0 in range(0, rows, rt):
        rs = slice(r0, min(r0 + rt, rows))
        if ct >= cols:
            tile = X[rs]
            out[rs] = normalize_tile(tile, tile_moments(tile), gamma, beta, eps)
            continue
        stats = tile_moments(X[rs, :0])
        for c0 in range(0, cols, ct):
            stats = merge_moments(stats, tile_moments(X[rs, c0:c0 + ct]))
        for c0 in range(0, cols, ct):
            cs = slice(c0, c0 + ct)
            out[rs, cs] = normalize_tile(X[rs, cs], stats, gamma[cs], beta[cs], eps)
    return out


def reference_layernorm(X, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """Plain reference: ``np.mean``/``np.var`` over whole rows in float64, cast to X's dtype."""
    X = np.asarray(X)
    x = X.astype(np.float64)
    y = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + eps)
    return (y * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)).astype(X.dtype)


def _positive(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise MappingError(f"layernorm: {what} {value!r} must be a positive integer (elements)")
    return int(value)
