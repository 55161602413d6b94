"""Benchmark: candidates evaluated per second by ``tilewise.evaluate_batch`` (one core).

Cases: a 3-level GEMM on ``aie-4x2`` (the issue's target: >= 1,000,000 candidates/s), a conv2d
and the attention chain. Each case is timed on two kinds of batch:

- ``random``: every candidate drawn independently (tiles log-uniform up to their parent, random
  loop orders, bypass and double-buffer flags, spatial splits): no two candidates share work,
  the worst case for the model;
- ``search``: how :func:`tilewise.search` calls the model: tile combos (one random chain per dim
  and a split), each under 36 loop-order pairs, consecutively, nothing bypassed or
  double-buffered. The model keeps a dim's tile lists and the tile-only results while the
  tiles repeat.

Reported per case: the median and best of ``--repeats`` wall-clock timings of one batch, and
the median CPU time of this process (less inflated than wall time when other jobs share the
machine). Writes ``benchmarks/results/model.json`` (``--out`` to write elsewhere).
Run: ``.venv/bin/python benchmarks/model.py [--quick] [--repeats 7]``.
"""

from __future__ import annotations

from tilewise.arch.loader import load_arch
import argparse
import itertools
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from tilewise import Arch, conv2d, gemm, mha  # noqa: E402
from tilewise.model.batch import MappingBatch  # noqa: E402
from tilewise.model.cost import evaluate_batch  # noqa: E402
from tilewise.model.structure import Structure  # noqa: E402

ORDERS_PER_COMBO = 36


def random_batch(workload, arch, n: int, rng: np.random.Generator) -> MappingBatch:
    """``n`` random candidates: tile k in [1, tile k-1], random orders, flags and splits."""
    st = Structure(workload, arch)
    L, D, T = st.n_levels, len(st.dims), len(st.tensors)
    tiles = np.empty((n, L, D), np.int64)
    tiles[:, 0] = st.sizes
    for k in range(1, L):  # log-uniform in [1, parent]: small tiles as often as large ones
        tiles[:, k] = np.exp(rng.random((n, D)) * np.log(tiles[:, k - 1] + 1)).astype(np.int64)
        tiles[:, k] = np.clip(tiles[:, k], 1, tiles[:, k - 1])
    keys = rng.random((n, L - 1, D))
    if len(workload.ops) > 1:  # chains: shared (spine) loops first, as legality requires
        keys += np.array([0.0 if d in st.spine else 1.0 for d in st.dims])
    orders = np.argsort(keys, axis=2)
    bypass = np.zeros((n, L, T), bool)
    bypass[:, 1:L - 1] = rng.random((n, L - 2, T)) < 0.2
    db = (rng.random((n, L, T)) < 0.5) & ~bypass
    db[:, 0] = False
    none = np.full(n, -1, np.int64)
    one = np.ones(n, np.int64)
    rows_dim, rows_ways, cols_dim, cols_ways = none, one, none, one
    if arch.array is not None and len(workload.ops) == 1:
        free = [st.dims.index(d) for d in st.dims if d not in workload.ops[0].reduction_dims]
        pick = rng.choice(free, size=(n, 2))
        distinct = pick[:, 0] != pick[:, 1]
        rows_dim = np.where(distinct, pick[:, 0], -1)
        cols_dim = np.where(distinct, pick[:, 1], -1)
        rows_ways = np.where(distinct, rng.integers(1, arch.array.rows + 1, n), 1)
        cols_ways = np.where(distinct, rng.integers(1, arch.array.cols + 1, n), 1)
        w = _ways(rows_dim, rows_ways, cols_dim, cols_ways, D)
        tiles[:, L - 1] = np.maximum(1, np.minimum(tiles[:, L - 1], -(-tiles[:, L - 2] // w)))
    align = np.array([arch.alignment.get(d, 1) for d in st.dims], np.int64)
    tiles[:, L - 1] = -(-tiles[:, L - 1] // align) * align  # round the core tile up to alignment
    return MappingBatch(tiles, orders, bypass, db, rows_dim, rows_ways, cols_dim, cols_ways)


def search_batch(workload, arch, n: int, rng: np.random.Generator) -> MappingBatch:
    """About ``n`` candidates shaped like the search's: ``n / 36`` random tile combos, each
    under 36 distinct loop-order pairs (spine loops first for chains), consecutively."""
    combos = random_batch(workload, arch, max(1, n // ORDERS_PER_COMBO), rng)
    st = Structure(workload, arch)
    L, D, C = st.n_levels, len(st.dims), len(combos)
    spine = [j for j, d in enumerate(st.dims) if d in st.spine] if len(workload.ops) > 1 else []
    private = [j for j in range(D) if j not in spine]
    perms = np.array([list(s) + list(p) for s in itertools.permutations(spine)
                      for p in itertools.permutations(private)])
    per_level = [perms[rng.choice(len(perms), ORDERS_PER_COMBO, replace=len(perms) < ORDERS_PER_COMBO)]
                 for _ in range(L - 1)]
    orders = np.stack([np.tile(o, (C, 1)) for o in per_level], axis=1)
    rows = np.repeat(np.arange(C), ORDERS_PER_COMBO)
    flags = np.zeros((len(rows), L, len(st.tensors)), bool)
    return MappingBatch(combos.tiles[rows], orders, flags, flags.copy(), combos.rows_dim[rows],
                        combos.rows_ways[rows], combos.cols_dim[rows], combos.cols_ways[rows])


def _ways(rd, rw, cd, cw, D):
    w = np.ones((rd.shape[0], D), np.int64)
    i = np.arange(rd.shape[0])
    for d, x in ((rd, rw), (cd, cw)):
        has = d >= 0
        w[i[has], d[has]] = x[has]
    return w


def measure(name, kind, workload, arch, batch_size, repeats, rng):
    """Time ``repeats`` evaluations of one batch: median and best wall seconds, and the
    median CPU seconds of this process."""
    make = random_batch if kind == "random" else search_batch
    batch = make(workload, arch, batch_size, rng)
    evaluate_batch(workload, arch, make(workload, arch, 64, rng))  # compile / load the cache
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        cost = evaluate_batch(workload, arch, batch)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    n = len(batch)
    median = float(np.median(wall))
    return {"case": name, "batch_kind": kind, "workload": str(workload), "arch": arch.name,
            "batch": n, "repeats": repeats, "seconds": median, "candidates_per_s": n / median,
            "best_candidates_per_s": n / min(wall),
            "cpu_candidates_per_s": n / float(np.median(cpu)),
            "valid_fraction": float(cost.valid.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small batches, one repeat (a smoke run)")
    ap.add_argument("--repeats", type=int, default=7, help="timed evaluations per case")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "model.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    aie = load_arch("aie-4x2")
    n = 20_000 if args.quick else 1_000_000
    repeats = 1 if args.quick else args.repeats
    cases = [
        ("gemm 512x768x768 i8, 3 levels", gemm(512, 768, 768, dtype="i8"), aie, n),
        ("conv2d 1x64x56x56 k64 3x3 s1 p1", conv2d(1, 64, 56, 56, 64, 3, 3, padding=1), aie, n // 10),
        ("mha Lq=Lkv=512 d=64 bf16 chain (npu1)", mha(512, 512, 64, dtype="bf16"), load_arch("npu1"), n // 4),
    ]
    rows = [measure(name, kind, w, a, size, repeats, rng)
            for name, w, a, size in cases for kind in ("random", "search")]
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"evaluate_batch throughput (one core; wall median and best of {repeats}, "
                        "median CPU time)")
    for col in ("case", "batch", "candidates", "median/s", "best/s", "cpu/s", "valid"):
        table.add_column(col, justify="left" if col in ("case", "batch") else "right")
    for r in rows:
        table.add_row(r["case"], r["batch_kind"], f"{r['batch']:,}", f"{r['candidates_per_s']:,.0f}",
                      f"{r['best_candidates_per_s']:,.0f}", f"{r['cpu_candidates_per_s']:,.0f}",
                      f"{r['valid_fraction']:.1%}")
    Console(width=120).print(table)
    import numba

    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "python": platform.python_version(), "numpy": np.__version__,
           "numba": numba.__version__, "threads": 1, "load_average": os.getloadavg(),
           "results": rows}
    if not args.quick:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
