"""``search_many``: solve a list of problems in worker processes, with a solution store.

Each problem is searched by :func:`tilewise.search` on an engine (:mod:`.engines`: local
worker processes, ``workers=None``: ``os.cpu_count()``, ``workers=1`` runs in this process;
or ``engine="ray"`` on a Ray cluster at ``address``) and answered by the same
:class:`~tilewise.search.result.Result` type;
``search_many`` returns one per problem, in input order. With ``store`` (a path or a
:class:`~.store.Store`) problems already in the store are not recomputed (their Result has
``cached=True``), and each finished problem is written (by this process only) as soon as it
completes, so an interrupted run resumes where it stopped::

    >>> out = search_many([gemm(512, 768, 768), gemm(512, 3072, 768)], "aie-4x2",
    ...                   store="solutions.sqlite")
    >>> [r.cached for r in out], out[0].best.mapping

A problem is a workload, or a :class:`Problem` (a workload with its own search constraints,
which override the ones given to ``search_many``).

Problem-list YAML (:func:`load_problems`; each problem is ``KIND: {parameters}`` of the
registry :mod:`tilewise.ir.kinds`, optionally with its own ``constraints``)::

    arch: aie-4x2          # preset name or YAML path
    objective: latency     # optional
    then: traffic,energy   # optional: secondary keys (default: see tilewise.search)
    tolerance: 0.5%        # optional: objectives within it of the optimum tied
    top: 3                 # optional
    constraints: {double_buffer: all}      # optional, for every problem
    problems:
      - gemm: {m: 512, n: 768, k: 768, dtype: i8}
      - conv2d: {c: 64, h: 56, w: 56, k: 64, padding: 1}
        constraints: {spatial: "rows=n4 cols=m2"}
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import dataclass, field

from ..errors import ParseError, TilewiseError, WorkloadError
from ..ir.kinds import KINDS, from_entry
from . import engines
from .optimize import CONSTRAINTS, search
from .result import Result
from .store import Store

_TOP_KEYS = ("arch", "objective", "then", "tolerance", "top", "constraints", "problems")


@dataclass(frozen=True)
class Problem:
    """A workload, its own search constraints (they override the common ones) and its own
    arch (None: the one given to :func:`search_many`; an arch sweep gives each point's)."""

    workload: object
    constraints: dict = field(default_factory=dict)
    arch: object = None


def normalize_constraints(constraints: dict, what: str = "constraints") -> dict:
    """Check the constraint names; ``spatial`` given as one text becomes a list of one (a
    string is never split into characters)."""
    if not isinstance(constraints, dict):
        raise TilewiseError(f"{what} must be a mapping of {', '.join(CONSTRAINTS)}, "
                            f"got {constraints!r}")
    bad = sorted(set(constraints) - set(CONSTRAINTS))
    if bad:
        raise TilewiseError(f"{what}: unknown search constraint {', '.join(map(repr, bad))}; "
                            f"valid: {', '.join(CONSTRAINTS)}")
    out = dict(constraints)
    sp = out.get("spatial")
    if isinstance(sp, str) and sp not in ("any", "none"):
        out["spatial"] = [sp]
    elif isinstance(sp, tuple):
        out["spatial"] = list(sp)
    return out


def _solve(workload, arch, objective, top, constraints, then=None, tolerance=0.0) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = search(workload, arch, objective=objective, top=top, then=then, tolerance=tolerance,
               **constraints)
    return r.to_json(), time.perf_counter() - t0


@dataclass(frozen=True)
class Failure:
    """A problem whose search raised (an empty space: nothing fits); ``message`` is the
    error's one line. Given in place of a Result by ``search_many(..., failures=True)``."""

    workload: object
    message: str


def _solve_or_fail(*args) -> tuple[str | None, float | str]:
    """:func:`_solve`, or ``(None, message)`` when the search raises a TilewiseError."""
    try:
        return _solve(*args)
    except TilewiseError as e:
        return None, f"{type(e).__name__}: {e}"


def search_many(problems, arch, objective: str = "latency", top: int = 1,
                workers: int | None = None, store=None, on_done=None, *, then=None,
                tolerance=0.0, engine: str = "processes", address: str | None = None,
                failures: bool = False, **constraints) -> list[Result]:
    """Search every problem (a workload or a :class:`Problem`); returns one Result per
    problem, in input order (``Result.cached``: it came from the store). ``arch``: an Arch, a
    preset name or a YAML path. ``then``, ``tolerance``: the rank order (:func:`tilewise.search`).
    ``on_done(index, result)`` is called as each problem finishes (after it is stored).
    ``engine``, ``address``, ``workers``: where the searches run (:mod:`.engines`).
    ``failures``: a problem whose search raises gets a :class:`Failure` (not stored) instead
    of stopping the run."""
    from ..arch.loader import load_arch
    from .optimize import parse_then, parse_tolerance

    arch = load_arch(arch)
    then, tolerance = parse_then(then), parse_tolerance(tolerance)
    if isinstance(problems, (str, bytes)) or not hasattr(problems, "__iter__") \
            or hasattr(problems, "ops"):
        raise TilewiseError(f"problems must be a list of workloads or Problems, got "
                            f"{type(problems).__name__}; wrap one workload as [workload]")
    items = [p if isinstance(p, Problem) else Problem(p) for p in problems]
    archs = [arch if p.arch is None else load_arch(p.arch) for p in items]
    common = normalize_constraints(constraints)
    questions = [{**common, **normalize_constraints(p.constraints, f"problem {i} constraints")}
                 for i, p in enumerate(items)]
    if store is not None and not isinstance(store, (str, os.PathLike, Store)):
        raise TilewiseError(f"store={store!r}: give a file path (SQLite) or None")
    st = Store(store) if isinstance(store, (str, os.PathLike)) else store

    def key(cons):
        # the store key's "objective" also carries top and the constraints: a different
        # question never returns a stored answer to another one
        rank = "" if then is None and not tolerance else f"then={then} tolerance={tolerance!r} "
        if cons.get("dma_limits") is True:   # the default: keys leave it out
            cons = {k: v for k, v in cons.items() if k != "dma_limits"}
        return f"{objective} top={top} {rank}" + json.dumps(cons, sort_keys=True, default=str)

    def result(i, data, cached):
        w, cons, a = items[i].workload, questions[i], archs[i]

        def front(x, y):
            return search(w, a, objective, top, then=then, tolerance=tolerance,
                          **cons).pareto(x, y)

        return Result.from_json(data, w, a, front, cached=cached)

    out: list = [None] * len(items)
    todo = []
    for i, p in enumerate(items):
        hit = st.get(p.workload, archs[i], key(questions[i])) if st is not None else None
        if hit is not None:
            try:
                out[i] = result(i, hit, True)
                continue
            except TilewiseError as e:  # a row that is JSON but not a Result: recompute it
                warnings.warn(f"solution store {st.path}: a bad row for problem {i} is ignored "
                              f"and recomputed ({e})", stacklevel=2)
        todo.append(i)

    def finish(i, text, seconds):
        if text is None:
            out[i] = Failure(items[i].workload, seconds)
            if on_done:
                on_done(i, out[i])
            return
        if st is not None:
            st.put(items[i].workload, archs[i], key(questions[i]), text, seconds)
        out[i] = result(i, text, False)
        if on_done:
            on_done(i, out[i])

    # the largest problems (most MACs, a rough proxy of search time) first, so a long search
    # is less likely to start last while the other workers sit idle
    todo.sort(key=lambda i: -items[i].workload.macs)
    tasks = [(items[i].workload, archs[i], objective, top, questions[i], then, tolerance)
             for i in todo]
    engines.run(_solve_or_fail if failures else _solve, tasks,
                lambda j, answer: finish(todo[j], *answer), engine, workers, address)
    return out


def load_problems(path: str) -> dict:
    """Read a problem-list YAML: ``{"arch", "objective", "top", "constraints", "problems"}``
    with ``problems`` a list of :class:`Problem`. TilewiseError names an unknown key, a bad
    problem entry and what is valid."""
    import yaml

    from ..textfile import read_text, yaml_problem

    text = read_text(path, "problem list")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise TilewiseError(f"problem list {yaml_problem(e, str(path))}") from None
    if not isinstance(data, dict):
        raise TilewiseError(f"problem list {path}: expected a mapping with keys {', '.join(_TOP_KEYS)}")
    bad = [k for k in data if k not in _TOP_KEYS]
    if bad:
        raise TilewiseError(f"problem list {path}: unknown key {', '.join(map(repr, bad))}; valid: "
                            + ", ".join(_TOP_KEYS))
    for key in ("arch", "problems"):
        if key not in data:
            raise TilewiseError(f"problem list {path}: missing key {key!r}")
    probs = data["problems"]
    if not isinstance(probs, list) or not probs:
        raise TilewiseError(f"problem list {path}: 'problems' must be a non-empty list")
    try:
        common = normalize_constraints(data.get("constraints") or {})
    except TilewiseError as e:
        raise _prefixed(e, f"problem list {path}: ") from None
    problems = []
    for i, p in enumerate(probs):
        try:
            problems.append(_problem(p))
        except TilewiseError as e:
            raise _prefixed(e, f"problem list {path}: problem {i}: ") from None
    return {"arch": data["arch"], "objective": data.get("objective", "latency"),
            "then": data.get("then"), "tolerance": data.get("tolerance", 0.0),
            "top": data.get("top", 1), "constraints": common, "problems": problems}


def _problem(p) -> Problem:
    """One entry ``{KIND: {parameters}, constraints: {...}}`` of a problem list."""
    shape = (f"KIND: {{parameters}} (KIND one of {', '.join(KINDS)}), optionally with "
             "constraints: {...}")
    if not isinstance(p, dict):
        raise WorkloadError(f"expected {shape}; got {p!r}")
    entry = {k: v for k, v in p.items() if k != "constraints"}
    if len(entry) > 1:
        extra = [k for k in entry if k not in KINDS] or list(entry)[1:]
        raise WorkloadError(f"unknown key {', '.join(map(repr, extra))}; a problem is {shape}")
    if not entry:
        raise WorkloadError(f"no workload; a problem is {shape}")
    return Problem(from_entry(entry, "a problem"), normalize_constraints(p.get("constraints") or {}))


def _prefixed(e: TilewiseError, prefix: str) -> TilewiseError:
    """The same error type with ``prefix`` before its message (a ParseError becomes a
    WorkloadError: its constructor takes the text and position)."""
    cls = WorkloadError if isinstance(e, ParseError) else type(e)
    return cls(prefix + str(e))
