"""The depth-first branch and bound: threshold passes for the top-k; the Pareto front by constraints.

The walk (:func:`walk`) fixes, stage by stage (:attr:`.Engine.stages`), the level-``k`` tile of
every dim and then the level ``k-1`` loop order (:mod:`.expand`). Children are bounded in numpy
batches (a lower bound per rank key: the objective, then the secondary keys), sorted, and the
most promising batch is expanded first; a node is dropped with its subtree when ``k`` kept
candidates rank before every mapping below it whatever the optimum turns out to be
(:meth:`.Ranking.beaten`: on the objective, or, among mappings tied with the optimum or
within the tolerance, on the secondary keys), so nothing unseen can beat or tie them.

Threshold passes (:class:`TopK`): a node whose bound is over ``theta`` (first 0.01 % over the
root's least bound, ``_THETA0``) is *deferred*, not dropped, and so is a partial loop order
over it (its parent node is kept with ``threshold = theta``; re-expanded later, it emits only
the orders below a partial order over that threshold, so nothing is emitted twice). The next
pass doubles the threshold's excess over the root bound (``_THETA_GROWTH``, at least to the
least deferred bound) and resumes from the deferred nodes that the candidates found so far do
not beat; no node is expanded twice. The walk stops once every deferred node is beaten or
nothing was deferred. Every node whose bound is at most the final k-th best is visited, so the
result is exact; the passes make the walk nearly best-first where bounds are flat (a
convolution's top mappings lie within 0.02 % of the compute bound) without giving up batched
evaluation.

The exact Pareto front (:func:`pareto_front`) is a sequence of top-1 walks, each under a
constraint on the other metric (:class:`Below`) that the last point's value tightens.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .engine import ROWS, SLACK, Engine, RunConfig
from .expand import Pruning, bound_unfloored, bounded_tile_children, order_children
from .nodes import Nodes
from .pool import EXACT, Pool
from .anytime import Deadline, OutOfTime, answer_after_stop, dive, least_unexplored, polish
from .stats import SearchStats

_THETA0 = 1e-4       # the first threshold: 0.01 % over the root's bound
_THETA_GROWTH = 2.0
_ORDER_FAN = 4       # orders per node assumed when batching an order stage (ROWS / 4 nodes) ...
_LAST_ORDER_FAN = 64  # ... but the last one's nodes in small batches: their leaves soon prune  # each further pass: the threshold's excess over the root's bound x 2


def walk(eng: Engine, run: RunConfig, prune: Pruning, leaf, stats: SearchStats, progress=None,
         roots=None, done: float = 0.0, deadline: Deadline | None = None) -> float:
    """Visit the space below ``roots`` (``(stage, nodes)`` entries; default the root):
    ``prune`` keeps or defers nodes (:class:`.expand.Pruning`), ``leaf(nodes)`` takes full
    mappings (their bounds are exact per mapping, least over double buffering). ``done``: the
    share of the space already settled (for ``progress(done, total)``, in tile combos);
    returns it updated. The deepest stage with pending nodes goes first (depth first), its
    pending nodes from every parent merged into batches (:class:`Pending`). Once ``deadline``
    has passed, every pending node is deferred (``prune.defer``) and ``stats.timed_out`` set."""
    total = stats.tile_combos
    pending = Pending(len(eng.stages) + 1)
    for stage, nd in (roots if roots is not None else [(0, eng.root(run, stats))]):
        pending.push(stage, nd)
    last = len(eng.stages)
    while pending:
        if deadline is not None and deadline.passed():
            _stop(pending, prune, stats)
            break
        stage, nd = pending.pop(lambda st, nd: _batch_size(eng, st, nd))
        nd, done = _refuse(eng, stage, nd, prune, stats, done)
        if nd.unfloored is not None and len(nd):   # resumed: their own bounds first
            nd = bound_unfloored(eng, nd, stage, run, prune, stats)
            nd, done = _refuse(eng, stage, nd, prune, stats, done)
        if not len(nd):
            continue
        if stage == last:
            leaf(nd)
            done += float(nd.weight.sum())
            continue
        if progress:
            progress(int(min(done, 1.0) * total), total)
        stats.nodes += len(nd)
        try:
            kids, done = _children(eng, nd, stage, run, prune, stats, done, deadline)
        except OutOfTime:   # the parents' bounds hold for the children not yet bounded
            pending.push(stage, nd)
            _stop(pending, prune, stats)
            break
        if kids is not None:
            pending.push(stage + 1, kids)
    if progress:
        progress(int(min(done, 1.0) * total), total)
    return done


def _stop(pending: "Pending", prune: Pruning, stats: SearchStats) -> None:
    """The deadline has passed: every pending node deferred, the walk marked timed out."""
    stats.timed_out = True
    for stage, nd in pending.drain():
        prune.defer(stage, nd)


class Pending:
    """The nodes waiting to be expanded, per stage, in parts (each sorted by bound when
    pushed). :meth:`pop` takes from the deepest stage (depth first: leaves, and so candidates
    that prune, come early), its newest parts first, merging parts of several parents into one
    batch: the model is called on batches, and a walk that took one parent's children at a
    time would call it on a few rows each where bounds are tight (attention: ~9 nodes per
    call)."""

    def __init__(self, n_stages: int):
        self.parts: list[list[Nodes]] = [[] for _ in range(n_stages)]
        self.count = np.zeros(n_stages, np.int64)

    def __bool__(self) -> bool:
        return bool(self.count.any())

    def push(self, stage: int, nd: Nodes, ordered: bool = False) -> None:
        """Add ``nd`` at ``stage`` (sorted by bound here unless ``ordered``)."""
        if len(nd):
            if not ordered and nd.bound is not None:
                nd = nd.take(_by_bound(nd.bound))
            self.parts[stage].append(nd)
            self.count[stage] += len(nd)

    def drain(self) -> list[tuple[int, Nodes]]:
        """Every pending ``(stage, nodes)`` part, removed."""
        out = [(st, nd) for st, parts in enumerate(self.parts) for nd in parts]
        self.parts = [[] for _ in self.parts]
        self.count[:] = 0
        return out

    def pop(self, batch_size) -> tuple[int, Nodes]:
        """The deepest stage with pending nodes and a batch of them (``batch_size(stage,
        nodes)`` of its newest parts, merged, least bound first; the rest stay pending)."""
        stage = int(np.nonzero(self.count)[0][-1])
        parts = self.parts[stage]
        take = [parts.pop()]
        limit = batch_size(stage, take[0])
        n = len(take[0])
        while parts and n < limit:
            take.append(parts.pop())
            n += len(take[-1])
        nd = take[0]
        if len(take) > 1:
            nd = Nodes.concat(take)
            if nd.bound is not None:
                nd = nd.take(_by_bound(nd.bound))
            limit = batch_size(stage, nd)
        self.count[stage] -= len(nd)
        if len(nd) > limit:
            self.push(stage, nd.take(slice(limit, None)), ordered=True)
            nd = nd.take(slice(None, limit))
        return stage, nd


def _batch_size(eng: Engine, stage: int, nd: Nodes) -> int:
    """How many of the first nodes ``nd`` of ``stage`` have children that fit about one
    model call (at least one): at a tile stage their child groups counted, at an order
    stage a few orders each (the partial orders bounded first prune most), at the last one
    small batches (its children are leaves, whose candidates prune the rest: the traffic
    objective expands 3x the nodes in large batches there)."""
    if stage >= len(eng.stages):
        return ROWS
    kind, k, j = eng.stages[stage]
    if kind != "tile":
        return max(1, ROWS // (_LAST_ORDER_FAN if stage == len(eng.stages) - 1 else _ORDER_FAN))
    g = eng.groups[j][k - 1]
    fan = np.cumsum(g.child_hi[nd.group[:, j]] - g.child_lo[nd.group[:, j]])
    return max(1, int(np.searchsorted(fan, ROWS, side="right")))


def _refuse(eng: Engine, stage: int, nd: Nodes, prune: Pruning, stats: SearchStats,
            done: float) -> tuple[Nodes, float]:
    """The nodes ``prune`` still keeps (the k-th best may have improved since they were
    bounded); the others deferred or counted as done."""
    m, later = prune.split(nd.bound)
    if m.all():
        return nd, done
    if later.any():
        done -= prune.defer(stage, nd.take(later))
    done += float(nd.weight[~m].sum())
    if stage == len(eng.stages):
        stats.pruned_candidates += int((~m & ~later).sum()) * len(eng.db)
    return nd.take(m), done


def _children(eng: Engine, nd: Nodes, stage: int, run: RunConfig, prune: Pruning,
              stats: SearchStats, done: float, deadline=None) -> tuple[Nodes | None, float]:
    """The kept children of ``nd`` with their bounds (None if none) and ``done`` updated;
    :class:`.anytime.OutOfTime` once ``deadline`` has passed."""
    if eng.stages[stage].kind == "order":
        kids, pruned = order_children(eng, nd, stage, run, prune, stats, deadline)
        done += pruned
        kids = [kids] if kids is not None and len(kids) else []
    else:
        kids, done = bounded_tile_children(eng, nd, stage, run, prune, stats, done, deadline)
    if not kids:
        return None, done
    kids = Nodes.concat(kids)
    L = eng.L
    if (eng.depth[stage + 1] == L - 1).all() and not (eng.depth[stage] == L - 1).all():
        stats.examined_combos += len(kids)
    return kids, done


def _by_bound(lb: np.ndarray) -> np.ndarray:
    """Rows of ``lb [n, objectives]`` sorted by bound (first objective first)."""
    return np.lexsort(tuple(lb[:, i] for i in range(lb.shape[1] - 1, -1, -1)))


class TopK:
    """Pruning for the top-``top`` in the run's :class:`.Ranking`: drop nodes that ``top``
    kept candidates beat (:meth:`.Ranking.beaten`), keep the others under the pass's
    threshold ``theta`` and defer those over it (module doc)."""

    def __init__(self, eng: Engine, run: RunConfig, top: int, stats: SearchStats, lb0: float,
                 below: "Below | None" = None, admit=None):
        self.eng, self.run, self.top, self.stats = eng, run, top, stats
        self.below = below       # a constraint: only mappings with a metric under a limit
        self.admit = admit       # admit(pool) -> bool per candidate: may it enter the top-k
        self.ranking = run.ranking
        self.lb0 = lb0
        self.theta = lb0 * (1 + _THETA0)
        self.pool = Pool()       # every candidate found that may still be in the top-k
        self.deferred: list = []
        self.next = np.inf       # the least deferred bound
        self.seeds = None        # candidates of a dive in the pool (:mod:`.anytime`): a Pool

    def alive(self, lb) -> np.ndarray:
        """Nodes some mapping below which may enter the top-k."""
        ok = np.isfinite(lb[:, 0]) & ~self.ranking.beaten(lb, self.pool, self.top)
        return ok if self.below is None else ok & self.below.may_hold(lb)

    def split(self, lb):
        ok = self.alive(lb)
        under = lb[:, 0] <= self.theta * (1 + SLACK)
        return ok & under, ok & ~under

    def keep(self, lb):
        return self.split(lb)[0]

    def keep_partial(self, lb):
        return self.alive(lb)

    def defer(self, stage: int, nd: Nodes) -> float:
        if not len(nd):
            return 0.0
        self.deferred.append((stage, nd))
        self.next = min(self.next, float(nd.bound[:, 0].min()))
        return float(nd.weight.sum())  # not done: a later pass visits it

    def leaf(self, nd: Nodes) -> None:
        new = self.eng.leaf_pool(nd, self.run, self.stats)
        if len(new) and self.below is not None:
            new = new.take(self.below.holds(new))
        if len(new) and self.seeds is not None:  # a dive's leaves, found again
            new = new.take(~self.seeds.known(new))
        if not len(new):
            return
        if len(new) and len(self.pool) >= self.top:
            new = new.take(~self.ranking.beaten(self.ranking.values(new), self.pool, self.top))
        while True:
            merged = Pool.concat([self.pool, new])
            keep = self.ranking.survivors(merged, self.top)
            if self.admit is None:
                break
            entering = keep[keep >= len(self.pool)] - len(self.pool)  # indices into new
            ok = self.admit(new.take(entering)) if len(entering) else np.ones(0, np.bool_)
            if ok.all():
                break
            refused = np.ones(len(new), np.bool_)
            refused[entering[~ok]] = False
            new = new.take(refused)  # and rank again without them
        self.pool = merged.take(keep) if len(merged) else merged

    def best(self) -> Pool:
        """The top-k found, in rank order."""
        if not len(self.pool):
            return self.pool
        return self.pool.take(self.ranking.order(self.pool)[:self.top])

    def next_pass(self) -> list | None:
        """The entries to resume from (the least bounds popped first) with the threshold
        raised, or None when the walk is exact: every deferred node is beaten (those are
        dropped now) or nothing was deferred."""
        entries, last = [], len(self.eng.stages)
        for stage, nd in self.deferred:
            m = self.alive(nd.bound)
            if stage == last:
                self.stats.pruned_candidates += int((~m).sum()) * len(self.eng.db)
            if m.any():
                entries.append((stage, nd.take(m)))
        self.deferred, self.next = [], np.inf
        if not entries:
            return None
        least = min(float(nd.bound[:, 0].min()) for _, nd in entries)
        self.theta = max(least, self.lb0 + (self.theta - self.lb0) * _THETA_GROWTH)
        return sorted(entries, key=lambda e: -float(e[1].bound[:, 0].min()))


def search_top(eng: Engine, objective: str, top: int, progress=None, then=None,
               tolerance: float = 0.0, below: "Below | None" = None,
               deadline: Deadline | None = None, admit=None) -> tuple[Pool, SearchStats, RunConfig]:
    """The ``top`` best mappings (a :class:`.Pool` in rank order) for ``objective``, then the
    secondary keys ``then`` (None: :meth:`.Engine.ranking`'s default), objectives within
    ``tolerance`` of the optimum tied (:class:`.Ranking`), the statistics and the run
    configuration, by threshold passes (module doc); only mappings that hold the constraint
    ``below`` (None: all) and that ``admit`` (a legality rule outside the bound,
    ``admit(pool) -> bool per candidate``, asked only of the candidates about to enter the
    top-k: :mod:`.programmable`) admits. With a ``deadline`` (:mod:`.anytime`): a dive first, and the walk
    stopped when it passes; ``stats.lower_bound`` then holds the proven lower bound on the
    objective (None when the walk finished: the answer is exact)."""
    ranking = eng.ranking(objective, then, tolerance)
    run = eng.config(ranking.keys, objective, ranking)
    stats = eng.new_stats()
    root = eng.root(run, stats)
    lb0 = float(root.bound[:, 0].min()) if len(root) else np.inf
    run = replace(run, floor_levels=eng.floor_levels(run, root))
    topk = TopK(eng, run, top, stats, lb0, below, admit)
    entries, done = [(0, root)], 0.0
    if deadline is not None and deadline.finite and len(root):
        deadline.rebase()   # the tables are built: shares of the time left
        dive(walk, eng, run, topk, stats, deadline)
        deadline.rebase()   # the polish's share: of the time the dive left
        polish(eng, topk, stats, deadline)
        topk.seeds = topk.pool if len(topk.pool) else None
    eng.deadline = deadline
    try:
        while entries is not None and not stats.timed_out:
            stats.passes += 1
            done = walk(eng, run, topk, topk.leaf, stats, progress, entries, done, deadline)
            entries = None if stats.timed_out else topk.next_pass()
    finally:
        eng.deadline = None
    if stats.timed_out:
        stats.interrupted = deadline.stopped
        if stats.interrupted:
            answer_after_stop(walk, eng, run, topk, stats)
        stats.lower_bound = _proven_bound(topk, lb0, stats.passes > 0)
    if progress:
        progress(stats.tile_combos, stats.tile_combos)
    best = topk.best()
    if not len(best) and below is None:
        eng.find_smallest(stats)
    return best, stats, run


def _proven_bound(topk: TopK, lb0: float, walked: bool) -> float:
    """The least objective a mapping can have after a walk stopped at its deadline: the least
    bound among the unexplored nodes the candidates found do not beat (the root's bound
    ``lb0`` if the exact walk never started), or the best found if lower."""
    least = least_unexplored(topk) if walked else lb0
    best = topk.best()
    if len(best):
        least = min(least, float(topk.ranking.values(best)[0, 0]))
    return least


class Below:
    """A constraint on bound column ``col``: only mappings whose metric ``name`` is under
    ``limit``. Integer byte counts (traffic, space) compare exactly, float metrics with the
    bounds' rounding :data:`.engine.SLACK`."""

    def __init__(self, col: int, name: str, limit: float):
        self.col, self.name, self.limit = col, name, float(limit)

    def may_hold(self, lb: np.ndarray) -> np.ndarray:
        """Nodes some mapping below which may hold it (bounds ``lb [n, keys]``)."""
        b = lb[:, self.col]
        return b < self.limit if self.name in EXACT else b * (1 - SLACK) < self.limit

    def holds(self, pool: Pool) -> np.ndarray:
        return pool.metric(self.name) < self.limit


def pareto_front(eng: Engine, x: str, y: str, progress=None) -> tuple[Pool, RunConfig]:
    """Exact Pareto front of (``x``, ``y``) over the whole space, sorted by ``x``, and the run
    configuration (leaves ranked by ``y``), by constraints (the epsilon-constraint method):
    the least ``y`` (ties: least ``x``) is on the front; the next point is the least ``y``
    among mappings with ``x`` under the last point's, and so on until none is left. Each
    step is a top-1 search (:func:`search_top`) with a :class:`Below` constraint that prunes
    nodes by their ``x`` bound, so it keeps the threshold passes' near best-first order; a
    plain dominance walk over both bounds expanded most of the space (36 s for the
    quickstart GEMM)."""
    points, limit, run = [], np.inf, None
    while True:   # bound column 1 is x: the ranking's keys are (y, x)
        best, _, run = search_top(eng, y, 1, then=(x,), below=Below(1, x, limit)
                                  if np.isfinite(limit) else None)
        if not len(best):
            break
        points.append(best)
        limit = float(best.metric(x)[0])
        if progress:
            progress(len(points), len(points) + 1)
    if progress:
        progress(len(points), len(points))
    front = Pool.concat(points)
    if len(front):
        front = front.take(np.argsort(front.metric(x), kind="stable"))
    return front, run
