"""The DMA simulator: run a data-movement program on numpy memories, byte by byte.

Every buffer of the :class:`~.program.Program` is one flat numpy array. A move gathers the bytes
its source buffer descriptors address (:meth:`~.pattern.Descriptor.byte_indices`, 32-bit words
expanded to bytes), and scatters them, in stream order, into each destination along that
destination's descriptors. Nothing else moves data: a tile is wherever its descriptors put it.
The cores compute on their buffers with the executor's tile kernels
(:class:`tilewise.executor.interpreter._Executor`: ``einsum_tile``, ``conv_tile``, the online
softmax, Welford merges), reading each operand as a view of the core's buffer; a core epilogue
sums a column's partial sums (the cascade, ``Move.combine``) and converts a finished tile
(``Move.convert``, integers saturating) into the ``.out`` / ``.sum`` buffer a store sends.

Checks, each a :class:`~tilewise.errors.DmaError` naming the move, the buffer, the descriptor
and the field: an address outside the buffer, a destination byte written twice by one move, the
two sides of a move carrying different byte counts. Bytes moved are counted per level and tensor
as the model counts them (into a level: loads and reloads; out of it: stores), once per move
however many cores a broadcast reaches.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ...errors import DmaError
from ...executor.interpreter import _Buffer, _Executor
from ...executor.reference import array_shape, check_inputs, output_tensors, random_inputs
from ...simulation.walker import Compute
from .program import Fill, Move, Program


@dataclass(frozen=True)
class DmaRun:
    """What a program did: the final outputs by name, and bytes moved ``reads[level][tensor]``
    (into the level) and ``writes[level][tensor]`` (out of it to its parent)."""

    outputs: dict
    reads: dict
    writes: dict


def run_program(program: Program, inputs=None, seed: int = 0) -> DmaRun:
    """Execute ``program`` on ``inputs`` (name -> array; None: random from ``seed``)."""
    w = program.workload
    data = check_inputs(w, random_inputs(w, seed) if inputs is None else inputs)
    return _Machine(program, data).run()


class _Machine(_Executor):
    def __init__(self, program: Program, inputs: dict):
        super().__init__(program.workload, program.arch, program.mapping, inputs)
        self.program = program
        self.memory = {b.name: np.zeros(int(np.prod(b.shape, dtype=np.int64)), b.dtype)
                       for b in program.buffers.values()}
        for t in self.st.moved:
            name = f"{program.levels[0]}.{t.name}"
            if t.name in inputs and name in self.memory:  # a padded row's pad stays zero
                shape = program.buffers[name].shape
                full = self.memory[name].reshape(shape)
                data = np.asarray(inputs[t.name]).reshape(array_shape(t))
                full[tuple(slice(0, n) for n in data.shape)] = data.astype(full.dtype)
        self.reads: dict = defaultdict(lambda: defaultdict(int))
        self.writes: dict = defaultdict(lambda: defaultdict(int))

    def run(self) -> DmaRun:
        for item in self.program.items:
            if isinstance(item, Compute):
                self._compute(item)
            elif isinstance(item, Fill):
                self._fill(item)
            else:
                self._move(item)
        outputs = {}
        for t in output_tensors(self.w):
            buf = self.program.buffers[f"{self.program.levels[0]}.{t.name}"]
            full = self.memory[buf.name].reshape(buf.shape)  # the host crops padded rows
            outputs[t.name] = t.dtype.convert(full[tuple(slice(0, n) for n in array_shape(t))])
        return DmaRun(outputs, _plain(self.reads), _plain(self.writes))

    # ----- memory views

    def _view(self, name: str, sizes) -> np.ndarray:
        """The tile at the origin of buffer ``name``: ``sizes`` elements per axis, a view."""
        buf = self.program.buffers[name]
        full = self.memory[name].reshape(buf.shape)
        return full[tuple(slice(0, s) for s in sizes)]

    def _bind(self, name: str, tile, box, sizes) -> None:
        """Make a core's buffer the executor's resident tile (compute reads it in place); a
        window's or a padded row rounded past the tensor's last column is cut back to it."""
        buf = self.program.buffers[name]
        if buf.level != self.n - 1 or name.endswith((".out", ".sum", ".acc")):
            return
        shape = self.w.tensor(buf.tensor).shape
        box = tuple((lo, min(hi, n)) for (lo, hi), n in zip(box, shape))
        sizes = tuple(hi - lo for lo, hi in box) + tuple(sizes[len(box):])
        data = self._view(name, sizes)
        start = data.copy() if buf.tensor in self.split_reduction else None
        self.buffers[(buf.level, buf.instance, buf.tensor)] = _Buffer(tile, box, data, start)

    def _fill(self, f: Fill) -> None:
        self._view(f.access.buffer, f.access.sizes)[...] = 0
        self._bind(f.access.buffer, f.tile, f.box, f.access.sizes)

    # ----- the DMA

    def _move(self, mv: Move) -> None:
        src = mv.source.access
        if mv.combine or mv.convert:
            self._epilogue(mv)
        stream = self._gather(mv, mv.source)
        for dest in mv.destinations:
            acc = dest.access
            if src.pad_after:  # the memtile's MM2S pads the core's tile with zeros
                self.memory[acc.buffer][...] = 0
            self._scatter(mv, dest, stream)
            self._bind(acc.buffer, mv.tile, mv.box, acc.sizes)
        level = self.program.levels[mv.link[1] if mv.kind != "store" else mv.link[0]]
        table = self.writes if mv.kind == "store" else self.reads
        if mv.nbytes:  # a window tile wholly in the padding moves no byte
            table[level][mv.tensor] += mv.nbytes

    def _epilogue(self, mv: Move) -> None:
        """The core side of a store: sum a column's partial sums (each core's tile minus the
        value it started from, once), convert a finished tile, into the ``.out`` buffer."""
        t = self.w.tensor(mv.tensor)
        level = mv.link[0]
        total = None
        for core in mv.combine or (self.program.buffers[mv.source.access.buffer].instance,):
            b = self.buffers[(level, core, t.name)]
            part = b.data.astype(np.int64 if b.data.dtype.kind in "iu" else np.float64)
            if total is None:
                total = part
            else:
                total = total + part - (0 if b.start is None else b.start)
        out = self._view(mv.source.access.buffer, total.shape)  # a padded row's pad stays 0
        out[...] = t.dtype.convert(total) if mv.final else total.astype(out.dtype)

    def _gather(self, mv: Move, side) -> np.ndarray:
        mem = self.memory[side.access.buffer].view(np.uint8)
        parts = []
        for i, d in enumerate(side.descriptors):
            idx = d.byte_indices(self._word(mv, side))
            self._bounds(mv, side, i, idx, mem.size)
            parts.append(mem[idx])
        return np.concatenate(parts) if parts else np.zeros(0, np.uint8)

    def _scatter(self, mv: Move, side, stream: np.ndarray) -> None:
        mem = self.memory[side.access.buffer].view(np.uint8)
        idx = np.concatenate([np.zeros(0, np.int64)] + [d.byte_indices(self._word(mv, side))
                                                         for d in side.descriptors])
        if idx.size != stream.size:
            raise DmaError(f"move {mv.index} ({mv.tensor}): {side.access.buffer}: the destination "
                           f"descriptors take {idx.size} B, the source sends {stream.size} B")
        for i, d in enumerate(side.descriptors):
            self._bounds(mv, side, i, d.byte_indices(self._word(mv, side)), mem.size)
        if np.unique(idx).size != idx.size:
            raise DmaError(f"move {mv.index} ({mv.tensor}): {side.access.buffer}: the descriptors "
                           "write some bytes twice (overlapping strides)")
        mem[idx] = stream

    def _word(self, mv: Move, side) -> int:
        level = self.program.buffers[side.access.buffer].level
        return self.arch.levels[level].dma.word_bytes

    @staticmethod
    def _bounds(mv: Move, side, i: int, idx: np.ndarray, size: int) -> None:
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            d = side.descriptors[i]
            raise DmaError(f"move {mv.index} ({mv.tensor}): {side.access.buffer} descriptor {i}: "
                           f"field offset/sizes/strides (offset {d.offset}, sizes {d.sizes}, strides "
                           f"{d.strides} words) reach byte {int(idx.max())} of a {size}-byte buffer")


def _plain(table) -> dict:
    return {level: dict(row) for level, row in table.items()}
