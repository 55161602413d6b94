"""Floors of the calls and the exposed bytes of the innermost level together.

The latency bound (:mod:`.bound`, fact 3) adds to the compute time ``T_c`` the link time
``E_l`` of the bytes of the tensors a level does not double-buffer. With the innermost tiles
open, it took the fewest kernel calls from the largest innermost tiles that fit each
double-buffer set (:mod:`.calls`) and the fewest exposed bytes from the node's largest tiles,
apart. Without double buffering larger tiles fit, so a set that buffers nothing was credited
with half the calls of the best double-buffered tiling *and* almost no exposed bytes: on
aie-4x2 every GEMM 10^6 x 10^6 x 10^6 node with its core tiles open sat 0.8 % under the
optimum (which pays 1.6 % in calls) and 61,998 nodes were expanded where the optimum's
neighbourhood is ~2,000. Both floors come from the same tiles; taken together they are:

**Bytes per step.** The busiest core walks its slice of the iteration space in steps, one
kernel call each, over innermost tiles of extents ``x_f <= c_f`` (``c`` a listed combo that
fits, clipped to the node's largest tiles). Between two steps one loop advances, over some dim
``d``; every tensor that ``d`` indexes changes its tile there, and a changed tile is loaded
(an input) or written back (an output: each visit ends in a write-back) — the model's reuse
rule (:mod:`tilewise.model.kernel`, step 3), on real (clipped) bytes. So each step moves at
least ``min_d sum_{t ∋ d} e_t prod_{f in t} x_f`` bytes of the tensors left exposed (``e_t``
bytes per point; the first step loads every tensor). Since ``x <= c``, each product is at least
``vol(x) / vol(c) * prod_{f in t} c_f``, and the steps' volumes sum to the core's points
``V``, so the bytes are at least

    V * min_d sum_{t ∋ d, exposed} e_t / prod_{f not in t} c_f

for reads (inputs) and for writes (outputs, at the narrower of the stored and partial-sum
widths) separately. The busiest core's ``V`` is at least the problem's points over the cores
used (its slice is the largest in every dim), and the level's bytes (summed over cores, a
broadcast counted once) are at least the bytes the busiest core receives. Its link time is at
least ``max(R / rb, W / wb)`` (:func:`tilewise.model.rules.link_time`), so per
double-buffer set ``u`` of the innermost level

    T_c + E_inner  >=  T_points + min over listed c of ( calls(c) * call_s + E_floor(c, u) )

(``T_points`` the least padded points' compute, ``calls(c)`` the plain per-dim floor of
:mod:`.calls`); both terms only fall as ``c`` grows, so the maximal combos listed there
suffice. :func:`.bound.best_variant` takes the larger of this and its own compute plus
exposed time. The GEMM above: a core that buffers nothing holds m64 n64 k256 and makes half
the calls, but moves 16 KiB per call exposed: 1.4 % more than the optimum, not 0.8 % less.

Where it applies (else no floor): one op over every dim without op state, every moved tensor
indexed by plain dims (no affine windows: a sliding window reuses part of its tile). A write
floor only where the split cuts no reduction dim (partial sums that merge across cores need
not leave the busiest core as it walks).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit


class Exposure(NamedTuple):
    """The tables of the floor (module doc). Per innermost double-buffer set ``u``: the moved
    tensors (by slot) it leaves exposed at the innermost level ``exposed [U, Tm]``, and whether
    any floor comes of it ``active [U]`` (some exposed tensor changes whichever dim advances).
    Per moved tensor: the dims indexing it ``tdims [Tm, D]``, bytes per point read into the
    level ``rbytes [Tm]`` (inputs; 0 for outputs) and written out ``wbytes [Tm]`` (outputs;
    0 for inputs). Per split: the least points of the busiest core ``volume [S]``, the
    innermost link's read and write bandwidth ``rbw, wbw [S]`` (bytes/s; ``wbw`` is inf
    where the split cuts a reduction dim: no write floor). ``call_s``: seconds per kernel
    call."""

    exposed: np.ndarray
    active: np.ndarray
    tdims: np.ndarray
    rbytes: np.ndarray
    wbytes: np.ndarray
    volume: np.ndarray
    rbw: np.ndarray
    wbw: np.ndarray
    call_s: float


def exposure(problem, moved: np.ndarray, subs: np.ndarray, nsub: int, ways: np.ndarray,
             rbw: np.ndarray, wbw: np.ndarray) -> Exposure | None:
    """The tables for ``problem`` with moved tensors ``moved [Tm]`` (tensor indices), the
    innermost level's double-buffer sets ``subs [U, Tm]`` (the first ``nsub``), per split the
    ways per dim ``ways [S, D]`` and the innermost link's bandwidths ``rbw, wbw [S]``; None
    where the floor does not apply (module doc)."""
    st, tz, c = problem.st, problem.tensors, problem.compute
    ops = st.workload.ops
    if len(ops) != 1 or ops[0].state or not c.op_mask[0].all() or c.call <= 0:
        return None
    for t in moved:   # each axis one plain dim (power 1: no dim twice)
        n = tz.plain[t, 0]
        if tz.affine[t, 0] or n != tz.tmask[t].sum() or (tz.plain[t, 2:2 + 2 * n:2] != 1).any():
            return None
    L = st.n_levels
    out = np.array([st.tensors[t].name in st.outputs for t in moved])
    tdims = tz.tmask[moved]
    tb = tz.tbytes[moved].astype(float)
    ps = tz.psum[moved].astype(float)
    rbytes = np.where(out, 0.0, tb)
    wbytes = np.where(out, np.where(ps > 0, np.minimum(tb, ps), tb), 0.0)
    held = ~problem.forced[L - 1, moved]
    exposed = ~np.asarray(subs[:nsub], bool) & held[None, :]
    active = np.array([_changes(e & ~out, tdims) or _changes(e & out, tdims) for e in exposed])
    red = tz.red[moved][out].any(0) if out.any() else np.zeros(tdims.shape[1], bool)
    volume = float(np.prod(problem.dims.sizes.astype(float))) / ways.prod(1).astype(float)
    wbw = np.where((ways[:, red] > 1).any(1), np.inf, wbw)
    return Exposure(exposed, active, tdims, rbytes, wbytes, volume, np.asarray(rbw, float),
                    np.asarray(wbw, float), float(c.call / c.clock))


def _changes(which: np.ndarray, tdims: np.ndarray) -> bool:
    """Whether the tensors ``which`` change whichever dim advances (each dim indexes one)."""
    return bool(which.any() and tdims[which].any(0).all())


def no_exposure(D: int, Tm: int, U: int, S: int) -> Exposure:
    """Tables that floor nothing (``active`` all False): one compiled signature for both."""
    z = np.zeros
    return Exposure(z((U, Tm), bool), z(U, bool), z((Tm, D), bool), z(Tm), z(Tm), z(S),
                    np.ones(S), np.ones(S), 0.0)


@njit(cache=True, inline="always")
def _per_point(tiles, u, xp):
    """Bytes read and written per point of the busiest core (module doc: ``min_d sum_{t ∋ d}
    e_t / prod_{f not in t} c_f``) for innermost tiles at most ``tiles [D]``, under
    double-buffer set ``u``."""
    D = tiles.shape[0]
    fr = np.inf
    fw = np.inf
    for d in range(D):
        sr = 0.0
        sw = 0.0
        for t in range(xp.tdims.shape[0]):
            if xp.exposed[u, t] and xp.tdims[t, d]:
                den = 1.0
                for f in range(D):
                    if not xp.tdims[t, f]:
                        den *= tiles[f]
                sr += xp.rbytes[t] / den
                sw += xp.wbytes[t] / den
        fr = min(fr, sr)
        fw = min(fw, sw)
    return fr, fw


@njit(cache=True)
def _per_point_rows(combos, u, xp, out):
    """:func:`_per_point` of every row of ``combos [M, D]`` into ``out[0], out[1]``."""
    for m in range(combos.shape[0]):
        out[0, m], out[1, m] = _per_point(combos[m], u, xp)


def per_point_table(xp: Exposure, combos: np.ndarray, u: int) -> np.ndarray:
    """``[4, M]``: per combo of ``combos [M, D]`` (one list, set ``u``'s, largest first) its
    bytes read and written per point unclipped (:func:`_per_point`), then the least of each
    over the combo and those after it in the list. A clipped combo moves at least as much per
    point, so these floor any node's (:func:`joint_floor` skips a combo, and stops the scan,
    on them)."""
    out = np.zeros((4, len(combos)))
    if len(combos):
        _per_point_rows(np.ascontiguousarray(combos, float), u, xp, out)
        out[2:] = np.minimum.accumulate(out[:2, ::-1], axis=1)[:, ::-1]
    return out


@njit(cache=True, inline="always")
def joint_floor(calls, cidx, values, lo, hi, volume, points, whole, xp, per, u, s):
    """The least over the combos ``lo .. hi`` (set ``u``'s list, largest first) of ``calls(c)
    * call_s + E_floor(c, u)`` (seconds, module doc) for a node of split ``s`` with calls per
    combo value ``calls`` (``inf``: under the node's smallest tile), least padded points
    ``points`` and largest innermost tiles ``whole [D]``; ``inf`` where no combo holds a
    mapping. A combo's unclipped bytes per point (``per [4, M]``, :func:`per_point_table`)
    give a floor of its term; its own (clipped) ones are worked out only when that floor is
    under the least so far and some extent is over ``whole``. The scan stops once ``points /
    volume * call_s`` (at most any later combo's call time) plus the least unclipped exposed
    time of the combos left reaches the least so far."""
    best = np.inf
    D = cidx.shape[1]
    tiles = np.empty(D)
    vr = xp.volume[s] / xp.rbw[s]
    vw = xp.volume[s] / xp.wbw[s]
    for i in range(lo, hi):
        rest = max(vr * per[2, i], vw * per[3, i])
        if points * xp.call_s + rest * volume[i] > best * (1.0 + 1e-9) * volume[i]:
            break
        n = 1.0
        clipped = False
        for d in range(D):
            n *= calls[cidx[i, d]]
            clipped |= values[cidx[i, d]] > whole[d]
        t = n * xp.call_s + max(vr * per[0, i], vw * per[1, i])
        if t >= best:
            continue
        if clipped:
            for d in range(D):
                tiles[d] = min(values[cidx[i, d]], whole[d])
            r, w = _per_point(tiles, u, xp)
            t = n * xp.call_s + max(vr * r, vw * w)
        best = min(best, t)
    return best
