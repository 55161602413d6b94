"""Is a mapping's data movement programmable? The exact answer of ``check_program``, faster.

:func:`dma_violation` builds the program of a mapping as :func:`~.program.build_program` does
(the same walk, buffers and access patterns) but derives and checks the buffer descriptors of
each access *shape* once: whether an access fits its DMA's limits, and how many BDs it needs,
depend on its sizes, strides, element size, padding and its offset only modulo the DMA's word
(the offset shifts every BD by the same number of words). All tiles of a transfer share one
shape but for the borders, so a mapping with thousands of moves derives a handful of patterns.
The search (:func:`tilewise.search`) asks :func:`dma_verdict` instead: the same verdict from
the program's access shapes without the walk (:mod:`.shapes`, about 1 ms a mapping), this
walking check only where the shapes are not exact; it drops the candidates given a reason.

The walk is read lazily: a load's read side in the outermost level (DDR: the whole tensor, a
buffer no later tile widens) is checked as it comes, so most rejected mappings stop at their
first tile. A programmable one is walked to the end (about 50 us an event): a program of more
than ``MAX_EVENTS`` walk events is not checked (``UNCHECKED``), which the search reports; one
whose model counts more transfers and innermost tiles than that is not even walked.
"""

from __future__ import annotations

import math
from itertools import islice

from ...errors import DmaError
from ...model.cost import evaluate
from ...simulation.walker import Transfer, walk
from .check import side_violation
from .pattern import Access, descriptors
from .program import _Builder, Side
from .shapes import FALLBACK, shapes_violation


class _Checker(_Builder):
    """A program builder whose sides are checked against the limits once per access shape."""

    def __init__(self, workload, arch, mapping, memo: dict):
        super().__init__(workload, arch, mapping)
        self.memo = memo
        self.pitch: dict = {}   # buffer name -> row-major strides (elements)
        self.splits: dict = {}  # tensor name -> Builder.split
        self.walks: dict = {}   # dim -> shapes.DimWalk (set by shapes_violation)

    def split(self, t) -> bool:
        if t.name not in self.splits:
            self.splits[t.name] = super().split(t)
        return self.splits[t.name]

    def access(self, buf, box, origin=None, pad_to=None) -> Access:
        """``Builder.access`` in plain integers (no numpy per tile)."""
        pitch = self.pitch.get(buf.name)
        if pitch is None:
            pitch = self.pitch[buf.name] = super().access(buf, box).strides
        sizes = tuple(hi - lo for lo, hi in box) + buf.shape[len(box):]
        offset = sum((lo - (origin[i] if origin else 0)) * pitch[i]
                     for i, (lo, _) in enumerate(box))
        pad_after = ()
        if pad_to is not None:
            pad_after = tuple(e - s for e, s in zip(pad_to.shape, sizes))
            pad_after = pad_after if any(pad_after) else ()
        return Access(buf.name, offset, sizes, pitch, buf.element_bytes, pad_after)

    def side(self, level: int, access: Access, what: str) -> Side:
        lim = self.arch.levels[level].dma
        if lim is None:
            return super().side(level, access, what)  # the builder's error
        key = (level, access.sizes, access.strides, access.element_bytes, access.pad_after,
               access.offset * access.element_bytes % lim.word_bytes)
        found = self.memo.get(key)
        if found is None:
            shape = Access(access.buffer, access.offset % max(1, lim.word_bytes), access.sizes,
                           access.strides, access.element_bytes, access.pad_after)
            try:
                found = side_violation(descriptors(shape, lim, what), lim,
                                       f"{what}: {access.buffer}", self.names[level])
            except DmaError as e:
                found = str(e)
            self.memo[key] = found
        if found:
            raise DmaError(found)
        return Side(access, ())

    def early(self, index: int, ev) -> None:
        """Check the read side of load ``ev`` (move ``index``) now when it reads the outermost
        level unpadded: it depends on no buffer the rest of the walk may still widen."""
        if not isinstance(ev, Transfer) or ev.kind not in ("load", "reload"):
            return
        if self.parent(ev.level, self.w.tensor(ev.tensor)) == 0 and not self.pads(ev):
            self.load_source(ev, self.load_name(index, ev), None)


MAX_EVENTS = 8192  # walk events (tiles moved or computed) a checked program may have
UNCHECKED = "unchecked"  # dma_violation's answer for a program over ``max_events``


def dma_verdict(workload, arch, mapping, memo: dict | None = None,
                max_events: int | None = MAX_EVENTS) -> str | None:
    """:func:`dma_violation`'s verdict (None, a violation, or ``UNCHECKED`` where the emitter
    has no program) from the access shapes alone (:func:`.shapes.shapes_violation`, no walk,
    no event limit); the walk where the shapes are not exact for ``mapping`` (``FALLBACK``).
    ``mapping`` must be valid (the search's are)."""
    if mapping.levels and mapping.levels[0].pack:
        return UNCHECKED
    checker = _Checker(workload, arch, mapping, {} if memo is None else memo)
    try:
        checker.refuse_merges()
    except DmaError:
        return UNCHECKED
    found = shapes_violation(checker)
    if found != FALLBACK:
        return found
    return dma_violation(workload, arch, mapping, memo, max_events)


def dma_violation(workload, arch, mapping, memo: dict | None = None,
                  max_events: int | None = MAX_EVENTS) -> str | None:
    """Why ``mapping``'s DMA program breaks ``arch``'s limits (a DmaError's message), None when
    every descriptor fits, or ``UNCHECKED`` when its walk has more than ``max_events`` events
    (None: no limit) or the emitter has no program for it yet (a reduction whose partials
    merge across cores other than by a column's sum; a tensor packed at the outermost level). ``memo`` (access shape -> verdict) may
    be shared by the mappings of one (workload, arch).

    The walk is read lazily and each load's read side in the outermost level (whose buffers
    are the whole tensors, so the side is known before the walk ends) is checked as it comes:
    a mapping is rejected at its first such violation without walking the rest. Otherwise the
    whole program is checked as :func:`~.check.check_program` would, and the message is its
    first violation (the early one may come later in program order than another)."""
    if mapping.levels and mapping.levels[0].pack:
        return UNCHECKED  # a packed layout is costed and executed, not emitted (build_program)
    if max_events is not None and model_events(workload, arch, mapping) > max_events:
        return UNCHECKED  # the walk has at least this many events: no need to walk
    checker = _Checker(workload, arch, mapping, {} if memo is None else memo)
    try:
        checker.refuse_merges()
    except DmaError:  # a reduction merged across cores: the emitter has no program for it yet
        return UNCHECKED
    events = walk(workload, arch, mapping)
    if max_events is not None:
        events = islice(events, max_events + 1)
    seen = [0]
    last_store: dict = {}
    order: list = []
    try:
        for ev, members in checker.order(_counted(events, seen), last_store):
            order.append((ev, members))
            checker.early(len(order) - 1, ev)
        if max_events is not None and seen[0] > max_events:
            return UNCHECKED
        checker.program(order, last_store)
    except DmaError as e:
        return str(e)
    return None


def _counted(events, seen: list):
    """``events``, counting them in ``seen[0]``."""
    for ev in events:
        seen[0] += 1
        yield ev


def model_events(workload, arch, mapping) -> int:
    """About the walk's events for ``mapping``, from the cost model: the transfers it counts
    (into and out of every level; the walk has one event per core of a shared transfer) plus
    the innermost tiles every core computes (per op, its padded points over its core tile)."""
    cost = evaluate(workload, arch, mapping, check_capacity=False)
    transfers = sum(sum(per.values()) for side in (cost.fills, cost.drains)
                    for per in side.values())
    core = mapping.levels[-1].sizes
    computes = sum(cost.padded_points[op.name] // math.prod(core[d] for d in op.dims)
                   for op in workload.ops)
    return int(transfers + computes)


def has_dma_limits(arch) -> bool:
    """Whether any level of ``arch`` declares DMA limits (only then is a program checked)."""
    return any(lv.dma is not None for lv in arch.levels)
