"""The workload kinds: one registry, name -> constructor -> parameter schema.

Every place that names a workload by kind reads this table: the CLI subcommands
(``tilewise search gemm --m 512 ...``), problem lists of ``tilewise search-many``
(``- gemm: {m: 512, n: 768, k: 768}``) and solution files of ``tilewise run``
(``"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}``). A kind's parameters are lowercase
keys (the CLI flags without ``--``); :func:`build` checks them and calls the constructor of
:mod:`tilewise.ir.library`::

    >>> build("gemm", {"m": 64, "n": 32, "k": 16}).sizes
    {'m': 64, 'n': 32, 'k': 16}
    >>> build("conv2d", {"c": 8, "h": 14, "w": 14, "k": 16, "stride": 2, "padding": 1}).sizes["p"]
    7
    >>> params_of(build("mha", {"lq": 128, "d": 64}))
    ('mha', {'lq': 128, 'lkv': 128, 'd': 64, 'heads': 1, 'dtype': 'bf16'})

Sizes are in elements. ``dtype`` is the input element type; ``out_dtype`` (optional) the
output type (default: the accumulator type). An unknown kind, an unknown or misspelt
parameter, a missing one or a value of the wrong type raises one WorkloadError naming the key
and the valid ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import ParseError, WorkloadError
from . import library
from .workload import as_int

REQUIRED = object()  # the default of a parameter that must be given

# parameter types: "int" (elements), "ints" (an int or a [rows, cols] pair), "dtype", "float",
# "bool" (a flag: --bias / --no-bias on the command line), "spec" (an einsum spec, a positional
# argument on the command line) and "sizes" (einsum dim sizes: a mapping {letter: int} or the
# text "m=64,k=32")
TYPES = ("int", "ints", "dtype", "float", "bool", "spec", "sizes")


@dataclass(frozen=True)
class Param:
    """One parameter of a kind: its key, the constructor keyword, type, default and help."""

    name: str
    arg: str
    type: str
    doc: str
    default: Any = REQUIRED
    same_as: str | None = None  # default: the value of this other parameter (mha's lkv = lq)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and self.same_as is None


@dataclass(frozen=True)
class Kind:
    """A workload kind: its name, the library constructor, parameters and a one-line help."""

    name: str
    constructor: Callable
    params: tuple[Param, ...]
    doc: str
    aliases: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def build(self, params: dict):
        """The workload (a :class:`~tilewise.ir.workload.Chain`) for ``params``."""
        if not isinstance(params, dict):
            raise WorkloadError(f"{self.name}: expected a mapping of parameters "
                                f"({', '.join(self.keys)}), got {params!r}")
        for key in params:
            if key not in self.keys:
                raise WorkloadError(f"{self.name}: unknown parameter {key!r}"
                                    + _did_you_mean(str(key), self.keys)
                                    + f"; valid: {', '.join(self.keys)}")
        values = {}
        for p in self.params:
            v = params.get(p.name)
            if v is None:
                if p.same_as is not None:
                    v = values[p.same_as]
                elif p.default is REQUIRED:
                    raise WorkloadError(f"{self.name}: missing parameter {p.name!r} ({p.doc})")
                else:
                    v = p.default
            values[p.name] = v if v is None else _check(self.name, p, v)
        kwargs = {p.arg: values[p.name] for p in self.params
                  if values[p.name] is not None and p.type not in ("spec", "sizes")}
        if self.name == "einsum":
            return self.constructor(values["spec"], **kwargs, **values["sizes"])
        return self.constructor(**kwargs)

    def to_dict(self) -> dict:
        """The schema as plain data: ``{"name", "doc", "aliases", "params": [{"name", "type",
        "required", "default", "doc"}]}``."""
        return {"name": self.name, "doc": self.doc, "aliases": list(self.aliases),
                "params": [{"name": p.name, "type": p.type, "required": p.required,
                            "default": None if p.default is REQUIRED else p.default,
                            "doc": p.doc + (f" (default: {p.same_as})" if p.same_as else "")}
                           for p in self.params]}


def _did_you_mean(word: str, valid) -> str:
    close = [v for v in valid if v.lower() == word.lower()] or difflib.get_close_matches(
        word, list(valid), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check(kind: str, p: Param, v):
    """``v`` converted to ``p``'s type; WorkloadError naming the parameter otherwise."""
    if p.type == "int":
        v = as_int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise WorkloadError(f"{kind}: {p.name}={v!r} must be an integer ({p.doc})")
        return v
    if p.type == "ints":
        pair = [as_int(x) for x in v] if isinstance(v, (list, tuple)) else None
        if pair is not None and len(pair) == 2 and all(
                isinstance(x, int) and not isinstance(x, bool) for x in pair):
            return tuple(pair)
        v = as_int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise WorkloadError(f"{kind}: {p.name}={v!r} must be an integer or a [rows, cols] pair")
        return v
    if p.type == "bool":
        if not isinstance(v, bool):
            raise WorkloadError(f"{kind}: {p.name}={v!r} must be true or false ({p.doc})")
        return v
    if p.type == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise WorkloadError(f"{kind}: {p.name}={v!r} must be a number ({p.doc})")
        return float(v)
    if p.type == "sizes":
        if isinstance(v, str):
            return parse_sizes(v, p.name)
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: _check(kind, Param(f"{p.name}.{k}", k, "int", "a dim size"), x)
                    for k, x in v.items()}
        raise WorkloadError(f"{kind}: {p.name}={v!r} must map dim letters to sizes, e.g. "
                            "{m: 64, k: 32} or \"m=64,k=32\"")
    if not isinstance(v, str):  # dtype, spec
        raise WorkloadError(f"{kind}: {p.name}={v!r} must be a string ({p.doc})")
    return v


def parse_sizes(text: str, what: str = "sizes") -> dict[str, int]:
    """``"m=64,k=32"`` -> ``{"m": 64, "k": 32}``; ParseError points at the bad character."""
    out: dict[str, int] = {}
    pos = 0
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ParseError(what, text, pos, "NAME=INT pairs separated by ','")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise ParseError(what, text, pos + len(name) + 1, "an integer size") from None
        pos += len(part) + 1
    return out


def _dtypes(default: str) -> tuple[Param, ...]:
    return (Param("dtype", "dtype", "dtype", "input element type (i8, i16, i32, bf16, f16, f32)",
                  default),
            Param("out_dtype", "out_dtype", "dtype", "output element type (default: the "
                  "accumulator type)", None))


def _int(name: str, arg: str, doc: str, default=REQUIRED, same_as=None) -> Param:
    return Param(name, arg, "int", doc, default, same_as)


_ALL = (
    Kind("gemm", library.gemm, (
        _int("m", "M", "rows of A and C (elements)"),
        _int("n", "N", "columns of B and C (elements)"),
        _int("k", "K", "reduction dim (elements)"),
        *_dtypes("i8")), "C[m,n] = sum_k A[m,k]·B[k,n]"),
    Kind("batched-gemm", library.batched_gemm, (
        _int("b", "B", "batch (elements)"),
        _int("m", "M", "rows of A and C (elements)"),
        _int("n", "N", "columns of B and C (elements)"),
        _int("k", "K", "reduction dim (elements)"),
        *_dtypes("i8")), "C[b,m,n] = sum_k A[b,m,k]·B[b,k,n]", ("batched_gemm",)),
    Kind("conv2d", library.conv2d, (
        _int("n", "N", "batch", 1),
        _int("c", "C", "input channels"),
        _int("h", "H", "input rows"),
        _int("w", "W", "input columns"),
        _int("k", "K", "output channels"),
        _int("r", "R", "filter rows", 3),
        _int("s", "S", "filter columns", 3),
        Param("stride", "stride", "ints", "stride (rows and columns)", 1),
        Param("padding", "padding", "ints", "zero padding on each side", 0),
        Param("dilation", "dilation", "ints", "dilation", 1),
        _int("groups", "groups", "channel groups (C and K multiples of it; C = K = groups: "
             "depthwise)", 1),
        *_dtypes("i8"),
        Param("bias", "bias", "bool", "a bias[k] input added to each output element", False)),
        "O[n,k,p,q] = sum_{c,r,s} I[n,c,p*stride+r-pad,q*stride+s-pad]·W[k,c,r,s]"),
    Kind("mha", library.mha, (
        _int("lq", "Lq", "query rows L (elements)"),
        _int("lkv", "Lkv", "key/value rows (elements)", same_as="lq"),
        _int("d", "d", "query/key head dim (elements)"),
        _int("dv", "dv", "value head dim r (elements)", same_as="d"),
        _int("heads", "heads", "heads", 1),
        *_dtypes("bf16")),
        "attention per head: O = softmax(Q·Kᵀ)·V, fused, online softmax"),
    Kind("layernorm", library.layernorm, (
        _int("rows", "rows", "rows (elements)"),
        _int("cols", "cols", "normalized columns (elements)"),
        Param("eps", "eps", "float", "added to the variance", 1e-5),
        *_dtypes("bf16")), "Y[r,c] = (X[r,c] - mean_r)/sqrt(var_r + eps)·gamma[c] + beta[c]"),
    Kind("chain", library.gemm_chain, (
        _int("m", "M", "rows of A, C and E"),
        _int("k", "K", "reduction dim of the first GEMM"),
        _int("l", "L", "columns of C = reduction dim of the second GEMM"),
        _int("n", "N", "columns of E"),
        *_dtypes("i8"),
        Param("memory", "memory", "text", "a level's footprint: sum (every live buffer) or max "
              "(seed 004's Chimera MU: the larger GEMM's buffers; evaluate, run, not search)",
              "sum")), "C[m,l] = A[m,k]·B[k,l]; E[m,n] = C[m,l]·D[l,n] with C fused (seed 004)",
        ("gemm_chain",)),
    Kind("einsum", library.einsum, (
        Param("spec", "spec", "spec", "einsum spec over single-letter dims, e.g. \"mk,kn->mn\""),
        Param("sizes", "sizes", "sizes", "dim sizes in elements, e.g. m=64,k=32,n=16"),
        *_dtypes("i8")), "one mac op from an einsum spec, e.g. \"mk,kn->mn\" --sizes m=64,k=32,n=16"),
)

KINDS: dict[str, Kind] = {k.name: k for k in _ALL}
"""Kind name -> :class:`Kind`, in the order the CLI lists them."""

_BY_NAME = {**KINDS, **{a: k for k in _ALL for a in k.aliases}}


def kind(name: str) -> Kind:
    """The kind called ``name`` (or one of its aliases, e.g. ``batched_gemm``)."""
    if not isinstance(name, str) or name not in _BY_NAME:
        raise WorkloadError(f"workload kind {name!r} unknown"
                            + (_did_you_mean(name, _BY_NAME) if isinstance(name, str) else "")
                            + f"; valid: {', '.join(KINDS)}")
    return _BY_NAME[name]


def build(name: str, params: dict):
    """The workload of kind ``name`` with ``params`` (see the module doc)."""
    return kind(name).build(params)


def from_entry(entry, what: str = "workload"):
    """A workload from its one-key mapping ``{KIND: {params}}`` (problem lists, solution files)."""
    if not isinstance(entry, dict) or len(entry) != 1:
        raise WorkloadError(f"{what} must be one mapping KIND: {{parameters}} with KIND one of "
                            f"{', '.join(KINDS)}; got {entry!r}")
    (name, params), = entry.items()
    return build(name, {} if params is None else params)


# --- the inverse: which kind and parameters build a given workload --------------------------


def params_of(workload) -> tuple[str, dict] | None:
    """``(kind, params)`` such that ``build(kind, params) == workload``, or None when the
    workload is not one of the kinds (a hand-built Chain, an attention with extra attrs)."""
    guess = _GUESS.get(workload.name)
    if guess is None:
        return None
    try:
        name, params = guess(workload)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError):
        return None
    op = workload.ops[-1]
    params["dtype"] = workload.ops[0].dtype.name
    for extra in ({}, {"out_dtype": op.output.dtype.name}):
        try:
            if build(name, {**params, **extra}) == workload:
                return name, {**params, **extra}
        except (WorkloadError, ParseError):
            return None
    return None


def _conv(w):
    I = next(t for t in w.ops[0].inputs if t.name == "I")
    (p, sh), (r, dh) = I.axes[-2].terms
    (q, sw), (s, dw) = I.axes[-1].terms
    if (p, r, q, s) != ("p", "r", "q", "s"):
        raise ValueError
    pair = (lambda a, b: a if a == b else [a, b])
    z = w.sizes
    g = z.get("g", 1)
    out = {"n": z["n"], "c": z["c"] * g, "h": I.shape[-2], "w": I.shape[-1], "k": z["k"] * g,
           "r": z["r"], "s": z["s"], "stride": pair(sh, sw),
           "padding": pair(-I.axes[-2].const, -I.axes[-1].const), "dilation": pair(dh, dw)}
    return "conv2d", {**out, **({"groups": g} if g > 1 else {}),
                      **({"bias": True} if w.ops[0].bias is not None else {})}


def _einsum(w):
    op = w.ops[0]
    letters = lambda t: "".join(str(a) for a in t.axes)  # noqa: E731
    spec = ",".join(letters(t) for t in op.inputs) + "->" + letters(op.output)
    return "einsum", {"spec": spec, "sizes": dict(w.sizes)}


def _layernorm(w):
    out = {"rows": w.sizes["r"], "cols": w.sizes["c"]}
    eps = w.ops[0].attrs.get("eps", 1e-5)
    if eps != 1e-5:
        out["eps"] = eps
    return "layernorm", out


_GUESS = {
    "gemm": lambda w: ("gemm", {d: w.sizes[d] for d in "mnk"}),
    "batched_gemm": lambda w: ("batched-gemm", {d: w.sizes[d] for d in "bmnk"}),
    "gemm_chain": lambda w: ("chain", {**{d: w.sizes[d] for d in "mkln"},
                                       **({"memory": w.memory} if w.memory != "sum" else {})}),
    "mha": lambda w: ("mha", {"lq": w.sizes["m"], "lkv": w.sizes["n"], "d": w.sizes["k"],
                              "heads": w.sizes["h"],
                              **({"dv": w.sizes["e"]} if w.sizes["e"] != w.sizes["k"] else {})}),
    "layernorm": _layernorm,
    "conv2d": _conv,
    "einsum": _einsum,
}
