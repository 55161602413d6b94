"""tilewise's NCHW -> NCHWc pack and unpack against IREE's compiled ``linalg.pack`` / ``unpack``.

Issue 17: "the NCHW -> NCHWc (c = 16) pack, where IREE's compiled ``linalg.pack`` is 8-10 %
faster than tilewise". For each row the same op is compiled by IREE for this CPU
(``llvm-cpu``, ``--iree-llvmcpu-target-cpu=host``, the op text from
:func:`tilewise.layout.pack.pack_op_text`, the ``local-sync`` driver: one thread, the
caller's; and ``local-task``: its thread pool over this machine's cores) and run by tilewise
(``pack``/``unpack`` with ``out=``, and without it: a new result array, as IREE's runtime
allocates its result on every call; single-threaded), all interleaved round by round (each
round: the same 4 MiB eviction before each call; the order alternates), with ``np.copyto``
of the same bytes as a yardstick. IREE's input is placed on its device (host memory) once,
outside the timing. Every result is checked against ``pack_reference`` byte for byte.
Results: ``results/pack_iree.json``.

    .venv/bin/python benchmarks/pack_iree.py [--quick]      # needs the iree extra
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

import tilewise
from tilewise.emit.iree import COMPILE_FLAGS, require_iree
from tilewise.layout.pack import pack_op_text, pack_reference, type_str, unpack_op_text, verify

# (dtype, [N, C, H, W]): the sweep's NCHW16c shapes from 1 to 64 MiB, and a ResNet layer.
ROWS = [
    ("f32", (1, 64, 64, 64)),
    ("f32", (1, 64, 128, 128)),
    ("f32", (1, 64, 256, 256)),
    ("f32", (1, 64, 512, 512)),
    ("f32", (8, 64, 56, 56)),
    ("i8", (1, 64, 256, 256)),
]
DTYPES = {"f32": np.float32, "i8": np.int8}
ELEMENT = {"f32": "f32", "i8": "i8"}
POS, TILES = (1,), (16,)


def module_text(op: str, shape, dt: str) -> str:
    """A ``func.func @main`` holding one ``linalg.pack`` (``op='pack'``) or ``linalg.unpack``
    of an ``[N, C, H, W]`` tensor by 16 channels."""
    packing = verify(shape, POS, TILES)
    el = ELEMENT[dt]
    src, dst = (packing.shape, packing.packed_shape) if op == "pack" else \
        (packing.packed_shape, packing.shape)
    if op == "pack":
        name, line = "%packed", pack_op_text(packing, el).replace("%source", "%arg0")
    else:
        name = "%unpacked"
        line = unpack_op_text(packing, el).replace("linalg.unpack %packed", "linalg.unpack %arg0")
    return (f"func.func @main(%arg0: {type_str(src, el)}) -> {type_str(dst, el)} {{\n"
            f"  %dest = tensor.empty() : {type_str(dst, el)}\n  {line}\n"
            f"  return {name} : {type_str(dst, el)}\n}}\n")


def _iree(op: str, shape, dt: str):
    """IREE's compiled op (bytes) and the compile seconds."""
    compiler, _ = require_iree()
    t0 = time.perf_counter()
    vmfb = compiler.compile_str(module_text(op, shape, dt), target_backends=["llvm-cpu"],
                                extra_args=list(COMPILE_FLAGS))
    return vmfb, time.perf_counter() - t0


def _loaded(vmfb: bytes, driver: str, src: np.ndarray):
    """``main`` of the module on ``driver``, as a call on ``src`` placed on its device."""
    _, rt = require_iree()
    ctx = rt.SystemContext(config=rt.Config(driver))
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    main, arg = ctx.modules.module.main, rt.asdevicearray(ctx.config.device, src)
    return lambda: main(arg)


_SCRATCH = np.zeros(4 << 20, dtype=np.uint8)


def _timed(f) -> float:
    _SCRATCH.view(np.uint64)[::8] += 1  # the sweep's eviction: one store per line of 4 MiB
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def row(op: str, dt: str, shape, rounds: int) -> dict:
    """Time one op: tilewise into ``out=`` and into a new array, IREE on one thread and on
    the local-task pool, and the copy; check every result."""
    x = (np.random.default_rng(0).standard_normal(shape) * 50).astype(DTYPES[dt])
    packed = pack_reference(x, POS, TILES)
    src, want = (x, packed) if op == "pack" else (packed, x)
    out = np.empty_like(want)
    if op == "pack":
        ours = lambda: tilewise.pack(x, POS, TILES, out=out)  # noqa: E731
    else:
        ours = lambda: tilewise.unpack(packed, POS, TILES, out=out)  # noqa: E731
    if op == "pack":
        fresh = lambda: tilewise.pack(x, POS, TILES)  # noqa: E731
    else:
        fresh = lambda: tilewise.unpack(packed, POS, TILES)  # noqa: E731
    vmfb, compile_s = _iree(op, shape, dt)
    sync, task = _loaded(vmfb, "local-sync", src), _loaded(vmfb, "local-task", src)
    flat, flat_out = src.reshape(-1), np.empty(src.size, src.dtype)
    copy = lambda: np.copyto(flat_out, flat)  # noqa: E731
    cands = {"tilewise": ours, "tilewise_new": fresh, "iree": sync, "iree_task": task,
             "copyto": copy}
    for f in cands.values():
        f()
        f()
    got = [ours(), fresh()] + [np.asarray(f().to_host()) for f in (sync, task)]
    if any(g.tobytes() != want.tobytes() for g in got):
        raise AssertionError(f"{op} {dt} {shape}: a result differs from pack_reference")
    times = {k: [] for k in cands}
    for r in range(rounds):
        order = list(cands) if r % 2 == 0 else list(cands)[::-1]
        for k in order:
            times[k].append(_timed(cands[k]))
    t = {k: np.array(v) for k, v in times.items()}
    return dict(op=op, dtype=dt, shape=list(shape), bytes=int(x.nbytes), rounds=rounds,
                compile_s=compile_s,
                seconds={k: float(np.median(v)) for k, v in t.items()},
                gb_per_s={k: x.nbytes / float(np.median(v)) / 1e9 for k, v in t.items()},
                tilewise_over_iree=float(np.median(t["iree"] / t["tilewise"])),
                new_over_iree=float(np.median(t["iree"] / t["tilewise_new"])),
                new_over_iree_task=float(np.median(t["iree_task"] / t["tilewise_new"])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 rows, 5 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "pack_iree.json"))
    args = ap.parse_args()
    rows_ = ROWS[:3] if args.quick else ROWS
    load = os.getloadavg()
    print(f"{'op':6} {'dtype':4} {'shape':>14} {'MiB':>5} {'copyto':>6} {'iree':>6} "
          f"{'iree2t':>6} {'tw':>6} {'tw-new':>6}  {'tw/iree':>7} {'new/iree':>8} "
          f"{'new/2t':>6}   (GB/s, medians; ratios > 1: tilewise faster)")
    rows = []
    for dt, shape in rows_:
        nbytes = int(np.prod(shape)) * np.dtype(DTYPES[dt]).itemsize
        rounds = args.rounds or (5 if args.quick else 41 if nbytes <= 4 << 20 else 15)
        for op in ("pack", "unpack"):
            r = row(op, dt, shape, rounds)
            rows.append(r)
            g = r["gb_per_s"]
            print(f"{op:6} {dt:4} {'x'.join(map(str, shape)):>14} {nbytes / 2**20:5.0f} "
                  f"{g['copyto']:6.1f} {g['iree']:6.1f} {g['iree_task']:6.1f} "
                  f"{g['tilewise']:6.1f} {g['tilewise_new']:6.1f}  "
                  f"{r['tilewise_over_iree']:7.2f} {r['new_over_iree']:8.2f} "
                  f"{r['new_over_iree_task']:6.2f}", flush=True)
    meta = dict(machine=platform.machine(), cpus=os.cpu_count(), numpy=np.__version__,
                load_average_before=load, load_average_after=os.getloadavg(),
                note="single thread both (IREE local-sync); 4 MiB evicted before every timed "
                     "call; tilewise_over_iree = median of per-round iree_time / tilewise_time")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(meta=meta, rows=rows), indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
