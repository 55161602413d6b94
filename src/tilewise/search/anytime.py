"""A search under a time limit: a dive for early candidates, a deadline for the walk, and the
proven lower bound that says how far the best found can be from the optimum.

The exact walk (:mod:`.walk`) reaches its first full mapping only once the threshold passes
have raised ``theta`` close to the optimum. Where the space is too large for that in the
time given (seed 001's packed BRGEMM on the 4-level ``cpu-6core`` preset: six dims, four
levels), a time-limited search

1. first *dives* (:func:`dive`): the same walk, but each expansion keeps only
   :data:`DIVE_WIDTH` children of least bound (:class:`Dive`), so it reaches full mappings
   after a few hundred nodes. Those are real candidates, costed by the model like any other;
   they enter the top-k pool and prune the exact walk that follows;
2. *polishes* the best of them (:func:`polish`): a local search that costs every mapping one
   change away (one dim's tiles at every level, or one level's loop order) and moves to the
   best, until none is better: a greedy dive fixes the first dims' tiles before the capacity
   left to the last ones is known, and this undoes that;
3. then walks exactly until the :class:`Deadline`. If the walk ends first, the answer is the
   exact optimum as without a limit. Otherwise every node not yet expanded is kept aside, and
   the least bound among those the candidates found do not beat is a proven lower bound on
   the objective of any mapping not seen: the optimum lies between it and the best found
   (:class:`Gap`).
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass

import numpy as np
from numba.core.event import TimingListener, register, unregister

from .nodes import Nodes
from .space import _commute_sorted, signatures

DIVE_WIDTH = 4     # children kept per expansion by the dive
_FLAT = 1e-3       # bounds within this relative distance count as equal in a dive
POLISH_SHARE = 0.35  # the share of the time left the local search may take
DIVE_SHARE = 0.99    # ... and the dive (without a candidate there is no answer)


class OutOfTime(Exception):
    """Raised inside an expansion when its deadline has passed (:func:`on_time`): the walk
    defers the nodes being expanded, whose bounds hold for every child."""


def on_time(deadline) -> None:
    """Raise :class:`OutOfTime` once ``deadline`` (None: no limit) has passed."""
    if deadline is not None and deadline.passed():
        raise OutOfTime


class Deadline:
    """A wall-clock time limit (seconds, ``time.perf_counter``; ``inf``: none) started when
    made, and ``stop()`` (None: never), a request to stop now (Ctrl-C in the CLI).

    While it is entered (``with``), the time numba spends compiling kernels is not counted:
    on a first run with a cold kernel cache the search compiles for minutes, and a limit of
    2 s counted on the wall clock then ended with no mapping at all (seed 001's packed
    BRGEMM: an error after 172 s); the limit is on searching."""

    def __init__(self, seconds: float, stop=None):
        self.compiling = TimingListener()   # numba's compile time while entered
        self.seconds = float(seconds)
        self.start = self._now()
        self.at = self.start + self.seconds
        self.stop = stop
        self.stopped = False   # stop() said so (not the clock)

    def __enter__(self) -> "Deadline":
        register("numba:compile", self.compiling)
        return self

    def __exit__(self, *exc) -> None:
        unregister("numba:compile", self.compiling)

    def _now(self) -> float:
        """The clock (s) less the time spent compiling kernels so far."""
        done = self.compiling.duration if self.compiling.done else 0.0
        return time.perf_counter() - done

    @property
    def finite(self) -> bool:
        """Whether there is a time limit (a dive and a polish pay only then)."""
        return np.isfinite(self.seconds)

    def rebase(self) -> None:
        """Measure shares (:meth:`passed`) from now: of the time that is left."""
        self.start = self._now()
        self.seconds = max(self.at - self.start, 0.0)

    def passed(self, share: float = 1.0) -> bool:
        """Whether ``share`` of the limit has passed (1: all of it), or a stop was asked."""
        if self.stop is not None and (self.stopped or self.stop()):
            self.stopped = True
            return True
        return self._now() > self.start + share * self.seconds


@dataclass(frozen=True)
class Gap:
    """Where a time-limited search stopped: ``lower_bound`` the least objective any mapping
    can have (the objective's units: s, bytes, J, J·s, or 1/𝔽 for ``ratio``), ``best`` the
    best found, ``relative`` ``best / lower_bound - 1`` (0: proven optimal; inf where the
    bound is 0)."""

    lower_bound: float
    best: float

    @property
    def relative(self) -> float:
        if self.best <= self.lower_bound:
            return 0.0
        return self.best / self.lower_bound - 1 if self.lower_bound > 0 else float("inf")


class Dive:
    """Pruning for a dive (:func:`dive`): the nodes ``topk`` keeps alive, of each batch of
    children only the :data:`DIVE_WIDTH` of least bound; nothing is deferred."""

    def __init__(self, topk, width: int = DIVE_WIDTH):
        self.topk, self.width = topk, width
        self.theta = np.inf

    def keep_partial(self, lb: np.ndarray) -> np.ndarray:
        return self._least(lb, self.topk.alive(lb))

    def split(self, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.keep_partial(lb), np.zeros(len(lb), bool)

    def keep(self, lb: np.ndarray) -> np.ndarray:
        return self.keep_partial(lb)

    def defer(self, stage: int, nd) -> float:
        return 0.0   # a dive drops what it does not follow: the exact walk visits it

    def _least(self, lb: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """``width`` alive rows of least bound. Bounds within 0.1 % of each other count as
        equal (flat bounds: above a level that holds the whole problem every tile bounds
        alike). If the least band has more rows than ``width``, rows spread evenly over it,
        from its smallest tiles to its largest (children come in ascending tile order): a
        dive that always took the largest tiles of the first dims left no room for the last
        ones. Otherwise the least bands, larger tiles first within a band."""
        idx = np.nonzero(ok)[0]
        if len(idx) <= self.width:
            return ok
        with np.errstate(divide="ignore"):
            band = np.floor(np.log(np.maximum(lb[idx, 0], 1e-300)) / np.log1p(_FLAT))
        keep = np.zeros(len(lb), bool)
        first = idx[band == band.min()]        # the least band, in row (tile) order
        if len(first) >= self.width:           # spread over it: small to large tiles
            pick = first[np.linspace(0, len(first) - 1, self.width).round().astype(int)]
        else:
            pick = idx[np.lexsort((-idx, band))[:self.width]]
        keep[pick] = True
        return keep


def dive(walk, eng, run, topk, stats, deadline: Deadline | None) -> None:
    """Walk ``eng``'s space keeping few children per expansion (:class:`Dive`) until the first
    full mappings reach ``topk``'s pool, widening the dive if a narrow one dead-ends (every
    child over capacity) while ``deadline`` allows; ``walk`` is :func:`.walk.walk`."""
    width = DIVE_WIDTH
    part = None if deadline is None else _Part(deadline, DIVE_SHARE)
    while not len(topk.pool) and width <= 64 * DIVE_WIDTH:
        walk(eng, run, Dive(topk, width), topk.leaf, stats, deadline=part)
        if part is not None and part.passed():
            return
        width *= 4


class _Part:
    """The first ``share`` of a :class:`Deadline`'s limit, as a deadline of its own."""

    def __init__(self, deadline: Deadline, share: float):
        self.deadline, self.share = deadline, share

    def passed(self) -> bool:
        return self.deadline.passed(self.share)


QUICK_S = 2.0   # seconds for a dive and polish when a stop came before any full mapping


def answer_after_stop(walk, eng, run, topk, stats) -> None:
    """A walk stopped (``stop()``) before reaching a full mapping: a dive and a polish of at
    most :data:`QUICK_S` seconds, so the stop still returns mappings (with their gap)."""
    if not len(topk.pool):
        with Deadline(QUICK_S) as quick:
            dive(walk, eng, run, topk, stats, quick)
            polish(eng, topk, stats, quick)


class Interrupt:
    """Ctrl-C as a request to stop (a context manager, for the CLI): inside it the first
    SIGINT sets :meth:`requested` (the search stops, with the best found and its gap); a second
    one raises KeyboardInterrupt as usual. Outside the main thread it does nothing."""

    def __init__(self):
        self.hits = 0
        self._old = None

    def requested(self) -> bool:
        return self.hits > 0

    def _on_sigint(self, signum, frame):
        self.hits += 1
        if self.hits > 1:
            raise KeyboardInterrupt

    def __enter__(self) -> "Interrupt":
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *exc) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def least_unexplored(topk) -> float:
    """The least first-column bound among the nodes ``topk`` deferred that its candidates do
    not beat (inf: none, so nothing unseen can enter the top-k)."""
    least = np.inf
    for _, nd in topk.deferred:
        m = topk.alive(nd.bound)
        if m.any():
            least = min(least, float(nd.bound[m, 0].min()))
    return least


def polish(eng, topk, stats, deadline: Deadline | None) -> None:
    """Local search from the best mapping in ``topk``'s pool (module doc): each round costs,
    as leaves of ``topk`` (:meth:`.walk.TopK.leaf`, so the model and ranking are the search's
    own), every mapping one change away (:func:`_neighbours`: one dim's tiles at two levels,
    two dims' tiles at one level, the loop orders kept and made canonical for the new real
    loops; or one level's loop order); it stops when the
    best is unchanged or :data:`POLISH_SHARE` of the time ``deadline`` had left when it
    started has passed (the rest is the exact walk's)."""
    seen = set()
    while len(topk.pool) and not (deadline is not None and deadline.passed(POLISH_SHARE)):
        best = topk.best().take(np.arange(1))
        key = (best.split[0].tobytes(), best.tiles[0].tobytes(), best.orders[0].tobytes())
        if key in seen:
            return
        seen.add(key)
        s = int(np.nonzero((eng.split_arr == best.split[0]).all(1))[0][0])
        nd = _neighbours(eng, s, best.tiles[0], best.orders[0])
        topk.seeds = topk.pool   # the incumbent and earlier rounds' mappings come back
        if len(nd):
            stats.evaluated += len(nd)   # costed exactly, as leaves (candidates = ranked +
            stats.candidates += len(nd) * len(eng.db)   # pruned holds)
            topk.leaf(nd)
        topk.seeds = None


def _neighbours(eng, s: int, tiles: np.ndarray, orders: np.ndarray) -> Nodes:
    """Full-mapping nodes of split ``s`` one change away from ``tiles [L, D]`` / ``orders
    [L-1, D]`` (:func:`polish`)."""
    L, D = eng.L, eng.D
    gid = np.array([_ladder_index(eng, s, j, tiles[:, j]) for j in range(D)], np.int64)
    if (gid < 0).any():
        return _nodes(s, np.zeros((0, D), np.int64), np.zeros((0, L - 1, D), np.int64))
    rows = [gid[None]]
    for j in range(D):      # one dim's tiles at two levels at once (a tile and the one inside)
        for k1 in range(1, L):
            for k2 in range(k1 + 1, L):
                rows.append(_with(gid, j, _level_variants(eng, s, j, tiles[:, j], k1, k2)))
    for k in range(1, L):   # two dims' tiles at one level at once: room given to another dim
        var = [_level_variants(eng, s, j, tiles[:, j], k) for j in range(D)]
        for j1 in range(D):
            for j2 in range(j1 + 1, D):
                a, b = np.meshgrid(var[j1], var[j2], indexing="ij")
                g = np.tile(gid, (a.size, 1))
                g[:, j1], g[:, j2] = a.ravel(), b.ravel()
                rows.append(g)
    gids = np.concatenate(rows)
    ords = _canonical(eng, s, gids, orders)
    tt = eng.assemble(gid[None], len(eng.stages))[0]
    real = eng.space.real_loops(tt, eng.ways[[s]])[0]
    extra_g, extra_o = [], []
    for k in range(L - 1):
        alt = eng.trie(tuple(bool(x) for x in real[k])).orders
        o = np.repeat(ords[:1], len(alt), 0)
        o[:, k] = alt
        extra_g.append(np.repeat(gid[None], len(alt), 0))
        extra_o.append(o)
    gids = np.concatenate([gids] + extra_g)
    ords = np.concatenate([ords] + extra_o)
    ok = (ords >= 0).all((1, 2))
    flat = np.concatenate([gids[ok], ords[ok].reshape(int(ok.sum()), -1)], 1)
    _, first = np.unique(flat, axis=0, return_index=True)
    first = np.sort(first)
    return _nodes(s, gids[ok][first], ords[ok][first])


def _nodes(s: int, gids: np.ndarray, ords: np.ndarray) -> Nodes:
    n = len(gids)
    return Nodes(split=np.full(n, s, np.int64), group=gids, orders=ords, weight=np.zeros(n))


def _ladder_range(eng, s: int, j: int) -> tuple[int, int]:
    """``[lo, hi)``: the indices of split ``s``'s full tile ladders of dim ``j`` among the
    deepest groups (one ladder each, :mod:`.groups`)."""
    top, deep = eng.groups[j][0], eng.groups[j][eng.L - 1]
    return (int(np.searchsorted(deep.lo, top.lo[s])), int(np.searchsorted(deep.lo, top.hi[s])))


def _level_variants(eng, s: int, j: int, ladder: np.ndarray, *levels: int) -> np.ndarray:
    """Split ``s``'s ladders of dim ``j`` equal to ``ladder`` except at ``levels`` (deepest
    group indices)."""
    lo, hi = _ladder_range(eng, s, j)
    whole = eng.groups[j][eng.L - 1].whole[lo:hi]
    same = np.delete(whole == ladder, list(levels), axis=1).all(1)
    return lo + np.nonzero(same)[0]


def _with(gid: np.ndarray, j: int, values: np.ndarray) -> np.ndarray:
    """``gid [D]`` repeated with dim ``j`` set to each of ``values``."""
    g = np.tile(gid, (len(values), 1))
    g[:, j] = values
    return g


def _ladder_index(eng, s: int, j: int, ladder: np.ndarray) -> int:
    """The deepest group of split ``s``, dim ``j`` whose tiles per level are ``ladder`` (-1:
    none)."""
    hit = _level_variants(eng, s, j, ladder)   # equal at every level
    return int(hit[0]) if len(hit) else -1


def _canonical(eng, s: int, gids: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Per node of split ``s`` (ladders ``gids [n, D]``) the canonical form of ``orders [L-1,
    D]`` for its real loops: the real loops in the same relative order, commuting ones sorted,
    then the loops that iterate once (:func:`.space.canonical_orders`); -1 rows where that
    order is not allowed (``orders=``)."""
    tt = eng.assemble(gids, len(eng.stages))[0]
    real = eng.space.real_loops(tt, eng.ways[np.full(len(gids), s)])
    sig = signatures(eng.st)
    out = np.full((len(gids), eng.L - 1, eng.D), -1, np.int64)
    ok = np.ones(len(gids), bool)
    for k in range(eng.L - 1):
        masks, inv = np.unique(real[:, k], axis=0, return_inverse=True)
        inv = inv.ravel()
        for q, mask in enumerate(masks):
            o = _commute_sorted([j for j in orders[k] if mask[j]], sig)
            o += [j for j in range(eng.D) if not mask[j]]
            allowed = {tuple(r) for r in eng.trie(tuple(bool(x) for x in mask)).orders}
            if tuple(o) in allowed:
                out[inv == q, k] = o
            else:
                ok[inv == q] = False
    out[~ok] = -1
    return out
