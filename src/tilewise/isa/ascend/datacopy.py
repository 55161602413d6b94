"""DataCopy between global memory (GM) and the unified buffer (UB), and tiles as DataCopy calls.

``DataCopy(dst, src, DataCopyParams{blockCount, blockLen, srcStride, dstStride})`` moves
``blockCount`` bursts of ``blockLen`` 32-byte blocks; burst ``i`` reads from
``src + i * (blockLen + srcStride) * 32`` and writes to ``dst + i * (blockLen + dstStride) * 32``
(strides are the *gap* between the end of one burst and the start of the next).  All four
fields are ``uint16_t``; ``blockCount`` must be in ``[1, 4095]`` (12 bits) and ``blockLen`` in
``[1, 65535]`` (CANN 8.1 ``CheckDataCopyParams``; ``kernel_struct_data_copy.h``).  UB addresses
must be 32-byte aligned; GM addresses need no alignment.  DataCopy moves whole 32-byte blocks.

For rows whose length is not a multiple of 32 bytes Ascend has ``DataCopyPad`` with
``DataCopyExtParams{blockCount, blockLen, srcStride, dstStride}``: ``blockLen`` is in **bytes**
(``uint32_t``), the GM-side stride is a gap in bytes and the UB-side stride a gap in 32-byte
blocks; each burst occupies ``ceil(blockLen / 32)`` blocks in the UB.  GM->UB fills the rest of
the last block with ``paddingValue`` when ``isPad`` is set (``DataCopyPadExtParams``), otherwise
leaves it undefined (simulated as the poison byte 0x5A); UB->GM writes exactly ``blockLen``
bytes per burst.

:func:`tile_copies` turns a tile of a row-major GM tensor into the fewest such calls (one call
when the tile's rows can be bursts of one call, one call per row otherwise, splitting at 4095
bursts), and :func:`simulate_copies` executes calls on byte buffers.

Example: a 64x64 f16 tile at (0, 64) of a 128x256 GM tensor into a UB tile with a 64-element
pitch is ``DataCopy(ub[0], gm[64], {64, 4, 12, 0});`` (64 rows of 128 bytes; GM gap 384 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dtypes import DType, dtype as _dtype
from ...errors import ISAError
from .instr import check_field
from .mask import BLOCK_BYTES
from .simulate import UB_BYTES, poison_value

MAX_BLOCK_COUNT = 4095
_U16, _U32 = 65535, (1 << 32) - 1
DATACOPYPAD_BLOCKLEN_MAX = 2097151
"""``DataCopyPad``'s ``blockLen`` limit in bytes (21 bits, CANN 8.1 ``CheckDataCopyPadParams``)."""


@dataclass(frozen=True)
class DataCopyParams:
    """``DataCopyParams``: ``block_count`` bursts of ``block_len`` 32-byte blocks; strides are
    gaps in 32-byte blocks."""

    block_count: int
    block_len: int
    src_stride: int = 0
    dst_stride: int = 0

    def __post_init__(self) -> None:
        check_field("DataCopyParams.blockCount", self.block_count, 1, MAX_BLOCK_COUNT, "12 bits")
        check_field("DataCopyParams.blockLen", self.block_len, 1, _U16, "uint16_t")
        check_field("DataCopyParams.srcStride", self.src_stride, 0, _U16, "uint16_t")
        check_field("DataCopyParams.dstStride", self.dst_stride, 0, _U16, "uint16_t")

    def ascend_c(self) -> str:
        return f"{{{self.block_count}, {self.block_len}, {self.src_stride}, {self.dst_stride}}}"


@dataclass(frozen=True)
class DataCopyExtParams:
    """``DataCopyExtParams`` of ``DataCopyPad``: ``block_len`` in bytes; the GM-side stride is a
    gap in bytes, the UB-side stride a gap in 32-byte blocks."""

    block_count: int
    block_len: int
    src_stride: int = 0
    dst_stride: int = 0

    def __post_init__(self) -> None:
        check_field("DataCopyExtParams.blockCount", self.block_count, 1, MAX_BLOCK_COUNT, "12 bits")
        check_field("DataCopyExtParams.blockLen", self.block_len, 1, DATACOPYPAD_BLOCKLEN_MAX,
               "21 bits")
        check_field("DataCopyExtParams.srcStride", self.src_stride, 0, _U32, "uint32_t")
        check_field("DataCopyExtParams.dstStride", self.dst_stride, 0, _U32, "uint32_t")

    def ascend_c(self) -> str:
        return (f"{{{self.block_count}, {self.block_len}, {self.src_stride}, "
                f"{self.dst_stride}, 0}}")


@dataclass(frozen=True)
class CopyCall:
    """One DataCopy / DataCopyPad call.  ``to_ub``: GM->UB (else UB->GM); ``gm``/``ub`` are byte
    addresses; ``pad`` is the padding value of a GM->UB DataCopyPad (None: not padded)."""

    to_ub: bool
    dtype: DType
    gm: int
    ub: int
    params: "DataCopyParams | DataCopyExtParams"
    pad: "int | float | None" = None

    def __post_init__(self) -> None:
        if self.ub % BLOCK_BYTES:
            raise ISAError(f"UB address {self.ub} is not 32-byte aligned (DataCopy requires it)")
        if self.gm < 0 or self.ub < 0:
            raise ISAError(f"negative address gm={self.gm} ub={self.ub}")

    @property
    def padded(self) -> bool:
        return isinstance(self.params, DataCopyExtParams)

    def bursts(self) -> list[tuple[int, int, int]]:
        """``[(gm_byte, ub_byte, n_bytes)]`` of each burst (``n_bytes`` of data moved)."""
        p, out = self.params, []
        if not self.padded:
            n = p.block_len * BLOCK_BYTES
            gm_step = n + BLOCK_BYTES * (p.src_stride if self.to_ub else p.dst_stride)
            ub_step = n + BLOCK_BYTES * (p.dst_stride if self.to_ub else p.src_stride)
        else:
            n = p.block_len
            ub_len = -(-n // BLOCK_BYTES) * BLOCK_BYTES
            gm_step = n + (p.src_stride if self.to_ub else p.dst_stride)
            ub_step = ub_len + BLOCK_BYTES * (p.dst_stride if self.to_ub else p.src_stride)
        for i in range(p.block_count):
            out.append((self.gm + i * gm_step, self.ub + i * ub_step, n))
        return out

    def ascend_c(self) -> str:
        e = self.dtype.bytes
        gm, ub = f"gm[{self.gm // e}]", f"ub[{self.ub // e}]"
        dst, src = (ub, gm) if self.to_ub else (gm, ub)
        if not self.padded:
            return f"DataCopy({dst}, {src}, {self.params.ascend_c()});"
        if not self.to_ub:
            return f"DataCopyPad({dst}, {src}, {self.params.ascend_c()});"
        pad = "{false, 0, 0, 0}" if self.pad is None else f"{{true, 0, 0, {self.pad!r}}}"
        return f"DataCopyPad({dst}, {src}, {self.params.ascend_c()}, {pad});"


@dataclass(frozen=True)
class GMTensor:
    """A row-major 2-D tensor in global memory: ``shape`` (rows, cols) elements starting at GM
    byte ``base``."""

    shape: tuple[int, int]
    dtype: DType
    base: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _dtype(self.dtype))
        _check_ints("GMTensor", shape=self.shape, base=(self.base,))
        if len(self.shape) != 2 or min(self.shape) < 1 or self.base < 0:
            raise ISAError(f"GMTensor shape {self.shape} must be 2 positive sizes and base "
                           f"{self.base} >= 0")


@dataclass(frozen=True)
class UBTile:
    """A tile of a :class:`GMTensor`: rows ``origin[0]..+size[0]``, cols ``origin[1]..+size[1]``,
    held in the UB at byte ``ub_base`` with ``ub_pitch`` elements per row (default the tile
    width rounded up to 32 bytes)."""

    origin: tuple[int, int]
    size: tuple[int, int]
    ub_base: int
    ub_pitch: "int | None" = None

    def __post_init__(self) -> None:
        _check_ints("UBTile", origin=self.origin, size=self.size, ub_base=(self.ub_base,),
                    ub_pitch=() if self.ub_pitch is None else (self.ub_pitch,))


def _check_ints(owner: str, **fields) -> None:
    """ISAError naming the first field holding a bool, a float or anything but integers."""
    for name, values in fields.items():
        try:
            bad = [v for v in values if isinstance(v, (bool, np.bool_))
                   or not isinstance(v, (int, np.integer))]
        except TypeError:
            bad = [values]
        if bad:
            raise ISAError(f"{owner}.{name} = {values!r}: {bad[0]!r} is not an integer")


def _ub_pitch(tile: UBTile, dt: DType) -> int:
    if tile.ub_pitch is not None:
        return tile.ub_pitch
    per_block = BLOCK_BYTES // dt.bytes
    return -(-tile.size[1] // per_block) * per_block


def tile_copies(gm: GMTensor, tile: UBTile, *, to_ub: bool = True, pad: bool = True,
                pad_value: "int | float | None" = None, ub_bytes: int = UB_BYTES) -> list[CopyCall]:
    """DataCopy calls moving ``tile`` between ``gm`` and the UB (GM->UB if ``to_ub``), the UB
    ``ub_bytes`` large (the tile must lie inside it, else :class:`ISAError`).

    Uses ``DataCopy`` when a tile row is a whole number of 32-byte blocks, else ``DataCopyPad``
    (or raises :class:`ISAError` naming the misalignment when ``pad=False``).  One call covers
    all rows when the GM and UB row gaps are whole blocks (DataCopy) and fit the stride fields,
    otherwise one call per row; at most 4095 rows per call.
    """
    dt = gm.dtype
    (r0, c0), (tr, tc) = tile.origin, tile.size
    rows, cols = gm.shape
    if tr < 1 or tc < 1 or r0 < 0 or c0 < 0 or r0 + tr > rows or c0 + tc > cols:
        raise ISAError(f"tile rows {r0}..{r0 + tr - 1}, cols {c0}..{c0 + tc - 1} is not inside "
                       f"the {rows}x{cols} GM tensor")
    pitch = _ub_pitch(tile, dt)
    e = dt.bytes
    row_bytes = tc * e
    ub_row_bytes = pitch * e
    if tile.ub_base < 0:
        raise ISAError(f"ub_base {tile.ub_base} bytes is negative; the UB starts at byte 0")
    if ub_row_bytes % BLOCK_BYTES or tile.ub_base % BLOCK_BYTES:
        raise ISAError(f"UB rows must start 32-byte aligned: ub_base {tile.ub_base} bytes, "
                       f"ub_pitch {pitch} elements = {ub_row_bytes} bytes")
    if pitch < tc:
        raise ISAError(f"ub_pitch {pitch} is smaller than the tile width {tc}")
    ub_end = tile.ub_base + ((tr - 1) * pitch + tc) * e
    if ub_end > ub_bytes:
        raise ISAError(f"a {tr}x{tc} {dt.name} tile at UB byte {tile.ub_base} (pitch {pitch}) ends "
                       f"at byte {ub_end}, past the unified buffer of {ub_bytes} bytes; copy a "
                       "smaller tile")
    gm_gap = (cols - tc) * e
    gm0 = gm.base + (r0 * cols + c0) * e
    aligned = row_bytes % BLOCK_BYTES == 0
    if not aligned and not pad:
        raise ISAError(f"tile rows are {tc} x {e} = {row_bytes} bytes, not a multiple of 32: "
                       "DataCopy moves whole 32-byte blocks; use DataCopyPad (pad=True)")
    ub_gap_blocks = (ub_row_bytes - -(-row_bytes // BLOCK_BYTES) * BLOCK_BYTES) // BLOCK_BYTES
    if aligned:
        one_call = gm_gap % BLOCK_BYTES == 0 and gm_gap // BLOCK_BYTES <= _U16 \
            and ub_gap_blocks <= _U16 and row_bytes // BLOCK_BYTES <= _U16
        if gm_gap == 0 and ub_gap_blocks == 0 and tr * row_bytes // BLOCK_BYTES <= _U16:
            return [CopyCall(to_ub, dt, gm0, tile.ub_base,
                             DataCopyParams(1, tr * row_bytes // BLOCK_BYTES))]
    else:
        one_call = gm_gap <= _U32 and row_bytes <= DATACOPYPAD_BLOCKLEN_MAX
        if row_bytes > DATACOPYPAD_BLOCKLEN_MAX:
            raise ISAError(f"tile rows of {row_bytes} bytes exceed DataCopyPad's blockLen limit "
                           f"{DATACOPYPAD_BLOCKLEN_MAX}")
    step = MAX_BLOCK_COUNT if one_call else 1
    if aligned and row_bytes // BLOCK_BYTES > _U16:
        raise ISAError(f"tile rows of {row_bytes // BLOCK_BYTES} blocks exceed DataCopy's "
                       f"blockLen limit {_U16}")
    calls = []
    for r in range(0, tr, step):
        n = min(step, tr - r)
        gm_gap_f = gm_gap if one_call else 0
        if aligned:
            g, u = gm_gap_f // BLOCK_BYTES, ub_gap_blocks
            params = DataCopyParams(n, row_bytes // BLOCK_BYTES, *((g, u) if to_ub else (u, g)))
        else:
            g, u = gm_gap_f, ub_gap_blocks
            params = DataCopyExtParams(n, row_bytes, *((g, u) if to_ub else (u, g)))
        calls.append(CopyCall(to_ub, dt, gm0 + r * cols * e, tile.ub_base + r * ub_row_bytes,
                              params, pad_value if (to_ub and not aligned) else None))
    return calls


def simulate_copies(calls: "list[CopyCall]", gm: np.ndarray, ub: np.ndarray) -> None:
    """Execute ``calls`` on the byte buffers ``gm`` and ``ub`` (1-D uint8, modified in place).
    Raises :class:`ISAError` for a burst outside either buffer."""
    for k, call in enumerate(calls):
        dt = call.dtype
        for g, u, n in call.bursts():
            ub_n = -(-n // BLOCK_BYTES) * BLOCK_BYTES if (call.padded and call.to_ub) else n
            if g + n > gm.size or u + ub_n > ub.size:
                raise ISAError(f"copy #{k}: burst GM bytes {g}..{g + n - 1} / UB bytes "
                               f"{u}..{u + ub_n - 1} outside GM ({gm.size} B) or UB ({ub.size} B)")
            if call.to_ub:
                ub[u:u + n] = gm[g:g + n]
                if ub_n > n:
                    fill = poison_value(dt) if call.pad is None else dt.numpy.type(call.pad)
                    ub[u + n:u + ub_n] = np.full((ub_n - n) // dt.bytes, fill,
                                                 dtype=dt.numpy).view(np.uint8)
            else:
                gm[g:g + n] = ub[u:u + n]
