"""Blocked (online-softmax) attention, its plain reference, and incremental attention with caching.

``R = softmax(scale * Q Kᵀ) V`` per head, where ``Q`` (..., Lq, dk), ``K`` (..., Lkv, dk),
``V`` (..., Lkv, dv) and leading dims are heads/batch. ``scale`` defaults to 1: seed 003's
``R = S_max(Q Kᵀ) V`` has no scale; pass ``scale=1/np.sqrt(dk)`` for the Transformer form.

:func:`blocked_attention` walks query tiles x key tiles with the online update of seed 003
§II (Eqs. 10-12 in their correct, FlashAttention, form: running row max M, numerator N,
denominator D, rescaled by ``exp(M_old - M_new)``); it never holds more than one
``q_tile x kv_tile`` score tile, so its memory is O(L·d + tiles), not O(L²).
:func:`naive_attention` is the plain reference that materializes all L² scores.
:class:`IncrementalAttention` is seed 003 §II.A (caching): it keeps (R, M, N, D) and the K/V
cache; appending a block of keys/values (and optionally new query rows) updates the old rows
from the new keys only, and computes new rows against all keys::

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = (rng.standard_normal((300, 64), dtype=np.float32) for _ in range(3))
    >>> R = blocked_attention(Q, K, V, q_tile=128, kv_tile=96, causal=True)
    >>> bool(np.allclose(R, naive_attention(Q, K, V, causal=True), atol=1e-5))
    True
    >>> inc = IncrementalAttention(causal=True)
    >>> _ = inc.append(K[:200], V[:200], Q[:200])
    >>> bool(np.allclose(inc.append(K[200:], V[200:], Q[200:]), R, atol=1e-5))
    True

Masks: ``mask`` (bool, broadcastable to (..., Lq, Lkv)) is True where a query may see a key;
``causal=True`` lets query ``i`` see keys ``j <= i`` (absolute positions, top-left aligned as
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``). Masked scores are -inf;
a query row that sees no key gives 0, never NaN. Inputs are float (f16, bf16, f32, f64); scores,
exponentials and sums are computed in the accumulator type (f32 for 16-bit inputs, so scores
beyond the f16 range are exact to f32), the result is returned in the input type.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import dtype as _dtype, from_numpy
from ..errors import DTypeError, MappingError, WorkloadError
from .kernels import SoftmaxState, attention_tile, causal_mask, finalize_attention

_FLOATS = ("f16", "bf16", "f32", "f64")


def _operands(Q, K, V):
    """Validated (Q, K, V, accumulator numpy dtype, leading shape)."""
    Q, K, V = (np.asarray(x) for x in (Q, K, V))
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        if x.ndim < 2:
            raise WorkloadError(f"attention: {name} has shape {x.shape}; need (..., rows, dim)")
    names = [from_numpy(x).name for x in (Q, K, V)]
    if len(set(names)) != 1 or names[0] not in _FLOATS:
        raise DTypeError(f"attention: Q, K, V are {', '.join(names)}; need one float type for "
                         f"all three ({', '.join(_FLOATS)})")
    if Q.shape[-1] != K.shape[-1]:
        raise WorkloadError(f"attention: Q {Q.shape} and K {K.shape} differ in the last "
                            f"(contraction) dim {Q.shape[-1]} != {K.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise WorkloadError(f"attention: K {K.shape} and V {V.shape} need the same number of "
                            f"rows (keys), got {K.shape[-2]} and {V.shape[-2]}")
    try:
        lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise WorkloadError(f"attention: leading (head/batch) dims of Q {Q.shape}, K {K.shape}, "
                            f"V {V.shape} do not broadcast") from None
    return Q, K, V, _dtype(_dtype(names[0]).accumulator).numpy, lead


def _scale(scale) -> float:
    s = 1.0 if scale is None else scale
    if isinstance(s, bool) or not isinstance(s, (int, float, np.floating, np.integer)) \
            or not math.isfinite(s):
        raise WorkloadError(f"attention: scale {scale!r} must be a finite number (None means 1, "
                            f"seed 003's unscaled softmax; 1/sqrt(d) for the Transformer form)")
    return float(s)


def _tile(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise MappingError(f"attention: {what} {value!r} must be a positive integer (rows per tile)")
    return int(value)


def _mask(mask, shape: tuple[int, ...]) -> np.ndarray | None:
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise WorkloadError(f"attention: mask has dtype {m.dtype}; need bool (True = the query "
                            f"may see the key)")
    try:
        return np.broadcast_to(m, shape)
    except ValueError:
        raise WorkloadError(f"attention: mask of shape {m.shape} does not broadcast to the score "
                            f"shape {shape} (..., Lq, Lkv)") from None


def _attend(state: SoftmaxState, q: np.ndarray, q0: int, K: np.ndarray, V: np.ndarray, k0: int,
            kv_tile: int, causal: bool, mask: np.ndarray | None, scores: np.ndarray) -> None:
    """Fold keys ``K``/``V`` (absolute positions from ``k0``) into the state of query rows ``q``
    (absolute positions from ``q0``, already scaled), ``kv_tile`` keys at a time. ``mask``
    covers exactly these rows x these keys. Key tiles entirely in a query tile's causal future
    are skipped (they would be exact no-ops)."""
    rows, keys = q.shape[-2], K.shape[-2]
    for j0 in range(0, keys, kv_tile):
        j1 = min(j0 + kv_tile, keys)
        m = None
        if causal:
            if k0 + j0 > q0 + rows - 1:
                break
            if k0 + j1 - 1 > q0:
                m = causal_mask(q0, rows, k0 + j0, j1 - j0)
        if mask is not None:
            mt = mask[..., j0:j1]
            m = mt if m is None else m & mt
        attention_tile(state, q, K[..., j0:j1, :], V[..., j0:j1, :], mask=m, scores=scores)


def blocked_attention(Q, K, V, q_tile: int, kv_tile: int, mask=None, causal: bool = False,
                      scale: float | None = None) -> np.ndarray:
    """``softmax(scale * Q Kᵀ) V`` by tiles of ``q_tile`` query rows x ``kv_tile`` keys.

    Memory beyond the inputs and the (..., Lq, dv) result: one query tile, its state and one
    ``q_tile x kv_tile`` score tile (elements of the accumulator type). Returns the result in
    the input type. Raises DTypeError (non-float or mixed inputs), WorkloadError (shapes,
    mask, scale) or MappingError (tile sizes).
    """
    Q, K, V, acc, lead = _operands(Q, K, V)
    sc, qt, kt = _scale(scale), _tile(q_tile, "q_tile"), _tile(kv_tile, "kv_tile")
    Lq, Lkv, dv = Q.shape[-2], K.shape[-2], V.shape[-1]
    masks = _mask(mask, lead + (Lq, Lkv))
    out = np.empty(lead + (Lq, dv), Q.dtype)
    scores = np.empty(math.prod(lead) * min(qt, Lq) * min(kt, Lkv), acc)
    for q0 in range(0, Lq, qt):
        q1 = min(q0 + qt, Lq)
        state = SoftmaxState.empty(lead + (q1 - q0,), dv, acc)
        q = Q[..., q0:q1, :].astype(acc, copy=sc != 1.0)
        if sc != 1.0:
            q *= acc.type(sc)
        _attend(state, q, q0, K, V, 0, kt, causal,
                None if masks is None else masks[..., q0:q1, :], scores)
        out[..., q0:q1, :] = finalize_attention(state, Q.dtype)
    return out


def naive_attention(Q, K, V, mask=None, causal: bool = False, scale: float | None = None,
                    compute_dtype=None) -> np.ndarray:
    """The plain reference: all L² scores at once, row max subtracted, in ``compute_dtype``
    (default: the accumulator type, f32 for 16-bit inputs; np.float64 for a tight reference).

    Same semantics as :func:`blocked_attention` (mask, causal, scale, fully masked rows -> 0).
    Memory: Lq x Lkv scores of ``compute_dtype``.
    """
    Q, K, V, acc, lead = _operands(Q, K, V)
    acc = np.dtype(acc if compute_dtype is None else compute_dtype)
    sc = _scale(scale)
    Lq, Lkv = Q.shape[-2], K.shape[-2]
    masks = _mask(mask, lead + (Lq, Lkv))
    S = np.matmul(Q.astype(acc, copy=False), K.astype(acc, copy=False).swapaxes(-1, -2))
    if sc != 1.0:
        S *= acc.type(sc)
    if causal:
        masks = causal_mask(0, Lq, 0, Lkv) if masks is None else masks & causal_mask(0, Lq, 0, Lkv)
    if masks is not None:
        np.copyto(S, -np.inf, where=~masks)
    row_max = S.max(axis=-1, keepdims=True) if Lkv else np.zeros(S.shape[:-1] + (1,), acc)
    S -= np.where(np.isneginf(row_max), 0, row_max)
    np.exp(S, out=S)
    denom = S.sum(axis=-1, keepdims=True)
    R = np.matmul(S, V.astype(acc, copy=False))  # rows that see no key: S = 0, so R = 0
    np.divide(R, denom, out=R, where=denom > 0)
    return R.astype(Q.dtype)


class _Rows:
    """Rows stacked along one axis (after ``lead`` dims) with amortized O(1) appends (bytes
    grow by doubling, like a vector), so streaming n blocks costs O(total rows), not O(n²)."""

    def __init__(self, lead: tuple[int, ...], trailing: tuple[int, ...], dtype, fill):
        self._lead, self._trailing, self._fill = lead, trailing, fill
        self._buf = np.empty(lead + (0,) + trailing, dtype)
        self.rows = 0

    def extend(self, block: np.ndarray | None = None, count: int = 0) -> None:
        """Append ``block`` (..., rows, *trailing), or ``count`` rows of the fill value."""
        count = block.shape[len(self._lead)] if block is not None else count
        axis, need = len(self._lead), self.rows + count
        if need > self._buf.shape[axis]:
            grown = np.empty(self._lead + (max(need, 2 * self._buf.shape[axis]),) + self._trailing,
                             self._buf.dtype)
            grown[self._index(0, self.rows)] = self.view
            self._buf = grown
        self._buf[self._index(self.rows, need)] = self._fill if block is None else block
        self.rows = need

    def _index(self, lo: int, hi: int) -> tuple:
        return (Ellipsis, slice(lo, hi)) + (slice(None),) * len(self._trailing)

    def slice(self, lo: int, hi: int) -> np.ndarray:
        return self._buf[self._index(lo, hi)]

    @property
    def view(self) -> np.ndarray:
        return self.slice(0, self.rows)


class IncrementalAttention:
    """Attention over a growing sequence that reuses its past work (seed 003 §II.A, caching).

    Keeps, for every query row seen, the result R and the running state (M, N, D), plus the
    cache of Q, K, V rows. :meth:`append` folds a new block of keys/values into the old rows
    (old rows x new keys only: the old blocks are never recomputed) and computes new query rows
    from scratch against every key so far. After any sequence of appends, :attr:`result` equals
    ``naive_attention(queries, keys, values, causal=..., scale=...)``.

    ``causal``: query ``i`` sees keys ``j <= i`` (absolute positions in the streams), so when
    each append brings as many queries as keys, a new row sees all previous keys and its own
    block causally, and old rows are never touched again. ``q_tile``/``kv_tile``: tile sizes
    (rows, keys) of the underlying blocked walk. Shapes, leading dims and dtype are fixed by the
    first append.
    """

    def __init__(self, *, causal: bool = False, scale: float | None = None, q_tile: int = 256,
                 kv_tile: int = 512):
        self.causal = bool(causal)
        self.scale = _scale(scale)
        self.q_tile, self.kv_tile = _tile(q_tile, "q_tile"), _tile(kv_tile, "kv_tile")
        self._store: dict[str, _Rows] | None = None
        self._acc = None

    def _start(self, K, V, lead, acc) -> None:
        """Empty stores shaped after the first block (leading dims, row widths, dtype)."""
        dk, dv, dt = K.shape[-1], V.shape[-1], K.dtype
        self._store = {
            "Q": _Rows(lead, (dk,), dt, 0), "K": _Rows(lead, (dk,), dt, 0),
            "V": _Rows(lead, (dv,), dt, 0), "R": _Rows(lead, (dv,), dt, 0),
            "M": _Rows(lead, (), acc, -np.inf), "D": _Rows(lead, (), acc, 0),
            "N": _Rows(lead, (dv,), acc, 0),
        }
        self._acc, self._lead = acc, lead

    def _check(self, Q, K, V) -> None:
        """New blocks must match the leading dims, row width and dtype fixed by the first."""
        st = self._store
        for name, x, ref in (("K_new", K, st["K"]), ("V_new", V, st["V"])) + \
                (() if Q is None else (("Q_new", Q, st["Q"]),)):
            old = ref.view
            if x.shape[:-2] != old.shape[:-2] or x.shape[-1] != old.shape[-1] or x.dtype != old.dtype:
                want = ", ".join(map(str, old.shape[:-2] + ("rows",) + old.shape[-1:]))
                raise WorkloadError(
                    f"IncrementalAttention.append: {name} is {from_numpy(x).name} of shape "
                    f"{x.shape}; earlier blocks fix it to {from_numpy(old).name} of shape ({want})")

    def append(self, K_new, V_new, Q_new=None) -> np.ndarray:
        """Add keys/values ``K_new`` (..., b, dk), ``V_new`` (..., b, dv) and optionally query rows
        ``Q_new`` (..., bq, dk); returns :attr:`result`.

        Work: (old query rows x new keys) + (new query rows x all keys) scores; in causal mode
        old rows only meet the new keys at or before their position.
        """
        K_new = np.asarray(K_new)
        Qa = Q_new if Q_new is not None else np.empty((0,) + K_new.shape[-1:], K_new.dtype)
        Qa, K, V, acc, lead = _operands(Qa, K_new, V_new)
        if Q_new is not None and Qa.shape[:-2] != K.shape[:-2]:
            raise WorkloadError(f"IncrementalAttention.append: Q_new {Qa.shape} and K_new {K.shape} "
                                f"need the same leading dims")
        if K.shape[:-2] != V.shape[:-2]:
            raise WorkloadError(f"IncrementalAttention.append: K_new {K.shape} and V_new {V.shape} "
                                f"need the same leading dims")
        if self._store is None:
            self._start(K, V, K.shape[:-2], acc)
        self._check(None if Q_new is None else Qa, K, V)
        st = self._store
        lq0, lk0 = st["Q"].rows, st["K"].rows
        st["K"].extend(K)
        st["V"].extend(V)
        lk1 = st["K"].rows
        if Q_new is not None:
            st["Q"].extend(Qa)
            for name in ("M", "D", "N", "R"):
                st[name].extend(count=Qa.shape[-2])
        # Old rows x new keys; in causal mode row i meets key j only if j <= i.
        first = min(lk0, lq0) if self.causal else 0
        if lk1 > lk0:
            self._fold(first, lq0, lk0, lk1)
        # New rows x all keys, from the fresh state.
        self._fold(lq0, st["Q"].rows, 0, lk1)
        return self.result

    def _fold(self, r0: int, r1: int, k0: int, k1: int) -> None:
        """Fold keys [k0, k1) into the state of query rows [r0, r1), tile by tile, and refresh R."""
        if r1 <= r0:
            return
        st, acc, qt = self._store, self._acc, self.q_tile
        K, V = st["K"].slice(k0, k1), st["V"].slice(k0, k1)
        scores = np.empty(math.prod(self._lead) * min(qt, r1 - r0) * max(1, min(self.kv_tile, k1 - k0)), acc)
        for q0 in range(r0, r1, qt):
            q1 = min(q0 + qt, r1)
            state = SoftmaxState(st["M"].slice(q0, q1), st["D"].slice(q0, q1), st["N"].slice(q0, q1))
            q = st["Q"].slice(q0, q1).astype(acc, copy=True)
            if self.scale != 1.0:
                q *= acc.type(self.scale)
            _attend(state, q, q0, K, V, k0, self.kv_tile, self.causal, None, scores)
            st["R"].slice(q0, q1)[...] = finalize_attention(state, st["R"].view.dtype)

    def _rows_view(self, name: str) -> np.ndarray:
        if self._store is None:
            raise WorkloadError("IncrementalAttention: nothing appended yet")
        v = self._store[name].view
        v.flags.writeable = False
        return v

    @property
    def result(self) -> np.ndarray:
        """R (..., queries, dv) in the input type: a read-only view valid until the next append."""
        return self._rows_view("R")

    @property
    def queries(self) -> np.ndarray:
        """The cached query rows (..., queries, dk) (read-only view)."""
        return self._rows_view("Q")

    @property
    def keys(self) -> np.ndarray:
        """The KV cache's keys (..., keys, dk) (read-only view)."""
        return self._rows_view("K")

    @property
    def values(self) -> np.ndarray:
        """The KV cache's values (..., keys, dv) (read-only view)."""
        return self._rows_view("V")

    @property
    def state(self) -> SoftmaxState:
        """(M, D, N) of every query row, in the accumulator type (read-only views)."""
        return SoftmaxState(self._rows_view("M"), self._rows_view("D"), self._rows_view("N"))
