"""Tile kernels of the blocked executor: pure numpy functions on the tiles resident in a core.

Each kernel computes one innermost tile of one op, the way a core would: operands are read in
their storage type and products are summed in the *accumulator* type of ``tilewise.dtypes``
(i8/i16 -> i32, f16/bf16 -> f32, f32 -> f32). Accumulators are updated in place, so a tile that
is reloaded as a partial sum (a split reduction: K of a GEMM, C_in of a convolution) simply
receives more ``+=`` calls. Example, a K-split GEMM tile::

    >>> import numpy as np
    >>> a = np.arange(12, dtype=np.int8).reshape(3, 4); b = np.ones((4, 2), np.int8)
    >>> c = np.zeros((3, 2), np.int32)
    >>> _ = mac_tile(c, a[:, :2], b[:2]); _ = mac_tile(c, a[:, 2:], b[2:])
    >>> c.tolist()
    [[6, 6], [22, 22], [38, 38]]

Kernels:

- :func:`mac_tile` ``C += A @ B`` (leading batch dims broadcast) and :func:`einsum_tile` (any
  ``np.einsum`` contraction) with an explicit accumulator. Integer accumulation is exact
  two's-complement arithmetic modulo ``2**bits`` of the accumulator, as in a hardware int32
  accumulator: the result equals the int64 reference whenever that fits in int32.
- :func:`attention_tile`, built from :func:`online_softmax` and :func:`finalize_attention`: the
  online-softmax (FlashAttention) form of seed 003's Eqs. 10-12 on one (query tile, key tile)
  pair, with running row max ``M``, numerator ``N`` and denominator ``D`` (:class:`SoftmaxState`);
  :func:`merge_softmax` merges partial states over disjoint keys (a key dim split over cores).
  Masked scores are -inf (seed 003 §I.B: -inf is the identity of max, exp(-inf) = 0 that of the
  sum), and a row with no visible key yields 0, never NaN.
- :func:`conv_tile`: an output tile ``(n, k, p, q)`` of a 2-D convolution from an input tile
  with halo (:func:`conv_halo`, :func:`read_tile` zero-fills what lies outside the tensor).

LayerNorm statistics (Welford/Chan) are in :mod:`tilewise.tiles.layernorm`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import from_numpy
from ..errors import DTypeError, WorkloadError

# Integer products are summed through float64 BLAS when every partial sum is an integer below
# 2**53 (then exact); otherwise through int64 numpy arithmetic (exact modulo 2**64).
_F64_EXACT = 2**53


def _check_accumulator(acc: np.ndarray, operands, what: str) -> None:
    """Every operand must accumulate into ``acc``'s type (i8 -> i32, bf16 -> f32, i32 -> i32)."""
    acc_t = from_numpy(acc)
    for i, x in enumerate(operands):
        t = from_numpy(x)
        if t.accumulator != acc_t.name:
            raise DTypeError(f"{what}: operand {i} is {t.name}, which accumulates in {t.accumulator}, "
                             f"but the accumulator tile is {acc_t.name}; pass a {t.accumulator} "
                             f"accumulator")


def _int_bound(t: np.dtype) -> int:
    info = np.iinfo(t)
    return max(-int(info.min), int(info.max))


def _exact_product(a: np.ndarray, b: np.ndarray, acc: np.dtype, terms: int, fn) -> np.ndarray:
    """``fn(a, b)`` (a sum of ``terms`` products per element) exactly, in ``acc``'s kind.

    Floats: operands cast to ``acc`` (f16/bf16 -> f32), BLAS in ``acc``. Integers: float64 BLAS
    when every partial sum is an integer of magnitude <= 2**53, else int64 (exact mod 2**64); the
    caller casts to the accumulator, which wraps modulo 2**bits.
    """
    if acc.kind == "f" or acc.kind == "c":
        return fn(a.astype(acc, copy=False), b.astype(acc, copy=False))
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        bound_a = 1 if a.dtype.kind == "b" else _int_bound(a.dtype)
        bound_b = 1 if b.dtype.kind == "b" else _int_bound(b.dtype)
        if terms * bound_a * bound_b <= _F64_EXACT:
            return fn(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return fn(a.astype(np.int64), b.astype(np.int64))


def _accumulate(acc: np.ndarray, partial: np.ndarray) -> None:
    """``acc += partial`` in acc's type; integers wrap modulo 2**bits (two's complement)."""
    np.add(acc, partial.astype(acc.dtype, copy=False), out=acc)


def mac_tile(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``acc[..., m, n] += a[..., m, k] @ b[..., k, n]`` in ``acc``'s type; returns ``acc``.

    ``acc`` must be the accumulator type of both operands (i8, i16, i32 -> int32; f16, bf16,
    f32 -> float32; f64 -> float64). Leading (batch) dims broadcast as in ``np.matmul`` and must
    produce exactly ``acc.shape``. Raises WorkloadError on mismatched tile shapes, DTypeError on
    a wrong accumulator.
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise WorkloadError(f"mac tile: A {a.shape} @ B {b.shape} needs A[..., m, k] and "
                            f"B[..., k, n] with the same k")
    try:
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        lead = None
    want = None if lead is None else lead + (a.shape[-2], b.shape[-1])
    if want != acc.shape:
        raise WorkloadError(f"mac tile: A {a.shape} @ B {b.shape} gives "
                            f"{'no broadcastable shape' if want is None else want}, but the "
                            f"accumulator tile is {acc.shape}")
    _check_accumulator(acc, (a, b), "mac tile")
    _accumulate(acc, _exact_product(a, b, acc.dtype, a.shape[-1], np.matmul))
    return acc


def einsum_tile(spec: str, acc: np.ndarray, *operands: np.ndarray,
                overwrite: bool = False) -> np.ndarray:
    """``acc += np.einsum(spec, *operands)`` with products summed in ``acc``'s type; returns acc.

    The generic tile of a ``mac`` op (batched GEMM, einsum): ``einsum_tile("bmk,bkn->bmn", c, a,
    b)``. Integers are summed exactly (float64 BLAS while every partial sum is an integer below
    2**53, else int64; then wrapped to the accumulator), floats in the accumulator type. A
    two-operand contraction that is a batched GEMM (every letter a batch, free or contracted
    one) runs as one ``np.matmul`` on views (BLAS); others through ``np.einsum``. ``overwrite``:
    ``acc = ...`` instead of ``+=`` (the first contribution to a fresh tile: no temporary, one
    pass less). WorkloadError if ``spec`` does not fit the operand and accumulator shapes.
    """
    operands = tuple(np.asarray(x) for x in operands)
    _check_accumulator(acc, operands, f"einsum tile {spec!r}")
    shapes = ", ".join(str(x.shape) for x in operands)
    parsed = _parse_spec(spec, operands)  # None: ellipsis or a mismatch np.einsum reports
    if parsed is None:
        terms = _F64_EXACT + 1
    else:
        ins, out_letters, sizes = parsed
        terms = int(np.prod([n for c, n in sizes.items() if c not in out_letters]))
    if acc.dtype.kind in "fc":
        ops = tuple(x.astype(acc.dtype, copy=False) for x in operands)
    elif (all(x.dtype.kind in "iub" for x in operands) and terms * int(np.prod(
            [1 if x.dtype.kind == "b" else _int_bound(x.dtype) for x in operands])) <= _F64_EXACT):
        ops = tuple(x.astype(np.float64) for x in operands)
    else:
        ops = tuple(x.astype(np.int64) for x in operands)
    gemm = None if parsed is None or len(ops) != 2 else _batched_gemm(ins, out_letters)
    if gemm is not None and tuple(sizes[c] for c in out_letters) == acc.shape:
        direct = overwrite and ops[0].dtype == acc.dtype and ops[1].dtype == acc.dtype
        partial = _matmul(gemm, ins, out_letters, ops, sizes, acc if direct else None)
        if direct:
            return acc
    else:
        try:
            partial = np.einsum(spec, *ops, optimize=len(ops) > 2)
        except ValueError as e:
            raise WorkloadError(f"einsum tile {spec!r} does not fit operands {shapes}: {e}") from None
    if partial.shape != acc.shape:
        raise WorkloadError(f"einsum tile {spec!r} over operands {shapes} gives {partial.shape}, "
                            f"but the accumulator tile is {acc.shape}")
    if partial.dtype == np.float64 and acc.dtype.kind not in "fc":
        partial = partial.astype(np.int64)  # exact integers (< 2**53) back to integers
    if overwrite:
        acc[...] = partial.astype(acc.dtype, copy=False)  # integers wrap modulo 2**bits
    else:
        _accumulate(acc, partial)
    return acc


def _parse_spec(spec: str, operands):
    """(input letter strings, output letters, size per letter) of an ``np.einsum`` spec without
    ellipsis whose letters fit the operands' shapes; None otherwise."""
    spec = spec.replace(" ", "")
    if "." in spec:
        return None
    ins = spec.split("->")[0].split(",")
    if len(ins) != len(operands):
        return None
    sizes: dict = {}
    for letters_, x in zip(ins, operands):
        if len(letters_) != x.ndim:
            return None
        for c, n in zip(letters_, x.shape):
            if sizes.setdefault(c, n) != n:
                return None
    joined = "".join(ins)
    out = spec.split("->")[1] if "->" in spec else "".join(
        sorted(c for c in sizes if joined.count(c) == 1))  # np.einsum's implicit output
    if any(c not in sizes for c in out):
        return None
    return ins, out, sizes


def _batched_gemm(ins, out):
    """(batch, free of A, free of B, contracted) letters when ``A, B -> out`` is a batched GEMM
    (no repeated letter, every letter of one input only is an output letter); else None."""
    a, b = ins
    if len(set(a)) != len(a) or len(set(b)) != len(b) or len(set(out)) != len(out):
        return None
    batch = [c for c in a if c in b and c in out]
    contr = [c for c in a if c in b and c not in out]
    fa = [c for c in a if c not in b]
    fb = [c for c in b if c not in a]
    if any(c not in out for c in fa + fb) or len(batch) + len(fa) + len(fb) != len(out):
        return None
    return batch, fa, fb, contr


def _matmul(gemm, ins, out_letters, ops, sizes, out=None) -> np.ndarray:
    """The batched GEMM of :func:`_batched_gemm` as one ``np.matmul`` on transposed views; the
    result with its axes in ``out_letters`` order (written into ``out`` when given)."""
    (batch, fa, fb, contr), (a, b), (ia, ib) = gemm, ops, ins
    n = lambda letters_: int(np.prod([sizes[c] for c in letters_]))
    a2 = a.transpose([ia.index(c) for c in batch + fa + contr]).reshape(n(batch), n(fa), n(contr))
    b2 = b.transpose([ib.index(c) for c in batch + contr + fb]).reshape(n(batch), n(contr), n(fb))
    order = batch + fa + fb
    if out is not None and order == list(out_letters) and out.flags.c_contiguous:
        np.matmul(a2, b2, out=out.reshape(n(batch), n(fa), n(fb)))
        return out
    r = np.matmul(a2, b2).reshape([sizes[c] for c in order]).transpose(
        [order.index(c) for c in out_letters])
    if out is not None:
        out[...] = r
        return out
    return r


# --------------------------------------------------------------------------- online softmax


@dataclass(frozen=True)
class SoftmaxState:
    """Running statistics of attention for a block of query rows (FlashAttention's (m, l, O)).

    ``max`` (..., rows): running row max ``M`` of the scores seen, -inf while no key was visible;
    ``denom`` (..., rows): ``D = sum_j exp(S_ij - M_i)``; ``numer`` (..., rows, e):
    ``N = sum_j exp(S_ij - M_i) V_j``. All in the accumulator type (float32 for 16-bit inputs).
    The arrays are updated in place; a state built on views of larger arrays writes through.
    """

    max: np.ndarray
    denom: np.ndarray
    numer: np.ndarray

    @classmethod
    def empty(cls, rows: tuple[int, ...] | int, e: int, dtype=np.float32) -> "SoftmaxState":
        """The state before any key: M = -inf, D = 0, N = 0. ``rows``: shape (..., rows)."""
        shape = (rows,) if isinstance(rows, int) else tuple(rows)
        return cls(np.full(shape, -np.inf, dtype), np.zeros(shape, dtype),
                   np.zeros(shape + (e,), dtype))


def online_softmax(row_max: np.ndarray, denom: np.ndarray, scores: np.ndarray,
                   mask: np.ndarray | None = None) -> np.ndarray:
    """One online-softmax step over a tile of scores; returns the rescale factor ``alpha``.

    With ``S = scores`` (..., rows, cols) and masked entries set to -inf::

        M' = max(M, rowmax S);  E = exp(S - M');  alpha = exp(M - M');  D' = alpha D + rowsum E

    ``scores`` is overwritten with ``E``; ``row_max`` and ``denom`` are updated in place; the
    caller rescales its numerator by ``alpha`` and adds ``E @ V``. ``mask`` (bool, broadcastable
    to ``scores``): True where the key is visible. A row whose keys are all masked so far keeps
    M = -inf and gets E = 0 and alpha = 0 (its N and D are 0), computed with M' replaced by 0 so
    that no ``(-inf) - (-inf)`` NaN arises.
    """
    if mask is not None:
        np.copyto(scores, -np.inf, where=np.logical_not(mask))
    if scores.shape[-1] == 0:
        return np.ones_like(row_max)
    new_max = np.maximum(row_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0, new_max).astype(scores.dtype, copy=False)
    alpha = np.exp(row_max - shift)
    np.subtract(scores, shift[..., None], out=scores)
    np.exp(scores, out=scores)
    denom *= alpha
    denom += scores.sum(axis=-1)
    row_max[...] = new_max
    return alpha


def attention_tile(state: SoftmaxState, q: np.ndarray, k: np.ndarray, v: np.ndarray, *,
                   scale: float = 1.0, mask: np.ndarray | None = None, keys: int | None = None,
                   scores: np.ndarray | None = None) -> SoftmaxState:
    """Fold one key tile into the attention state of one query tile (seed 003 Eqs. 10-11, fixed).

    ``q`` (..., rows, dk), ``k`` (..., cols, dk), ``v`` (..., cols, e) in any float type; scores
    ``S = scale * q @ k^T`` and everything after are computed in ``state``'s type (float32 for
    16-bit inputs, so scores far beyond the f16 range are fine). ``mask`` (bool, (..., rows,
    cols), True = visible); ``keys``: how many leading rows of ``k``/``v`` are real, the rest
    being padding beyond L (treated as -inf scores: they contribute exp(-inf) = 0 and their
    values, even NaN, are never read). ``scores``: optional scratch array (flat, at least
    rows x cols elements of the state's type per batch) to avoid one allocation per tile.
    Returns ``state`` (updated in place).
    """
    acc = state.numer.dtype
    if keys is not None:
        k, v = k[..., :keys, :], v[..., :keys, :]
        mask = None if mask is None else mask[..., :keys]
    lead, rows, cols = state.max.shape[:-1], state.max.shape[-1], k.shape[-2]
    shape = lead + (rows, cols)
    s = None if scores is None else scores.reshape(-1)[: int(np.prod(shape))].reshape(shape)
    s = np.matmul(q.astype(acc, copy=False), k.astype(acc, copy=False).swapaxes(-1, -2), out=s)
    if scale != 1.0:
        s *= acc.type(scale)
    alpha = online_softmax(state.max, state.denom, s, mask)
    numer = state.numer
    numer *= alpha[..., None]
    numer += np.matmul(s, v.astype(acc, copy=False))
    return state


def merge_softmax(into_max: np.ndarray, into_denom: np.ndarray, into_numer: np.ndarray,
                  max_: np.ndarray, denom: np.ndarray, numer: np.ndarray) -> None:
    """Merge one partial attention state over a disjoint set of keys into another, in place
    (seed 003 Eq. 12, the cross-core reduction of the partial numerators and denominators)::

        M = max(M1, M2);  D = e^(M1-M) D1 + e^(M2-M) D2;  N = e^(M1-M) N1 + e^(M2-M) N2

    ``*_max``/``*_denom`` (..., rows), ``*_numer`` (..., rows, e) in the accumulator type; the
    ``into`` arrays are updated. A side with M = -inf (no visible key) contributes nothing; no
    ``(-inf) - (-inf)`` NaN arises.
    """
    new = np.maximum(into_max, max_)
    shift = np.where(np.isneginf(new), 0, new)
    a1, a2 = np.exp(into_max - shift), np.exp(max_ - shift)
    into_denom *= a1
    into_denom += a2 * denom
    into_numer *= a1[..., None]
    into_numer += a2[..., None] * numer
    into_max[...] = new


def finalize_attention(state: SoftmaxState, dtype=None) -> np.ndarray:
    """``R = N / D`` (seed 003 Eq. 12) cast to ``dtype`` (default: the state's); rows with D = 0
    (no visible key) are 0."""
    d = state.denom[..., None]
    out = np.zeros_like(state.numer)
    np.divide(state.numer, d, out=out, where=d > 0)
    return out if dtype is None else out.astype(dtype, copy=False)


def causal_mask(q0: int, rows: int, k0: int, cols: int) -> np.ndarray:
    """Causal visibility of a (query tile, key tile): ``[i, j]`` True iff key ``k0 + j`` <= query
    ``q0 + i`` (absolute positions; top-left aligned like ``torch``'s ``is_causal``)."""
    return (k0 + np.arange(cols))[None, :] <= (q0 + np.arange(rows))[:, None]


# --------------------------------------------------------------------------- convolution


def conv_halo(out0: int, out_tile: int, filter0: int, filter_tile: int, stride: int = 1,
              padding: int = 0, dilation: int = 1) -> tuple[int, int]:
    """Input range ``(start, extent)`` (elements, along one spatial axis) read by an output tile.

    Output rows ``out0 .. out0+out_tile-1`` and filter taps ``filter0 .. filter0+filter_tile-1``
    read input rows from ``out0*stride + filter0*dilation - padding`` over
    ``(out_tile-1)*stride + (filter_tile-1)*dilation + 1`` rows (the halo); rows outside
    ``[0, H)`` are zero padding.
    """
    start = out0 * stride + filter0 * dilation - padding
    return start, (out_tile - 1) * stride + (filter_tile - 1) * dilation + 1


def read_tile(x: np.ndarray, origin: tuple[int, ...], shape: tuple[int, ...],
              fill=0) -> np.ndarray:
    """The tile of ``x`` at ``origin`` (may be negative or run past the end) of ``shape``,
    ``fill`` outside ``x`` (zero padding of a convolution input, padding of partial tiles)."""
    if len(origin) != x.ndim or len(shape) != x.ndim:
        raise WorkloadError(f"read_tile: origin {origin} and shape {shape} need one entry per "
                            f"axis of the {x.ndim}-d tensor {x.shape}")
    out = np.full(shape, fill, dtype=x.dtype)
    src, dst = [], []
    for o, n, size in zip(origin, shape, x.shape):
        lo = min(max(o, 0), size)
        hi = max(min(o + n, size), lo)
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    out[tuple(dst)] = x[tuple(src)]
    return out


def conv_tile(acc: np.ndarray, x: np.ndarray, w: np.ndarray, stride: tuple[int, int] = (1, 1),
              dilation: tuple[int, int] = (1, 1)) -> np.ndarray:
    """``acc[n,k,p,q] += sum_{c,r,s} x[n, c, p*sh + r*dh, q*sw + s*dw] * w[k, c, r, s]``.

    ``x`` (n, c, rows, cols) is the input tile with its halo, already zero-padded (see
    :func:`conv_halo`, :func:`read_tile`): at least ``(tp-1)*sh + (tr-1)*dh + 1`` rows for a
    ``tp``-row output tile and a ``tr``-tap filter tile (likewise columns). ``w`` (k, c, tr, ts)
    is the filter tile. Splits of C_in or of the filter taps accumulate as partial sums in
    ``acc`` (the accumulator type of x and w). Computed per filter tap as a GEMM over channels.
    """
    x, w = np.asarray(x), np.asarray(w)
    if acc.ndim != 4 or x.ndim != 4 or w.ndim != 4:
        raise WorkloadError(f"conv tile: needs 4-d tiles acc (n,k,p,q), x (n,c,h,w), w (k,c,r,s); "
                            f"got {acc.shape}, {x.shape}, {w.shape}")
    (n, kk, tp, tq), (tr, ts) = acc.shape, w.shape[2:]
    (sh, sw), (dh, dw) = stride, dilation
    if x.shape[0] != n or w.shape[0] != kk or x.shape[1] != w.shape[1]:
        raise WorkloadError(f"conv tile: x {x.shape} (n,c,h,w), w {w.shape} (k,c,r,s) and acc "
                            f"{acc.shape} (n,k,p,q) disagree on n, k or c")
    need = ((tp - 1) * sh + (tr - 1) * dh + 1, (tq - 1) * sw + (ts - 1) * dw + 1)
    if x.shape[2] < need[0] or x.shape[3] < need[1]:
        raise WorkloadError(f"conv tile: input tile {x.shape[2]}x{x.shape[3]} is smaller than the "
                            f"halo {need[0]}x{need[1]} = ((tp-1)*stride + (tr-1)*dilation + 1) "
                            f"for output tile {tp}x{tq}, filter tile {tr}x{ts}, stride {stride}, "
                            f"dilation {dilation}")
    _check_accumulator(acc, (x, w), "conv tile")
    c = x.shape[1]
    # A view when acc is contiguous (the usual case); else a copy written back at the end.
    flat = acc.reshape(n, kk, tp * tq) if acc.flags.c_contiguous else acc.reshape(n, kk, -1).copy()
    for r in range(tr):
        for s in range(ts):
            tap = x[:, :, r * dh: r * dh + (tp - 1) * sh + 1: sh,
                    s * dw: s * dw + (tq - 1) * sw + 1: sw].reshape(n, c, tp * tq)
            _accumulate(flat, _exact_product(w[:, :, r, s], tap, acc.dtype, c, np.matmul))
    if not np.shares_memory(flat, acc):
        acc[...] = flat.reshape(acc.shape)
    return acc
