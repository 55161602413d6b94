"""The candidates the search keeps, and their one ranking.

A :class:`Pool` holds full mappings with one double-buffer choice each, as parallel arrays.
Ranking (:meth:`Pool.ranked`): the objective (or other primary keys, e.g. the two metrics of a
Pareto front), then more work per subvolume (larger innermost tile), then higher 𝔽 (min over
links of compute time / transfer time), then the mapping itself (split, tiles, orders, double
buffering, smallest first), so that the ranking does not depend on the order of the walk.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True)
class Pool:
    """Kept candidates ``[n]``: ``objective`` (the run's objective's unit), ``volume`` the
    innermost tile's elements, ``min_ratio`` 𝔽, ``latency_s`` seconds, ``traffic`` off-chip
    bytes, ``energy`` joules (nan without energy numbers), ``tiles [n, L, D]`` elements,
    ``orders [n, L-1, D]``, ``double_buffer [n, L, T]``, ``split [n, 4]`` (rows dim, ways, cols
    dim, ways). An empty pool has no arrays (every field None)."""

    objective: np.ndarray | None = None
    volume: np.ndarray | None = None
    min_ratio: np.ndarray | None = None
    latency_s: np.ndarray | None = None
    traffic: np.ndarray | None = None
    energy: np.ndarray | None = None
    tiles: np.ndarray | None = None
    orders: np.ndarray | None = None
    double_buffer: np.ndarray | None = None
    split: np.ndarray | None = None

    def __len__(self) -> int:
        return 0 if self.objective is None else len(self.objective)

    def _arrays(self) -> dict:
        return {name: getattr(self, name) for name in _FIELDS}

    def take(self, idx) -> "Pool":
        return Pool(**{k: v[idx] for k, v in self._arrays().items()})

    @staticmethod
    def concat(pools: list["Pool"]) -> "Pool":
        pools = [p for p in pools if len(p)]
        if not pools:
            return Pool()
        return Pool(**{k: np.concatenate([p._arrays()[k] for p in pools])
                       for k in pools[0]._arrays()})

    def metric(self, name: str) -> np.ndarray:
        """``name`` per candidate: "latency" s, "traffic" bytes, "energy" J, "edp" J·s."""
        if name == "edp":
            return self.energy * self.latency_s
        return {"latency": self.latency_s, "traffic": self.traffic, "energy": self.energy}[name]

    def ranked(self, *primary) -> np.ndarray:
        """Indices in rank order: by the ``primary`` keys (first most significant; default
        the objective), then more work per subvolume, higher 𝔽, then :meth:`identity`."""
        primary = primary or (self.objective,)
        return np.lexsort(self.identity()[::-1] + (-self.min_ratio, -self.volume) + primary[::-1])

    def identity(self) -> tuple:
        """Columns that name each candidate (split, tiles, orders, double buffering), for
        the last tie-break: the ranking then does not depend on the order of the walk."""
        n = len(self)
        cols = np.concatenate([self.split.reshape(n, -1), self.tiles.reshape(n, -1),
                               self.orders.reshape(n, -1),
                               self.double_buffer.reshape(n, -1).astype(np.int64)], axis=1)
        return tuple(cols[:, i] for i in range(cols.shape[1]))

    def best(self, top: int) -> "Pool":
        """The ``top`` best kept candidates, in rank order."""
        return self.take(self.ranked()[:top]) if len(self) else self

    def kth(self, top: int) -> float:
        """Objective of the ``top``-th best candidate; inf while fewer are kept."""
        return float(self.objective[self.ranked()[top - 1]]) if len(self) >= top else np.inf

    def front(self, x: str, y: str) -> "Pool":
        """The candidates no other one beats or ties in both metrics ``x`` and ``y`` (the
        first in rank order among ties), sorted by ``x``."""
        mx, my = self.metric(x), self.metric(y)
        order = self.ranked(mx, my)
        ys = my[order]
        prev_min = np.minimum.accumulate(np.concatenate([[np.inf], ys[:-1]]))
        return self.take(order[ys < prev_min])


_FIELDS = tuple(f.name for f in fields(Pool))
