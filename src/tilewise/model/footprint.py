"""Buffer sizes: the bytes a tensor's tile occupies at a memory level.

The byte rule itself is :func:`tilewise.model.rules.buffer_bytes` (over the buffer list of
:class:`tilewise.model.problem.Buffers`); this module decides which buffers exist and their
bytes per point.

A buffer is allocated at the full tile size (edge tiles are smaller but reuse it): along each
axis the halo extent ``sum(c*(t-1)) + 1`` of the tile, clipped to the extent the whole problem
spans (the padded tensor). The byte count is rounded up to the level's ``block_bytes`` and, when
the level is ``bank_granular``, to whole banks; a double-buffered tensor takes two buffers.
An op's output occupies its accumulator type in the innermost level (:func:`element_bytes`);
a softmax or elementwise result may overwrite its fused input (:func:`in_place`).
Footprint of a level = sum over the tensors it keeps (static allocation: buffers live for the
whole run, which is what lets a tile be reused across the iterations of a chain's shared loops).
Example: an i8 A tile of 64x64 in 8 KiB banks takes one bank, 8192 bytes; double-buffered 16384.
"""

from __future__ import annotations

from ..ir.workload import Tensor


def in_place(workload) -> frozenset[str]:
    """Fused intermediates computed in place of their input: the output of a softmax or
    elementwise op whose single intermediate input has the same indices and at least as many
    bytes per point (attention's P overwrites S). They take no buffer of their own."""
    inter = {t.name: t for t in workload.intermediates}
    out = set()
    for op in workload.ops:
        if op.kind in ("softmax", "elementwise") and op.output.name in inter:
            src = [t for t in op.inputs if t.name in inter]
            if (len(src) == 1 and src[0].axes == op.output.axes
                    and src[0].element_bytes >= op.output.element_bytes):
                out.add(op.output.name)
    return frozenset(out)


def partial_sum_bytes(t: Tensor, workload) -> int:
    """Bytes per index point of ``t`` while its reduction is incomplete: the accumulator type of
    the op producing it (i32 sums of an i8 GEMM, f32 of a bf16 one); its own type otherwise."""
    op = workload.producer(t.name)
    if op is not None and op.kind in ("mac", "norm"):
        return max(t.element_bytes, op.accumulator.bytes * t.lanes)
    return t.element_bytes


def element_bytes(t: Tensor, workload, innermost: bool) -> int:
    """Bytes per index point of ``t``'s buffer when its tiles are complete: an op's output is
    accumulated in the innermost level in its accumulator type, elsewhere stored as its own
    type (a level above holds partial sums, :func:`partial_sum_bytes`, only where the
    reduction is split above it: :func:`tilewise.model.rules.holds_partial_sums`)."""
    return partial_sum_bytes(t, workload) if innermost else t.element_bytes
