"""``check_program``: does every buffer descriptor of a program fit its DMA's declared limits?

Each BD is checked against the limits of the level whose memory it addresses
(:class:`~tilewise.arch.spec.DmaLimits`): dims, wrap per dim but the outermost, stride, repeat,
length, and one transfer side needing no more BDs than a tile has. A violation is a
:class:`~tilewise.errors.DmaError` naming the move, the buffer, the descriptor and the field.
The :class:`ProgramCheck` it returns counts moves, BDs and bytes per link, the numbers the
listing prints and the per-transfer cost (``transfer_overhead``) multiplies.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ...errors import DmaError
from .program import Program


@dataclass(frozen=True)
class LinkCount:
    """Per link (``"ddr->memtile"``): moves, buffer descriptors on its read and write sides,
    and bytes carried."""

    link: str
    moves: int
    read_bds: int
    write_bds: int
    nbytes: int


@dataclass(frozen=True)
class ProgramCheck:
    """A program within its limits: per link counts, and the largest number of BDs one side of
    one move needs."""

    links: tuple[LinkCount, ...]
    max_bds_per_side: int

    @property
    def descriptors(self) -> int:
        return sum(x.read_bds + x.write_bds for x in self.links)


def check_program(program: Program, arch=None) -> ProgramCheck:
    """Check every BD of ``program`` against ``arch`` (default: the program's own arch)."""
    arch = program.arch if arch is None else arch
    counts: dict = defaultdict(lambda: [0, 0, 0, 0])
    widest = 0
    for mv in program.moves:
        link = f"{program.levels[mv.link[0]]}->{program.levels[mv.link[1]]}"
        row = counts[link]
        row[0] += 1
        row[3] += mv.nbytes
        for n, side in enumerate((mv.source,) + mv.destinations):
            level = program.buffers[side.access.buffer].level
            _check_side(mv, side, arch.levels[level])
            widest = max(widest, len(side.descriptors))
            row[1 if n == 0 else 2] += len(side.descriptors)
    links = tuple(LinkCount(k, *v) for k, v in counts.items())
    return ProgramCheck(links, widest)


def _check_side(mv, side, level) -> None:
    lim = level.dma
    where = f"move {mv.index} ({mv.kind} {mv.tensor}): {side.access.buffer}"
    if lim is None:
        raise DmaError(f"{where}: level {level.name!r} has no dma limits")
    if len(side.descriptors) > lim.bds:
        raise DmaError(f"{where}: needs {len(side.descriptors)} buffer descriptors, a "
                       f"{level.name} tile has {lim.bds}")
    for i, d in enumerate(side.descriptors):
        bad = _field(d, lim)
        if bad is not None:
            raise DmaError(f"{where} descriptor {i}: field {bad}")


def _field(d, lim) -> str | None:
    """The first field of BD ``d`` beyond ``lim`` as ``name = value (limit)``, else None."""
    if len(d.sizes) > lim.dims:
        return f"sizes has {len(d.sizes)} dims (the DMA addresses {lim.dims})"
    for i, (size, stride) in enumerate(zip(d.sizes, d.strides)):
        if i and size > lim.max_wrap:
            return f"sizes[{i}] = {size} (wrap limit {lim.max_wrap})"
        if stride > lim.max_stride_words:
            return f"strides[{i}] = {stride} words (limit {lim.max_stride_words})"
    if d.repeat > lim.max_repeat:
        return f"repeat = {d.repeat} (limit {lim.max_repeat})"
    if d.repeat > 1 and d.repeat_stride > lim.max_stride_words:
        return f"repeat_stride = {d.repeat_stride} words (limit {lim.max_stride_words})"
    if lim.max_length_words is not None and d.words // d.repeat > lim.max_length_words:
        return f"length = {d.words // d.repeat} words (limit {lim.max_length_words})"
    return None
