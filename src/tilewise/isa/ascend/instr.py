"""One Ascend-style vector instruction: op, element type, operands, mask, repeat, strides.

A repeat reads 8 blocks of 32 bytes per operand.  Element ``j`` of block ``b`` in repeat ``r`` of
an operand with byte address ``base``, block stride ``blk`` and repeat stride ``rep`` (both in
32-byte blocks) is at byte address::

    base + 32 * (r * rep + b * blk) + j * sizeof(T)

Field widths and defaults follow Ascend C's structs (``kernel_struct_binary.h`` /
``kernel_struct_unary.h`` of CANN 8.1; asc-devkit ``docs/api/context/BinaryRepeatParams.md``):

- :class:`BinaryRepeatParams` (Add, Sub, Mul, Div, Max, Min): six ``uint8_t`` strides, default
  ``{1, 1, 1, 8, 8, 8}`` = dstBlkStride, src0BlkStride, src1BlkStride, dstRepStride,
  src0RepStride, src1RepStride.
- :class:`UnaryRepeatParams` (Exp, Abs, Relu, Ln, Sqrt and the scalar ops Adds, Muls, Maxs,
  Mins): ``uint16_t`` dstBlkStride/srcBlkStride, ``uint8_t`` dstRepStride/srcRepStride, default
  ``{1, 1, 8, 8}``.
- :class:`DuplicateParams` (Duplicate): ``uint16_t dstBlockStride``, ``uint8_t dstRepeatStride``,
  default ``1, 8`` (the two trailing arguments of ``Duplicate``).

``repeat`` is ``uint8_t repeatTime`` (0..255; 0 does nothing).  A destination block stride of 0
is rejected (it would write 8 blocks onto one).  Every operand address must be 32-byte aligned
("LocalTensor的起始地址需要32字节对齐", Add.md).

Example (Ascend's published Add example, half data)::

    >>> i = VectorInstr("Add", "f16", dst=0, srcs=(1024, 2048), mask=128, repeat=4)
    >>> i.ascend_c()
    ['Add(dst[0], src0[0], src1[0], 128, 4, {1, 1, 1, 8, 8, 8});']
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError
from .mask import BLOCK_BYTES, BitMask, ContinuousMask, CounterMask, Mask, as_mask

_U8, _U16 = (0, 255, "uint8_t"), (0, 65535, "uint16_t")


def check_field(name: str, value: int, lo: int, hi: int, ctype: str) -> None:
    """Raise :class:`ISAError` unless ``value`` is an integer in ``lo..hi`` (the C field
    ``name`` of type ``ctype``: ``uint8_t``, ``12 bits``), naming the value and the range."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not lo <= value <= hi:
        raise ISAError(f"{name} = {value!r} out of range: {ctype}, valid {lo}..{hi}")


@dataclass(frozen=True)
class BinaryRepeatParams:
    """Strides (32-byte blocks) of a two-source instruction; all ``uint8_t``."""

    dst_blk_stride: int = 1
    src0_blk_stride: int = 1
    src1_blk_stride: int = 1
    dst_rep_stride: int = 8
    src0_rep_stride: int = 8
    src1_rep_stride: int = 8

    _ASCEND = ("dstBlkStride", "src0BlkStride", "src1BlkStride",
               "dstRepStride", "src0RepStride", "src1RepStride")

    def __post_init__(self) -> None:
        for f, name in zip(fields(self), self._ASCEND):
            check_field(f"BinaryRepeatParams.{name}", getattr(self, f.name), *_U8)

    def strides(self) -> list[tuple[int, int]]:
        """``[(blk, rep)]`` for dst, src0, src1."""
        return [(self.dst_blk_stride, self.dst_rep_stride),
                (self.src0_blk_stride, self.src0_rep_stride),
                (self.src1_blk_stride, self.src1_rep_stride)]

    def ascend_c(self) -> str:
        return "{" + ", ".join(str(getattr(self, f.name)) for f in fields(self)) + "}"


@dataclass(frozen=True)
class UnaryRepeatParams:
    """Strides (32-byte blocks) of a one-source instruction: block strides ``uint16_t``,
    repeat strides ``uint8_t``."""

    dst_blk_stride: int = 1
    src_blk_stride: int = 1
    dst_rep_stride: int = 8
    src_rep_stride: int = 8

    def __post_init__(self) -> None:
        check_field("UnaryRepeatParams.dstBlkStride", self.dst_blk_stride, *_U16)
        check_field("UnaryRepeatParams.srcBlkStride", self.src_blk_stride, *_U16)
        check_field("UnaryRepeatParams.dstRepStride", self.dst_rep_stride, *_U8)
        check_field("UnaryRepeatParams.srcRepStride", self.src_rep_stride, *_U8)

    def strides(self) -> list[tuple[int, int]]:
        """``[(blk, rep)]`` for dst, src."""
        return [(self.dst_blk_stride, self.dst_rep_stride),
                (self.src_blk_stride, self.src_rep_stride)]

    def ascend_c(self) -> str:
        return (f"{{{self.dst_blk_stride}, {self.src_blk_stride}, {self.dst_rep_stride}, "
                f"{self.src_rep_stride}}}")


@dataclass(frozen=True)
class DuplicateParams:
    """Strides of ``Duplicate``: ``uint16_t dstBlockStride``, ``uint8_t dstRepeatStride``."""

    dst_blk_stride: int = 1
    dst_rep_stride: int = 8

    def __post_init__(self) -> None:
        check_field("Duplicate.dstBlockStride", self.dst_blk_stride, *_U16)
        check_field("Duplicate.dstRepeatStride", self.dst_rep_stride, *_U8)

    def strides(self) -> list[tuple[int, int]]:
        return [(self.dst_blk_stride, self.dst_rep_stride)]

    def ascend_c(self) -> str:
        return f"{self.dst_blk_stride}, {self.dst_rep_stride}"


@dataclass(frozen=True)
class OpSpec:
    """An op: ``kind`` is ``binary`` (dst, src0, src1), ``unary`` (dst, src), ``scalar``
    (dst, src, scalar) or ``duplicate`` (dst, scalar); ``dtypes`` the supported element types
    (Atlas A2/A3, from the ``SupportType<...>`` checks of CANN 8.1's dav_c220 implementation)."""

    name: str
    kind: str
    dtypes: tuple[str, ...]
    fn: object = field(repr=False)


_ARITH = ("f16", "f32", "i16", "i32")
_FLOAT = ("f16", "f32")
OPS: dict[str, OpSpec] = {o.name: o for o in [
    OpSpec("Add", "binary", _ARITH, np.add),
    OpSpec("Sub", "binary", _ARITH, np.subtract),
    OpSpec("Mul", "binary", _ARITH, np.multiply),
    OpSpec("Div", "binary", _FLOAT, np.divide),
    OpSpec("Max", "binary", _ARITH, np.maximum),
    OpSpec("Min", "binary", _ARITH, np.minimum),
    OpSpec("Adds", "scalar", _ARITH, np.add),
    OpSpec("Muls", "scalar", _ARITH, np.multiply),
    OpSpec("Maxs", "scalar", _ARITH, np.maximum),
    OpSpec("Mins", "scalar", _ARITH, np.minimum),
    OpSpec("Exp", "unary", _FLOAT, np.exp),
    OpSpec("Ln", "unary", _FLOAT, np.log),
    OpSpec("Sqrt", "unary", _FLOAT, np.sqrt),
    OpSpec("Abs", "unary", _FLOAT, np.abs),
    OpSpec("Relu", "unary", ("f16", "f32", "i32"), lambda x: np.maximum(x, x.dtype.type(0))),
    OpSpec("Duplicate", "duplicate", ("f16", "bf16", "i16", "u16", "i32", "u32", "f32"), None),
]}
_OPS_LOWER = {k.lower(): k for k in OPS}
_N_SRCS = {"binary": 2, "unary": 1, "scalar": 1, "duplicate": 0}
_PARAMS = {"binary": BinaryRepeatParams, "unary": UnaryRepeatParams,
           "scalar": UnaryRepeatParams, "duplicate": DuplicateParams}
C_TYPES = {"f16": "half", "bf16": "bfloat16_t", "f32": "float", "i16": "int16_t",
           "u16": "uint16_t", "i32": "int32_t", "u32": "uint32_t"}


def op_spec(name: str) -> OpSpec:
    """Look up an op by name (case-insensitive); :class:`ISAError` lists the known ops."""
    key = _OPS_LOWER.get(str(name).lower())
    if key is None:
        raise ISAError(f"unknown vector op {name!r}; valid: {', '.join(OPS)}")
    return OPS[key]


@dataclass(frozen=True)
class Operand:
    """A LocalTensor operand: ``name[offset]`` where the tensor starts at UB byte ``tensor``.

    ``offset`` is in elements; the operand's start address ``tensor + offset * sizeof(T)`` must
    be 32-byte aligned.
    """

    name: str
    tensor: int
    offset: int = 0

    def addr(self, itemsize: int) -> int:
        """Start byte address in the unified buffer."""
        return self.tensor + self.offset * itemsize

    def ascend_c(self) -> str:
        return f"{self.name}[{self.offset}]"


def _operand(value: "Operand | int", name: str) -> Operand:
    if isinstance(value, Operand):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return Operand(name, int(value))
    raise ISAError(f"operand {name} = {value!r} is neither a UB byte address nor an Operand")


@dataclass(frozen=True)
class VectorInstr:
    """One vector instruction (Ascend C "tensor high-dimensional split" form, level 0).

    ``dst``/``srcs`` are :class:`Operand` or plain UB byte addresses; ``mask`` an int
    (continuous), a ``(low, high)`` pair (bitwise) or a mask object; ``repeat`` 0..255 (ignored
    in counter mode); ``params`` defaults to the op's repeat-params struct defaults; ``scalar``
    is the scalar of Adds/Muls/Maxs/Mins/Duplicate.
    """

    op: str
    dtype: DType
    dst: Operand
    srcs: tuple[Operand, ...] = ()
    mask: Mask = ContinuousMask(128)
    repeat: int = 1
    params: "BinaryRepeatParams | UnaryRepeatParams | DuplicateParams | None" = None
    scalar: "int | float | None" = None

    def __post_init__(self) -> None:
        spec = op_spec(self.op)
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        set_("op", spec.name)
        d = _dtype(self.dtype)
        set_("dtype", d)
        if d.name not in spec.dtypes:
            raise ISAError(
                f"{spec.name} does not support element type {d.name}; supported: "
                f"{', '.join(spec.dtypes)}"
            )
        n_src = _N_SRCS[spec.kind]
        srcs = tuple(self.srcs)
        if len(srcs) != n_src:
            raise ISAError(f"{spec.name} takes {n_src} source operand(s), got {len(srcs)}")
        names = ["src0", "src1"] if n_src == 2 else ["src"]
        set_("dst", _operand(self.dst, "dst"))
        set_("srcs", tuple(_operand(s, n) for s, n in zip(srcs, names)))
        set_("mask", as_mask(self.mask))
        self.mask.validate(d)
        if not isinstance(self.repeat, (int, np.integer)) or isinstance(self.repeat, bool) \
                or not 0 <= self.repeat <= 255:
            raise ISAError(f"repeatTime = {self.repeat!r} out of range: uint8_t, valid 0..255")
        want = _PARAMS[spec.kind]
        if self.params is None:
            set_("params", want())
        elif not isinstance(self.params, want):
            raise ISAError(f"{spec.name} takes {want.__name__}, got {type(self.params).__name__}")
        if self.params.strides()[0][0] == 0:
            raise ISAError("dstBlkStride = 0 is invalid: the 8 destination blocks of a repeat "
                           "would overlap; valid 1..max")
        if spec.kind in ("scalar", "duplicate"):
            if self.scalar is None:
                raise ISAError(f"{spec.name} needs a scalar value")
            set_("scalar", self._cast_scalar(self.scalar))
        elif self.scalar is not None:
            raise ISAError(f"{spec.name} takes no scalar, got {self.scalar!r}")
        for role, opnd in self.operands():
            addr = opnd.addr(d.bytes)
            if addr < 0 or addr % BLOCK_BYTES:
                raise ISAError(
                    f"{spec.name} operand {role} = {opnd.ascend_c()} starts at UB byte {addr}, "
                    f"which is not 32-byte aligned (LocalTensor start addresses must be)"
                )

    def _cast_scalar(self, value):
        d = self.dtype
        if d.is_integer:
            info = np.iinfo(d.numpy)
            if not float(value).is_integer() or not info.min <= int(value) <= info.max:
                raise ISAError(f"scalar {value!r} is not representable in {d.name}: valid integers "
                               f"{info.min}..{info.max}")
            return int(value)
        with np.errstate(over="ignore"):
            cast = np.asarray(value, dtype=d.numpy)
        if np.isfinite(float(value)) and not np.isfinite(float(cast)):
            raise ISAError(f"scalar {value!r} overflows {d.name}")
        return float(value)

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    @property
    def counter(self) -> bool:
        """True when the instruction runs in counter mode."""
        return isinstance(self.mask, CounterMask)

    def operands(self) -> list[tuple[str, Operand]]:
        """``[(role, operand)]`` with role ``dst``, ``src0``/``src1`` or ``src``."""
        roles = ["src0", "src1"] if len(self.srcs) == 2 else ["src"]
        return [("dst", self.dst)] + list(zip(roles, self.srcs))

    def strides(self) -> list[tuple[int, int]]:
        """``[(blk, rep)]`` per operand, in :meth:`operands` order (32-byte blocks)."""
        return self.params.strides()

    def repeats(self) -> int:
        """Repeats executed: ``repeat`` in normal mode, ``ceil(count / lanes)`` in counter."""
        return self.mask.repeats(self.dtype) if self.counter else self.repeat

    def call(self, mask_arg: str) -> str:
        """The Ascend C call with ``mask_arg`` as its mask argument."""
        ctype = C_TYPES[self.dtype.name]
        head = f"{self.op}<{ctype}, false>" if self.counter else self.op
        repeat = 1 if self.counter else self.repeat
        ops = [o.ascend_c() for _, o in self.operands()]
        if self.scalar is not None:
            lit = f"static_cast<{ctype}>({self.scalar!r})"
            ops = ops[:1] + [lit] if self.spec.kind == "duplicate" else ops + [lit]
        return f"{head}({', '.join(ops)}, {mask_arg}, {repeat}, {self.params.ascend_c()});"

    def ascend_c(self, mask_name: str = "mask") -> list[str]:
        """Ascend C source lines for this instruction alone, including mask-mode setup."""
        if isinstance(self.mask, ContinuousMask):
            return [self.call(str(self.mask.n))]
        if isinstance(self.mask, BitMask):
            return [f"uint64_t {mask_name}[2] = {self.mask.ascend_c()};", self.call(mask_name)]
        ctype = C_TYPES[self.dtype.name]
        return ["SetMaskCount();",
                f"SetVectorMask<{ctype}, MaskMode::COUNTER>({self.mask.count});",
                self.call("MASK_PLACEHOLDER"),
                "SetMaskNorm();",
                "ResetMask();"]


def to_ascend_c(instrs: "list[VectorInstr]") -> str:
    """Ascend C text of a program: consecutive counter-mode instructions share one
    ``SetMaskCount()`` ... ``SetMaskNorm(); ResetMask();`` bracket; bitwise masks are declared
    as ``uint64_t maskK[2]``."""
    lines: list[str] = []
    in_counter, nbit = False, 0
    for ins in instrs:
        if ins.counter and not in_counter:
            lines.append("SetMaskCount();")
            in_counter = True
        if not ins.counter and in_counter:
            lines += ["SetMaskNorm();", "ResetMask();"]
            in_counter = False
        if ins.counter:
            lines += ins.ascend_c()[1:3]
        elif isinstance(ins.mask, BitMask):
            lines += ins.ascend_c(mask_name=f"mask{nbit}")
            nbit += 1
        else:
            lines += ins.ascend_c()
    if in_counter:
        lines += ["SetMaskNorm();", "ResetMask();"]
    return "\n".join(lines)
