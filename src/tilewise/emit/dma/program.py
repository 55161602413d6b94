"""The data-movement program of a solution on an AIE array: every transfer as typed records.

:func:`build_program` follows the one walk of the tiled loop nest
(:func:`tilewise.simulation.walker.walk`, the events ``simulate`` counts and ``execute`` runs)
and groups its transfers exactly as the model does (:mod:`tilewise.simulation.share`: a broadcast
load reaches every core of a row or column in one transfer, a column of partial sums is summed
by the cascade into one store). Each group becomes a :class:`Move`: one source :class:`Side` and
one destination Side per receiving buffer, each an :class:`~.pattern.Access` (buffer, offset,
sizes, strides in elements, innermost last) and the buffer descriptors that carry it within the
DMA limits of its level (``Level.dma``, :func:`~.pattern.descriptors`).

Buffers (:class:`Buffer`): the whole tensor in DDR (row-major; rows padded, below); one tile buffer per tensor at the
memtile level (the logical memory above the array, as the model counts it) and per core, sized
for the largest tile (partial tiles sit at its origin with the full tile's row pitch). An output
whose partial sums are wider than its type (an i8 GEMM's i32 sums) has, above the cores, a
buffer of its type for finished tiles and a ``.acc`` buffer for partial sums; the core keeps the
accumulator and its epilogue (``Move.combine``, ``Move.convert``: the cascade sum of a column,
the saturating conversion) writes the tile to send into ``.out`` (a finished tile) or
``.sum`` (a column's partial sums). Partial tiles are moved at their
real size; where the reading DMA can zero-pad (the memtile's MM2S) the core's tile is padded
to the full tile with zeros (``Access.pad_after``), elsewhere the kernel runs on the smaller tile.

Padded rows (a window the DMA cannot address to the byte): the rows of a convolution input's
windows (:func:`~tilewise.model.contiguity.rounded_window`) are *rounded out* to whole DMA
words in the tensor's coordinates (:func:`~tilewise.model.contiguity.aligned_range`, the rule
the model and ``simulate`` count): a move's box starts on the word at or before the window and
ends on the word at or after it, so every BD's offset and length are whole words; the extra
elements are the tensor's own neighbours, or zeros past its last column, where the DDR copy's
rows are padded host-side to whole words (``Buffer.shape``). Tile buffers hold the rounded-out
rows, the kernel reads the window inside them. (Not the memtile's zero padding: it inserts
whole words, AM025, and the shim DMA has none.)

Padded rows of row-major tensors (:mod:`tilewise.model.contiguity`, *Padded rows*: those
whose innermost axis a tile splits): every row of a plain tensor's innermost axis is padded to whole words, in DDR host-side (zeros after
an input's rows; the pad of an output's rows is written by its border tiles and cropped by the
host after the run, ``Buffer.shape`` padded), and each move's row ``[lo, hi)`` is rounded up
from ``lo`` to whole words at the width it carries (:meth:`_Builder.rows_rounded`: a finished
bf16 tile's row of 1 element moves 4 B, its f32 partial sums are whole words already). Tile
buffers are sized for the rounded rows. A tile whose row starts inside a word has no program:
its BD offset is not a whole word, an error naming the move (the search drops it).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ...errors import DmaError
from ...model.contiguity import (aligned_range, granule_points, padded_row, rounded_window,
                                 row_word, rows_padded, window_granules)
from ...model.descriptors import transfer_bds
from ...model.footprint import partial_sum_bytes
from ...model.structure import Structure
from ...simulation.share import share_group, store_key
from ...simulation.walker import Compute, Transfer, kept_tensors, walk
from .pattern import Access, Descriptor, descriptors


@dataclass(frozen=True)
class Buffer:
    """A named buffer: the tensor it holds, at which level and instance (a core ``(r, c)``, or
    None), its element type (numpy name) and shape (elements, row-major)."""

    name: str
    level: int
    instance: tuple[int, int] | None
    tensor: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def element_bytes(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.element_bytes


@dataclass(frozen=True)
class Side:
    """One side of a move: the access pattern in its buffer and the BDs of the DMA that runs it."""

    access: Access
    descriptors: tuple[Descriptor, ...]


@dataclass(frozen=True)
class Move:
    """One DMA transfer of ``tensor``'s tile ``box`` (per axis [lo, hi)) over ``link`` (level
    indices source -> destination). ``kind``: load, reload (partial sums back in) or store.
    ``final``: a store of the finished tile (at the tensor's type; earlier stores and every
    reload carry partial sums). ``stream_bytes``: bytes per element on the link. ``combine``:
    the cores whose tiles the cascade sums before a store (one core: none); ``convert``: the
    conversion the core's epilogue applies (``"int32->int8"``) or None."""

    index: int
    kind: str
    tensor: str
    link: tuple[int, int]
    step: int
    box: tuple[tuple[int, int], ...]
    tile: tuple
    source: Side
    destinations: tuple[Side, ...]
    stream_bytes: int
    final: bool = False
    combine: tuple[tuple[int, int], ...] = ()
    convert: str | None = None

    @property
    def bds(self) -> int:
        """The BDs this transfer costs (:func:`~tilewise.model.descriptors.transfer_bds`: its
        longest side's)."""
        return transfer_bds(len(s.descriptors) for s in (self.source,) + self.destinations)

    @property
    def nbytes(self) -> int:
        """Bytes this move carries over its link (once, however many cores receive it)."""
        return self.source.access.elements * self.stream_bytes


@dataclass(frozen=True)
class Fill:
    """An output tile's first visit: ``access`` in ``buffer`` starts at zero (no DMA)."""

    step: int
    tensor: str
    box: tuple[tuple[int, int], ...]
    tile: tuple
    access: Access


@dataclass(frozen=True)
class Program:
    """The data-movement program: buffers by name and, in execution order, moves, fills and the
    walker's compute events; ``levels``: the level names."""

    workload: object
    arch: object
    mapping: object
    levels: tuple[str, ...]
    buffers: dict = field(default_factory=dict)
    items: tuple = ()

    @property
    def moves(self) -> tuple[Move, ...]:
        return tuple(x for x in self.items if isinstance(x, Move))


def build_program(workload, arch, mapping) -> Program:
    """The program of ``mapping`` (validated by the walk); DmaError when a level that a transfer
    touches has no DMA limits or an access pattern cannot be expressed (or the mapping packs a
    tensor at the outermost level: the shim's patterns address the row-major tensors)."""
    if mapping.levels and mapping.levels[0].pack:
        raise DmaError(f"mapping packs {', '.join(sorted(mapping.levels[0].pack))} at "
                       f"{mapping.levels[0].level}; the DMA program addresses row-major tensors "
                       "there: drop pack: (a packed layout is costed and executed, not emitted)")
    return _Builder(workload, arch, mapping).build()


class _Builder:
    def __init__(self, workload, arch, mapping):
        self.w, self.arch, self.m = workload, arch, mapping
        self.st = Structure(workload, arch)
        self.n = self.st.n_levels
        self.a = self.st.array_level if self.st.array_level is not None else self.n - 1
        self.kept = kept_tensors(self.st, mapping)
        self.names = tuple(lv.name for lv in arch.levels)
        self.buffers: dict[str, Buffer] = {}
        self.origin: dict = {}   # (level, instance, tensor) -> resident box origin (per axis)
        self.extent: dict = {}   # (level, tensor) -> largest box extents
        wgran = window_granules(arch)
        self.words = {t.name: [int(granule_points(int(g), t.element_bytes)) for g in wgran]
                      for t in self.st.moved if rounded_window(t, self.st.outputs)}
        word = row_word(arch)
        tiles = [lv.sizes for lv in mapping.levels]
        self.rows = {t.name: word for t in self.st.moved
                     if word > 1 and rows_padded(t, self.st.dims, tiles, self.kept)}

    def refuse_merges(self) -> None:
        """DmaError for a reduction split whose partials are not summed along a column: the
        merge of attention's partial softmax states (seed 003 Eq. 12) or of LayerNorm's
        moments is core code, and partials through the parent need read-back moves; neither
        is a program of this emitter yet."""
        red = {d for op in self.w.ops for d in op.reduction_dims}
        path = self.arch.array is not None and self.arch.array.reduce_cols
        for axis, sp in (("rows", self.m.rows), ("cols", self.m.cols)):
            if sp is None or sp.dim not in red:
                continue
            if len(self.w.ops) > 1:
                raise DmaError(f"{axis}={sp}: {sp.dim} is reduced inside the fused chain "
                               f"{self.w.name}; merging its partial states across cores is not a "
                               "DMA program yet (only sums along a column are)")
            if axis == "cols" or not path:
                raise DmaError(f"{axis}={sp}: partial sums merged through the parent level need "
                               "read-back moves this emitter does not write yet (put the "
                               "reduction on rows of an array that reduce_cols)")

    # ----- buffers

    def split(self, t) -> bool:
        """An output whose partial sums are wider than its type: two buffers above the cores."""
        return t.name in self.st.outputs and partial_sum_bytes(t, self.w) != t.element_bytes

    def dtype(self, level: int, t, partial: bool) -> np.dtype:
        op = self.w.producer(t.name)
        acc = op is not None and op.kind in ("mac", "norm")
        if acc and (level == self.n - 1 or (partial and self.split(t))):
            return np.dtype(op.accumulator.numpy)
        return np.dtype(t.dtype.numpy)

    def buffer(self, level: int, inst, t, suffix: str = "", dtype=None) -> Buffer:
        where = self.names[level] + (f"[{inst[0]},{inst[1]}]" if inst is not None else "")
        name = f"{where}.{t.name}{suffix}"
        if name not in self.buffers:
            lanes = (t.lanes,) if t.lanes > 1 else ()
            shape = self.ddr_shape(t) if level == 0 else self.extent[(level, t.name)]
            dt = dtype if dtype is not None else self.dtype(level, t, suffix == ".acc")
            self.buffers[name] = Buffer(name, level, inst, t.name, dt.name, tuple(shape) + lanes)
        return self.buffers[name]

    def ddr_shape(self, t) -> tuple[int, ...]:
        """The whole tensor in DDR: row-major, a window's rows padded host-side (zeros) to whole
        words of every level it is moved into, a plain tensor's rows to whole words."""
        words = self.words.get(t.name)
        if t.name in self.rows:
            pts = int(granule_points(self.rows[t.name], t.element_bytes))
            return tuple(t.shape[:-1]) + (padded_row(t.shape[-1], pts),)
        if words is None:
            return tuple(t.shape)
        return tuple(t.shape[:-1]) + (aligned_range(0, t.shape[-1], max(words))[1],)

    def access(self, buf: Buffer, box, origin=None, pad_to: Buffer | None = None) -> Access:
        pitch = np.cumprod((buf.shape[1:] + (1,))[::-1])[::-1]
        lanes = buf.shape[len(box):]
        lo = [b[0] - (origin[i] if origin else 0) for i, b in enumerate(box)]
        sizes = tuple(hi - l for l, hi in box) + lanes
        pad_after = ()
        if pad_to is not None:
            pad_after = tuple(e - s for e, s in zip(pad_to.shape, sizes))
            pad_after = pad_after if any(pad_after) else ()
        return Access(buf.name, int(np.dot(lo, pitch[:len(lo)])) if lo else 0, sizes,
                      tuple(int(p) for p in pitch), buf.element_bytes, pad_after)

    def side(self, level: int, access: Access, what: str) -> Side:
        lim = self.arch.levels[level].dma
        if lim is None:
            raise DmaError(f"{what}: arch {self.arch.name!r} level {self.names[level]!r} has no "
                           "dma limits; give them in its spec (levels[i].dma) as the AIE presets do")
        return Side(access, descriptors(access, lim, what))

    def instance(self, level: int, core):
        return core if level >= self.a else None

    def parent(self, level: int, t) -> int:
        return max(l for l in range(level) if t.name in self.kept[l])

    # ----- the walk

    def build(self, events=None) -> Program:
        """The program; ``events``: the walk's events, when the caller already has them."""
        self.refuse_merges()
        events = walk(self.w, self.arch, self.m) if events is None else events
        last_store: dict = {}
        order = list(self.order(events, last_store))
        return self.program(order, last_store)

    def order(self, events, last_store: dict):
        """``(event, members)`` in program order, lazily: a Compute with None, a transfer with
        the transfers of its share group (a broadcast load, a column's stores; the list grows
        as later members arrive). Records each buffer's largest box (``extent``) and in
        ``last_store`` the last store of each tile (the one that moves the finished result)."""
        groups: dict = {}
        for ev in events:
            if not isinstance(ev, Transfer):
                yield ev, None
                continue
            ev = self.rounded_out(ev)
            if ev.level:
                key = (ev.level, ev.tensor)
                widest = self.rows_rounded(ev, self.w.tensor(ev.tensor).element_bytes)
                ext = tuple(hi - lo for lo, hi in widest.box)
                old = self.extent.get(key, ext)
                self.extent[key] = tuple(max(x, y) for x, y in zip(old, ext))
            if ev.kind != "zero" and not all(lo < hi for lo, hi in ev.tile):
                continue  # an idle core's empty tile moves nothing
            g = share_group(ev, self.st.outputs, self.arch.array, self.a) if ev.kind != "zero" else None
            if g is not None and g in groups:
                groups[g].append(ev)
                continue
            members = [ev]
            if g is not None:
                groups[g] = members
            if ev.kind == "store":
                last_store[store_key(ev, g)] = ev
            yield ev, members

    def rounded_out(self, ev):
        """``ev`` with a window's rows rounded out to whole DMA words (the words around the
        window are read too: :mod:`tilewise.model.contiguity`, the rule the model counts)."""
        words = self.words.get(ev.tensor)
        if words is None or not ev.level:
            return ev
        lo, hi = ev.box[-1]
        return replace(ev, box=ev.box[:-1] + (aligned_range(lo, hi, words[ev.level]),))

    def rows_rounded(self, ev, width: int):
        """``ev`` with its row rounded up to whole words of elements of ``width`` bytes (a
        plain tensor's padded rows: :mod:`tilewise.model.contiguity`, the rule the model counts)."""
        word = self.rows.get(ev.tensor)
        if word is None:
            return ev
        lo, hi = ev.box[-1]
        up = lo + padded_row(hi - lo, int(granule_points(word, width)))
        return ev if up == hi else replace(ev, box=ev.box[:-1] + ((lo, up),))

    def width(self, t, kind: str, final: bool = False) -> int:
        """Bytes per element a move of ``t`` of ``kind`` carries: partial sums (reloads, stores
        but the final one) at the accumulator width, the rest at the tensor's."""
        if kind == "reload" or (kind == "store" and not final):
            return partial_sum_bytes(t, self.w)
        return t.element_bytes

    def program(self, order, last_store: dict) -> Program:
        """The Program of the ordered events (:meth:`order`), every side's BDs derived."""
        finals = {id(ev) for ev in last_store.values()}
        items = []
        for ev, members in order:
            if isinstance(ev, Compute):
                items.append(ev)
            elif ev.kind == "zero":
                items.append(self.fill(ev))
            elif ev.kind == "store":
                items.append(self.store(len(items), ev, members, id(ev) in finals))
            else:
                items.append(self.load(len(items), ev, members))
        return Program(self.w, self.arch, self.m, self.names, dict(self.buffers), tuple(items))

    def fill(self, ev) -> Fill:
        t = self.w.tensor(ev.tensor)
        inst = self.instance(ev.level, ev.core)
        self.origin[(ev.level, inst, t.name)] = tuple(lo for lo, _ in ev.box)
        suffix = ".acc" if ev.level < self.n - 1 and self.split(t) else ""
        buf = self.buffer(ev.level, inst, t, suffix)
        return Fill(ev.step, t.name, ev.box, ev.tile, self.access(buf, ev.box, tuple(lo for lo, _ in ev.box)))

    def load(self, index: int, ev, members) -> Move:
        t = self.w.tensor(ev.tensor)
        ev = self.rows_rounded(ev, self.width(t, ev.kind))
        src = self.parent(ev.level, t)
        partial = ev.kind == "reload"
        what = self.load_name(index, ev)
        suffix = ".acc" if partial and ev.level < self.n - 1 and self.split(t) else ""
        dbufs = [self.buffer(ev.level, self.instance(ev.level, m.core), t, suffix) for m in members]
        source = self.load_source(ev, what, dbufs[0] if self.pads(ev) else None)
        dests = []
        for m, dbuf in zip(members, dbufs):
            self.origin[(ev.level, self.instance(ev.level, m.core), t.name)] = tuple(lo for lo, _ in ev.box)
            dests.append(self.side(ev.level, self.access(dbuf, ev.box, tuple(lo for lo, _ in ev.box)), what))
        stream = partial_sum_bytes(t, self.w) if partial else t.element_bytes
        return Move(index, ev.kind, t.name, (src, ev.level), ev.step, ev.box, ev.tile, source, tuple(dests),
                    stream)

    def load_name(self, index: int, ev) -> str:
        src = self.parent(ev.level, self.w.tensor(ev.tensor))
        return f"move {index} ({ev.kind} {ev.tensor} {self.names[src]}->{self.names[ev.level]})"

    def pads(self, ev) -> bool:
        """Whether the load ``ev`` into the cores is zero-padded to the full tile by the
        reading DMA (the memtile's MM2S)."""
        lim = self.arch.levels[self.parent(ev.level, self.w.tensor(ev.tensor))].dma
        return ev.level == self.n - 1 and lim is not None and lim.zero_padding

    def load_source(self, ev, what: str, pad: Buffer | None) -> Side:
        """The read side of load or reload ``ev``: its box in the parent's resident buffer,
        zero-padded to the buffer ``pad`` (None: not padded)."""
        t = self.w.tensor(ev.tensor)
        ev = self.rows_rounded(ev, self.width(t, ev.kind))
        src = self.parent(ev.level, t)
        src_inst = self.instance(src, ev.core)
        partial = ev.kind == "reload"
        sbuf = self.buffer(src, src_inst, t, ".acc" if partial and src < self.n - 1 and self.split(t) else "")
        return self.side(src, self.access(sbuf, ev.box, self.origin.get((src, src_inst, t.name)), pad), what)

    def store(self, index: int, ev, members, final: bool) -> Move:
        t = self.w.tensor(ev.tensor)
        ev = self.rows_rounded(ev, self.width(t, "store", final))
        dst = self.parent(ev.level, t)
        inst = self.instance(ev.level, ev.core)
        what = f"move {index} (store {t.name} {self.names[ev.level]}->{self.names[dst]})"
        here = self.buffer(ev.level, inst, t, ".acc" if not final and ev.level < self.n - 1 and self.split(t) else "")
        stream = np.dtype(t.dtype.numpy) if final else self.dtype(self.n - 1, t, True)
        convert = (f"{here.dtype}->{stream.name}" if final and np.dtype(here.dtype) != stream else None)
        combine = tuple(m.core for m in members) if len(members) > 1 else ()
        origin = self.origin.get((ev.level, inst, t.name))
        if convert or combine:  # the core's epilogue writes the tile to send
            here = self.buffer(ev.level, inst, t, ".out" if final else ".sum", stream)
        source = self.side(ev.level, self.access(here, ev.box, origin), what)
        dst_inst = self.instance(dst, ev.core)
        dbuf = self.buffer(dst, dst_inst, t, "" if final or not self.split(t) else ".acc")
        dest = self.side(dst, self.access(dbuf, ev.box, self.origin.get((dst, dst_inst, t.name))), what)
        return Move(index, "store", t.name, (ev.level, dst), ev.step, ev.box, ev.tile, source, (dest,),
                    (t.element_bytes if final else partial_sum_bytes(t, self.w)) // t.lanes,
                    final, combine, convert)
