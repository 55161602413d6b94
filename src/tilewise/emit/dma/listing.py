"""A program as JSON (one record per buffer descriptor) and as a listing per tile and channel.

A tile's channel: the tensors a tile reads out (MM2S) or writes in (S2MM) take the DMA's
channels of that direction in name order, round robin (``DmaLimits.channels``). The listing
gives per tile, direction and tensor the BD patterns (sizes, strides in 32-bit words, innermost
last; ``xR`` a repeat) and how many moves reuse each one, i.e. the same BD with a new base
address per loop iteration.
"""

from __future__ import annotations

from collections import defaultdict

from .check import check_program
from .program import Program


def _tile(program: Program, buffer: str) -> str:
    b = program.buffers[buffer]
    return program.levels[b.level] + (f"[{b.instance[0]},{b.instance[1]}]" if b.instance else "")


def _sides(program: Program):
    """(move, "MM2S" | "S2MM", side) for every side of every move, in program order."""
    for mv in program.moves:
        yield mv, "MM2S", mv.source
        for side in mv.destinations:
            yield mv, "S2MM", side


def channels(program: Program) -> dict:
    """(tile, direction, tensor) -> channel number."""
    users: dict = defaultdict(set)
    for mv, direction, side in _sides(program):
        users[(_tile(program, side.access.buffer), direction)].add(mv.tensor)
    out = {}
    for (tile, direction), tensors in users.items():
        level = next(b.level for b in program.buffers.values() if _tile(program, b.name) == tile)
        n = program.arch.levels[level].dma.channels
        for i, t in enumerate(sorted(tensors)):
            out[(tile, direction, t)] = i % n
    return out


def to_records(program: Program) -> list[dict]:
    """One JSON-able record per buffer descriptor, in program order."""
    chan = channels(program)
    out = []
    for mv, direction, side in _sides(program):
        tile = _tile(program, side.access.buffer)
        word = program.arch.levels[program.buffers[side.access.buffer].level].dma.word_bytes
        for i, d in enumerate(side.descriptors):
            out.append({
                "move": mv.index, "kind": mv.kind, "tensor": mv.tensor, "step": mv.step,
                "link": f"{program.levels[mv.link[0]]}->{program.levels[mv.link[1]]}",
                "tile": tile, "direction": direction,
                "channel": chan[(tile, direction, mv.tensor)], "buffer": side.access.buffer,
                "bd": i, "offset_words": d.offset, "sizes": list(d.sizes),
                "strides_words": list(d.strides), "repeat": d.repeat,
                "repeat_stride_words": d.repeat_stride, "bytes": d.words * word,
                "elements": {"offset": side.access.offset, "sizes": list(side.access.sizes),
                             "strides": list(side.access.strides)},
                "pad_after": list(side.access.pad_after), "final": mv.final,
                "box": [list(b) for b in mv.box]})
    return out


def listing(program: Program) -> str:
    """The readable listing: a summary per link, then per tile, direction and tensor the BD
    patterns and how often each is reused."""
    check = check_program(program)
    w = program.workload
    dims = " ".join(f"{d}={s}" for d, s in w.sizes.items())
    lines = [f"{w.name} ({dims}) on {program.arch.name}: {len(program.moves)} moves, "
             f"{check.descriptors} buffer descriptors",
             f"mapping: {program.mapping}", ""]
    lines.append(f"{'link':<18}{'moves':>8}{'read BDs':>10}{'write BDs':>11}{'bytes':>12}")
    for x in check.links:
        lines.append(f"{x.link:<18}{x.moves:>8}{x.read_bds:>10}{x.write_bds:>11}{x.nbytes:>12}")
    lines.append("")
    chan = channels(program)
    groups: dict = defaultdict(lambda: defaultdict(list))
    for mv, direction, side in _sides(program):
        tile = _tile(program, side.access.buffer)
        for d in side.descriptors:
            key = (d.sizes, d.strides, d.repeat, d.repeat_stride)
            groups[(tile, direction, mv.tensor, side.access.buffer)][key].append(d.offset)
    order = sorted(groups.items(), key=lambda kv: (program.buffers[kv[0][3]].level, kv[0][0], kv[0][1], kv[0][2]))
    for (tile, direction, tensor, buffer), patterns in order:
        uses = sum(len(v) for v in patterns.values())
        lines.append(f"{tile} {direction} ch{chan[(tile, direction, tensor)]} {tensor} "
                     f"({buffer}): {uses} BDs, {len(patterns)} pattern"
                     + ("s" if len(patterns) > 1 else ""))
        for (sizes, strides, rep, rstride), offsets in patterns.items():
            shown = ", ".join(map(str, offsets[:4])) + (", ..." if len(offsets) > 4 else "")
            extra = f" x{rep} (+{rstride})" if rep > 1 else ""
            lines.append(f"    sizes {list(sizes)} strides {list(strides)}{extra} words: "
                         f"used {len(offsets)}x at offsets {shown}")
    return "\n".join(lines)
