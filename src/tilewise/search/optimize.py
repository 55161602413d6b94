"""Exact search: the optimum, the top-k and the Pareto front over the declared space.

The space (:mod:`.space`) is a product of a spatial split, per-dim tile ladders, canonical loop
orders per level and double-buffer choices. The search is a depth-first branch and bound over
it, in pieces:

- :mod:`.engine` -- the tables of one (workload, arch, space), node stand-ins, lower bounds
  from the one cost model (:mod:`.bound`) and the costing of full mappings (leaves);
- :mod:`.expand` -- children of a node: the next tile of a dim (:mod:`.groups`), or a level's
  loop order one loop at a time from the innermost (:mod:`.order_trie`);
- :mod:`.walk` -- the depth-first walk, threshold passes for the top-k, the Pareto front;
- :mod:`.pool` -- the kept candidates and their one ranking (:class:`.Ranking`: the objective,
  then the secondary keys, objectives within a tolerance of the optimum tied; then larger
  innermost tile = more work per subvolume, higher 𝔽 = min over links of compute time /
  transfer time, then the mapping itself, so the ranking does not depend on the walk);
- this module -- the public :func:`search` and the :class:`.Result` it returns.

Objectives (each minimized, each with a lower bound per node, so each prunes exactly):
``latency`` (s), ``traffic`` (off-chip bytes), ``energy`` (J), ``edp`` (J·s), ``space`` (bytes:
the on-chip footprint, i.e. the model's footprint per level summed over levels 1 .. L-1, per
instance as :attr:`Cost.footprint` gives it, double buffers counted twice) and ``ratio``
(seed 003's compute/communication ratio 𝔽 = min over links of compute time / link time,
*maximized*: ranked by ``1/𝔽``).

Ties and tolerances (:class:`.Ranking`): ``then`` the secondary keys (default: latency,
energy, traffic, without the objective and, where the arch has no energy numbers, without
energy; so latency ranks by energy then traffic), ``tolerance`` a relative tolerance ``tol``:
every mapping whose objective is at most ``(1 + tol) x`` the exact optimum counts as tied with
the optimum and those come first, ranked by the secondary keys (then the objective); the rest
follow by the objective, then the secondary keys. Then larger innermost tile, higher 𝔽 and the
mapping itself. The result is the exact top-k of this order.

Constraints (keyword arguments of :func:`search`): ``spatial`` ("any", "none" or a list such
as ``["rows=n4 cols=m2"]``; "any" leaves out attention's keys over cores and reductions whose
partials merge through the parent level, which a list may name: :mod:`.space`), ``double_buffer`` ("any", "all", "none" or ``{level: [tensors]}``),
``orders`` (allowed loop orders, e.g. ``["mnk", "nmk"]``, at every level), ``tiles``
(``{level: {dim: elements}}`` fixed tiles), ``max_core_tile`` (``{dim: elements}`` bound on
the innermost tile), ``dma_limits`` (default True: on an arch whose levels declare ``dma:``
limits, only mappings whose DMA program fits them, :mod:`.programmable`; False: the model
alone).

Statistics (``Result.stats``, :class:`.SearchStats`): ``tile_combos`` the size of the tile
space, ``nodes`` the nodes expanded, ``examined_combos`` nodes with every tile fixed,
``evaluated`` full mappings bounded exactly, ``candidates`` those x double-buffer choices,
``valid`` the ones that fit, ``ranked`` those costed as leaves and ranked,
``pruned_candidates`` those dropped by their bound before ranking (``candidates = ranked +
pruned_candidates``),
``rejected`` nodes dropped per constraint (capacity per level, chain order; ``"dma limits"``:
ranked candidates whose DMA program breaks the arch's ``dma:`` limits, :mod:`.programmable`),
``passes`` threshold passes, ``seconds``; ``time_limit`` the limit given (None: none), and
where the walk stopped at it (``timed_out``) ``lower_bound`` and ``gap`` (:mod:`.anytime`);
``dma_check_capped`` (archs with DMA limits) whether
fewer than ``top`` programmable mappings were found within the check limit, ``dma_unchecked``
how many returned mappings have programs too long to check. The Pareto front
(``Result.pareto``) is not checked against DMA limits.

    >>> r = search(gemm(512, 768, 768, dtype="i8"), "aie-4x2", objective="latency", top=5)
    >>> print(r.best.mapping); r.best.xslowdown
"""

from __future__ import annotations

import time
from contextlib import nullcontext

import numpy as np

from ..emit.dma.legal import has_dma_limits
from ..errors import CapacityError, TilewiseError
from ..model.cost import evaluate
from .anytime import Deadline, Gap
from .custom import BASE, Custom, as_custom
from .engine import Engine, RunConfig
from .pool import METRICS, Pool
from .programmable import pool_mappings, programmable_top
from .result import Result, Solution
from .stats import SearchStats
from .walk import pareto_front, search_top

OBJECTIVES = METRICS
CONSTRAINTS = ("double_buffer", "max_core_tile", "orders", "spatial", "tiles", "dma_limits",
               "pack")
MAX_TOP = 10_000  # the most mappings one search ranks (a top-k walk keeps k candidates alive)


def _arch(arch):
    if isinstance(arch, str):
        from ..arch.loader import load_arch

        return load_arch(arch)
    return arch


def search(workload, arch, objective="latency", top: int = 10, *, then=None,
           tolerance=0.0, progress=None, monotone: bool | None = None,
           time_limit: float | None = None, stop=None, **constraints) -> Result:
    """The exact top-``top`` mappings of ``workload`` on ``arch`` for ``objective`` ("latency"
    s, "traffic" off-chip bytes, "energy" J, "edp" J·s, "space" on-chip bytes, "ratio" 𝔽
    maximized) over the declared space, restricted by ``constraints``; ties (and objectives
    within ``tolerance`` of the optimum: a fraction, or a text such as "0.5%") ranked by the
    secondary keys ``then`` (names, or one text "traffic,energy"; None: the default). See the
    module doc. ``arch`` is an Arch, a preset name or a YAML path. ``progress(done, total)`` is
    called after each chunk (tile combos). Raises CapacityError explaining with numbers why
    the space is empty.

    ``objective`` may also be a custom one (:mod:`.custom`): a :class:`.custom.Custom`, a
    function of :class:`.custom.Metrics` or an expression text such as
    ``"latency * energy ** 0.5"``; ``monotone=True`` states that it never decreases when a
    metric grows, and the answer is then the exact optimum; otherwise it is the best of the
    closest built-in objective's top ``Custom.pool`` and ``stats["proven_optimal"]`` is
    False.

    ``time_limit`` (seconds): stop the walk then and return the best mappings found
    (:mod:`.anytime`: a dive finds candidates first). If the walk finished in time the answer
    is exact as without a limit; otherwise ``stats["proven_optimal"]`` is False,
    ``stats["lower_bound"]`` the proven least objective of any mapping and ``stats["gap"]``
    how far the best found may be from the optimum (``best / lower_bound - 1``). ``stop``: a
    function of no arguments, asked between batches; once it returns True the search stops
    the same way (``stats["interrupted"]``; the CLI's Ctrl-C), without a dive first unless a
    time limit is given too."""
    arch = _arch(arch)
    deadline = _deadline(time_limit, stop)
    bad = sorted(set(constraints) - set(CONSTRAINTS))
    if bad:
        raise TilewiseError(f"unknown search constraint {', '.join(map(repr, bad))}; valid: "
                            + ", ".join(CONSTRAINTS))
    objective = _objective(objective, monotone)
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise TilewiseError(f"top={top!r} must be a positive integer")
    if top > MAX_TOP:
        raise TilewiseError(f"top={top} is above the limit of {MAX_TOP} mappings: the exact "
                            "top-k keeps every candidate that may still enter it; ask for fewer")
    then, tolerance = parse_then(then), parse_tolerance(tolerance)
    dma_limits = constraints.pop("dma_limits", True)
    if not isinstance(dma_limits, bool):
        raise TilewiseError(f"dma_limits={dma_limits!r} must be True or False")
    t0 = time.perf_counter()
    with deadline if deadline is not None else nullcontext():   # compiling is not searching
        engine = Engine(workload, arch, constraints)
        if isinstance(objective, Custom):
            _check_custom(objective, arch, engine.has_energy)
        proven = not isinstance(objective, Custom) or objective.monotone
        walk_objective = objective if proven else objective.closest
        k = top if proven else max(top, objective.pool)
        pool, stats, run, capped, unchecked = programmable_top(
            engine, k, lambda n, admit: search_top(engine, walk_objective, n, progress, then,
                                                   tolerance, deadline=deadline, admit=admit),
            dma_limits)
    if not proven:  # no bound: the closest built-in objective's exact top, ranked by the function
        pool = pool.take(np.argsort(pool.metric(objective), kind="stable")[:top])
    if not len(pool) and stats.timed_out:
        why = "stopped" if stats.interrupted else f"time_limit={time_limit:g} s"
        raise TilewiseError(f"{why}: no full mapping reached yet; give the search more time "
                            "(or no limit: the exact search)")
    if not len(pool):
        raise CapacityError(explain_empty(stats))
    sols = _solutions(engine, run, pool)  # in rank order
    report = stats.report(time.perf_counter() - t0)
    report["proven_optimal"] = proven
    if stats.timed_out:
        gap = Gap(stats.lower_bound, float(pool.metric(walk_objective).min()))
        report["gap"] = gap.relative
        report["proven_optimal"] = proven and gap.relative == 0
    report["time_limit"] = time_limit
    if dma_limits and has_dma_limits(arch):
        report["dma_check_capped"] = capped
        report["dma_unchecked"] = unchecked

    def front(x, y):
        f, run_xy = pareto_front(engine, x, y, progress)
        return _solutions(engine, run_xy, f)

    return Result(workload, arch, str(objective), sols, engine.min_time_s, report, front,
                  then=run.ranking.then, tolerance=run.ranking.tolerance)


def _deadline(time_limit, stop) -> Deadline | None:
    """A :class:`.anytime.Deadline` from ``time_limit`` seconds (None: no limit) and a
    ``stop`` function (None: none); TilewiseError naming a value that is not a positive
    number or a function."""
    if stop is not None and not callable(stop):
        raise TilewiseError(f"stop={stop!r} must be a function of no arguments returning True "
                            "to stop (or None)")
    if time_limit is None:
        return None if stop is None else Deadline(np.inf, stop)
    if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float)) \
            or not np.isfinite(time_limit) or time_limit <= 0:
        raise TilewiseError(f"time_limit={time_limit!r} must be a positive number of seconds "
                            "(or None: no limit)")
    return Deadline(time_limit, stop)


def _objective(objective, monotone):
    """A built-in objective name, or a :class:`.custom.Custom` (TilewiseError naming a bad
    one and what is valid)."""
    if isinstance(objective, str) and objective in OBJECTIVES:
        if monotone is not None:
            raise TilewiseError("monotone= applies to a custom objective only; "
                                f"{objective!r} is built in")
        return objective
    if isinstance(objective, str) and objective.isidentifier():
        raise TilewiseError(f"objective {objective!r} unknown; valid: {', '.join(OBJECTIVES)}, "
                            "or an expression of " + ", ".join(BASE))
    return as_custom(objective, monotone)


def _check_custom(objective: Custom, arch, energy_known: bool) -> None:
    """The function gives a number for plain metrics; it may use energy only where the arch
    gives the workload's energy numbers (``energy_known``)."""
    energy = 1.0 if energy_known else float("nan")
    try:
        with np.errstate(all="ignore"):  # a non-finite value is reported below, in one line
            value = objective(1.0, 1.0, energy, 1.0, 1.0)
    except Exception as e:  # the user's function: say what it raised
        raise TilewiseError(f"custom objective {objective.name!r} failed on sample metrics: "
                            f"{type(e).__name__}: {e}") from None
    if not np.isfinite(value).all():
        extra = "" if energy_known else f" (arch {arch.name} gives no energy numbers)"
        raise TilewiseError(f"custom objective {objective.name!r} is not a finite number for "
                            f"sample metrics{extra}")
    if objective.closest not in OBJECTIVES:
        raise TilewiseError(f"closest objective {objective.closest!r} unknown; valid: "
                            + ", ".join(OBJECTIVES))


def parse_then(then) -> tuple[str, ...] | None:
    """Secondary keys: None (the default), names, or one text "traffic,energy" ("none": no
    secondary key). TilewiseError naming a bad key and the valid ones."""
    if then is None:
        return None
    if isinstance(then, str):
        then = [] if then.strip().lower() in ("", "none") else [k.strip() for k in then.split(",")]
    out = tuple(then)
    for k in out:
        if k not in METRICS:
            raise TilewiseError(f"secondary key {k!r} unknown; valid: {', '.join(METRICS)} "
                                "(comma-separated, e.g. traffic,energy; or none)")
    return out


def parse_tolerance(tolerance) -> float:
    """A relative tolerance: a number >= 0 (0.005) or a text "0.005" or "0.5%".
    TilewiseError naming the value and what is valid."""
    value = tolerance
    try:
        if isinstance(tolerance, str):
            text = tolerance.strip()
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        elif isinstance(tolerance, bool):
            raise ValueError
        value = float(value)
    except (TypeError, ValueError):
        value = None
    if value is None or not np.isfinite(value) or value < 0:
        raise TilewiseError(f"tolerance {tolerance!r} is not valid: give a relative tolerance >= 0 "
                            "as a fraction (0.005) or a percentage (0.5%)")
    return value


def _solutions(engine: Engine, run: RunConfig, pool: Pool) -> list[Solution]:
    """Re-evaluate the kept candidates with :func:`tilewise.evaluate` (exact Cost objects;
    energy in joules where the arch has energy numbers)."""
    if not len(pool):
        return []
    out = []
    for m in pool_mappings(engine, pool):
        cost = evaluate(engine.workload, engine.arch, m)
        energy = cost.energy_j  # the model's (None: the arch gives no energy numbers)
        out.append(Solution(m, cost, cost.latency_s, cost.offchip_bytes, energy,
                            None if energy is None else energy * cost.latency_s,
                            cost.latency_s / engine.min_time_s))
    return out


def explain_empty(stats: SearchStats) -> str:
    """Why no mapping is valid, with the smallest rejected candidate's bytes per level."""
    parts = []
    for lv, (total, tiles, bufs, other, cap) in stats.smallest.items():
        tt = " ".join(f"{d}{t}" for d, t in tiles.items())
        detail = ", ".join(f"{n} {b:,} B" for n, b in bufs.items())
        if other:
            detail += f", intermediates/state {other:,} B"
        parts.append(f"the smallest {lv} tile ({tt}) needs {total:,} B at level {lv} ({detail}) "
                     f"but capacity is {cap:,} B (short by {total - cap:,} B)")
    rej = stats.rejected
    if parts:
        return "no mapping fits: " + "; ".join(parts)
    if rej:
        return ("no valid mapping: rejected " + ", ".join(f"{v:,} by {k}" for k, v in rej.items())
                + f" of {stats.candidates:,} candidates")
    return (f"the declared space is empty ({stats.tile_combos} tile combos): loosen the "
            "constraints (tiles=, max_core_tile=, orders=, spatial=)")
