"""The candidates the search keeps, and their one ranking.

A :class:`Pool` holds full mappings with one double-buffer choice each, as parallel arrays.

Ranking (:class:`Ranking`): the objective ``f``, then the secondary keys ``g = then`` (each
minimized), with a relative ``tolerance`` ``tol >= 0``. With ``f* = min f`` over the whole
space, the *band* is every mapping with ``f <= (1 + tol) * f*``: those count as tied with the
optimum. The rank key is::

    in the band:      (0, g_1, ..., g_m, f, tie-breaks)
    outside the band: (1, f, g_1, ..., g_m, tie-breaks)

compared lexicographically, where the tie-breaks are: more work per subvolume (larger
innermost tile), higher 𝔽 (min over links of compute time / transfer time), then the mapping
itself (split, tiles, orders, double buffering, smallest first), so that the ranking does not
depend on the order of the walk. With ``tol = 0`` the band is ``f == f*`` and the key is plain
lexicographic ``(f, g_1, ..., g_m, tie-breaks)``. The k-th result is the k-th in this order:
the band first (by the secondary keys), then everything else by ``f`` and the secondary keys.
Objectives are compared exactly as computed (float seconds, joules; integer bytes).

Pruning stays exact (:meth:`Ranking.beaten`): a set of mappings (a node with lower bounds per
key, or a kept candidate) is dropped only when ``k`` kept candidates rank before every mapping
in it *whatever* ``f*`` turns out to be (it is not known until the end; every kept ``f`` is an
upper bound of it). A kept ``s`` ranks before every mapping ``m`` with ``f(m) >= lf``,
``g(m) >= lg`` when

- (A) ``f(s) <= lf`` and ``(g(s), f(s)) < (lg, lf)`` lexicographically: if ``m`` is in the
  band so is ``s`` and ``s`` wins on ``(g, f)``; if not, ``s`` wins in the band or on ``(f,
  g)``; or
- (B) ``lf > (1 + tol) * min kept f`` (``m`` is certainly outside the band) and ``f(s) < lf``.

Bounds of float metrics (latency, energy, edp) are trusted only to ``SLACK`` (relative) for
rounding; byte counts (traffic, space) are exact, and so is ``ratio`` (1/𝔽, ``max_l T_l / T_u``):
its bound is the model's own expression (:func:`tilewise.model.rules.link_time` of each link,
the largest, over ``compute.ideal``) on integer lower bounds of the bytes and transfers, with the
same bandwidth and per-transfer numbers, and every IEEE operation in it is monotone, so the bound
is never above the value bit for bit and a node that ties the kept 𝔽 can be ranked by the
secondary keys. Such ties are common (the slowest link is often the off-chip one, fixed by the
outer tiles); with a slack, every one of them was expanded to its leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
from numba import njit

from .custom import Custom

SLACK = 1e-9        # relative: a float bound within rounding of a kept value is not trusted
EXACT = ("traffic", "space", "ratio")  # bounds never above the value (module doc): no slack

# every metric a search ranks or bounds by, minimized ("ratio": 1/𝔽, 𝔽 maximized)
METRICS = ("latency", "traffic", "energy", "edp", "space", "ratio")


@dataclass(frozen=True)
class Pool:
    """Kept candidates ``[n]``: ``objective`` (the run's objective's unit), ``volume`` the
    innermost tile's elements, ``inv_ratio`` 1/𝔽 (``max_l T_l / T_u``, 0 where nothing
    moves), ``latency_s`` seconds, ``traffic`` off-chip bytes, ``energy`` joules (nan
    without energy numbers), ``space`` bytes of the on-chip footprints (sum over levels 1 ..
    L-1 of the model's footprint per level), ``tiles [n, L, D]`` elements, ``orders [n, L-1, D]``, ``double_buffer [n, L, T]``, ``split [n, 4]`` (rows
    dim, ways, cols dim, ways), ``pack [n, T]`` the tensors packed at the outermost level. An empty pool has no arrays (every field None)."""

    objective: np.ndarray | None = None
    volume: np.ndarray | None = None
    inv_ratio: np.ndarray | None = None
    latency_s: np.ndarray | None = None
    traffic: np.ndarray | None = None
    energy: np.ndarray | None = None
    space: np.ndarray | None = None
    tiles: np.ndarray | None = None
    orders: np.ndarray | None = None
    double_buffer: np.ndarray | None = None
    split: np.ndarray | None = None
    pack: np.ndarray | None = None

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
        """``name`` per candidate, minimized: "latency" s, "traffic" bytes, "energy" J, "edp"
        J·s, "space" bytes, "ratio" 1/𝔽 (0 where nothing moves)."""
        return metric_of(name, self.latency_s, self.traffic, self.energy, self.space,
                         self.inv_ratio)

    def ranked(self, *primary) -> np.ndarray:
        """Indices in rank order: by the ``primary`` keys (first most significant; default
        the objective), then more work per subvolume, higher 𝔽, then :meth:`identity`."""
        primary = primary or (self.objective,)
        return np.lexsort(self.identity()[::-1] + (self.inv_ratio, -self.volume) + primary[::-1])

    def tie_rank(self) -> np.ndarray:
        """``[n]`` each candidate's position under the tie-breaks alone (module doc)."""
        pos = np.empty(len(self), np.int64)
        pos[np.lexsort(self.identity()[::-1] + (self.inv_ratio, -self.volume))] = np.arange(len(self))
        return pos

    def identity(self) -> tuple:
        """Columns that name each candidate (split, tiles, orders, double buffering), for
        the last tie-break: the ranking then does not depend on the order of the walk."""
        cols = self._identity_rows()
        return tuple(cols[:, i] for i in range(cols.shape[1]))

    def _identity_rows(self) -> np.ndarray:
        n = len(self)
        return np.concatenate([self.split.reshape(n, -1), self.tiles.reshape(n, -1),
                               self.orders.reshape(n, -1),
                               self.double_buffer.reshape(n, -1).astype(np.int64),
                               self.pack.reshape(n, -1).astype(np.int64)], axis=1)

    def known(self, other: "Pool") -> np.ndarray:
        """``[len(other)]`` whether each candidate of ``other`` is already in this pool (the
        same mapping: a walk that resumes after a dive finds the dive's leaves again); rows
        are matched by a hash, then byte for byte."""
        out = np.zeros(len(other), bool)
        if not len(self) or not len(other):
            return out
        mine, theirs = self._identity_rows(), other._identity_rows()
        hit = np.nonzero(np.isin(_row_hash(theirs), _row_hash(mine)))[0]
        if len(hit):
            keys = {row.tobytes() for row in np.ascontiguousarray(mine)}
            rows = np.ascontiguousarray(theirs[hit])
            out[hit] = [row.tobytes() in keys for row in rows]
        return out

    def best(self, top: int) -> "Pool":
        """The ``top`` best kept candidates by the objective alone, in rank order."""
        return self.take(self.ranked()[:top]) if len(self) else self

    def front(self, x: str, y: str) -> "Pool":
        """The candidates no other one beats or ties in both metrics ``x`` and ``y`` (the
        first in rank order among ties), sorted by ``x``."""
        mx, my = self.metric(x), self.metric(y)
        order = self.ranked(mx, my)
        ys = my[order]
        prev_min = np.minimum.accumulate(np.concatenate([[np.inf], ys[:-1]]))
        return self.take(order[ys < prev_min])


_FIELDS = tuple(f.name for f in fields(Pool))


def _row_hash(rows: np.ndarray) -> np.ndarray:
    """``[n]`` a 64-bit hash of each row of the int64 matrix ``rows [n, c]`` (wrapping)."""
    mult = (np.arange(1, rows.shape[1] + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    return (rows.astype(np.uint64) * mult[None, :]).sum(1)


def metric_of(name: str, latency, traffic, energy, space, inv_ratio):
    """The minimized form of metric ``name`` from the candidates' numbers (arrays of any
    shape): ``ratio`` is ``inv_ratio``, ``1/𝔽`` (nothing moved: 0); a :class:`.custom.Custom`
    its function of those."""
    if isinstance(name, Custom):
        return name(latency, traffic, energy, space, inv_ratio)
    if name == "latency":
        return latency
    if name == "traffic":
        return traffic
    if name == "energy":
        return energy
    if name == "edp":
        return energy * latency
    if name == "space":
        return space
    if name == "ratio":
        return inv_ratio
    raise KeyError(name)


@dataclass(frozen=True)
class Ranking:
    """The rank order of a search (module doc): ``objective``, then the secondary keys
    ``then``, objectives within ``tolerance`` (relative) of the optimum counting as tied."""

    objective: str
    then: tuple[str, ...] = ()
    tolerance: float = 0.0

    @property
    def keys(self) -> tuple[str, ...]:
        """The bound columns a walk needs: the objective, then the secondary keys."""
        return (self.objective,) + tuple(self.then)

    def values(self, pool: Pool) -> np.ndarray:
        """``[n, keys]``: each key's minimized value per candidate."""
        return np.stack([np.asarray(pool.metric(k), float) for k in self.keys], 1)

    def order(self, pool: Pool) -> np.ndarray:
        """Indices of ``pool`` in rank order, the band taken relative to the pool's least
        objective (the exact ``f*`` when the pool holds the optimum: the search's does)."""
        if not len(pool):
            return np.zeros(0, np.int64)
        V = self.values(pool)
        f, G = V[:, 0], V[:, 1:]
        band = f <= (1 + self.tolerance) * f.min()
        cols = [np.where(band, 0, 1)]
        prev = f
        for i in range(G.shape[1]):
            cols.append(np.where(band, G[:, i], prev))
            prev = G[:, i]
        cols.append(np.where(band, f, prev))
        return np.lexsort((pool.tie_rank(),) + tuple(cols[::-1]))

    def survivors(self, pool: Pool, k: int) -> np.ndarray:
        """Indices of the candidates of ``pool`` that fewer than ``k`` others rank before
        whatever ``f*`` is (rules (A) and (B) of the module doc, between exact values, ties
        broken by the tie-breaks): a superset of the final top-``k`` among them."""
        n = len(pool)
        if n <= k:
            return np.arange(n)
        V = self.values(pool)
        f, G = V[:, 0], V[:, 1:]
        tie = pool.tie_rank()
        out_band = f > (1 + self.tolerance) * f.min()
        # (B): outside for sure, beaten by everything before it in (f, g, tie-breaks)
        q = np.lexsort((tie,) + tuple(G[:, ::-1].T) + (f,))
        qpos = np.empty(n, np.int64)
        qpos[q] = np.arange(n)
        keep = out_band & (qpos < k)
        # (A): beaten by everything before it in (g, f, tie-breaks) with f no larger
        r = np.lexsort((tie, f) + tuple(G[:, ::-1].T))
        keep_a = np.zeros(n, np.bool_)
        _fewer_than_k_before(f[r], k, keep_a)
        inner = np.zeros(n, np.bool_)
        inner[r] = keep_a
        keep |= ~out_band & inner
        return np.nonzero(keep)[0]

    def beaten(self, lb: np.ndarray, pool: Pool, k: int) -> np.ndarray:
        """``[n]``: the nodes (lower bounds ``lb [n, keys]``, per key of every mapping below)
        that at least ``k`` candidates of ``pool`` rank before whatever ``f*`` is (rules (A)
        and (B) of the module doc). A candidate equal to a bound on every key is not counted:
        the tie-breaks could go either way."""
        n = len(lb)
        if len(pool) < k or not n:
            return np.zeros(n, bool)
        V = self.values(pool)                                   # [P, c]
        slack = np.array([0.0 if key in EXACT else SLACK for key in self.keys])
        with np.errstate(invalid="ignore"):
            bl = lb - slack * np.abs(lb)                        # the least a bound can mean
        lt = V[None, :, :] < bl[:, None, :]                     # [n, P, c]
        le = V[None, :, :] <= bl[:, None, :]
        beat = np.zeros(lt.shape[:2], bool)
        prefix = np.ones(lt.shape[:2], bool)
        for c in list(range(1, V.shape[1])) + [0]:             # (g..., f) lexicographically
            beat |= prefix & lt[:, :, c]
            prefix &= le[:, :, c]
        a = le[:, :, 0] & beat
        out = bl[:, 0] > (1 + self.tolerance) * V[:, 0].min()   # certainly outside the band
        b = out[:, None] & lt[:, :, 0]
        return (a | b).sum(1) >= k


@njit(cache=True)
def _fewer_than_k_before(f, k, keep):
    """``keep[i]``: fewer than ``k`` of ``f[:i]`` are ``<= f[i]`` (a running list of the
    ``k`` least values seen)."""
    best = np.full(k, np.inf)
    seen = 0
    for i in range(f.shape[0]):
        keep[i] = seen < k or best[k - 1] > f[i]
        # insert f[i] into the k least
        if seen < k or f[i] < best[k - 1]:
            j = min(seen, k - 1)
            while j > 0 and best[j - 1] > f[i]:
                best[j] = best[j - 1]
                j -= 1
            best[j] = f[i]
        seen += 1
