"""The model's rules for a fused operator chain, applied to nodes and partial loop orders.

A chain (seed 004's GEMM chains, attention) has *spine* dims, shared by every op, and private
ones: a loop over a *forbidden* dim may not iterate, and, unless the chain is *projected* (a
chain of GEMMs, which takes every order: seed 004's fused loop tree), in the flattened loop
nest every real spine loop comes before every real private loop (:mod:`tilewise.model.legality`). The search
reads both masks from the model (:class:`tilewise.model.problem.ChainRules`) and applies them early: to
tiles whose loops are already known to iterate (:meth:`ChainRules.legal_tiles`,
:meth:`ChainRules.force_small`) and to loop orders as they are fixed
(:meth:`ChainRules.legal_prefix`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..model.rules import chain_violation


@dataclass(frozen=True, eq=False)
class ChainRules:
    """``spine [D]`` and ``forbidden [D]`` (bool per dim, the model's); ``projected``: every
    order is legal (:attr:`tilewise.model.structure.Structure.projected`)."""

    spine: np.ndarray
    forbidden: np.ndarray
    projected: bool = False

    def legal_tiles(self, real: np.ndarray) -> np.ndarray:
        """``[n]``: whether nodes whose loops known to iterate are ``real [n, L-1, D]`` can be
        legal whatever their orders: no real loop over a forbidden dim and no real private loop
        at a level above a real spine loop (within a level the order can put spine loops first;
        that is checked when the order is fixed)."""
        spine, forbidden = self.spine, self.forbidden
        ok = ~(real & forbidden[None, None, :]).any((1, 2))
        if self.projected:
            return ok
        private = np.logical_or.accumulate((real & ~spine[None, None, :]).any(2), axis=1)
        return ok & ~(private[:, :-1] & (real & spine[None, None, :]).any(2)[:, 1:]).any(1)

    def force_small(self, small: np.ndarray, real: np.ndarray, ways: np.ndarray,
                    depth: np.ndarray, array_level) -> None:
        """Raise, in place, the footprint stand-ins ``small [n, L, D]`` (elements) of the open
        tiles (levels below ``depth [D]``) that the rules force: a loop over a forbidden dim,
        and a loop over a spine dim below a level with a real private loop (``real [n, L-1, D]``
        the loops known to iterate), may not iterate, so the next tile of that dim is at least
        ``ceil(tile / ways)`` (``ways [n, D]`` at ``array_level``). Every legal mapping below
        the node has tiles at least these, so the footprint stays a lower bound."""
        spine, forbidden = self.spine, self.forbidden
        n, L, D = small.shape
        priv = (real & ~spine[None, None, :]).any(2)                        # [n, L-1]
        first = np.where(priv.any(1), np.argmax(priv, axis=1), L)           # [n]
        for j in range(D):
            if not ((spine[j] and not self.projected) or forbidden[j]):
                continue
            for l in range(int(depth[j]) + 1, L):
                w = ways[:, j] if l == array_level else 1
                need = -(-small[:, l - 1, j] // w)
                force = np.ones(n, bool) if forbidden[j] else l - 1 >= first + 1
                small[:, l, j] = np.where(force, np.maximum(small[:, l, j], need), small[:, l, j])

    def panel_floor(self, small: np.ndarray, tiles: np.ndarray, real: np.ndarray,
                    ways: np.ndarray, array_level) -> np.ndarray:
        """``[n, D]``: a lower bound of a projected chain's intermediate panel
        (:func:`tilewise.model.rules.panel_tile`) for nodes whose footprint stand-ins are
        ``small [n, L, D]`` (each tile at most a mapping's below the node) and whose loops
        known to iterate are ``real [n, L-1, D]`` (their tiles ``tiles [n, L, D]`` fixed;
        ``ways [n, D]`` at ``array_level``). Every loop below the first level ``f`` with a
        known real private loop runs below the divergence point whatever the orders, so per
        spine dim the panel is at least

        - the innermost tile times the most trips ``ceil(tile / step)`` of a known real loop
          over the dim below ``f`` (a product would overcount partial tiles);
        - one core's share of the level-``f+1`` tile, ``ceil(tile / ways)`` (the tile itself
          where the array is at or above ``f``), even with the tiles below open: the panel
          is the innermost tile times the pieces one core visits, each at most that tile,
          and they cover one core's share of the extent under the first shared point, which
          is at least the level-``f+1`` tile (every shared loop over the dim is at ``f`` or
          above, its step at least that tile).

        Single tiles elsewhere, and for chains that keep spine loops first."""
        out = small[:, -1].copy()
        if not self.projected:
            return out
        n, K, D = real.shape
        priv = (real & ~self.spine[None, None, :]).any(2)                   # [n, L-1]
        first = np.where(priv.any(1), np.argmax(priv, axis=1), K)           # [n]
        below = first < K
        top = np.minimum(first + 1, K)
        rows = np.arange(n)
        for j in np.flatnonzero(self.spine):
            most = np.ones(n, np.int64)
            for k in range(1, K):
                step = tiles[:, k + 1, j] * (ways[:, j] if k + 1 == array_level else 1)
                trips = -(-tiles[:, k, j] // step)
                most = np.where(real[:, k, j] & (k > first), np.maximum(most, trips), most)
            out[:, j] *= most
            w = ways[:, j] if array_level is not None else np.ones(n, np.int64)
            w = np.where((array_level or 0) > first, w, 1)
            share = -(-small[rows, top, j] // w)
            out[:, j] = np.where(below, np.maximum(out[:, j], share), out[:, j])
        return out

    def legal_prefix(self, real_all, ords, parent, ordk, k) -> np.ndarray:
        """``[n]``: whether the loops of levels 0 .. k (orders ``ords[parent]`` above k,
        ``ordk [n, D]`` at k; ``real_all`` the parents' real loops, :meth:`.Space.real_loops`)
        obey the model's rule (:func:`tilewise.model.rules.chain_violation`: spine loops before
        private ones in the flattened nest, no real loop over a forbidden dim); deeper levels
        are checked when their orders are fixed."""
        o = ords[parent].copy()
        o[:, k] = ordk
        out = np.empty(len(parent), np.bool_)
        _prefix_legal(np.ascontiguousarray(o, np.int64), np.ascontiguousarray(real_all[parent]),
                      k + 1, self.spine, self.forbidden, self.projected, out)
        return out


@njit(cache=True)
def _prefix_legal(orders, real, n_levels, spine, forbidden, projected, out):
    for i in range(orders.shape[0]):
        kind, _, _ = chain_violation(orders[i], real[i], n_levels, spine, forbidden, projected)
        out[i] = kind == 0
