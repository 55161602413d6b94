"""Constructors for the usual operators, each a :class:`~tilewise.ir.workload.Chain`.

Dim names follow the field: GEMM ``m, n, k``; batched GEMM adds ``b``; convolution uses
Timeloop's ``n, k, c, p, q, r, s`` (batch, output channels, input channels, output rows/cols,
filter rows/cols); attention ``h`` heads, ``m`` query rows, ``n`` key/value rows, ``k`` the QK
contraction (head dim) and ``e`` the value head dim; LayerNorm ``r`` rows, ``c`` columns::

    >>> from tilewise import conv2d, einsum
    >>> str(conv2d(1, 8, 14, 14, 16, 3, 3, stride=2, padding=1).tensor("I"))
    'I[n, c, p*2 + r - 1, q*2 + s - 1]:i8'
    >>> einsum("mk,kn->mn", m=4, k=5, n=6).sizes
    {'m': 4, 'k': 5, 'n': 6}

Integer inputs accumulate in i32, 16-bit floats in f32 (``tilewise.dtypes``); outputs default to
the accumulator type (``out_dtype=`` overrides). Supported input types: i8, i16, i32, bf16, f16,
f32.
"""

from __future__ import annotations

from ..dtypes import DType, dtype as _dtype
from ..errors import DTypeError, ParseError, WorkloadError
from .affine import Affine
from .workload import Chain, Dim, Op, Tensor, as_int

SUPPORTED_DTYPES = ("i8", "i16", "i32", "bf16", "f16", "f32")
# Vector operations per iteration point of the non-mac bodies (counted on the vector unit):
_SOFTMAX_OPS = 4   # running max, subtract, exp, add to the denominator
_STATS_OPS = 3     # Welford update: delta, mean += delta/n, M2 += delta*(x - mean)
_NORMALIZE_OPS = 4  # (x - mean) * rstd * gamma + beta


def _dt(value, what: str = "dtype") -> DType:
    try:
        d = _dtype(value)
    except DTypeError:
        raise WorkloadError(f"unknown {what} {value!r}; valid: "
                            + ", ".join(SUPPORTED_DTYPES)) from None
    if d.name not in SUPPORTED_DTYPES:
        raise WorkloadError(f"{what} {d.name} is not supported by workloads; valid: "
                            + ", ".join(SUPPORTED_DTYPES))
    return d


def _dims(**sizes: int) -> tuple[Dim, ...]:
    return tuple(Dim(n, s) for n, s in sizes.items())


def _t(name: str, dt: DType, axes: str, sizes: dict[str, int], lanes: int = 1) -> Tensor:
    exprs = tuple(Affine.parse(a) for a in axes.split(","))
    return Tensor(name, dt, exprs, tuple(sizes[e.dims[0]] for e in exprs), lanes)


def _mac(name: str, out: Tensor, ins: tuple[Tensor, ...], dt: DType) -> Op:
    return Op(name, "mac", out, ins, dt)


def gemm(M: int, N: int, K: int, dtype: str = "i8", out_dtype: str | None = None) -> Chain:
    """``C[m, n] = sum_k A[m, k] * B[k, n]``."""
    dims = _dims(m=M, n=N, k=K)
    s, dt = {d.name: d.size for d in dims}, _dt(dtype)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else _dtype(dt.accumulator)
    A, B, C = _t("A", dt, "m,k", s), _t("B", dt, "k,n", s), _t("C", ot, "m,n", s)
    return Chain("gemm", dims, (_mac("C", C, (A, B), dt),))


def batched_gemm(B: int, M: int, N: int, K: int, dtype: str = "i8",
                 out_dtype: str | None = None) -> Chain:
    """``C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]``."""
    dims = _dims(b=B, m=M, n=N, k=K)
    s, dt = {d.name: d.size for d in dims}, _dt(dtype)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else _dtype(dt.accumulator)
    A, Bt, C = _t("A", dt, "b,m,k", s), _t("B", dt, "b,k,n", s), _t("C", ot, "b,m,n", s)
    return Chain("batched_gemm", dims, (_mac("C", C, (A, Bt), dt),))


def _pair(v, what: str) -> tuple[int, int]:
    pair = tuple(as_int(x) for x in v) if isinstance(v, (tuple, list)) else (as_int(v), as_int(v))
    if len(pair) != 2 or any(isinstance(x, bool) or not isinstance(x, int) for x in pair):
        raise WorkloadError(f"conv2d {what} {v!r} must be an int or a pair of ints")
    return pair


def _pads(v) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) from an int, a (rows, cols) pair or ONNX's 4 begin/end pads."""
    if isinstance(v, (tuple, list)) and len(v) == 4:
        pads = tuple(as_int(x) for x in v)
        if any(isinstance(x, bool) or not isinstance(x, int) for x in pads):
            raise WorkloadError(f"conv2d padding {v!r} must be ints")
        return pads
    ph, pw = _pair(v, "padding")
    return ph, pw, ph, pw


def conv2d(N: int, C: int, H: int, W: int, K: int, R: int, S: int, stride=1, padding=0,
           dilation=1, groups: int = 1, dtype: str = "i8", out_dtype: str | None = None,
           bias: bool = False) -> Chain:
    """``O[n,k,p,q] = sum_{c,r,s} I[n, c, p*sh + r*dh - ph, q*sw + s*dw - pw] * W[k,c,r,s]``
    (``+ bias[k]`` with ``bias=True``).

    ``stride`` and ``dilation`` are ints or (rows, cols) pairs; ``padding`` (zeros) an int, a
    (rows, cols) pair padding both sides, or ONNX's (top, left, bottom, right);
    P = (H + top + bottom - dh*(R-1) - 1) // sh + 1 output rows (likewise Q).

    ``groups`` G > 1 (C and K multiples of G) splits the channels into G independent
    convolutions: a dim ``g`` of size G indexes all three tensors, ``I[n, g, c, ...]`` with
    ``c`` < C/G, ``W[g, k, c, r, s]`` and ``O[n, g, k, p, q]`` with ``k`` < K/G (the same
    memory as NCHW, viewed with the channel axis split); G = C = K is a depthwise convolution.

    ``bias=True`` adds an input ``bias[k]`` (``bias[g, k]`` when grouped) in the accumulator
    type (ONNX's int32 bias of a quantized conv), added once to each output element where its
    reduction completes (seed 003 counts it with the weights: "(c, k_h, k_w, C_in) + (1, 1, 1,
    c_o)"). It moves like any input (loaded when its tile changes, so at most once per visit of
    an output tile); the C_out adds are not counted as compute (1 per C·R·S MACs).
    """
    (sh, sw), (dh, dw) = _pair(stride, "stride"), _pair(dilation, "dilation")
    top, left, bottom, right = _pads(padding)
    if min(sh, sw, dh, dw) < 1 or min(top, left, bottom, right) < 0:
        raise WorkloadError(f"conv2d: stride {stride!r} and dilation {dilation!r} must be >= 1, "
                            f"padding {padding!r} >= 0")
    N, C, H, W, K, R, S, G = (as_int(v) for v in (N, C, H, W, K, R, S, groups))
    for name, v in dict(N=N, C=C, H=H, W=W, K=K, R=R, S=S, groups=G).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise WorkloadError(f"conv2d: {name}={v!r} must be a positive integer")
    if C % G or K % G:
        raise WorkloadError(f"conv2d: groups={G} must divide the input channels C={C} and the "
                            f"output channels K={K}")
    P = (H + top + bottom - dh * (R - 1) - 1) // sh + 1
    Q = (W + left + right - dw * (S - 1) - 1) // sw + 1
    if P < 1 or Q < 1:
        raise WorkloadError(f"conv2d: a {R}x{S} filter (dilation {dh},{dw}) does not fit the "
                            f"{H}x{W} input padded by {padding!r}: output would be {P}x{Q}")
    g = {"g": G} if G > 1 else {}
    dims = _dims(n=N, **g, k=K // G, c=C // G, p=P, q=Q, r=R, s=S)
    sz, dt = {d.name: d.size for d in dims}, _dt(dtype)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else _dtype(dt.accumulator)
    row = Affine((("p", sh), ("r", dh)), -top)
    col = Affine((("q", sw), ("s", dw)), -left)
    gx = ("g",) if g else ()
    I = Tensor("I", dt, (*map(Affine.parse, ("n", *gx, "c")), row, col), (N, *g.values(), C // G, H, W))
    Wt = _t("W", dt, ",".join((*gx, "k", "c", "r", "s")), sz)
    O = _t("O", ot, ",".join(("n", *gx, "k", "p", "q")), sz)
    roles = (("n", ""), *((("g", ""),) if g else ()), ("k", "n"), ("c", "c_in"))
    if not isinstance(bias, bool):
        raise WorkloadError(f"conv2d: bias={bias!r} must be True or False")
    if bias:
        Bt = _t("bias", _dtype(dt.accumulator), ",".join((*gx, "k")), sz)
        op = Op("O", "mac", O, (I, Wt, Bt), dt, attrs={"bias": "bias"})
    else:
        op = _mac("O", O, (I, Wt), dt)
    return Chain("conv2d", dims, (op,), roles=roles)


def gemm_chain(M: int, K: int, L: int, N: int, dtype: str = "i8",
               out_dtype: str | None = None, memory: str = "sum") -> Chain:
    """Seed 004's chain: ``C[m,l] = A[m,k]·B[k,l]`` then ``E[m,n] = C[m,l]·D[l,n]``, C fused.

    C is kept in the accumulator type (it is a finished sum of the first GEMM). Every loop
    order is legal: each op runs its projection of the nest below the first private loop, C
    live as the panel E walks (:func:`tilewise.model.rules.panel_tile`). ``memory``: the
    buffers of a level summed (``"sum"``) or, as Chimera computes MU, the max over the two
    GEMMs of the buffers each touches (``"max"``; :attr:`.Chain.memory`).
    """
    dims = _dims(m=M, k=K, l=L, n=N)
    s, dt = {d.name: d.size for d in dims}, _dt(dtype)
    acc = _dtype(dt.accumulator)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else acc
    A, B, C = _t("A", dt, "m,k", s), _t("B", dt, "k,l", s), _t("C", acc, "m,l", s)
    D, E = _t("D", dt, "l,n", s), _t("E", ot, "m,n", s)
    return Chain("gemm_chain", dims, (_mac("C", C, (A, B), dt), _mac("E", E, (C, D), dt)),
                 memory=memory)


def mha(Lq: int, Lkv: int, d: int, heads: int = 1, dtype: str = "bf16",
        out_dtype: str | None = None, dv: int | None = None) -> Chain:
    """Attention per head, fused: ``S = Q·Kᵀ``, ``P = softmax_n(S)`` (online), ``O = P·V``.

    Q[h,m,k], K[h,n,k], V[h,n,e], O[h,m,e] with ``k`` < d (the query/key head dim) and ``e`` <
    ``dv`` (the value head dim, default d; seed 003's P = (d, L0, L1, r) with r = dv); S
    (accumulator type) and P (input type) are fused intermediates; the softmax keeps its
    running max and denominator per row as state ``stats[h,m]`` (2 lanes, accumulator type),
    and ``O`` is rescaled online (FlashAttention), so the n loop may be tiled.
    """
    dims = _dims(h=heads, m=Lq, n=Lkv, k=d, e=d if dv is None else dv)
    s, dt = {x.name: x.size for x in dims}, _dt(dtype)
    acc = _dtype(dt.accumulator)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else acc
    Q, K, V = _t("Q", dt, "h,m,k", s), _t("K", dt, "h,n,k", s), _t("V", dt, "h,n,e", s)
    S, P, O = _t("S", acc, "h,m,n", s), _t("P", dt, "h,m,n", s), _t("O", ot, "h,m,e", s)
    stats = _t("stats", acc, "h,m", s, lanes=2)
    ops = (
        _mac("S", S, (Q, K), dt),
        Op("P", "softmax", P, (S,), dt, state=(stats,), ops_per_point=_SOFTMAX_OPS,
           attrs={"along": "n"}),
        Op("O", "mac", O, (P, V), dt, attrs={"online_rescale": "P"}),
    )
    return Chain("mha", dims, ops)


def layernorm(rows: int, cols: int, dtype: str = "bf16", eps: float = 1e-5,
              out_dtype: str | None = None) -> Chain:
    """``Y[r,c] = (X[r,c] - mean_r) / sqrt(var_r + eps) * gamma[c] + beta[c]``.

    Two fused ops: ``stats[r]`` (Welford mean and M2, 2 lanes, accumulator type, per row; the
    count is one number per tile, shared by its rows) then the elementwise normalization. The
    statistics are mergeable (Chan), so ``c`` may be tiled at any level: below the first level
    whose ``c`` loop iterates, the statistics pass walks X's column tiles and the normalize pass
    walks them again (X moves twice into those levels, once into the levels above), and with
    the whole row ``c`` in one tile X is read once.
    """
    dims = _dims(r=rows, c=cols)
    s, dt = {x.name: x.size for x in dims}, _dt(dtype)
    acc = _dtype(dt.accumulator)
    ot = _dt(out_dtype, "out_dtype") if out_dtype else dt
    X, G, Bt = _t("X", dt, "r,c", s), _t("gamma", dt, "c", s), _t("beta", dt, "c", s)
    stats, Y = _t("stats", acc, "r", s, lanes=2), _t("Y", ot, "r,c", s)
    ops = (
        Op("stats", "norm", stats, (X,), dt, ops_per_point=_STATS_OPS, attrs={"eps": eps}),
        Op("Y", "elementwise", Y, (X, stats, G, Bt), dt, ops_per_point=_NORMALIZE_OPS),
    )
    return Chain("layernorm", dims, ops)


def einsum(spec: str, dtype: str = "i8", out_dtype: str | None = None, **sizes: int) -> Chain:
    """One mac op from an einsum spec over single-letter dims: ``einsum("mk,kn->mn", m=.., ...)``.

    Inputs are named A, B, ... and the output takes the next letter. Letters missing from the
    output are reductions. ParseError points at a malformed character; WorkloadError names a
    missing or unused size.
    """
    text = spec
    if "->" not in text:
        raise ParseError("einsum spec", text, len(text), "'->' followed by the output letters")
    lhs, rhs = text.split("->", 1)
    arrow = len(lhs)
    operands, pos = [], 0
    for part in lhs.split(","):
        stripped = part.strip()
        start = pos + part.find(stripped) if stripped else pos
        if not stripped:
            raise ParseError("einsum spec", text, start, "operand letters (a-z)")
        for i, ch in enumerate(stripped):
            if not ("a" <= ch <= "z"):
                raise ParseError("einsum spec", text, start + i, "a lowercase letter, ',' or '->'")
        if len(set(stripped)) != len(stripped):
            j = next(i for i, ch in enumerate(stripped) if stripped.index(ch) != i)
            raise ParseError("einsum spec", text, start + j, "distinct letters within an operand")
        operands.append(stripped)
        pos += len(part) + 1
    out = rhs.strip()
    ostart = arrow + 2 + rhs.find(out) if out else arrow + 2
    letters = dict.fromkeys("".join(operands))
    for i, ch in enumerate(out):
        if not ("a" <= ch <= "z"):
            raise ParseError("einsum spec", text, ostart + i, "a lowercase letter")
        if ch not in letters:
            raise ParseError("einsum spec", text, ostart + i, "a letter that appears in an input")
        if out.index(ch) != i:
            raise ParseError("einsum spec", text, ostart + i, "distinct output letters")
    if not out:
        raise ParseError("einsum spec", text, ostart, "at least one output letter")
    missing = [ch for ch in letters if ch not in sizes]
    if missing:
        raise WorkloadError(f"einsum {spec!r}: no size for {', '.join(missing)}; pass e.g. "
                            + ", ".join(f"{ch}=..." for ch in missing))
    extra = [k for k in sizes if k not in letters]
    if extra:
        raise WorkloadError(f"einsum {spec!r}: sizes given for letters not in the spec: "
                            + ", ".join(extra))
    dims = _dims(**{ch: sizes[ch] for ch in letters})
    sz, dt = {d.name: d.size for d in dims}, _dt(dtype)
    names = [chr(ord("A") + i) for i in range(len(operands) + 1)]
    ins = tuple(_t(names[i], dt, ",".join(o), sz) for i, o in enumerate(operands))
    ot = _dt(out_dtype, "out_dtype") if out_dtype else _dtype(dt.accumulator)
    Y = _t(names[-1], ot, ",".join(out), sz)
    return Chain("einsum", dims, (_mac(names[-1], Y, ins, dt),))
