"""Whole-network benchmark (issue 16): ``search_model`` on ResNet-18 and a BERT encoder beside
the per-layer searches it replaces.

For each model: every distinct layer is searched alone, one after another, in this process
(``layer s``: its wall time); ``per-layer total`` is what searching every layer separately
would cost (each layer's time x how many layers share its workload: no dedup, one core);
``network wall`` is one ``search_model`` call with a fresh store and ``--workers`` processes
(dedup + parallel), ``rerun`` the same call again (every layer from the store). The models are
the weight-stripped ones of ``examples/models`` (see build.py there), searched as bf16 on npu1 by default (``--arch``, ``--dtype``: i8 on aie-4x2, which has no bf16 rate).
Writes ``benchmarks/results/network.json`` and prints tables.

    python benchmarks/network.py                 # both models, 2 workers
    python benchmarks/network.py --models resnet18 --workers 2
    python benchmarks/network.py --models resnet18 --arch aie-4x2 --dtype i8 \
        --out benchmarks/results/network-aie-4x2.json

Issue 16's target: ResNet-18 on one preset in <= 10 s on 2 cores with dedup.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"resnet18": (ROOT / "examples/models/resnet18.onnx", {}),
          "bert-encoder": (ROOT / "examples/models/bert-encoder.onnx", {"batch": 1})}


def bench(name: str, arch: str, workers: int, dtype: str = "bf16") -> dict:
    import tilewise as tw
    from tilewise.importers.onnx import import_onnx
    from tilewise.network.model_search import search_model

    path, dims = MODELS[name]
    model = import_onnx(path, dims, dtype=dtype)
    tw.search(tw.gemm(8, 8, 8, dtype), arch, top=1)  # load the compiled kernels once
    rows = []
    for key, layers in model.distinct().items():
        t0 = time.perf_counter()
        r = tw.search(layers[0].workload, arch, top=1)
        rows.append({"layer": layers[0].name, "workload": str(layers[0].workload).split(":")[0],
                     "count": len(layers), "seconds": time.perf_counter() - t0,
                     "latency_us": r.best.latency_s * 1e6})
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "s.sqlite")
        t0 = time.perf_counter()
        net = search_model(model, arch, store=db, workers=workers)
        wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = search_model(model, arch, store=db, workers=workers)
        rerun = time.perf_counter() - t0
    assert again.latency_s == net.latency_s
    return {"model": name, "arch": arch, "dtype": dtype, "workers": workers,
            "layers": len(model.layers),
            "distinct": len(rows), "per_layer": rows,
            "per_layer_total_s": sum(r["seconds"] * r["count"] for r in rows),
            "distinct_serial_s": sum(r["seconds"] for r in rows),
            "network_wall_s": wall, "rerun_s": rerun, "latency_us": net.latency_s * 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resnet18,bert-encoder")
    ap.add_argument("--arch", default="npu1")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dtype", default="bf16", help="the models' tensors (bf16 on npu1; i8 on aie-4x2)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "network.json"))
    args = ap.parse_args()
    out = [bench(m, args.arch, args.workers, args.dtype) for m in args.models.split(",")]
    for b in out:
        print(f"\n{b['model']} on {b['arch']} ({b['dtype']}): {b['layers']} layers, "
              f"{b['distinct']} distinct")
        print(f"{'layer':<32} {'workload':<58} {'x':>3} {'search s':>9} {'latency µs':>11}")
        for r in b["per_layer"]:
            print(f"{r['layer']:<32} {r['workload'][:58]:<58} {r['count']:>3} "
                  f"{r['seconds']:>9.2f} {r['latency_us']:>11.2f}")
        print(f"per-layer searches, no dedup, 1 core: {b['per_layer_total_s']:.1f} s · distinct "
              f"only, 1 core: {b['distinct_serial_s']:.1f} s · search_model, {b['workers']} "
              f"workers: {b['network_wall_s']:.1f} s · rerun from the store: {b['rerun_s']:.2f} s"
              f" · network latency {b['latency_us']:,.1f} µs")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(
        {"machine": platform.platform(), "cpus": os.cpu_count(), "results": out}, indent=1))


if __name__ == "__main__":
    main()
