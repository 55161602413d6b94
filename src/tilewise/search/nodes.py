"""Nodes of the branch and bound and the stand-in tiles they are bounded with, as frozen records.

A batch of ``n`` nodes (:class:`Nodes`) shares one stage of the walk (:class:`Stage`): each fixes
a spatial split, per dim a group of tile ladders (:mod:`.groups`) and the loop orders of the
first levels. Its :class:`StandIns` are the tiles a bound is evaluated with while tiles are
still open (largest for traffic, smallest for footprint). Both are parallel numpy arrays,
sliced together with ``take``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import numpy as np


class Stage(NamedTuple):
    """One step of the walk: ``("tile", level, dim)`` fixes the level-``level`` tile of dim
    ``dim``; ``("order", level, -1)`` fixes the loop order of level ``level``."""

    kind: str
    level: int
    dim: int


@dataclass(frozen=True)
class Nodes:
    """``n`` nodes of one stage.

    ``split [n]`` the split index (:attr:`.Space.splits`); ``group [n, D]`` per dim the group
    of tile ladders at the depth the stage fixes (:mod:`.groups`); ``orders [n, L-1, D]`` the
    loop orders (dim indices, outermost first; -1 while open); ``weight [n]`` the share of the
    tile space below each node (for progress); ``bound [n, objectives]`` the lower bounds once
    computed; ``threshold [n]`` for a node deferred while its loop order was being fixed, the
    threshold it was deferred at (re-expanded, it emits only the orders it did not emit before;
    None: never deferred so); ``unfloored [n]`` marks a node deferred with its first filter's
    bound (its parent's traffic, no visit floors): over the threshold already, it gets its
    own bound only if a later pass resumes it (:func:`.expand.bound_unfloored`; None: no
    node so marked); ``traffic`` the traffic bounds (:class:`.bound.Traffic`, bytes and
    transfers ``[n, L, T]``) its own bound was computed with, kept for the bound of its
    children (:func:`.expand.bounded_tile_children`), or for an ``unfloored`` node its
    parent's (None: not kept, worked out again); ``calls`` its kernel-call floors
    (:attr:`StandIns.calls`) and ``joint`` its joint floors of calls and exposed bytes
    (:attr:`StandIns.joint`), kept for its loop-order children, whose tiles are its own
    (None: not kept)."""

    split: np.ndarray
    group: np.ndarray
    orders: np.ndarray
    weight: np.ndarray
    bound: np.ndarray | None = None
    threshold: np.ndarray | None = None
    unfloored: np.ndarray | None = None
    traffic: tuple | None = None
    calls: np.ndarray | None = None
    joint: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.split)

    def take(self, idx) -> "Nodes":
        """The nodes ``idx`` (indices, a mask or a slice)."""
        opt = lambda a: None if a is None else a[idx]
        return Nodes(self.split[idx], self.group[idx], self.orders[idx], self.weight[idx],
                     opt(self.bound), opt(self.threshold), opt(self.unfloored),
                     None if self.traffic is None else self.traffic.take(idx), opt(self.calls),
                     opt(self.joint))

    def with_bound(self, bound: np.ndarray, unfloored: np.ndarray | None = None,
                   traffic: tuple | None = None) -> "Nodes":
        """These nodes with bounds ``bound``, marked ``unfloored``, their ``traffic`` bounds
        (see the class doc)."""
        return Nodes(self.split, self.group, self.orders, self.weight, bound, self.threshold,
                     unfloored, traffic, self.calls, self.joint)

    @staticmethod
    def concat(parts: list["Nodes"]) -> "Nodes":
        """The nodes of ``parts`` (same optional fields set) one after the other."""
        def cat(name):
            got = [getattr(p, name) for p in parts]
            if all(g is None for g in got):
                return None
            if name in ("traffic", "calls", "joint"):   # kept only where every part kept it
                if any(g is None for g in got):
                    return None
                if name in ("calls", "joint"):
                    return np.concatenate(got)
                return type(got[0])(*(np.concatenate(a) for a in zip(*got)))
            if name == "threshold":  # never deferred while fixing an order: no threshold
                got = [np.full(len(p), -np.inf) if g is None else g for p, g in zip(parts, got)]
            if name == "unfloored":  # bounded with their own traffic and floors
                got = [np.zeros(len(p), bool) if g is None else g for p, g in zip(parts, got)]
            return np.concatenate(got)
        return Nodes(*(cat(name) for name in _NODE_FIELDS))


_NODE_FIELDS = tuple(f.name for f in fields(Nodes))


@dataclass(frozen=True)
class StandIns:
    """The tiles a node's bound is evaluated with (elements, ``[n, L, D]``) and their bytes.

    ``whole`` the traffic stand-ins: each open tile at its largest in the group; ``small`` the
    footprint stand-ins: each open tile at its smallest (raised where the chain rules force a
    loop not to iterate); ``counts`` the most tiles visited per level; ``padded [n, D]`` the
    least padded extent one core computes; ``buffers [n, L, moved]`` the single-buffer bytes of
    the moved tensors at ``small`` and ``other [n, L]`` the other buffers' bytes; ``capped``
    the traffic stand-ins with open innermost tiles capped by capacity
    (:meth:`.Engine.capped`), once computed; ``padded_all [n, D]`` the least
    padded extent all cores compute (for the compute energy); ``calls [n, U, O]`` the fewest
    kernel calls (:meth:`.Engine.with_calls`) and ``visits [n, 2, L]`` the visit floors of the
    bytes read into and written out of each level (:meth:`.Engine.with_visits`), once
    computed; ``joint [n, U]`` the joint floors of the calls and exposed bytes per innermost
    double-buffer set (seconds, :mod:`.exposure`; None: none), with ``calls``;
    ``ladders [n, D, 2]`` per dim the range of ladders below the node
    (:attr:`.groups.TileGroups.inner`), for the kernel-call floors (:mod:`.calls`)."""

    whole: np.ndarray
    small: np.ndarray
    counts: np.ndarray
    padded: np.ndarray
    buffers: np.ndarray
    other: np.ndarray
    capped: np.ndarray | None = None
    padded_all: np.ndarray | None = None
    calls: np.ndarray | None = None
    visits: np.ndarray | None = None
    ladders: np.ndarray | None = None
    joint: np.ndarray | None = None

    def take(self, idx) -> "StandIns":
        """The stand-ins of nodes ``idx`` (indices, a mask or a slice)."""
        opt = lambda a: None if a is None else a[idx]
        return StandIns(self.whole[idx], self.small[idx], self.counts[idx], self.padded[idx],
                        self.buffers[idx], self.other[idx], opt(self.capped),
                        opt(self.padded_all), opt(self.calls), opt(self.visits),
                        opt(self.ladders), opt(self.joint))

    def with_capped(self, capped: np.ndarray) -> "StandIns":
        return replace(self, capped=capped)


def expand_ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every index of the ranges ``[lo[i], hi[i])``, with the range ``i`` it came from:
    ``(parent, index)``, both ``[sum(hi - lo)]``, in range order."""
    fan = hi - lo
    parent = np.repeat(np.arange(len(fan)), fan)
    return parent, np.arange(len(parent)) - np.repeat(np.cumsum(fan) - fan, fan) + lo[parent]
