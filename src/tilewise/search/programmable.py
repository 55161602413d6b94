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
the bound, so the check runs after the top-k walk: the ranked candidates are checked in rank
order, failures dropped (counted in ``stats.rejected["dma limits"]``, absent when none), and
when fewer than k remain the walk is run again for more (twice as many each time,
``RETRY_TOP`` at least) until k programmable ones are found, the space is exhausted, or
``CHECK_LIMIT`` candidates were checked (then the programmable ones found so far are returned
and ``Result.stats["dma_check_capped"]`` is True). With none programmable the search raises
DmaError naming the first violation. A mapping the emitter has no program for (a reduction
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

CHECK_LIMIT = 1024  # candidates checked at most before the programmable ones found are kept
RETRY_TOP = 32  # the least k a rerun asks for: a walk for 32 costs about one for 1 (ResNet-18's
# layer4 on npu1: 8.0 s vs 8.5 s CPU), and each rerun repeats the whole walk


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


def programmable_top(engine, top: int, search_top, max_top: int, check: bool = True):
    """``search_top(k) -> (pool, stats, run)`` restricted to programmable mappings: the first
    ``top`` of them in rank order (see the module doc); ``check`` False: not restricted."""
    pool, stats, run = search_top(top)
    if not check or not has_dma_limits(engine.arch) or not len(pool):
        return ProgrammableTop(pool, stats, run)
    memo: dict = {}
    verdicts: dict = {}  # mapping text -> violation or None
    want = top
    while True:
        keep, first, unchecked = [], None, 0
        for i, m in enumerate(pool_mappings(engine, pool)):
            key = str(m)
            if key not in verdicts:
                verdicts[key] = dma_verdict(engine.workload, engine.arch, m, memo)
            if verdicts[key] in (None, UNCHECKED):
                keep.append(i)
                unchecked += verdicts[key] == UNCHECKED
                if len(keep) == top:
                    break
            elif first is None:
                first = verdicts[key]
        capped = len(verdicts) >= CHECK_LIMIT or want >= max_top
        if len(keep) == top or len(pool) < want or capped:
            break
        want = min(max_top, max(2 * want, RETRY_TOP))
        pool, stats, run = search_top(want)
    checked = (keep[-1] + 1) if len(keep) == top else len(pool)
    if checked > len(keep):
        stats.rejected["dma limits"] = checked - len(keep)
    if not keep:
        raise DmaError(f"no mapping's data movement fits the DMA limits of {engine.arch.name} "
                       f"({checked} best candidates checked); the first: {first}")
    return ProgrammableTop(pool.take(np.array(keep, dtype=np.int64)), stats, run,
                           len(keep) < top and capped, unchecked)

