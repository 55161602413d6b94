"""``search_many``: solve a list of problems in worker processes, with a solution store.

Each problem is searched by :func:`tilewise.search` in a worker of a
``concurrent.futures.ProcessPoolExecutor`` (``workers=None``: ``os.cpu_count()``; ``workers=1``
runs in this process). With ``store`` (a path or a :class:`~.store.Store`) problems already in
the store are not recomputed, and each finished problem is written (by this process only) as
soon as it completes, so an interrupted run resumes where it stopped::

    >>> out = search_many([gemm(512, 768, 768), gemm(512, 3072, 768)], "aie-4x2",
    ...                   store="solutions.sqlite")
    >>> [o["cached"] for o in out], out[0]["top"][0]["mapping"]

Problem-list YAML (:func:`load_problems`)::

    arch: aie-4x2          # preset name or YAML path
    objective: latency     # optional
    top: 3                 # optional
    problems:
      - gemm: {m: 512, n: 768, k: 768, dtype: i8}
      - conv2d: {c: 64, h: 56, w: 56, k: 64, padding: 1}
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from ..errors import TilewiseError
from .optimize import _arch, search
from .store import Store

_TOP_KEYS = ("arch", "objective", "top", "constraints", "problems")


def _solve(workload, arch, objective, top, constraints) -> tuple[str, float]:
    t0 = time.perf_counter()
    r = search(workload, arch, objective=objective, top=top, **constraints)
    return r.to_json(), time.perf_counter() - t0


def search_many(workloads, arch, objective: str = "latency", top: int = 1, workers: int | None = None,
                store=None, on_done=None, **constraints) -> list[dict]:
    """Search every workload; returns, in input order, each Result's JSON as a dict plus
    ``"cached"`` (True when it came from the store). ``on_done(index, result_dict)`` is called
    as each problem finishes (after it is stored)."""
    arch = _arch(arch)
    workloads = list(workloads)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise TilewiseError(f"workers={workers!r} must be a positive integer or None (all cores)")
    st = Store(store) if isinstance(store, (str, os.PathLike)) else store
    # the store key's "objective" also carries top and the constraints: a different question
    # never returns a stored answer to another one
    key = f"{objective} top={top} " + json.dumps(constraints, sort_keys=True, default=str)
    out: list = [None] * len(workloads)
    todo = []
    for i, w in enumerate(workloads):
        hit = st.get(w, arch, key) if st is not None else None
        if hit is not None:
            out[i] = dict(hit, cached=True)
        else:
            todo.append(i)

    def finish(i, text, seconds):
        if st is not None:
            st.put(workloads[i], arch, key, text, seconds)
        out[i] = dict(json.loads(text), cached=False)
        if on_done:
            on_done(i, out[i])

    n = workers or os.cpu_count() or 1
    if n == 1 or len(todo) <= 1:
        for i in todo:
            finish(i, *_solve(workloads[i], arch, objective, top, constraints))
    else:
        with ProcessPoolExecutor(max_workers=min(n, len(todo))) as pool:
            futures = {pool.submit(_solve, workloads[i], arch, objective, top, constraints): i
                       for i in todo}
            try:
                for f in as_completed(futures):
                    finish(futures[f], *f.result())
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
    return out


def load_problems(path: str) -> dict:
    """Read a problem-list YAML: ``{"arch", "objective", "top", "constraints", "workloads"}``.
    TilewiseError names an unknown key, a bad problem entry and what is valid."""
    import yaml

    from ..cli._workload import WORKLOAD_KINDS, workload_from_params

    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise TilewiseError(f"cannot read problem list {path}: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise TilewiseError(f"problem list {path} is not valid YAML: {e}") from None
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
    workloads = []
    for i, p in enumerate(probs):
        if not isinstance(p, dict) or len(p) != 1:
            raise TilewiseError(f"problem list {path}: problem {i} must be one mapping KIND: {{...}} "
                                f"with KIND one of {', '.join(WORKLOAD_KINDS)}; got {p!r}")
        (kind, params), = p.items()
        try:
            workloads.append(workload_from_params(kind, params))
        except TilewiseError as e:
            raise type(e)(f"problem list {path}: problem {i}: {e}") from None
    return {"arch": data["arch"], "objective": data.get("objective", "latency"),
            "top": data.get("top", 1), "constraints": data.get("constraints") or {},
            "workloads": workloads}
