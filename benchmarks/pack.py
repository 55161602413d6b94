"""Benchmark tilewise.pack / tilewise.unpack against memcpy and numpy (single thread).

For each row, in one process and interleaved (every round times each candidate once, in
turn), it measures:

* ``memcpy``: ``np.copyto`` of the unpacked tensor's bytes, read from the op's own source
  array (the same buffer tilewise and numpy read), into a preallocated destination (glibc
  memcpy);
* ``numpy``: numpy's reshape + transpose copy into a preallocated ``out``
  (``np.copyto(out, view)``; for padded packs the padded source is built outside the timing,
  which favours numpy; padded unpacks copy twice: reshape, then the slice);
* ``tilewise``: ``pack``/``unpack`` with ``out=`` (the whole public call: argument checks,
  the cached plan, the kernel).

Every timed call starts from the same cache state: a 4 MiB scratch buffer (twice the L2) is
rewritten just before it, so no candidate finds the source in L2 because the previous
candidate just read it. GB/s counts the unpacked tensor's bytes once per call (as memcpy's
bytes_per_second does). Ratios are medians over rounds of per-round time ratios. Results go
to ``benchmarks/results/pack.json``.

    .venv/bin/python benchmarks/pack.py            # full run (~1 min)
    .venv/bin/python benchmarks/pack.py --quick    # a few rounds
    .venv/bin/python benchmarks/pack.py --sweep    # every size and dtype (see pack_sweep.py)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import ml_dtypes
import numpy as np

import tilewise
from tilewise.layout.pack import pack_reference, verify

ROWS = [
    ("f32", (512, 1024), (32, 32)),
    ("f32", (4096, 4096), (32, 32)),
    ("f32", (4096, 4096), (8, 128)),
    ("f32", (4096, 4096), (16, 2)),
    ("f32", (4096, 4096), (128, 128)),
    ("bf16", (4096, 4096), (16, 32)),
    ("i8", (4096, 4096), (16, 32)),
    ("f32", (500, 1000), (32, 32)),
]
DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "i8": np.int8}


def _candidates(kind: str, dt: str, shape, tiles):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 50).astype(DTYPES[dt])
    pos = (0, 1)
    packing = verify(shape, pos, tiles)
    pad = 0 if packing.needs_padding else None
    packed = pack_reference(x, pos, tiles, padding_value=pad)
    src, dst_shape = (x, packed.shape) if kind == "pack" else (packed, x.shape)
    out = np.empty(dst_shape, dtype=x.dtype)
    mem_src = src.reshape(-1)[: x.size]  # the same buffer the op reads, the unpacked bytes
    mem_dst = np.empty_like(mem_src)
    o0, o1 = packing.outer_shape
    if kind == "pack":
        padded = x
        if packing.needs_padding:
            padded = np.zeros(packing.padded_shape, dtype=x.dtype)
            padded[: shape[0], : shape[1]] = x
        view = padded.reshape(o0, tiles[0], o1, tiles[1]).transpose(0, 2, 1, 3)
        run_tw = lambda: tilewise.pack(x, pos, tiles, padding_value=pad, out=out)  # noqa: E731
        numpy_out = np.empty(view.shape, dtype=x.dtype)
        run_np = lambda: np.copyto(numpy_out, view)  # noqa: E731
    else:
        numpy_out = np.empty(shape, dtype=x.dtype)
        tiled = packed.transpose(0, 2, 1, 3)
        if packing.needs_padding:  # reshape copies, then the slice drops the padding
            run_np = lambda: np.copyto(  # noqa: E731
                numpy_out, tiled.reshape(packing.padded_shape)[: shape[0], : shape[1]])
        else:
            view = numpy_out.reshape(o0, tiles[0], o1, tiles[1])
            run_np = lambda: np.copyto(view, tiled)  # noqa: E731
        run_tw = lambda: tilewise.unpack(packed, pos, tiles, shape=shape, out=out)  # noqa: E731
    run_tw()
    assert np.array_equal(out.view(np.uint8), (packed if kind == "pack" else x).view(np.uint8))
    return x.nbytes, {
        "memcpy": lambda: np.copyto(mem_dst, mem_src),
        "numpy": run_np,
        "tilewise": run_tw,
    }


_SCRATCH = np.zeros(4 << 20, dtype=np.uint8)


def _evict() -> None:
    """Rewrite 4 MiB (twice the L2) so every candidate starts with the same cache state."""
    _SCRATCH.view(np.uint64)[::8] += 1  # one store per 64-byte line


def _measure(cands, rounds: int) -> dict[str, list[float]]:
    times = {name: [] for name in cands}
    for f in cands.values():  # warm up (JIT, page faults)
        f()
        f()
    for _ in range(rounds):
        for name, f in cands.items():
            _evict()
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few rounds per row")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per row")
    ap.add_argument("--out", default=None, help="JSON file (default results/pack.json, "
                    "results/pack_sweep.json with --sweep)")
    ap.add_argument("--sweep", action="store_true", help="sizes 64 KiB .. 256 MiB, f32/bf16/i8, "
                    "five tile shapes and NCHW->NCHWc, against np.copyto and a streaming memcpy")
    ap.add_argument("--only", default="", help="sweep filter, e.g. 'size=64K,256K "
                    "dtype=i8 layout=T(16,32),NCHW16c op=unpack' (cells matching every key)")
    args = ap.parse_args()
    if args.sweep:
        from pack_sweep import parse_only, sweep

        return sweep(args.quick, args.rounds, args.out, parse_only(args.only))
    if args.only:
        ap.error("--only filters the sweep: pass --sweep too")
    args.out = args.out or str(Path(__file__).parent / "results" / "pack.json")
    results = []
    header = (f"{'op':7} {'dtype':5} {'shape':>10} {'tile':>9} {'memcpy':>7} {'numpy':>7} "
              f"{'tilewise':>8}  {'/memcpy':>7} {'/numpy':>7}   (GB/s, medians)")
    print(header)
    for kind in ("pack", "unpack"):
        for dt, shape, tiles in ROWS:
            nbytes, cands = _candidates(kind, dt, shape, tiles)
            rounds = args.rounds or (5 if args.quick else (200 if nbytes < 8 << 20 else 40))
            times = _measure(cands, rounds)
            med = {k: float(np.median(v)) for k, v in times.items()}
            tw = np.array(times["tilewise"])
            ratio_mem = float(np.median(np.array(times["memcpy"]) / tw))
            ratio_np = float(np.median(np.array(times["numpy"]) / tw))
            gbs = {k: nbytes / v / 1e9 for k, v in med.items()}
            row = dict(op=kind, dtype=dt, shape=list(shape), tile=list(tiles), bytes=nbytes,
                       rounds=rounds, seconds=med, gb_per_s=gbs, ratio_to_memcpy=ratio_mem,
                       ratio_to_numpy=ratio_np)
            results.append(row)
            shape_s, tile_s = "x".join(map(str, shape)), f"T({tiles[0]},{tiles[1]})"
            print(f"{kind:7} {dt:5} {shape_s:>10} {tile_s:>9} {gbs['memcpy']:7.2f} "
                  f"{gbs['numpy']:7.2f} {gbs['tilewise']:8.2f}  {ratio_mem:7.2f} {ratio_np:7.2f}",
                  flush=True)
    meta = dict(machine=platform.machine(), processor=platform.processor(),
                cpus=os.cpu_count(), numpy=np.__version__, threads=1,
                load_average=os.getloadavg(),
                note="single-threaded kernels; GB/s = unpacked bytes / time; L2 evicted "
                     "before every timed call")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(meta=meta, rows=results), indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
