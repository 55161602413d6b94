"""The workload IR: dims, tensors indexed by affine expressions, ops, and fused chains.

A workload is a :class:`Chain` of one or more :class:`Op` over named :class:`Dim` s. Every tensor
axis is an :class:`~tilewise.ir.affine.Affine` expression of dims, so a GEMM operand is
``A[m, k]`` and a convolution input row is ``I[p*stride + r*dilation - padding]``. Example::

    >>> from tilewise import gemm
    >>> w = gemm(512, 768, 768, dtype="i8")
    >>> w.sizes, [str(t) for t in w.tensors]
    ({'m': 512, 'n': 768, 'k': 768}, ['A[m, k]:i8', 'B[k, n]:i8', 'C[m, n]:i32'])

Op kinds: ``mac`` (multiply-accumulate over the reduction dims: dims of the op not indexing the
output; ``attrs["bias"]`` may name one input that is added, not multiplied: indexed by output
dims only, added once where an output element's reduction completes), ``norm`` (mergeable
statistics such as Welford mean/M2 over the reduction dims),
``softmax`` (row-softmax along ``attrs["along"]`` with online rescaling: its running max and
denominator are per-row ``state`` tensors), ``elementwise`` (no reduction).

Chains (Chimera's operator chains, seed 004): a tensor produced by one op and read by a later op
is an *intermediate*; it is fused: produced and consumed tile by tile in the innermost memory
level, never moved. The dims indexing intermediates are the chain's *spine*: the loops over them
are shared by all ops; every other loop is private to the op that uses it and runs inside the
spine loops. Every op must index every spine dim (else it would be recomputed per spine tile).
"""

from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

from ..dtypes import DType, dtype as _dtype
from ..errors import DTypeError, WorkloadError
from .affine import Affine

_NAME = re.compile(r"[a-z]+\Z")
_TENSOR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
KINDS = ("mac", "norm", "softmax", "elementwise")
ROLE_FALLBACK = {"c_in": "k"}
"""Alignment roles that take another's multiple when the arch does not name them: a
convolution's input channels (role ``c_in``) align as a GEMM's contraction ``k``."""


def as_int(value):
    """``value`` as a Python int when it is an integer of any kind (``numpy.int64`` included,
    ``bool`` excluded); otherwise unchanged, for the caller's error message."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


@dataclass(frozen=True)
class Dim:
    """A loop dimension: a lowercase-letter name and a size in elements (>= 1)."""

    name: str
    size: int

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise WorkloadError(f"dim name {self.name!r} is invalid: use lowercase letters only (m, n, k)")
        object.__setattr__(self, "size", as_int(self.size))
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise WorkloadError(f"dim {self.name}: size {self.size!r} must be a positive integer")


@dataclass(frozen=True)
class Tensor:
    """A tensor: name, element type, one affine index per axis, and its real shape (elements).

    ``shape[i]`` is the stored extent of axis ``i``; indices outside ``[0, shape[i])`` are padding
    (never stored nor moved). ``lanes`` is the number of elements per index point (2 for a
    Welford ``(mean, M2)`` pair).
    """

    name: str
    dtype: DType
    axes: tuple[Affine, ...]
    shape: tuple[int, ...]
    lanes: int = 1

    def __post_init__(self):
        if not isinstance(self.name, str) or not _TENSOR_NAME.match(self.name):
            raise WorkloadError(f"tensor name {self.name!r} is invalid: use a letter then letters/digits")
        try:
            object.__setattr__(self, "dtype", _dtype(self.dtype))
        except DTypeError as e:
            raise WorkloadError(f"tensor {self.name}: {e}") from None
        object.__setattr__(self, "axes", tuple(Affine.of(a) for a in self.axes))
        object.__setattr__(self, "shape", tuple(as_int(s) for s in self.shape))
        if len(self.shape) != len(self.axes):
            raise WorkloadError(f"tensor {self.name}: {len(self.axes)} index expressions but shape "
                                f"{self.shape} has {len(self.shape)} axes")
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in self.shape):
            raise WorkloadError(f"tensor {self.name}: shape {self.shape} must be positive integers")

    @cached_property   # the DMA check asks it per tile moved
    def dims(self) -> tuple[str, ...]:
        """Dims indexing this tensor, in order of first appearance."""
        return tuple(dict.fromkeys(d for a in self.axes for d in a.dims))

    @property
    def element_bytes(self) -> int:
        """Bytes per index point (dtype bytes x lanes)."""
        return self.dtype.bytes * self.lanes

    def __str__(self) -> str:
        return f"{self.name}[{', '.join(map(str, self.axes))}]:{self.dtype.name}"


@dataclass(frozen=True)
class Op:
    """One operator: ``output = body(inputs)`` over the dims of its tensors.

    ``dtype`` is the compute type (the key into ``Compute.macs_per_cycle``); ``ops_per_point`` the
    vector operations per iteration point for non-mac bodies; ``state`` tensors are per-row
    running values kept in the innermost level (softmax max and denominator).
    """

    name: str
    kind: str
    output: Tensor
    inputs: tuple[Tensor, ...]
    dtype: DType
    state: tuple[Tensor, ...] = ()
    ops_per_point: int = 1
    attrs: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise WorkloadError(f"op {self.name}: kind {self.kind!r} unknown; valid: {', '.join(KINDS)}")
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "state", tuple(self.state))
        object.__setattr__(self, "dtype", _dtype(self.dtype))
        object.__setattr__(self, "attrs", MappingProxyType(dict(self.attrs)))
        if not self.inputs:
            raise WorkloadError(f"op {self.name}: needs at least one input")
        red = self.reduction_dims
        if red and self.kind in ("softmax", "elementwise"):
            raise WorkloadError(f"op {self.name}: a {self.kind} op reduces nothing, but dims "
                                f"{', '.join(red)} do not index its output {self.output.name}")
        if self.kind == "norm" and not red:
            raise WorkloadError(f"op {self.name}: a norm op needs a reduction dim")
        if self.kind == "softmax" and self.attrs.get("along") not in self.output.dims:
            raise WorkloadError(f"op {self.name}: softmax needs attrs['along'] naming a dim of "
                                f"{self.output.name} ({', '.join(self.output.dims)})")
        if "bias" in self.attrs:
            self._check_bias()

    def _check_bias(self) -> None:
        name = self.attrs["bias"]
        b = next((t for t in self.inputs if t.name == name), None)
        if self.kind != "mac" or b is None or len(self.inputs) < 2:
            raise WorkloadError(f"op {self.name}: attrs['bias'] = {name!r} must name an input of "
                                f"a mac op with at least one other input; inputs: "
                                + ", ".join(t.name for t in self.inputs))
        extra = [d for d in b.dims if d not in self.output.dims]
        if extra:
            raise WorkloadError(f"op {self.name}: bias {name} is indexed by {', '.join(extra)}, "
                                f"which do not index the output {self.output.name}; a bias is "
                                "added once per output element")

    def __reduce__(self):
        # pickled with a plain dict of attrs (a MappingProxyType is not picklable)
        return (type(self), (self.name, self.kind, self.output, self.inputs, self.dtype,
                             self.state, self.ops_per_point, dict(self.attrs)))

    @property
    def bias(self) -> Tensor | None:
        """The input added to a mac op's result (``attrs["bias"]``), or None."""
        name = self.attrs.get("bias")
        return next((t for t in self.inputs if t.name == name), None) if name else None

    @property
    def factors(self) -> tuple[Tensor, ...]:
        """The inputs a mac op multiplies (every input but its bias; all of another op's)."""
        b = self.attrs.get("bias")
        return tuple(t for t in self.inputs if t.name != b)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Inputs then output (state excluded)."""
        return self.inputs + (self.output,)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for t in self.tensors for d in t.dims))

    @property
    def reduction_dims(self) -> tuple[str, ...]:
        """Dims of the op that do not index its output (summed over)."""
        out = set(self.output.dims)
        return tuple(d for d in self.dims if d not in out)

    @property
    def accumulator(self) -> DType:
        """The type partial results accumulate in (int -> i32, 16-bit float -> f32)."""
        return _dtype(self.dtype.accumulator)


@dataclass(frozen=True)
class Chain:
    """A workload: ops over shared dims; a single operator is a chain of one op."""

    name: str
    dims: tuple[Dim, ...]
    ops: tuple[Op, ...]
    roles: tuple[tuple[str, str], ...] = ()
    """Which arch alignment key (GEMM roles ``m``, ``n``, ``k``) governs a dim, as
    ``(dim, role)`` pairs; a dim not listed uses its own name (so GEMM-named dims align as
    themselves) and ``role = ""`` means unaligned. conv2d maps C_out ``k`` -> ``n`` and C_in
    ``c`` -> ``c_in``, which aligns as ``k`` unless the arch names ``c_in`` (seed 003: "aligned
    to 8 for the channels"; :data:`ROLE_FALLBACK`), leaving batch and pixels free. (A role
    with ``_`` never collides with a dim name.)"""
    memory: str = "sum"
    """How a fused chain's buffers share a level: ``"sum"``, every live buffer at once (the
    default; the intermediate's panel beside every op's operands), or ``"max"``, Chimera's
    (seed 004's) ``MU = max over ops`` of the buffers each op touches (the ops' operands
    take turns in one memory). A single op is the same either way."""

    def __post_init__(self):
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "ops", tuple(self.ops))
        object.__setattr__(self, "roles", tuple((str(d), str(r)) for d, r in dict(self.roles).items()))
        names = [d.name for d in self.dims]
        for d, _ in self.roles:
            if d not in names:
                raise WorkloadError(f"workload {self.name}: roles name unknown dim {d!r}; dims: "
                                    f"{', '.join(names)}")
        if len(set(names)) != len(names):
            raise WorkloadError(f"workload {self.name}: duplicate dim names in {names}")
        if not self.ops:
            raise WorkloadError(f"workload {self.name}: has no ops")
        if self.memory not in ("sum", "max"):
            raise WorkloadError(f"workload {self.name}: memory={self.memory!r}; valid: sum (every "
                                "live buffer), max (Chimera's max over ops)")
        sizes = self.sizes
        by_name: dict[str, Tensor] = {}
        produced: dict[str, int] = {}
        for i, op in enumerate(self.ops):
            for t in op.tensors + op.state:
                for d in t.dims:
                    if d not in sizes:
                        raise WorkloadError(f"tensor {t.name} of op {op.name} is indexed by unknown "
                                            f"dim {d!r}; dims: {', '.join(names)}")
                if t.name in by_name and by_name[t.name] != t:
                    raise WorkloadError(f"two different tensors are named {t.name!r}")
                by_name[t.name] = t
                self._check_axes(t, sizes)
            for t in op.inputs:
                later = next((o for o in self.ops[i:] if o.output.name == t.name), None)
                if later is not None:
                    raise WorkloadError(f"op {op.name} reads {t.name} before op {later.name} produces it")
            if op.output.name in produced:
                raise WorkloadError(f"tensor {op.output.name} is produced by two ops")
            if any(op.output.name == t.name for t in op.inputs):
                raise WorkloadError(f"op {op.name} reads its own output {op.output.name}")
            produced[op.output.name] = i
        used = {d for op in self.ops for d in op.dims}
        unused = [n for n in names if n not in used]
        if unused:
            raise WorkloadError(f"workload {self.name}: dims {', '.join(unused)} index no tensor")
        for op in self.ops:
            for d in self.spine:
                if d not in op.dims:
                    raise WorkloadError(
                        f"op {op.name} does not use dim {d!r} of the fused intermediates "
                        f"({', '.join(t.name for t in self.intermediates)}); a fused chain shares "
                        f"those loops, so every op must index them")

    @staticmethod
    def _check_axes(t: Tensor, sizes: dict[str, int]) -> None:
        for ax, (a, n) in enumerate(zip(t.axes, t.shape)):
            if a.is_plain and n != sizes[a.dims[0]]:
                raise WorkloadError(f"tensor {t.name} axis {ax} is indexed by {a} of size "
                                    f"{sizes[a.dims[0]]} but its shape says {n}")
            lo = a.const
            hi = a.extent(sizes) - 1 + a.const
            if hi < 0 or lo > n - 1:
                raise WorkloadError(f"tensor {t.name} axis {ax}: index {a} spans [{lo}, {hi}], "
                                    f"outside the tensor's [0, {n - 1}]")

    def alignment(self, arch_alignment) -> dict[str, int]:
        """``{dim: multiple}`` the innermost tile of each dim must be a multiple of, from the
        arch's per-role alignment (``Arch.alignment``, see :attr:`roles`): a role's one
        multiple, or its multiple for the input dtype of the first op using the dim (else its
        ``"default"``); a role the arch does not name falls back per :data:`ROLE_FALLBACK`;
        1 for unaligned dims."""
        roles = dict(self.roles)
        out = {}
        for d in self.dims:
            role = roles.get(d.name, d.name)
            if role not in arch_alignment:
                role = ROLE_FALLBACK.get(role, role)
            rule = arch_alignment.get(role, 1)
            if not isinstance(rule, numbers.Integral):
                dt = next(op for op in self.ops if d.name in op.dims).dtype.name
                rule = rule.get(dt, rule.get("default", 1))
            out[d.name] = int(rule)
        return out

    @property
    def sizes(self) -> dict[str, int]:
        """``{dim: size}`` in declaration order."""
        return {d.name: d.size for d in self.dims}

    @cached_property   # asked per tile by the walker and the DMA check
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor (inputs, intermediates, outputs; no state) in order of first appearance."""
        seen: dict[str, Tensor] = {}
        for op in self.ops:
            for t in op.tensors:
                seen.setdefault(t.name, t)
        return tuple(seen.values())

    @cached_property
    def state(self) -> tuple[Tensor, ...]:
        return tuple(t for op in self.ops for t in op.state)

    @property
    def intermediates(self) -> tuple[Tensor, ...]:
        """Tensors produced by one op and read by a later one (fused, never moved)."""
        read = {t.name for op in self.ops for t in op.inputs}
        return tuple(op.output for op in self.ops if op.output.name in read)

    @property
    def spine(self) -> tuple[str, ...]:
        """Dims indexing an intermediate: loops over them are shared by every op of the chain."""
        return tuple(d for d in self.sizes if any(d in t.dims for t in self.intermediates))

    def producer(self, tensor: str) -> Op | None:
        return next((op for op in self.ops if op.output.name == tensor), None)

    def readers(self, tensor: str) -> tuple[Op, ...]:
        return tuple(op for op in self.ops if any(t.name == tensor for t in op.inputs))

    @cached_property
    def _by_name(self) -> dict[str, Tensor]:
        out: dict[str, Tensor] = {}
        for t in self.tensors + self.state:
            out.setdefault(t.name, t)
        return out

    def tensor(self, name: str) -> Tensor:
        t = self._by_name.get(name)
        if t is not None:
            return t
        raise WorkloadError(f"workload {self.name} has no tensor {name!r}; tensors: "
                            + ", ".join(t.name for t in self.tensors))

    @property
    def key(self) -> str:
        """Canonical text: dims, ops and every tensor with its dtype (equal for equal
        workloads; the solution store's and the network search's key)."""
        tensors = ", ".join(str(t) for t in self.tensors + self.state)
        return f"{self} | {tensors}"

    @property
    def macs(self) -> int:
        """Useful multiply-accumulates (mac ops) = product of each mac op's dim sizes."""
        return sum(_prod(self.sizes[d] for d in op.dims) for op in self.ops if op.kind == "mac")

    def __str__(self) -> str:
        dims = " ".join(f"{d.name}={d.size}" for d in self.dims)
        ops = "; ".join(f"{op.output} = {op.kind}({', '.join(t.name for t in op.factors)})"
                        + (f" + {op.bias.name}" if op.bias is not None else "")
                        + (f" acc {op.accumulator.name}" if op.kind == "mac"
                           and op.accumulator.name != op.output.dtype.name else "")
                        for op in self.ops)
        return f"{self.name}({dims}): {ops}"


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def as_workload(workload) -> "Chain":
    """``workload`` if it is a workload (:class:`Chain`), else one WorkloadError saying what
    to pass (a constructor's result such as ``tilewise.gemm(512, 768, 768)``)."""
    if isinstance(workload, Chain):
        return workload
    hint = (f"; call the constructor: tilewise.{workload}(...)" if isinstance(workload, str)
            else "")
    raise WorkloadError(f"workload must be a workload such as tilewise.gemm(512, 768, 768), "
                        f"got {type(workload).__name__} {workload!r}"[:300] + hint)
