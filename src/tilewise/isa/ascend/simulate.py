"""Exact simulation of vector instructions on a byte buffer (the unified buffer, UB).

``simulate(instrs, ub)`` executes each :class:`~.instr.VectorInstr` in order on ``ub``, a 1-D
``uint8`` numpy array (192 KiB of zeros by default), in place, and returns it.  Per instruction:

1. every active lane's element address is computed with the documented formula
   ``base + 32 * (r * repStride + b * blkStride) + j * sizeof(T)`` (normal mode: repeats
   ``0..repeat-1`` and the mask's lanes; counter mode: the first ``count`` lanes in repeat-major
   order);
2. every active element must lie inside the buffer, else :class:`ISAError`;
3. Ascend C's address-overlap rules are checked (asc-devkit "通用地址重叠约束"): within one repeat
   a source either coincides lane for lane with the destination (in place) or does not touch it;
   the destination of an earlier repeat must not be a source of a later repeat.  Violations raise
   :class:`ISAError`.  A destination written by several repeats (repStride < blocks of a repeat)
   keeps the last repeat's value;
4. sources are read, the op is applied with numpy in the element type (integer ops wrap modulo
   2**bits; float ops round as numpy does), and active destination lanes are written.

Masked-off lanes are left untouched.  With ``poison=True`` the masked-off destination lanes of
every executed repeat are overwritten with :func:`poison_value` (NaN, or the byte pattern 0x5A
for integers), modelling them as undefined, so a test can prove no result depends on them; the
poison of an instruction is written before its active lanes (an element that one repeat masks
off and another repeat of the same instruction writes ends with the written value).

Example (the seed's int16 example, mask 64 of 128 lanes)::

    >>> ub = np.zeros(1024, np.uint8); v = ub.view(np.int16)
    >>> v[:128] = v[128:256] = np.arange(1, 129)
    >>> _ = simulate([VectorInstr("Add", "i16", dst=512, srcs=(0, 256), mask=64)], ub)
    >>> ub[512:].view(np.int16)[:66].tolist()[-3:]
    [128, 0, 0]
"""

from __future__ import annotations

import numpy as np

from ...dtypes import DType
from ...errors import ISAError
from .instr import VectorInstr
from .mask import BLOCK_BYTES, CounterMask, lanes

UB_BYTES = 192 * 1024
"""Default unified-buffer size in bytes (192 KiB)."""


def poison_value(dt: DType):
    """The value written into undefined lanes: NaN for floats, bytes 0x5A.. for integers."""
    if dt.kind == "float":
        return dt.numpy.type(np.nan)
    return np.frombuffer(b"\x5a" * dt.bytes, dtype=dt.numpy)[0]


def lane_addresses(instr: VectorInstr) -> tuple[np.ndarray, np.ndarray]:
    """Byte addresses of every lane of every executed repeat, and which lanes are active.

    Returns ``(addr, active)``: ``addr`` has shape ``(n_operands, repeats, lanes)`` (operands in
    :meth:`VectorInstr.operands` order), ``active`` has shape ``(repeats, lanes)``.
    """
    d = instr.dtype
    n_lanes, per_block = lanes(d), BLOCK_BYTES // d.bytes
    reps = instr.repeats()
    lane = np.arange(n_lanes)
    r = np.arange(reps)[:, None]
    addr = np.empty((len(instr.operands()), reps, n_lanes), dtype=np.int64)
    for k, ((_, opnd), (blk, rep)) in enumerate(zip(instr.operands(), instr.strides())):
        addr[k] = (opnd.addr(d.bytes) + BLOCK_BYTES * (r * rep + (lane // per_block) * blk)
                   + (lane % per_block) * d.bytes)
    if isinstance(instr.mask, CounterMask):
        active = (r * n_lanes + lane) < instr.mask.count
    else:
        active = np.broadcast_to(instr.mask.lane_bits(d), (reps, n_lanes))
    return addr, active


def _check_bounds(k: int, instr: VectorInstr, addr: np.ndarray, active: np.ndarray, size: int):
    for (role, opnd), a in zip(instr.operands(), addr):
        used = a[active]
        if used.size and (used.min() < 0 or used.max() + instr.dtype.bytes > size):
            raise ISAError(
                f"instruction #{k} ({instr.op}): {role} {opnd.ascend_c()} touches UB bytes "
                f"{int(used.min())}..{int(used.max()) + instr.dtype.bytes - 1}, outside the "
                f"unified buffer of {size} bytes"
            )


def _check_overlap(k: int, instr: VectorInstr, addr: np.ndarray, active: np.ndarray) -> None:
    reps = np.broadcast_to(np.arange(active.shape[0])[:, None], active.shape)[active]
    dst = addr[0][active]
    order = np.argsort(dst, kind="stable")
    sorted_dst = dst[order]
    for (role, _), src_full in zip(instr.operands()[1:], addr[1:]):
        src = src_full[active]
        lo = np.searchsorted(sorted_dst, src, "left")
        hi = np.searchsorted(sorted_dst, src, "right")
        hit = np.nonzero(hi > lo)[0]
        if hit.size == 0:
            continue
        counts = (hi - lo)[hit]
        src_pos = np.repeat(hit, counts)
        starts = np.repeat(lo[hit] - np.cumsum(counts) + counts, counts)
        dst_pos = order[starts + np.arange(counts.sum())]
        bad = (dst_pos != src_pos) & (reps[dst_pos] <= reps[src_pos])
        if bad.any():
            i = int(np.argmax(bad))
            j, s = int(dst_pos[i]), int(src_pos[i])
            raise ISAError(
                f"instruction #{k} ({instr.op}): dst lane of repeat {int(reps[j])} overlaps {role} "
                f"lane of repeat {int(reps[s])} at UB byte {int(dst[j])}; Ascend allows a source "
                "to overlap the destination only lane for lane within one repeat (100% in place), "
                "never an earlier repeat's destination"
            )
        inplace = np.bincount(reps[dst == src], minlength=active.shape[0])
        total = np.bincount(reps, minlength=active.shape[0])
        partial = np.nonzero((inplace > 0) & (inplace < total))[0]
        if partial.size:
            raise ISAError(
                f"instruction #{k} ({instr.op}): {role} overlaps dst only partly in repeat "
                f"{int(partial[0])}; within one repeat source and destination must coincide "
                "100% or not at all"
            )


def execute(k: int, instr: VectorInstr, ub: np.ndarray, poison: bool = False) -> None:
    """Execute one instruction on ``ub`` in place (``k`` numbers it in error messages)."""
    if instr.repeats() == 0:
        return
    d = instr.dtype
    addr, active = lane_addresses(instr)
    _check_bounds(k, instr, addr, active, ub.size)
    _check_overlap(k, instr, addr, active)
    view = ub.view(d.numpy)
    idx = addr[:, active] // d.bytes
    if instr.spec.kind == "duplicate":
        result = np.full(idx.shape[1], instr.scalar, dtype=d.numpy)
    else:
        args = [view[i] for i in idx[1:]]
        if instr.scalar is not None:
            args.append(d.numpy.type(instr.scalar))
        with np.errstate(all="ignore"):
            result = np.asarray(instr.spec.fn(*args), dtype=d.numpy)
    dst = idx[0]
    if np.unique(dst).size < dst.size:  # several repeats write one element: the last one wins
        _, last_rev = np.unique(dst[::-1], return_index=True)
        keep = dst.size - 1 - last_rev
        dst, result = dst[keep], result[keep]
    if poison:
        off = addr[0][~active] // d.bytes
        off = off[(off >= 0) & (off < view.size)]
        view[off] = poison_value(d)
    view[dst] = result


def simulate(instrs: "list[VectorInstr] | VectorInstr", ub: "np.ndarray | None" = None, *,
             size: int = UB_BYTES, poison: bool = False) -> np.ndarray:
    """Run ``instrs`` in order on ``ub`` (a 1-D uint8 array, modified in place; default
    ``size`` zero bytes) and return it.  See the module docstring for the exact semantics."""
    if ub is None:
        ub = np.zeros(size, dtype=np.uint8)
    if not isinstance(ub, np.ndarray) or ub.dtype != np.uint8 or ub.ndim != 1:
        raise ISAError("the unified buffer must be a 1-D numpy uint8 array")
    if ub.size % BLOCK_BYTES:
        raise ISAError(f"unified buffer size {ub.size} bytes is not a multiple of 32")
    if isinstance(instrs, VectorInstr):
        instrs = [instrs]
    for k, instr in enumerate(instrs):
        execute(k, instr, ub, poison)
    return ub
