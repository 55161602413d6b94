"""Plain references for any workload, and random inputs to run it on.

``reference(workload, inputs)`` evaluates the ops of a :class:`~tilewise.ir.workload.Chain` one
after another on whole tensors with plain numpy, independent of the tile kernels and of any
mapping: it is what :func:`tilewise.execute` must equal.

- ``mac``: one ``np.einsum`` over the op's dims, in int64 for integer inputs and float64 for
  float inputs; an input with affine (window) axes is first gathered into one axis per dim,
  zero outside the tensor — a direct convolution with stride, padding and dilation; a bias
  input (``attrs["bias"]``) is added to the sum;
- ``softmax`` (naive attention): the whole row of scores along ``attrs["along"]`` (times
  ``attrs["scale"]``, default 1), masked scores -inf (``attrs["causal"]``: key ``n`` visible to
  query ``m`` iff ``n <= m``; a bool input tensor: True = visible), a row with no visible key
  gives 0;
- ``norm`` + ``elementwise`` (LayerNorm): ``np.mean``/``np.var`` over whole rows in float64,
  ``(x - mean) / sqrt(var + eps) * gamma + beta``.

Intermediates are cast to their declared dtype (C of an i8 GEMM chain wraps like an int32
register; P of a bf16 attention is kept exact in float64, the executor rounds it to bf16);
outputs are converted to theirs from the exact int64 sum, integers saturating (an i8 output of an
i8 GEMM is the int32 accumulation clipped to [-128, 127]).
Example::

    >>> from tilewise import gemm
    >>> w = gemm(2, 3, 4)
    >>> x = random_inputs(w, seed=0)
    >>> sorted(x), x["A"].dtype.name, x["A"].shape
    (['A', 'B'], 'int8', (2, 4))
    >>> bool((reference(w, x)["C"] == x["A"].astype(int) @ x["B"].astype(int)).all())
    True
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError, WorkloadError

# Random integer inputs lie in [-INT_RANGE, INT_RANGE]: small enough that no int32 sum of the
# test sizes overflows, large enough to exercise signs and carries.
INT_RANGE = 8


def input_tensors(workload) -> tuple:
    """The tensors a caller supplies: read by some op, produced by none (in order)."""
    produced = {op.output.name for op in workload.ops}
    seen: dict = {}
    for op in workload.ops:
        for t in op.inputs:
            if t.name not in produced:
                seen.setdefault(t.name, t)
    return tuple(seen.values())


def output_tensors(workload) -> tuple:
    """The final outputs (produced and not consumed by a later op)."""
    inter = {t.name for t in workload.intermediates}
    return tuple(op.output for op in workload.ops if op.output.name not in inter)


def array_shape(t) -> tuple[int, ...]:
    """Numpy shape of tensor ``t``: its shape, plus a trailing axis of ``lanes`` when > 1."""
    return t.shape + ((t.lanes,) if t.lanes > 1 else ())


def random_inputs(workload, seed: int = 0) -> dict[str, np.ndarray]:
    """Random arrays for every input tensor, in the tensors' dtypes (bf16 via ml_dtypes).

    Integers uniform in ``[-INT_RANGE, INT_RANGE]``, floats standard normal, bool tensors (masks)
    True with probability 0.7. Deterministic in ``seed``.
    """
    from ..ir.workload import as_workload

    workload = as_workload(workload)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise WorkloadError(f"seed {seed!r} must be a non-negative integer")
    rng = np.random.default_rng(seed)
    out = {}
    for t in input_tensors(workload):
        shape = array_shape(t)
        if t.dtype.kind == "bool":
            out[t.name] = rng.random(shape) < 0.7
        elif t.dtype.is_integer:
            lo = max(-INT_RANGE, int(np.iinfo(t.dtype.numpy).min))
            out[t.name] = rng.integers(lo, INT_RANGE + 1, shape).astype(t.dtype.numpy)
        else:
            out[t.name] = rng.standard_normal(shape).astype(t.dtype.numpy)
    return out


def check_inputs(workload, inputs) -> dict[str, np.ndarray]:
    """Validate ``inputs`` (name -> array) against the workload's input tensors: every input
    present, no unknown name, shapes equal; arrays are converted to the tensor's dtype."""
    if not isinstance(inputs, dict):
        raise WorkloadError(f"inputs must be a dict of tensor name -> array, got {type(inputs).__name__}")
    wanted = {t.name: t for t in input_tensors(workload)}
    missing = [n for n in wanted if n not in inputs]
    if missing:
        raise WorkloadError(f"inputs lack {', '.join(missing)}; {workload.name} needs "
                            + ", ".join(f"{t.name} {array_shape(t)}:{t.dtype.name}" for t in wanted.values()))
    extra = [n for n in inputs if n not in wanted]
    if extra:
        raise WorkloadError(f"inputs name {', '.join(map(str, extra))}, which {workload.name} does not "
                            f"read; its inputs: {', '.join(wanted)}")
    out = {}
    for name, t in wanted.items():
        x = np.asarray(inputs[name])
        if x.shape != array_shape(t):
            raise WorkloadError(f"input {name} has shape {x.shape}; {t} needs {array_shape(t)}")
        if x.dtype != t.dtype.numpy:
            if x.dtype.kind == "f" and t.dtype.is_integer:
                raise DTypeError(f"input {name} is {x.dtype}; {t} needs {t.dtype.name} "
                                 "(float values would be truncated)")
            if x.dtype.kind in "iu" and np.dtype(t.dtype.numpy).kind in "iu" and x.size:
                info = np.iinfo(t.dtype.numpy)
                lo, hi = int(x.min()), int(x.max())
                if lo < info.min or hi > info.max:
                    raise DTypeError(f"input {name} holds values in [{lo}, {hi}]; {t} is "
                                     f"{t.dtype.name}, whose range is [{info.min}, {info.max}] "
                                     "(they would wrap)")
            x = x.astype(t.dtype.numpy)
        out[name] = x
    return out


def gather(t, data: np.ndarray, ranges: dict, box_lo=None) -> np.ndarray:
    """``t``'s values over dim ranges as one axis per dim of ``t`` (order ``t.dims``).

    ``data`` holds the tensor's box starting at ``box_lo`` (default: the whole tensor at 0);
    indices outside ``data`` read 0 (convolution padding). Plain axes are sliced; affine axes
    (``p*2 + r - 1``) are gathered with an index grid, so the result has axes p and r.
    """
    dims = t.dims
    box_lo = box_lo or (0,) * len(t.axes)
    if all(ax.is_plain for ax in t.axes):
        return data[tuple(slice(ranges[ax.dims[0]][0] - lo, ranges[ax.dims[0]][1] - lo)
                          for ax, lo in zip(t.axes, box_lo))]
    grid = np.indices(tuple(ranges[d][1] - ranges[d][0] for d in dims), dtype=np.int64)
    idx, valid = [], True
    for ax, lo, n in zip(t.axes, box_lo, data.shape):
        i = sum(c * (grid[dims.index(d)] + ranges[d][0]) for d, c in ax.terms) + ax.const - lo
        valid = valid & (i >= 0) & (i < n)
        idx.append(np.clip(i, 0, max(n - 1, 0)))
    if data.size == 0:
        return np.zeros(grid.shape[1:] + data.shape[len(t.axes):], data.dtype)
    picked = data[tuple(idx)]
    return np.where(valid.reshape(valid.shape + (1,) * (picked.ndim - valid.ndim)), picked, 0).astype(data.dtype)


def letters(dims) -> dict[str, str]:
    """One einsum letter per dim name (dims may have multi-letter names)."""
    return {d: chr(ord("a") + i) for i, d in enumerate(dims)}


def causal_visible(m_range: tuple[int, int], n_range: tuple[int, int]) -> np.ndarray:
    """``[i, j]`` True iff key ``n0 + j`` <= query ``m0 + i`` (top-left aligned causal mask)."""
    return (np.arange(*n_range)[None, :]) <= (np.arange(*m_range)[:, None])


def softmax_dims(op) -> tuple[str, str]:
    """(query dim, key dim) of a softmax op: the key dim is ``attrs['along']``, the query dim the
    output dim just before it (``m`` of ``P[h, m, n]``)."""
    dims = op.output.dims
    along = op.attrs["along"]
    i = dims.index(along)
    if i == 0:
        raise WorkloadError(f"op {op.name}: a causal softmax along {along} needs a query dim before "
                            f"it in {op.output.name}[{', '.join(dims)}]")
    return dims[i - 1], along


def visibility(op, ranges: dict, mask_tiles: list) -> np.ndarray | None:
    """Bool array over ``op.output.dims`` ranges: True where a score is visible (None: all).

    ``mask_tiles``: (tensor, array over that tensor's dims) of the op's bool inputs.
    """
    dims = op.output.dims
    shape = tuple(ranges[d][1] - ranges[d][0] for d in dims)
    vis = None
    if op.attrs.get("causal"):
        q, k = softmax_dims(op)
        c = causal_visible(ranges[q], ranges[k])
        vis = np.expand_dims(c, tuple(i for i, d in enumerate(dims) if d not in (q, k)))
    for t, arr in mask_tiles:
        m = align(arr, t.dims, dims)
        vis = m if vis is None else vis & m
    return None if vis is None else np.broadcast_to(vis, shape)


def align(arr: np.ndarray, src: tuple, dst: tuple) -> np.ndarray:
    """View ``arr`` (axes ``src``) with axes in ``dst`` order, size-1 axes for missing dims."""
    arr = np.transpose(arr, [src.index(d) for d in dst if d in src])
    return arr.reshape(tuple(arr.shape[[d for d in dst if d in src].index(d)] if d in src else 1
                             for d in dst))


def reference(workload, inputs) -> dict[str, np.ndarray]:
    """Evaluate ``workload`` on ``inputs`` (name -> array) with plain numpy; final outputs by name."""
    from ..ir.workload import as_workload

    workload = as_workload(workload)
    check_supported(workload)
    values = {k: v for k, v in check_inputs(workload, inputs).items()}
    exact: dict[str, np.ndarray] = {}  # float64 / int64 values of intermediates
    sizes = workload.sizes
    full = {d: (0, s) for d, s in sizes.items()}
    for op in workload.ops:
        if op.kind == "mac":
            idx = letters(op.dims)
            wide = np.int64 if op.dtype.is_integer else np.float64
            ops = [gather(t, (exact[t.name] if t.name in exact else values[t.name]).astype(wide), full) for t in op.factors]
            spec = ",".join("".join(idx[d] for d in t.dims) for t in op.factors)
            y = np.einsum(spec + "->" + "".join(idx[d] for d in op.output.dims), *ops)
            if op.bias is not None:
                y = y + align(values[op.bias.name].astype(wide), op.bias.dims, op.output.dims)
        elif op.kind == "softmax":
            scores = next(exact[t.name] for t in op.inputs if t.name in exact).astype(np.float64)
            scores = scores * float(op.attrs.get("scale", 1.0))
            masks = [(t, values[t.name]) for t in op.inputs if t.name not in exact]
            vis = visibility(op, full, masks)
            axis = op.output.dims.index(op.attrs["along"])
            if vis is not None:
                scores = np.where(vis, scores, -np.inf)
            mx = scores.max(axis=axis, keepdims=True)
            e = np.exp(scores - np.where(np.isneginf(mx), 0, mx))
            den = e.sum(axis=axis, keepdims=True)
            y = np.divide(e, den, out=np.zeros_like(e), where=den > 0)
        elif op.kind == "norm":
            (x,) = [values[t.name].astype(np.float64) for t in op.inputs]
            xin = op.inputs[0]
            red = tuple(xin.dims.index(d) for d in op.reduction_dims)
            count = int(np.prod([sizes[d] for d in op.reduction_dims]))
            y = np.stack([x.mean(axis=red), x.var(axis=red) * count], axis=-1)
        else:  # elementwise LayerNorm normalization (check_supported guarantees it)
            x_t, stats_t, g_t, b_t, norm = normalization(workload, op)
            x = values[x_t.name].astype(np.float64)
            st = exact[stats_t.name]
            count = int(np.prod([sizes[d] for d in norm.reduction_dims]))
            mean = align(st[..., 0], stats_t.dims, x_t.dims)
            var = align(st[..., 1], stats_t.dims, x_t.dims) / count
            y = (x - mean) / np.sqrt(var + float(norm.attrs.get("eps", 1e-5)))
            y = (y * align(values[g_t.name].astype(np.float64), g_t.dims, x_t.dims)
                 + align(values[b_t.name].astype(np.float64), b_t.dims, x_t.dims))
        exact[op.output.name] = _round(y, op.output, intermediate=op.output.name not in
                                       {t.name for t in output_tensors(workload)})
    return {t.name: _cast(exact[t.name], t) for t in output_tensors(workload)}


def _round(y: np.ndarray, t, intermediate: bool) -> np.ndarray:
    """An integer intermediate wraps to its dtype (as the register holding it); floats stay exact."""
    if intermediate and t.dtype.is_integer:
        return y.astype(t.dtype.numpy).astype(np.int64)
    return y


def _cast(y: np.ndarray, t) -> np.ndarray:
    """A final output from its exact (int64 / float64) value: integers saturate to the
    output type's range (clipped here by hand, not by the executor's conversion)."""
    if t.dtype.is_integer and np.dtype(t.dtype.numpy).kind in "iu":
        lo, hi = np.iinfo(t.dtype.numpy).min, np.iinfo(t.dtype.numpy).max
        y = np.where(y < lo, lo, np.where(y > hi, hi, y))
    return y.astype(t.dtype.numpy)


def normalization(workload, op):
    """(X, stats, gamma, beta, norm op) of an elementwise LayerNorm op
    ``Y = normalize(X, stats, gamma, beta)`` whose ``stats`` a norm op computed from ``X``;
    WorkloadError for any other elementwise op."""
    if len(op.inputs) == 4:
        x, stats, gamma, beta = op.inputs
        norm = workload.producer(stats.name)
        if norm is not None and norm.kind == "norm" and norm.inputs[0].name == x.name:
            return x, stats, gamma, beta, norm
    raise WorkloadError(f"op {op.name}: the only elementwise body tilewise computes is LayerNorm's "
                        f"Y = normalize(X, stats, gamma, beta) after a norm op over X; got inputs "
                        f"{', '.join(t.name for t in op.inputs)}")


def check_supported(workload) -> None:
    """Raise a clear error for workloads no numeric body is defined for (before any work)."""
    for op in workload.ops:
        if op.kind in ("softmax", "norm", "elementwise") and op.dtype.is_integer:
            raise DTypeError(f"op {op.name} ({op.kind}) of {workload.name} has {op.dtype.name} inputs; "
                             "a softmax or normalization needs a float dtype (bf16, f16, f32): "
                             "integer versions need quantization scales tilewise does not model")
        if op.kind == "softmax":
            if not any(t.name in {i.name for i in workload.intermediates} for t in op.inputs):
                raise WorkloadError(f"op {op.name}: a softmax reads its scores from a fused mac op")
            for t in op.inputs:
                if workload.producer(t.name) is None and t.dtype.kind != "bool":
                    raise WorkloadError(f"op {op.name}: input {t.name} must be the scores or a bool "
                                        f"mask (True = visible), not {t.dtype.name}")
        if op.kind == "norm":
            if len(op.inputs) != 1 or op.output.lanes != 2:
                raise WorkloadError(f"op {op.name}: a norm op reads one tensor and writes Welford "
                                    "(mean, M2) pairs (2 lanes)")
            if op.output.name not in {t.name for t in workload.intermediates}:
                raise WorkloadError(f"op {op.name}: norm statistics must feed a fused normalization "
                                    f"(they are not a final output)")
        if op.kind == "elementwise":
            normalization(workload, op)
