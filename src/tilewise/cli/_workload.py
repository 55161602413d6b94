"""Workload subcommands shared by the CLI commands that take a workload (search, evaluate, ...).

A command such as ``tilewise search`` is a click *group* with one subcommand per operator; each
subcommand has that operator's size options plus the command's own options::

    tilewise search gemm --m 512 --n 768 --k 768 --dtype i8 --arch aie-4x2
    tilewise search conv2d --n 1 --c 64 --h 56 --w 56 --k 64 --r 3 --s 3 --padding 1
    tilewise search mha --lq 4096 --lkv 4096 --d 64
    tilewise search layernorm --rows 512 --cols 768
    tilewise search chain --m 512 --k 64 --l 512 --n 64
    tilewise search einsum "mk,kn->mn" --sizes m=64,k=32,n=16

Use :func:`workload_group` to build such a group (it calls ``run(workload, options)`` with the
built :class:`~tilewise.ir.workload.Chain` and the remaining options), or
:func:`workload_options` + :func:`build_workload` to assemble a command by hand. Sizes are in
elements; ``--dtype`` is the input element type (outputs take the accumulator type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import click

from ..errors import ParseError, WorkloadError


@dataclass(frozen=True)
class _Size:
    """One integer size option: ``--flag`` -> keyword ``param`` of the library constructor."""

    flag: str
    param: str
    help: str
    default: int | None = None


_COMMON_DTYPE = {"gemm": "i8", "batched-gemm": "i8", "conv2d": "i8", "mha": "bf16",
                 "layernorm": "bf16", "chain": "i8", "einsum": "i8"}

# kind -> (library constructor name, size options, one-line help)
_KINDS: dict[str, tuple[str, tuple[_Size, ...], str]] = {
    "gemm": ("gemm", (
        _Size("m", "M", "rows of A and C (elements)"),
        _Size("n", "N", "columns of B and C (elements)"),
        _Size("k", "K", "reduction dim (elements)"),
    ), "C[m,n] = sum_k A[m,k]·B[k,n]"),
    "batched-gemm": ("batched_gemm", (
        _Size("b", "B", "batch (elements)"),
        _Size("m", "M", "rows of A and C (elements)"),
        _Size("n", "N", "columns of B and C (elements)"),
        _Size("k", "K", "reduction dim (elements)"),
    ), "C[b,m,n] = sum_k A[b,m,k]·B[b,k,n]"),
    "conv2d": ("conv2d", (
        _Size("n", "N", "batch", 1),
        _Size("c", "C", "input channels"),
        _Size("h", "H", "input rows"),
        _Size("w", "W", "input columns"),
        _Size("k", "K", "output channels"),
        _Size("r", "R", "filter rows", 3),
        _Size("s", "S", "filter columns", 3),
        _Size("stride", "stride", "stride (rows and columns)", 1),
        _Size("padding", "padding", "zero padding on each side", 0),
        _Size("dilation", "dilation", "dilation", 1),
    ), "O[n,k,p,q] = sum_{c,r,s} I[n,c,p*stride+r-pad,q*stride+s-pad]·W[k,c,r,s]"),
    "mha": ("mha", (
        _Size("lq", "Lq", "query rows L (elements)"),
        _Size("lkv", "Lkv", "key/value rows (elements; default: --lq)"),
        _Size("d", "d", "head dim (elements)"),
        _Size("heads", "heads", "heads", 1),
    ), "attention per head: O = softmax(Q·Kᵀ)·V, fused, online softmax"),
    "layernorm": ("layernorm", (
        _Size("rows", "rows", "rows (elements)"),
        _Size("cols", "cols", "normalized columns (elements)"),
    ), "Y[r,c] = (X[r,c] - mean_r)/sqrt(var_r + eps)·gamma[c] + beta[c]"),
    "chain": ("gemm_chain", (
        _Size("m", "M", "rows of A, C and E"),
        _Size("k", "K", "reduction dim of the first GEMM"),
        _Size("l", "L", "columns of C = reduction dim of the second GEMM"),
        _Size("n", "N", "columns of E"),
    ), "C[m,l] = A[m,k]·B[k,l]; E[m,n] = C[m,l]·D[l,n] with C fused (seed 004)"),
    "einsum": ("einsum", (), "one mac op from an einsum spec, e.g. \"mk,kn->mn\" --sizes m=64,k=32,n=16"),
}

WORKLOAD_KINDS: tuple[str, ...] = tuple(_KINDS)
_OWN = "_workload_"  # prefix of the click parameter names this module adds


def workload_options(kind: str) -> Callable:
    """A decorator adding ``kind``'s size options (and ``--dtype``, ``--out-dtype``) to a command."""
    if kind not in _KINDS:
        raise WorkloadError(f"workload kind {kind!r} unknown; valid: {', '.join(WORKLOAD_KINDS)}")
    _, sizes, _ = _KINDS[kind]

    def decorate(f: Callable) -> Callable:
        f = click.option(f"--out-dtype", f"{_OWN}out_dtype", default=None,
                         help="output element type (default: the accumulator type)")(f)
        f = click.option("--dtype", f"{_OWN}dtype", default=_COMMON_DTYPE[kind], show_default=True,
                         help="input element type (i8, i16, i32, bf16, f16, f32)")(f)
        if kind == "einsum":
            f = click.option("--sizes", f"{_OWN}sizes", required=True,
                             help="dim sizes in elements, e.g. m=64,k=32,n=16")(f)
            f = click.argument("spec", metavar="SPEC")(f)
        for s in reversed(sizes):
            required = s.default is None and not (kind == "mha" and s.flag == "lkv")
            f = click.option(f"--{s.flag}", f"{_OWN}{s.flag}", type=int, default=s.default,
                             required=required, show_default=s.default is not None,
                             help=s.help)(f)
        return f

    return decorate


def _parse_sizes(text: str) -> dict[str, int]:
    """``"m=64,k=32"`` -> ``{"m": 64, "k": 32}``; ParseError points at the bad character."""
    out: dict[str, int] = {}
    pos = 0
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ParseError("--sizes", text, pos, "NAME=INT pairs separated by ','")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise ParseError("--sizes", text, pos + len(name) + 1, "an integer size") from None
        pos += len(part) + 1
    return out


def build_workload(kind: str, options: dict):
    """Build the workload from a subcommand's options; removes this module's keys from ``options``.

    Returns a :class:`~tilewise.ir.workload.Chain`; bad sizes raise WorkloadError naming them.
    """
    from ..ir import library

    mine = {k[len(_OWN):]: options.pop(k) for k in list(options) if k.startswith(_OWN)}
    ctor, sizes, _ = _KINDS[kind]
    kwargs = {"dtype": mine.pop("dtype"), "out_dtype": mine.pop("out_dtype")}
    if kind == "einsum":
        return library.einsum(options.pop("spec"), **kwargs, **_parse_sizes(mine.pop("sizes")))
    for s in sizes:
        kwargs[s.param] = mine[s.flag]
    if kind == "mha" and kwargs["Lkv"] is None:
        kwargs["Lkv"] = kwargs["Lq"]
    return getattr(library, ctor)(**kwargs)


def workload_group(name: str, help: str, options: list[Callable],
                   run: Callable[..., None]) -> click.Group:
    """A click group ``name`` with one subcommand per workload kind.

    Each subcommand gets the kind's size options plus ``options`` (click decorators, applied in
    order) and calls ``run(workload, **remaining_options)``.
    """
    group = click.Group(name=name, help=help)
    for kind, (_, _, kind_help) in _KINDS.items():
        def callback(_kind=kind, **kw):
            workload = build_workload(_kind, kw)
            return run(workload, **kw)

        f = callback
        for opt in reversed(options):
            f = opt(f)
        f = workload_options(kind)(f)
        group.add_command(click.command(name=kind, help=kind_help)(f))
    return group


def workload_from_params(kind: str, params: dict):
    """Build a workload from a plain dict of the subcommand's option names (``{"m": 512, "n":
    768, "k": 768, "dtype": "i8"}``), as problem-list YAML files give them. WorkloadError names
    an unknown kind, an unknown or missing key, and lists the valid ones."""
    if kind not in _KINDS:
        raise WorkloadError(f"workload kind {kind!r} unknown; valid: {', '.join(WORKLOAD_KINDS)}")
    _, sizes, _ = _KINDS[kind]
    valid = [s.flag for s in sizes] + ["dtype", "out_dtype"] + (["spec", "sizes"] if kind == "einsum" else [])
    if not isinstance(params, dict):
        raise WorkloadError(f"{kind}: expected a mapping of {', '.join(valid)}, got {params!r}")
    bad = [k for k in params if k not in valid]
    if bad:
        raise WorkloadError(f"{kind}: unknown key {', '.join(map(repr, bad))}; valid: {', '.join(valid)}")
    opts = {f"{_OWN}dtype": params.get("dtype", _COMMON_DTYPE[kind]),
            f"{_OWN}out_dtype": params.get("out_dtype")}
    for s in sizes:
        v = params.get(s.flag, s.default)
        if v is None and not (kind == "mha" and s.flag == "lkv"):
            raise WorkloadError(f"{kind}: missing key {s.flag!r} ({s.help})")
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise WorkloadError(f"{kind}: {s.flag}={v!r} must be an integer")
        opts[f"{_OWN}{s.flag}"] = v
    if kind == "einsum":
        if "spec" not in params or "sizes" not in params:
            raise WorkloadError("einsum: needs keys 'spec' and 'sizes' (e.g. m=64,k=32,n=16)")
        opts["spec"] = params["spec"]
        sz = params["sizes"]
        opts[f"{_OWN}sizes"] = ",".join(f"{k}={v}" for k, v in sz.items()) if isinstance(sz, dict) else sz
    return build_workload(kind, opts)
