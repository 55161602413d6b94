"""The top-k whose data movement can be programmed: DMA limits as a legality rule of the search.

On by default (the search constraint ``dma_limits``, default True; CLI
``--dma-limits/--no-dma-limits``, default on; off: the search ranks by the model alone), on an
arch whose levels declare ``dma:`` limits (the AIE presets; no other arch is checked). Rows
the DMA cannot address to the byte are padded to whole 32-bit words and counted so by the
model (:mod:`tilewise.model.contiguity`: a convolution input's windows rounded out, a plain
tensor's rows, outputs included, rounded up into rows padded host-side); what the check drops
is a tile the DMA cannot address as the model counts it (a row that starts inside a word, a
pattern that needs more buffer descriptors than its tile has or breaks a stride or wrap limit
no split fixes).

A mapping is valid only if every buffer descriptor of its program fits the limits: the verdict
of ``check_program`` on the whole program, derived from the program's distinct access shapes
without walking it (:func:`tilewise.emit.dma.legal.dma_verdict`, about 1 ms a mapping; the
walk only where the shapes are not exact, levels below the array). The limits are not part of
the bound, so the check is the top-k walk's admission rule (:class:`Admission`, the ``admit``
of :class:`.walk.TopK`): a candidate is checked when it is about to enter the top-k kept so
far, and one that fails never enters (counted in ``stats.rejected["dma limits"]``, absent
when none), so the walk's pruning bound is the k-th *programmable* mapping's and the answer is
the exact top-k of the programmable mappings, in one walk (a dozen or so checks a search).
After ``CHECK_LIMIT`` refusals the later candidates are refused unchecked (then the
programmable ones found are returned, and ``Result.stats["dma_check_capped"]`` is True when
fewer than k). With none programmable the search raises DmaError naming the first violation. A mapping the emitter has no program for (a reduction
merged across cores other than by a column's sum, a tensor packed at the outermost level), or
one that falls back to a walk longer than ``legal.MAX_EVENTS`` events, is kept and counted in
``Result.stats["dma_unchecked"]``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..emit.dma.legal import UNCHECKED, dma_verdict, has_dma_limits
from ..errors import DmaError
from ..model.batch import MappingBatch

CHECK_LIMIT = 1024  # candidates refused at most; later ones are refused unchecked (capped)


def pool_mappings(engine, pool) -> list:
    """The :class:`tilewise.Mapping` of every candidate of ``pool``, in its order."""
    db, sp = pool.double_buffer, pool.split
    batch = MappingBatch(pool.tiles, pool.orders, np.zeros_like(db), db,
                         sp[:, 0], sp[:, 1], sp[:, 2], sp[:, 3], pool.pack)
    return [batch.mapping(i, engine.workload, engine.arch) for i in range(len(pool))]


class ProgrammableTop(NamedTuple):
    """The programmable top-k: ``pool`` in rank order, the walk's ``stats`` and ``run``;
    ``capped``: fewer than k found within ``CHECK_LIMIT``; ``unchecked``: kept mappings whose
    programs were too long to check."""

    pool: object
    stats: object
    run: object
    capped: bool = False
    unchecked: int = 0


class Admission:
    """The walk's ``admit`` rule (:class:`.walk.TopK`): a candidate about to enter the top-k
    enters only if its program fits the limits (:func:`dma_verdict`, memoised per mapping
    text; ``UNCHECKED`` ones enter and are counted). After ``CHECK_LIMIT`` refusals the rest
    are refused unchecked (``capped``), or, when none was admitted, the search stops with a
    DmaError naming the first violation (``first``)."""

    def __init__(self, engine):
        self.engine = engine
        self.memo: dict = {}      # access shape -> verdict, shared by the mappings
        self.verdicts: dict = {}  # mapping text -> violation, None or UNCHECKED
        self.refused = 0
        self.admitted = 0
        self.first: str | None = None

    @property
    def capped(self) -> bool:
        return self.refused >= CHECK_LIMIT

    def verdict(self, m) -> str | None:
        key = str(m)
        if key not in self.verdicts:
            self.verdicts[key] = dma_verdict(self.engine.workload, self.engine.arch, m, self.memo)
        return self.verdicts[key]

    def __call__(self, pool) -> np.ndarray:
        if self.capped:
            return np.zeros(len(pool), np.bool_)
        found = [self.verdict(m) for m in pool_mappings(self.engine, pool)]
        ok = np.array([v in (None, UNCHECKED) for v in found], np.bool_)
        for v in (v for v, good in zip(found, ok) if not good):
            self.refused += 1
            self.first = self.first or v
        self.admitted += int(ok.sum())
        if self.capped and not self.admitted:
            raise self.none_fits()
        return ok

    def none_fits(self) -> DmaError:
        return DmaError(f"no mapping's data movement fits the DMA limits of "
                        f"{self.engine.arch.name} ({self.refused} best candidates checked); "
                        f"the first: {self.first} (dma_limits=False, --no-dma-limits: rank by "
                        "the model alone)")


def programmable_top(engine, top: int, search_top, check: bool = True):
    """``search_top(k, admit) -> (pool, stats, run)`` restricted to programmable mappings: the
    first ``top`` of them in rank order (see the module doc); ``check`` False: not restricted."""
    if not check or not has_dma_limits(engine.arch):
        return ProgrammableTop(*search_top(top, None))
    admit = Admission(engine)
    pool, stats, run = search_top(top, admit)
    if admit.refused:
        stats.rejected["dma limits"] = admit.refused
    if not len(pool) and admit.first is not None:
        raise admit.none_fits()
    unchecked = sum(admit.verdict(m) == UNCHECKED for m in pool_mappings(engine, pool)) if len(pool) else 0
    return ProgrammableTop(pool, stats, run, admit.capped and len(pool) < top, unchecked)
