"""Architecture descriptions: memory levels, the spatial array, compute, alignment.

Values only (frozen dataclasses; this module imports nothing of the loader). Loading,
validating and writing YAML lives in ``arch/loader.py`` (:func:`~tilewise.arch.loader.load_arch`
takes a preset name, a YAML path or an Arch); shipped presets in ``arch/presets/*.yaml``.

Conventions (units are in the field names where they are not obvious):
- ``Arch.levels`` runs from the outermost level (DDR/GM, usually unbounded) to the innermost
  (core local memory / L1). Level ``i`` is filled from level ``i-1`` over a link of
  ``read_bandwidth`` bytes/s (parent -> this level) and drained back over ``write_bandwidth``
  bytes/s (this level -> parent). Both are per instance and per channel; ``channels`` links run
  in parallel per instance. The outermost level has no parent link (bandwidths 0).
- ``holds`` names the tensors a level keeps (``None``: every tensor): tensor names (``C``) or
  operand roles, ``in1`` / ``in2`` / ``in3`` (an op's first / second / third input: GEMM's A / B,
  a convolution's I / W, ZigZag's I1 / I2) and ``out`` (every final output). A tensor a level
  does not hold bypasses it (:mod:`tilewise.model.structure`, ``Structure.held``); the
  outermost level holds every tensor. ``reserved`` gives held tensors (names or roles) bytes
  of their own per instance; the tensors not named share the rest of ``capacity_bytes``
  (ZigZag's per-operand memories: ``capacity: {out: 2 B, in2: 128 B}``).
- ``capacity_bytes`` is per instance (``None`` = unbounded). When ``bank_granular`` each tensor
  buffer occupies whole banks of ``bank_bytes`` (a double-buffered tensor takes two such
  buffers). ``block_bytes`` is the allocation/transfer granule (32 for an Ascend UB).
- The spatial array (``Arch.array``) is made of the instances of level ``array.level``: ``rows``
  x ``cols`` of them, each with its own compute unit. A tile sent along a row (column) reaches
  every core in that row (column) at the cost of one transfer when ``broadcast_rows``
  (``broadcast_cols``). ``reduce_cols`` says partial sums may be accumulated along a column (a K
  split across a column).
- ``Compute.macs_per_cycle`` is per core, keyed by the *input* dtype name (``"i8"``).
- ``Arch.alignment`` maps a dim name or role (``"m"``, ``"n"``, ``"k"``, conv input channels
  ``"c"``) to the multiple that the innermost tile of that dim must be (in elements): one int,
  or a mapping input dtype -> multiple with an optional ``"default"`` (``{"i8": 8,
  "default": 16}``); :meth:`tilewise.ir.workload.Chain.alignment` applies it.
- ``Arch.sources`` maps a key path of the YAML it came from (``"levels[1].capacity"``) to the
  comment written beside that number (where it comes from); it is not part of equality.

Example::

    >>> from tilewise.arch.loader import arch_from_dict, arch_to_dict, load_arch
    >>> arch = load_arch("aie-4x2")
    >>> arch.level("core").capacity_bytes, arch.array.cores, arch.compute.clock_hz
    (49152, 8, 1000000000.0)
    >>> arch_from_dict(arch_to_dict(arch)) == arch
    True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class DmaLimits:
    """What one buffer descriptor (BD) of the DMA that addresses a level's memory can express
    (AIE: the shim DMA for DDR, the memtile DMA, the core tile's DMA).

    ``dims``: strided address dimensions per BD (innermost first in hardware; tilewise writes
    them innermost last). ``max_wrap``: the largest size of every dim but the outermost (whose
    size only the buffer length bounds), in words for the innermost dim, in steps for the others.
    ``max_stride_words``: the largest step of a dim, in words. ``word_bytes``: the address and
    length granule (an offset, an innermost length and every stride are whole words).
    ``max_repeat``: how often one BD may run again with an iteration offset (1: no repeat).
    ``max_length_words``: words one BD may move (None: not limited below the address space).
    ``bds``: buffer descriptors per tile; ``channels``: DMA channels per direction per tile.
    ``zero_padding``: the read side (MM2S) can insert zeros before/after each dim.
    """

    dims: int
    max_wrap: int
    max_stride_words: int
    word_bytes: int = 4
    max_repeat: int = 1
    max_length_words: int | None = None
    bds: int = 16
    channels: int = 2
    zero_padding: bool = False


@dataclass(frozen=True)
class Level:
    """One memory level. Bytes, bytes per second; all per instance.

    ``capacity_bytes``: bytes per instance (None = unbounded). ``instances``: copies of the
    level. ``banks`` x ``bank_bytes``: its banks (``bank_bytes`` None = not banked).
    ``bank_granular``: every tensor buffer takes whole banks. ``block_bytes``: allocation and
    transfer granule in bytes. ``read_bandwidth`` / ``write_bandwidth``: bytes/s per channel of
    the parent -> this level / this level -> parent link (0 for the outermost level).
    ``channels``: parallel links per instance. ``double_buffer``: can hold a ping and a pong
    copy of a tile. Energy (Accelergy-style, picojoules, None where unknown):
    ``energy_pj_per_byte`` per byte moved over the link into or out of this level (the wire and
    DMA); ``read_energy_pj`` / ``write_energy_pj`` per byte read from / written into this level's
    memory. ``transfer_overhead_cycles``: fixed cycles of one DMA buffer descriptor (its
    set-up, lock hand-off) on the link into this level, per direction, on one channel; the
    model charges it once per BD of each transfer where the levels declare DMA limits, at least
    once per transfer (else once per transfer).
    ``holds``: the tensor names or roles kept here (None: every tensor); ``reserved``:
    ``((name or role, bytes), ...)`` per instance set apart for those tensors, included in
    ``capacity_bytes`` (the others share ``capacity_bytes - sum(reserved)``). ``dma``: the
    limits of the DMA that addresses this level's memory (:class:`DmaLimits`; None: not
    described), used by the AIE data-movement program (:mod:`tilewise.emit.dma`).
    """

    name: str
    capacity_bytes: int | None
    instances: int = 1
    banks: int = 1
    bank_bytes: int | None = None
    bank_granular: bool = False
    block_bytes: int = 1
    read_bandwidth: float = 0.0
    write_bandwidth: float = 0.0
    channels: int = 1
    double_buffer: bool = True
    energy_pj_per_byte: float | None = None
    read_energy_pj: float | None = None
    write_energy_pj: float | None = None
    transfer_overhead_cycles: float = 0.0
    holds: tuple[str, ...] | None = None
    reserved: tuple[tuple[str, int], ...] = ()
    dma: DmaLimits | None = None

    def __post_init__(self):
        if self.holds is not None:
            object.__setattr__(self, "holds", tuple(self.holds))
        items = self.reserved.items() if isinstance(self.reserved, Mapping) else self.reserved
        object.__setattr__(self, "reserved", tuple((str(k), int(v)) for k, v in items))

    @property
    def shared_bytes(self) -> int | None:
        """Bytes per instance shared by the tensors without a reserved part (None: unbounded)."""
        if self.capacity_bytes is None:
            return None
        return self.capacity_bytes - sum(v for _, v in self.reserved)

    @property
    def bounded(self) -> bool:
        """False for an unbounded level (DDR/GM: ``capacity_bytes is None``)."""
        return self.capacity_bytes is not None


@dataclass(frozen=True)
class SpatialArray:
    """``rows`` x ``cols`` instances of memory level ``level``, each with a compute unit."""

    level: str
    rows: int
    cols: int
    broadcast_rows: bool = True
    broadcast_cols: bool = True
    reduce_cols: bool = False

    @property
    def cores(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class Compute:
    """Per-core throughput: multiply-accumulates per cycle by input dtype; clock in Hz;
    ``call_overhead_cycles``: the fixed cost of one innermost kernel invocation on a core
    (call, buffer locks, accumulator init and drain), cycles, 0 when not given.
    ``energy_pj_per_mac``: picojoules per MAC (or per vector op) for every dtype, None when
    unknown; ``energy_pj_per_mac_dtype`` overrides it per input dtype (``{"i8": 0.1}``)."""

    clock_hz: float
    macs_per_cycle: Mapping[str, int] = field(default_factory=dict)
    vector_ops_per_cycle: Mapping[str, int] = field(default_factory=dict)
    energy_pj_per_mac: float | None = None
    call_overhead_cycles: float = 0.0
    energy_pj_per_mac_dtype: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "macs_per_cycle", _frozen(self.macs_per_cycle))
        object.__setattr__(self, "vector_ops_per_cycle", _frozen(self.vector_ops_per_cycle))
        object.__setattr__(self, "energy_pj_per_mac_dtype", _frozen(self.energy_pj_per_mac_dtype))

    def mac_energy_pj(self, dtype: str) -> float | None:
        """Picojoules per MAC for input dtype ``dtype`` (None: unknown)."""
        return self.energy_pj_per_mac_dtype.get(dtype, self.energy_pj_per_mac)

    def __reduce__(self):
        return (type(self), (self.clock_hz, dict(self.macs_per_cycle),
                             dict(self.vector_ops_per_cycle), self.energy_pj_per_mac,
                             self.call_overhead_cycles, dict(self.energy_pj_per_mac_dtype)))


@dataclass(frozen=True)
class Arch:
    """A machine: levels outermost -> innermost, an optional spatial array, compute, alignment."""

    name: str
    levels: tuple[Level, ...]
    compute: Compute
    array: SpatialArray | None = None
    alignment: Mapping[str, int | Mapping[str, int]] = field(default_factory=dict)
    description: str = ""
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "alignment", _frozen(
            {k: v if isinstance(v, int) else _frozen(v) for k, v in dict(self.alignment or {}).items()}))
        object.__setattr__(self, "sources", _frozen(self.sources))

    def __reduce__(self):
        # pickled with plain dicts (a read-only MappingProxyType is not picklable); the
        # constructor makes them read-only again
        align = {k: v if isinstance(v, int) else dict(v) for k, v in self.alignment.items()}
        return (type(self), (self.name, self.levels, self.compute, self.array, align,
                             self.description, dict(self.sources)))

    def peak_macs_per_second(self, dtype: str) -> float:
        """Peak multiply-accumulates per second of all cores for input ``dtype`` (MAC/s)."""
        from ..dtypes import dtype as lookup

        name = lookup(dtype).name
        if name not in self.compute.macs_per_cycle:
            from ..errors import SpecError

            raise SpecError(
                f"arch {self.name!r} has no MAC rate for {name!r}; compute.macs_per_cycle has: "
                + (", ".join(self.compute.macs_per_cycle) or "nothing")
            )
        return self.compute.macs_per_cycle[name] * self.compute.clock_hz * self.cores

    def level(self, name: str) -> Level:
        """The level called ``name``; SpecError listing the valid names otherwise."""
        for lv in self.levels:
            if lv.name == name:
                return lv
        from ..errors import SpecError

        raise SpecError(
            f"arch {self.name!r} has no memory level {name!r}; levels: "
            + ", ".join(lv.name for lv in self.levels)
        )

    @property
    def cores(self) -> int:
        """Number of compute units (array cores, or 1 without an array)."""
        return self.array.cores if self.array else 1
