"""Children of search nodes: the next tile of one dim, or a level's loop order one loop at a time.

Tile stages (:func:`tile_children`): a node's group of tile ladders for one dim splits into the
groups one level deeper (:mod:`.groups`). Children are bounded in numpy batches, first with the
parent's traffic bounds (which cost no model call), then with their own.

Order stages (:func:`order_children`): a loop order is fixed one loop at a time from the
innermost (:mod:`.order_trie`): the innermost loops decide most of the reuse, so a bad suffix
is dropped with every order ending in it. A partial order is bounded like an open level, each
tensor completing it with the free loops sorted its favourable way
(:func:`partial_order_bound`). Chain rules (spine loops first) prune order prefixes as soon as
they are violated.

What is kept, dropped or deferred is the walk's (:class:`Pruning`, :mod:`.walk`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Protocol

import numpy as np

from .bound import Traffic
from .engine import ROWS, SLACK, Engine, RunConfig
from .nodes import Nodes, StandIns, expand_ranges
from .order_trie import arrange
from .anytime import on_time
from .stats import SearchStats


class Pruning(Protocol):
    """What the walk keeps: ``split(bounds) -> (keep, later)`` masks for nodes (``later``:
    over the threshold, for a later pass; the rest dropped), ``keep(bounds)`` its first mask,
    ``keep_partial(bounds) -> mask`` for partial loop orders (no threshold); the pass's
    threshold ``theta``; ``defer(stage, nodes)`` takes the nodes ``split`` put off and returns
    their weight."""

    theta: float

    def split(self, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

    def keep(self, lb: np.ndarray) -> np.ndarray: ...

    def keep_partial(self, lb: np.ndarray) -> np.ndarray: ...

    def defer(self, stage: int, nd: Nodes) -> float: ...


# ----- tile stages -----

LAZY_ROWS = 256   # children over the threshold, per batch, whose visit floors wait (below: now)


def tile_children(eng: Engine, nd: Nodes, stage: int) -> Iterator[tuple[Nodes, np.ndarray]]:
    """The children of ``nd`` (nodes at a tile stage), in slices of at most ``ROWS``, each
    with its share of the parent's weight (the fraction of the space below it), and the index
    of each child's parent."""
    kind, k, j = eng.stages[stage]
    g = eng.groups[j][k - 1]
    parent, child = expand_ranges(g.child_lo[nd.group[:, j]], g.child_hi[nd.group[:, j]])
    share = eng.groups[j][k].n_ladders[child] / g.n_ladders[nd.group[parent, j]]
    for a in range(0, len(parent), ROWS):
        p = parent[a:a + ROWS]
        gid = nd.group[p].copy()
        gid[:, j] = child[a:a + ROWS]
        yield Nodes(split=nd.split[p], group=gid, orders=nd.orders[p],
                    weight=nd.weight[p] * share[a:a + ROWS]), p


def bounded_tile_children(eng: Engine, nd: Nodes, stage: int, run: RunConfig, prune: Pruning,
                          stats: SearchStats, done: float, deadline=None
                          ) -> tuple[list[Nodes], float]:
    """The children of ``nd`` (a tile stage) that ``prune`` keeps, with their bounds, and
    ``done`` plus the weight of the others (those deferred excepted); :class:`.OutOfTime`
    once ``deadline`` has passed."""
    kids = []
    floored = bool(eng.visit_levels(run, stage + 1))
    deep = eng.has_deep_visits(run, stage + 1)   # visit floors in two parts (below)
    # the parent's traffic bounds (kept from its own bound, else worked out) hold
    rw = nd.traffic if nd.traffic is not None else eng.node_traffic(nd, stage)[0]
    for ch, parent in tile_children(eng, nd, stage):   # for its children: a first filter
        on_time(deadline)   # (the plain call floors: the coupled ones only for those kept)
        si = eng.with_calls(eng.stand_ins(ch, stage + 1), ch.split, stage + 1, run, False)
        lb = eng.bound(ch, stage + 1, run, stats, rw.take(parent), si, visits=False)
        m, done = _unfloored_filter(ch, lb, parent, rw, stage, prune, done, floored,
                                    lazy=floored)
        ch, si, parent = ch.take(m), si.take(m), parent[m]
        if not len(ch):
            continue
        si = eng.with_calls(si, ch.split, stage + 1, run)
        if deep:   # the cheaper levels' floors first, the deeper ones for those kept
            si = eng.with_visits(si, ch.split, stage + 1, run, "shallow")
            if si.visits is not None:
                lb = eng.bound(ch, stage + 1, run, stats, rw.take(parent), si)
                m, done = _unfloored_filter(ch, lb, parent, rw, stage, prune, done, True,
                                            lazy=False)
                ch, si, parent = ch.take(m), si.take(m), parent[m]
                if not len(ch):
                    continue
            si = eng.with_visits(si, ch.split, stage + 1, run, "deep")
        else:
            si = eng.with_visits(si, ch.split, stage + 1, run)
        if si.visits is not None:   # no visit floors: this bound would be the first one
            lb = eng.bound(ch, stage + 1, run, stats, rw.take(parent), si)
            m, later = prune.split(lb)
            if later.any():
                done -= prune.defer(stage + 1, ch.take(later).with_bound(lb[later]))
            done += float(ch.weight[~m].sum())
            ch, si = ch.take(m), si.take(m)
            if not len(ch):
                continue
        ch = ch.with_bound(*_own_bound(eng, ch, stage + 1, run, stats, si, prune))
        if si.calls is not None and stage + 1 < len(eng.stages) \
                and eng.stages[stage + 1].kind == "order":
            ch = replace(ch, calls=si.calls, joint=si.joint)   # for its loop-order children
        m, later = prune.split(ch.bound)
        if later.any():
            done -= prune.defer(stage + 1, ch.take(later))
        done += float(ch.weight[~m].sum())
        kids.append(ch.take(m))
    return kids, done


def _unfloored_filter(ch: Nodes, lb: np.ndarray, parent: np.ndarray, rw, stage: int,
                      prune: Pruning, done: float, floored: bool, lazy: bool
                      ) -> tuple[np.ndarray, float]:
    """A filter of children ``ch`` bounded ``lb`` without (all of) their visit floors: the
    mask of those to bound further, and ``done`` plus the weight of those beaten. Those over
    the threshold are deferred as they are (not done: a later pass visits them, their weight
    stays out), marked to be floored (``floored``: visit floors apply) with their parent's
    traffic ``rw`` if a later pass resumes them (:func:`bound_unfloored`); ``lazy``: only
    when they are at least :data:`LAZY_ROWS` (fewer are bounded further now)."""
    m = prune.keep_partial(lb)   # beaten already: no (more) visit floors needed
    done += float(ch.weight[~m].sum())
    over = m & (lb[:, 0] > prune.theta * (1 + SLACK))
    if lazy and over.sum() < LAZY_ROWS:
        over[:] = False
    if over.any():
        flag = np.ones(int(over.sum()), bool) if floored else None
        prune.defer(stage + 1, ch.take(over).with_bound(
            lb[over], unfloored=flag, traffic=rw.take(parent[over]) if floored else None))
    return m & ~over, done


def bound_unfloored(eng: Engine, nd: Nodes, stage: int, run: RunConfig, prune: Pruning,
                    stats: SearchStats) -> Nodes:
    """``nd`` (nodes at tile-stage children's ``stage``, resumed by a later pass) with the
    nodes deferred by :func:`bounded_tile_children`'s first filter (``nd.unfloored``) bounded
    as it bounds the nodes it keeps: their parent's traffic (``nd.traffic``, where every
    part kept it) with their kernel-call and visit floors, then, for those ``prune`` keeps,
    their own traffic and refined floors."""
    if nd.unfloored is None or not nd.unfloored.any():
        return nd
    idx = np.nonzero(nd.unfloored)[0]
    sub = nd.take(idx)
    si = eng.with_calls(eng.stand_ins(sub, stage), sub.split, stage, run)
    si = eng.with_visits(si, sub.split, stage, run)
    lb, own = sub.bound.copy(), np.ones(len(sub), bool)
    if sub.traffic is not None:
        lb = eng.bound(sub, stage, run, stats, sub.traffic, si)
        own = prune.keep(lb)
    traffic = None
    if own.any():
        lb[own], _, traffic = _own_bound(eng, sub.take(own), stage, run, stats, si.take(own),
                                         prune)
    bound = nd.bound.copy()
    bound[idx] = lb
    whole = len(idx) == len(nd) and own.all()   # every node's own traffic: kept
    return nd.with_bound(bound, traffic=traffic if whole else None)


def _own_bound(eng: Engine, nd: Nodes, stage: int, run: RunConfig, stats: SearchStats,
               si: StandIns, prune: Pruning) -> tuple[np.ndarray, None, Traffic | None]:
    """Bounds of ``nd`` at ``stage`` from their own traffic, refined where ``prune`` keeps
    them (:meth:`.Engine.bound_traffic`), and that traffic where their children will need it
    (a tile stage) else None: the arguments of :meth:`.Nodes.with_bound`."""
    lb, traffic = eng.bound_traffic(nd, stage, run, stats, si=si, refine=prune.keep)
    keep = stage < len(eng.stages) and eng.stages[stage].kind == "tile"
    return lb, None, traffic if keep else None


# ----- order stages -----

@dataclass(frozen=True)
class PartialOrders:
    """Partial level-``k`` loop orders, one per row: ``parent`` the node, ``trie`` its trie
    (index into the stage's tries), ``group`` the trie range at the current depth, ``rep
    [n, D]`` one order of that range, ``size`` the orders in it, ``new`` whether no order of it
    was emitted in an earlier pass (a partial order above it was over the node's threshold),
    ``weight`` its share of the space."""

    parent: np.ndarray
    trie: np.ndarray
    group: np.ndarray
    rep: np.ndarray
    size: np.ndarray
    new: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return len(self.parent)

    def take(self, idx) -> "PartialOrders":
        return PartialOrders(self.parent[idx], self.trie[idx], self.group[idx], self.rep[idx],
                             self.size[idx], self.new[idx], self.weight[idx])


@dataclass(frozen=True)
class _OrderExpansion:
    """What every partial order of one expansion shares: the parents ``nd`` at ``stage``
    (fixing the level-``k`` order), their stand-ins ``si`` (capped), real loops ``real_all
    [n, L-1, D]``, tries, orders per trie ``total`` (float) and thresholds ``tp [n]``."""

    nd: Nodes
    stage: int
    k: int
    si: StandIns
    real_all: np.ndarray
    tries: list
    total: np.ndarray
    tp: np.ndarray


def _order_expansion(eng: Engine, nd: Nodes, stage: int,
                     run: RunConfig) -> tuple[_OrderExpansion, PartialOrders]:
    """The shared tables of the expansion of ``nd`` and its root partial orders (no loop fixed)."""
    k = eng.stages[stage].level
    # the level-k order changes no tile: one set of stand-ins (and call floors) for all children
    if nd.calls is not None:   # kept from the nodes' own bound
        si = replace(eng.with_capped(eng.stand_ins(nd, stage), nd.split, stage), calls=nd.calls,
                     joint=nd.joint)
    else:
        si = eng.with_calls(eng.stand_ins(nd, stage), nd.split, stage, run)
    real_all = eng.space.real_loops(si.whole, eng.ways[nd.split])
    keys = np.packbits(real_all[:, k], axis=1, bitorder="little")
    _, first, tid = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    tries = [eng.trie(tuple(bool(x) for x in real_all[i, k])) for i in first]
    total = np.array([len(t.orders) for t in tries], float)
    tid = tid.ravel()
    rep = np.array([t.orders[0] for t in tries], np.int64).reshape(-1, eng.D)[tid]
    tp = nd.threshold if nd.threshold is not None else np.full(len(tid), -np.inf)
    po = PartialOrders(parent=np.arange(len(tid)), trie=tid, group=np.zeros(len(tid), np.int64),
                       rep=rep, size=total[tid].astype(np.int64),
                       new=np.zeros(len(tid), bool), weight=np.zeros(len(tid)))
    return _OrderExpansion(nd, stage, k, si, real_all, tries, total, tp), po


def _grow(ex: _OrderExpansion, po: PartialOrders, m: int) -> PartialOrders:
    """Every partial order of ``po`` (``m - 1`` innermost real loops fixed) extended by one
    loop: the trie ranges at depth ``m`` inside each one."""
    P, TID, G, rep, size, NEW = [], [], [], [], [], []
    for q in np.unique(po.trie):
        sel = np.nonzero(po.trie == q)[0]
        tr = ex.tries[q]
        par, c = expand_ranges(tr.child_lo[m - 1][po.group[sel]], tr.child_hi[m - 1][po.group[sel]])
        par = sel[par]
        P.append(po.parent[par])
        TID.append(np.full(len(par), q))
        G.append(c)
        NEW.append(po.new[par])
        rep.append(tr.orders[tr.lo[m][c]])
        size.append(tr.hi[m][c] - tr.lo[m][c])
    P = np.concatenate(P)
    return PartialOrders(P, np.concatenate(TID), np.concatenate(G), np.concatenate(rep),
                         np.concatenate(size), np.concatenate(NEW), np.zeros(len(P)))


def _emit_complete(eng: Engine, ex: _OrderExpansion, po: PartialOrders, done: np.ndarray,
                   run: RunConfig, prune: Pruning, stats: SearchStats, out: list,
                   pruned: float) -> float:
    """Bound the complete orders ``po[done]`` as children at ``stage + 1``; append those
    ``prune`` keeps to ``out``; return ``pruned`` plus the weight of the others (those
    deferred excepted)."""
    nd, stage, k = ex.nd, ex.stage, ex.k
    p = po.parent[done]
    ords = nd.orders[p].copy()
    ords[:, k] = po.rep[done]
    ch = Nodes(split=nd.split[p], group=nd.group[p], orders=ords, weight=po.weight[done])
    if eng.chain_rules is not None:
        ok = eng.chain_rules.legal_prefix(ex.real_all, nd.orders, p, po.rep[done], k)
        pruned += float(ch.weight[~ok].sum())
        ch, p = ch.take(ok), p[ok]
    step = ROWS // len(eng.fav)
    for a in range(0, len(ch), step):
        part = ch.take(slice(a, a + step))
        part = part.with_bound(*_own_bound(eng, part, stage + 1, run, stats,
                                           ex.si.take(p[a:a + step]), prune))
        ok, later = prune.split(part.bound)
        if later.any():
            pruned -= prune.defer(stage + 1, part.take(later))
        pruned += float(part.weight[~ok].sum())
        if stage + 1 == len(eng.stages):
            stats.pruned_candidates += int((~ok & ~later).sum()) * len(eng.db)
        out.append(part.take(ok))
    return pruned


def _bound_partial(eng: Engine, ex: _OrderExpansion, po: PartialOrders, m: int, run: RunConfig,
                   prune: Pruning, stats: SearchStats, cut_lb: np.ndarray,
                   pruned: float) -> tuple[PartialOrders, float]:
    """Bound the partial orders ``po`` (``m`` innermost real loops fixed); keep those
    ``prune`` keeps under the threshold, lower ``cut_lb [parents, objectives]`` (per parent
    and bound column) to the bounds of those cut at the threshold; return the kept ones and
    ``pruned`` plus the weight of the dropped."""
    nd, stage, k = ex.nd, ex.stage, ex.k
    r = np.array([t.r for t in ex.tries])[po.trie]
    if eng.chain_rules is not None:
        arr = arrange(po.rep, r - m, eng.prio_legal)
        legal = eng.chain_rules.legal_prefix(ex.real_all, nd.orders, po.parent, arr, k)
        pruned += float(po.weight[~legal].sum())
        po, r = po.take(legal), r[legal]
    p = po.parent
    lbs = np.empty((len(p), len(run.objectives)))
    stats.nodes += len(p)
    step = ROWS // len(eng.fav)
    for a in range(0, len(p), step):
        sl = slice(a, a + step)
        lbs[sl] = partial_order_bound(eng, nd.take(p[sl]), stage, po.rep[sl], r[sl] - m, run,
                                      stats, ex.si.take(p[sl]))
    ok = prune.keep_partial(lbs)
    lb = lbs[:, 0]
    cut = ok & (lb > prune.theta * (1 + SLACK))  # over the threshold: cut, the parent deferred
    for c in range(lbs.shape[1]):  # per column: a bound of every order cut
        np.minimum.at(cut_lb[:, c], p[cut], lbs[cut, c])
    ok &= ~cut
    pruned -= float(po.weight[cut].sum())  # not pruned: deferred
    pruned += float(po.weight[~ok].sum())
    new = po.new[ok] | (lb[ok] > ex.tp[p[ok]] * (1 + SLACK))
    po = po.take(ok)
    return PartialOrders(po.parent, po.trie, po.group, po.rep, po.size, new, po.weight), pruned


def order_children(eng: Engine, nd: Nodes, stage: int, run: RunConfig, prune: Pruning,
                   stats: SearchStats, deadline=None) -> tuple[Nodes | None, float]:
    """The children of ``nd`` (nodes at the stage fixing the level-``k`` order) that
    ``prune`` keeps, with their bounds, and the weight of the pruned ones
    (:class:`.OutOfTime` once ``deadline`` has passed).

    The order is fixed one real loop at a time from the innermost (:class:`.OrderTrie`);
    a partial order is bounded like an open level (:func:`partial_order_bound`), and dropped
    with every order ending in it when ``prune.keep_partial`` refuses the bound or the chain
    rules refuse every completion (checked on the completion with spine loops first).

    Threshold passes (``prune.theta``): a partial order over the threshold is cut and its
    parent deferred with ``threshold`` = theta; re-expanded in a later pass, the parent emits
    only the orders below a partial order over its threshold (the others were emitted
    before, or deferred as nodes)."""
    ex, po = _order_expansion(eng, nd, stage, run)
    cut_lb = np.full((len(po), len(run.objectives)), np.inf)  # per parent: least bounds cut
    out, pruned = [], 0.0
    for m in range(eng.D + 1):
        on_time(deadline)
        if m:  # expand every surviving partial order by one loop
            po = _grow(ex, po, m)
        w = nd.weight[po.parent] * po.size / ex.total[po.trie]
        po = PartialOrders(po.parent, po.trie, po.group, po.rep, po.size, po.new, w)
        done = (po.size == 1) & (po.new | np.isneginf(ex.tp[po.parent]))  # one order left
        if done.any():
            pruned = _emit_complete(eng, ex, po, done, run, prune, stats, out, pruned)
        po = po.take(po.size > 1)
        if not len(po):
            break
        if not m:
            continue  # the root: the parent's bound holds
        po, pruned = _bound_partial(eng, ex, po, m, run, prune, stats, cut_lb, pruned)
        if not len(po):
            break
    if np.isfinite(cut_lb[:, 0]).any():
        back = np.nonzero(np.isfinite(cut_lb[:, 0]))[0]
        part = Nodes(nd.split[back], nd.group[back], nd.orders[back], nd.weight[back],
                     bound=cut_lb[back], threshold=np.full(len(back), prune.theta))
        prune.defer(stage, part)
    if not out:
        return None, pruned
    return Nodes.concat(out), pruned


def partial_order_bound(eng: Engine, nd: Nodes, stage: int, rep: np.ndarray, n_free,
                        run: RunConfig, stats: SearchStats, si: StandIns | None = None) -> np.ndarray:
    """Bounds of nodes ``nd`` at the order stage ``stage`` (level ``k``) given a partial
    level-``k`` order: ``rep [n, D]`` with its first ``n_free`` loops free (the outer
    real loops, any order) and the rest fixed; each tensor completes it its favourable
    way (:func:`.order_trie.arrange`), deeper open levels too."""
    k = eng.stages[stage].level
    o = eng.tensor_orders(nd.orders, k)
    for i in range(len(eng.fav)):
        o[:, i, k] = arrange(rep, n_free, eng.prio[i])
    si = eng.stand_ins(nd, stage) if si is None else si
    rw = eng.tensor_traffic(nd.split, eng.capped(si, nd.split, stage), o)
    return eng.bound(nd, stage + 1, run, stats, rw, si)
