"""The loop orders of one level as a trie grown from the innermost loop outward.

The search fixes a level's loop order one real loop at a time, innermost first, and bounds
each partial order (:func:`tilewise.search.expand.order_children`): the traffic a
tensor gains from a level's order comes from the loops inside its innermost indexing loop, so
the innermost loops decide most of it and a bad suffix is dropped with every order ending in
it. The trie is built from the level's canonical orders (:meth:`Space.orders_for`, so loop
equivalence and the ``orders=`` constraint apply unchanged): sorted by their real loops read
from the innermost outward, the orders sharing their ``m`` innermost real loops form one
contiguous range, a node at depth ``m``.

    >>> t = OrderTrie.build(np.array([[0, 1, 2], [1, 0, 2], [0, 2, 1]]), r=3)
    >>> t.orders.tolist()     # by innermost loop (1, then 2), then the next one out
    [[0, 2, 1], [1, 0, 2], [0, 1, 2]]
    >>> t.lo[1].tolist(), t.hi[1].tolist()
    ([0, 1], [1, 3])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OrderTrie:
    """``orders [M, D]`` (dim indices, outermost first; the ``r`` real loops first) sorted so
    that per depth ``m = 0 .. r`` the orders sharing their ``m`` innermost real loops are the
    ranges ``[lo[m][g], hi[m][g])``; ``child_lo[m][g] .. child_hi[m][g]`` index the depth
    ``m + 1`` ranges inside range ``g`` of depth ``m``."""

    orders: np.ndarray
    r: int
    lo: list
    hi: list
    child_lo: list
    child_hi: list

    @classmethod
    def build(cls, orders: np.ndarray, r: int) -> "OrderTrie":
        M = len(orders)
        inner_first = orders[:, :r][:, ::-1]  # real loops, innermost first
        if M and r:
            idx = np.lexsort(tuple(inner_first[:, i] for i in range(r - 1, -1, -1)))
            orders, inner_first = orders[idx], inner_first[idx]
        lo, hi = [], []
        for m in range(r + 1):
            new = np.ones(M, bool)
            if M > 1:
                new[1:] = (inner_first[1:, :m] != inner_first[:-1, :m]).any(1)
            starts = np.nonzero(new)[0] if M else np.zeros(0, np.int64)
            lo.append(starts)
            hi.append(np.append(starts[1:], M).astype(np.int64))
        child_lo = [np.searchsorted(lo[m + 1], lo[m]) for m in range(r)]
        child_hi = [np.searchsorted(lo[m + 1], hi[m]) for m in range(r)]
        return cls(orders, r, lo, hi, child_lo, child_hi)


def arrange(rep: np.ndarray, n_free, prio: np.ndarray) -> np.ndarray:
    """Complete partial orders: ``rep [n, D]`` is any order of each one's trie range, whose
    first ``n_free`` (scalar or ``[n]``) loops are the free outer real loops; they are sorted
    by ``prio [D]`` (a rank per dim, lower outer), the fixed inner loops kept. ``[n, D]``."""
    pos = np.arange(rep.shape[1])
    free = pos[None, :] < np.asarray(n_free).reshape(-1, 1)
    key = np.where(free, prio[rep], len(prio) + pos[None, :])
    return np.take_along_axis(rep, np.argsort(key, axis=1, kind="stable"), axis=1)
