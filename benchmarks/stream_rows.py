"""Non-temporal line stores to 16 interleaved rows: how many lines each row gets in turn.

    .venv/bin/python benchmarks/stream_rows.py [--mib 64] [--rounds 7] [--out FILE]

Writes ``--mib`` MiB of whole 64-byte lines with non-temporal stores (no source: one
register stored again and again), in order and as 16 rows ``row`` bytes apart that take
turns, each getting ``K`` consecutive lines per turn (K = 1, 2, 4, 8), the order a 16-row
unpack (T(16,2), NCHW16c) writes its destination. Every candidate is timed round by round in
a rotating order next to ``np.copyto`` of the same bytes. The finding behind
``primitives._untranspose_planes2`` and ``_transpose8_pair``: on the Emerald Rapids VM one
line per row per turn ran at 16-17 GB/s, two or more at 22-24 GB/s, as fast as in order,
whatever the row distance (4 KiB to 1 MiB). Results: ``results/stream_rows.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from tilewise.layout.primitives import _fence, _mask, _nontemporal, _ptr_of


@intrinsic
def _put_line(typingctx, dstp, d, v):
    """``dst[d:d + 8] = v`` (8-byte units): one aligned non-temporal line store."""

    def codegen(context, builder, signature, args):
        dp, d, v = args
        vty = ir.VectorType(context.get_value_type(signature.args[0].dtype), 8)
        vec = builder.insert_element(ir.Constant(vty, None), v, ir.Constant(ir.IntType(32), 0))
        vec = builder.shuffle_vector(vec, vec, _mask([0] * 8))
        st = builder.store(vec, builder.bitcast(builder.gep(dp, [d]), vty.as_pointer()), align=64)
        _nontemporal(builder, st)
        return context.get_dummy_value()

    return types.void(dstp, types.intp, dstp.dtype), codegen


@njit(nogil=True)
def _in_order(dst, v):
    dp = _ptr_of(dst)
    for i in range(0, dst.shape[0], 8):
        _put_line(dp, i, v)
    _fence()


@njit(nogil=True)
def _rows(dst, cols, v, k):
    """16 rows of ``cols`` units at a time, ``k`` lines of each row in turn."""
    dp = _ptr_of(dst)
    for b in range(dst.shape[0] // (16 * cols)):
        d0 = b * 16 * cols
        for c in range(0, cols, 8 * k):
            for r in range(16):
                for j in range(k):
                    _put_line(dp, d0 + r * cols + c + 8 * j, v)
    _fence()


def _aligned(n: int) -> np.ndarray:
    raw = np.empty(n + 8, np.uint64)
    at = (-raw.ctypes.data) % 64 // 8
    return raw[at:at + n]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "stream_rows.json"))
    args = ap.parse_args(argv)
    if args.mib < 16 or args.rounds < 1:
        ap.error(f"--mib {args.mib} --rounds {args.rounds}: 16 rows 1 MiB apart need "
                 "--mib 16 or more, and at least one round")
    n = (args.mib << 20) // 8
    dst, src, copy = _aligned(n), np.ones(n, np.uint64), np.empty(n, np.uint64)
    v = np.uint64(7)
    rows = []
    print(f"{'row bytes':>10s} {'copyto':>7s} {'in order':>8s} " +
          " ".join(f"{'K=' + str(k):>6s}" for k in (1, 2, 4, 8)) + "   (GB/s, medians)")
    for row in (4096, 8192, 16384, 1 << 20):
        cols = row // 8
        cands = {"copyto": lambda: np.copyto(copy, src), "in order": lambda: _in_order(dst, v)}
        for k in (1, 2, 4, 8):
            cands[f"K={k}"] = lambda k=k: _rows(dst, cols, v, k)
        for f in cands.values():
            f()
        times = {name: [] for name in cands}
        names = list(cands)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                t = time.perf_counter()
                cands[name]()
                times[name].append(time.perf_counter() - t)
        gbs = {name: n * 8 / float(np.median(t)) / 1e9 for name, t in times.items()}
        rows.append(dict(row_bytes=row, mib=args.mib, rounds=args.rounds, gb_per_s=gbs))
        print(f"{row:>10d} " + " ".join(f"{gbs[name]:>{max(6, len(name))}.1f}" for name in names))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(rows=rows), indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
