"""Benchmark: blocked online-softmax attention vs naive numpy attention (time, peak memory).

Attention R = softmax(Q Kᵀ / sqrt(d)) V, one head, d = 64, float32, L = 4096 and 16384.
``naive`` is :func:`tilewise.attention.naive_attention` (all L² scores at once, in place);
``blocked`` is :func:`tilewise.attention.blocked_attention` with the tiles listed. Times are the
median of interleaved rounds (naive, blocked, naive, ...); peak memory is the tracemalloc peak of
one call beyond its inputs (numpy reports its buffers to tracemalloc). Naive attention is
skipped, with its requirement, when the L² scores do not fit in half the available memory.
BLAS runs single-threaded unless OPENBLAS_NUM_THREADS is set: on a small shared machine threaded
BLAS calls are dominated by oversubscription noise, and both methods make the same BLAS calls.
A second table streams a causal sequence through IncrementalAttention in blocks and compares
with recomputing blocked attention after every block.

Run: ``.venv/bin/python benchmarks/execute.py [--quick]``; writes
``benchmarks/results/execute.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before numpy loads BLAS (see docstring)

import argparse
import json
import platform
import statistics
import time
import tracemalloc
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from tilewise.attention import IncrementalAttention, blocked_attention, naive_attention

D = 64
TILES = [(512, 1024), (1024, 2048)]        # (query rows, keys) per tile


def _time(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _peak(fn) -> tuple[int, np.ndarray]:
    """(peak bytes allocated by ``fn`` beyond what existed before (tracemalloc), its result)."""
    tracemalloc.start()
    try:
        out = fn()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def _available() -> int:
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def bench_attention(L: int, rounds: int) -> dict:
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((L, D), dtype=np.float32) for _ in range(3))
    scale = 1 / np.sqrt(D)
    scores_bytes = L * L * 4
    runs = {f"blocked {qt}x{kt}": (lambda qt=qt, kt=kt: blocked_attention(Q, K, V, qt, kt, scale=scale))
            for qt, kt in TILES}
    naive_fits = 2 * scores_bytes < _available()
    if naive_fits:
        runs = {"naive": lambda: naive_attention(Q, K, V, scale=scale)} | runs
    peaks = {name: _peak(fn) for name, fn in runs.items()}   # also the warm-up run
    times = {name: [] for name in runs}
    for _ in range(rounds):                  # interleaved
        for name, fn in runs.items():
            times[name].append(_time(fn))
    ref = peaks["naive"][1] if naive_fits else None
    rows = [{
        "method": name, "L": L, "d": D, "dtype": "f32",
        "median_s": statistics.median(times[name]), "times_s": times[name],
        "peak_bytes": peak,
        "max_abs_diff_vs_naive": None if ref is None else float(np.abs(out - ref).max()),
    } for name, (peak, out) in peaks.items()]
    if not naive_fits:
        rows.insert(0, {"method": "naive", "L": L, "d": D, "dtype": "f32", "skipped":
                        f"needs {scores_bytes} bytes of f32 scores; {_available()} available"})
    return {"L": L, "scores_bytes": scores_bytes, "rows": rows}


def bench_incremental(L: int, block: int) -> dict:
    """Stream L rows in blocks (causal): cached IncrementalAttention vs recompute per block."""
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((L, D), dtype=np.float32) for _ in range(3))
    inc = IncrementalAttention(causal=True, scale=1 / np.sqrt(D), q_tile=512, kv_tile=1024)
    t_inc = t_full = 0.0
    for i in range(0, L, block):
        s = slice(i, i + block)
        t_inc += _time(lambda: inc.append(K[s], V[s], Q[s]))
        t_full += _time(lambda: blocked_attention(Q[: i + block], K[: i + block], V[: i + block],
                                                  512, 1024, causal=True, scale=1 / np.sqrt(D)))
    full = blocked_attention(Q, K, V, 512, 1024, causal=True, scale=1 / np.sqrt(D))
    return {"L": L, "block": block, "blocks": L // block, "incremental_s": t_inc,
            "recompute_s": t_full, "max_abs_diff": float(np.abs(inc.result - full).max())}


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="L = 4096 only, 3 rounds")
    args = ap.parse_args()
    results = [bench_attention(4096, 3 if args.quick else 9)]
    if not args.quick:
        results.append(bench_attention(16384, 3))
    inc = bench_incremental(4096, 256)
    con = Console(width=110)
    t = Table(title=f"attention, d={D}, f32, scale 1/sqrt(d): median time and peak memory")
    for c in ("L", "method", "median time", "vs naive", "peak memory", "max |diff| vs naive"):
        t.add_column(c, justify="left" if c == "method" else "right")
    for res in results:
        naive = next((r for r in res["rows"] if r["method"] == "naive" and "median_s" in r), None)
        for r in res["rows"]:
            if "skipped" in r:
                t.add_row(str(res["L"]), r["method"], "skipped", "", f"needs {_mib(res['scores_bytes'])}", "")
                continue
            ratio = f"{r['median_s'] / naive['median_s']:.2f}x" if naive else "—"
            diff = r["max_abs_diff_vs_naive"]
            t.add_row(str(res["L"]), r["method"], f"{r['median_s'] * 1e3:,.1f} ms", ratio,
                      _mib(r["peak_bytes"]), "—" if diff is None else f"{diff:.1e}")
    con.print(t)
    t2 = Table(title=f"causal stream of L={inc['L']} in {inc['blocks']} blocks of {inc['block']} rows")
    for c in ("IncrementalAttention (all appends)", "recompute blocked after each block", "speedup", "max |diff|"):
        t2.add_column(c, justify="right")
    t2.add_row(f"{inc['incremental_s'] * 1e3:,.1f} ms", f"{inc['recompute_s'] * 1e3:,.1f} ms",
               f"{inc['recompute_s'] / inc['incremental_s']:.1f}x", f"{inc['max_abs_diff']:.1e}")
    con.print(t2)
    out = Path(__file__).parent / "results" / "execute.json"
    out.parent.mkdir(exist_ok=True)
    env = {"numpy": np.__version__, "python": platform.python_version(),
           "machine": platform.machine(), "cpus": os.cpu_count(),
           "OPENBLAS_NUM_THREADS": os.environ["OPENBLAS_NUM_THREADS"]}
    out.write_text(json.dumps({"env": env, "attention": results, "incremental": inc}, indent=2) + "\n")
    con.print(f"wrote {out}")


if __name__ == "__main__":
    main()
