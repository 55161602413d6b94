"""Benchmark: the model against measured time on this CPU, through IREE (issue 15).

For each shape (GEMMs of seed 003 and of LLM layers, ResNet convolutions, batched GEMMs; f32
and i8 -> i32): tilewise's top-``--top`` mappings on the ``host`` preset (`tilewise arch host`),
``--random`` random valid mappings (each checked legal and fitting by the model) and IREE's
default tiling, all compiled by IREE (llvm-cpu, this CPU), checked against the numpy reference
and timed in one interleaved run (median of the rounds; the rounds are cut so a shape's timing
takes about ``--seconds``).

Reported per shape: the search time, compile time, the measured time of tilewise's best (rank 1
of the model) and of IREE's default, their ratio (speed = default time / tilewise time, > 1:
tilewise faster), the best measured among tilewise's top, and the Spearman rank correlation of
model latency vs measured time over the tilewise mappings of the shape (top and random). Then
the geomean and worst speed and the median correlation. Writes ``benchmarks/results/hardware.json``, one PNG (``--plot``) of
model vs measured time, and the host preset the model used (``hardware-host.yaml``: the input of
``tilewise arch calibrate benchmarks/results/hardware.json --arch
benchmarks/results/hardware-host.yaml``).

Run: ``.venv/bin/python benchmarks/hardware.py [--quick]`` (needs the ``iree`` extra).
This machine is shared (two cores, other jobs): with both cores (``--threads 0``, IREE's
``local-task``) the same pair of programs measured 1.0-2.6 ms from one batch of rounds to the
next, so by default the programs run on one thread (``local-sync``) and the model on the host
preset cut to one core; the median of interleaved rounds gives every program of a shape the same
conditions.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

import tilewise as tw
from tilewise.arch.loader import arch_to_yaml
from tilewise.emit.calibrate import spearman
from tilewise.emit.iree import Compiled, compile as iree_compile, time_interleaved
from tilewise.errors import TilewiseError
from tilewise.executor.interpreter import compare
from tilewise.executor.reference import output_tensors, random_inputs, reference
from tilewise.executor.solution import workload_to_dict
from tilewise.mapping import LevelMapping, Mapping, Spatial

RESULTS = Path(__file__).with_name("results")


def one_core(arch):
    """The host preset cut to one core: per-core levels one instance, a 1 x 1 array."""
    levels = tuple(replace(lv, instances=1) for lv in arch.levels)
    return replace(arch, name=f"{arch.name}-1core", levels=levels,
                   array=replace(arch.array, rows=1, cols=1),
                   description=f"{arch.description}; one core")


def shapes() -> list[tuple[str, object]]:
    """(label, workload): 20 shapes."""
    g, bg, conv = tw.gemm, tw.batched_gemm, tw.conv2d
    return [
        # seed 003's GEMMs (A 512x768, B 768x768; B x4 in N; A and B x4 in K)
        ("seed003 512x768x768 i8", g(512, 768, 768, dtype="i8")),
        ("seed003 512x768x768 f32", g(512, 768, 768, dtype="f32")),
        ("seed003 512x3072x768 i8", g(512, 3072, 768, dtype="i8")),
        ("seed003 512x768x3072 i8", g(512, 768, 3072, dtype="i8")),
        # BERT-base layers, 128 tokens: QKV, attention out, FFN up, FFN down
        ("bert qkv 128x2304x768 i8", g(128, 2304, 768, dtype="i8")),
        ("bert out 128x768x768 f32", g(128, 768, 768, dtype="f32")),
        ("bert ffn1 128x3072x768 f32", g(128, 3072, 768, dtype="f32")),
        ("bert ffn2 128x768x3072 f32", g(128, 768, 3072, dtype="f32")),
        # ResNet-50/18 3x3 convolutions, batch 2 (IREE 3.13 drops the compilation_info of a
        # batch-1 or 1x1 conv: it folds the unit dims first; docs/usage/iree.md)
        ("resnet 3x3 64@56 f32", conv(2, 64, 56, 56, 64, 3, 3, padding=1, dtype="f32")),
        ("resnet 3x3 128@28 f32", conv(2, 128, 28, 28, 128, 3, 3, padding=1, dtype="f32")),
        ("resnet 3x3 256@14 f32", conv(2, 256, 14, 14, 256, 3, 3, padding=1, dtype="f32")),
        ("resnet 3x3 512@7 f32", conv(2, 512, 7, 7, 512, 3, 3, padding=1, dtype="f32")),
        ("resnet 3x3/2 64->128@56 f32", conv(2, 64, 56, 56, 128, 3, 3, stride=2, padding=1,
                                             dtype="f32")),
        ("resnet 3x3 128@28 i8", conv(2, 128, 28, 28, 128, 3, 3, padding=1, dtype="i8")),
        ("resnet 3x3/2 128->256@28 i8", conv(2, 128, 28, 28, 256, 3, 3, stride=2, padding=1,
                                             dtype="i8")),
        # batched GEMMs: attention scores and values (12 heads), others
        ("attn QK 12x128x128x64 f32", bg(12, 128, 128, 64, dtype="f32")),
        ("attn PV 12x128x64x128 f32", bg(12, 128, 64, 128, dtype="f32")),
        ("attn QK 12x128x128x64 i8", bg(12, 128, 128, 64, dtype="i8")),
        ("bmm 8x256x256x64 f32", bg(8, 256, 256, 64, dtype="f32")),
        ("bmm 16x64x64x64 i8", bg(16, 64, 64, 64, dtype="i8")),
    ]


QUICK = ("seed003 512x768x768 i8", "bert out 128x768x768 f32", "resnet 3x3 256@14 f32",
         "attn QK 12x128x128x64 f32")


@dataclass
class Point:
    """One compiled program of a shape: its mapping (None: IREE's default), where it came
    from ("top" rank, "random", "default"), model latency (s) and measured median (s)."""

    kind: str
    mapping: str | None
    model_s: float | None
    measured_s: float = math.nan
    compile_s: float = 0.0
    passed: bool = False


@dataclass
class ShapeResult:
    label: str
    workload: str
    macs: int
    search_s: float
    compile_s: float
    time_s: float
    rounds: int
    points: list = field(default_factory=list)

    def measured(self, kind: str) -> list[Point]:
        return [p for p in self.points if p.kind == kind and p.passed]

    @property
    def best(self) -> Point:
        return next(p for p in self.points if p.kind == "top1")

    @property
    def default(self) -> Point:
        return next(p for p in self.points if p.kind == "default")

    @property
    def speed(self) -> float:
        """IREE default time / tilewise best time (> 1: tilewise faster)."""
        return self.default.measured_s / self.best.measured_s

    @property
    def best_of_top_speed(self) -> float:
        tops = [p.measured_s for p in self.points if p.kind.startswith("top") and p.passed]
        return self.default.measured_s / min(tops)

    @property
    def spearman(self) -> float:
        pts = [p for p in self.points if p.model_s is not None and p.passed]
        return spearman([p.model_s for p in pts], [p.measured_s for p in pts])


def _log_uniform(rng, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))


def random_mapping(workload, arch, rng) -> Mapping:
    """A random mapping of the host's 3 levels (dram, l2, l1 = array): per-core tiles
    log-uniform (aligned dims in multiples of the alignment), a split of a random parallel dim
    over the cores (when more than one) or none, L2 tiles between the array tile and the whole dim, random orders."""
    sizes = workload.sizes
    align = workload.alignment(arch.alignment)
    reductions = set(workload.ops[0].reduction_dims)
    ways = arch.cores
    parallel = [d for d in sizes if d not in reductions and sizes[d] >= ways]
    split = rng.choice(parallel) if ways > 1 and parallel and rng.random() < 0.8 else None
    core, l2 = {}, {}
    for d, n in sizes.items():
        a = align[d]
        top = -(-n // (ways if d == split else 1))
        core[d] = a * _log_uniform(rng, 1, max(1, -(-top // a)))
        array = core[d] * (ways if d == split else 1)
        l2[d] = min(n, max(array, _log_uniform(rng, min(array, n), n)))
    orders = [tuple(rng.permutation(list(sizes))) for _ in range(2)]
    names = [lv.name for lv in arch.levels]
    levels = (LevelMapping(names[0], tuple(sizes.items()), orders[0]),
              LevelMapping(names[1], tuple(l2.items()), orders[1]),
              LevelMapping(names[2], tuple(core.items())))
    return Mapping(levels, None, Spatial(split, ways) if split else None)


def random_valid(workload, arch, count: int, seed: int, exclude: set) -> list[tuple[Mapping, float]]:
    """``count`` distinct random mappings the model accepts (legal, fitting), with latency."""
    rng = np.random.default_rng(seed)
    out: list[tuple[Mapping, float]] = []
    for _ in range(200 * count):
        if len(out) == count:
            break
        m = random_mapping(workload, arch, rng)
        if str(m) in exclude:
            continue
        try:
            cost = tw.evaluate(workload, arch, m)
        except TilewiseError:
            continue
        exclude.add(str(m))
        out.append((m, cost.latency_s))
    return out


def run_shape(label, workload, arch, args) -> ShapeResult:
    t0 = time.perf_counter()
    result = tw.search(workload, arch, top=args.top)
    search_s = time.perf_counter() - t0
    points = [Point(f"top{i + 1}", str(s.mapping), s.latency_s) for i, s in enumerate(result.top)]
    seen = {p.mapping for p in points}
    points += [Point("random", str(m), lat)
               for m, lat in random_valid(workload, arch, args.random, args.seed, seen)]
    points.append(Point("default", None, None))
    inputs = random_inputs(workload, args.seed)
    want = reference(workload, inputs)
    (out,) = output_tensors(workload)
    programs: list[tuple[Point, Compiled]] = []
    t1 = time.perf_counter()
    for p in points:
        try:
            prog = iree_compile(workload, arch if p.mapping else None, p.mapping,
                                driver="local-sync" if args.threads == 1 else "local-task")
        except TilewiseError as e:
            print(f"  {label}: {p.kind} not compiled: {e}")
            continue
        p.compile_s = prog.compile_s
        if any("drops this compilation_info" in d for d in prog.emitted.dropped):
            print(f"  {label}: {p.kind}: IREE drops the lowering config of this op")
        p.passed = compare(workload, {out.name: prog(inputs)}, want).passed
        if p.passed:
            programs.append((p, prog))
        else:
            print(f"  {label}: {p.kind} {p.mapping} FAILED the reference check")
    compile_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    first = time_interleaved([prog for _, prog in programs], inputs, rounds=1, warmup=1)
    rounds = int(max(3, min(args.rounds, args.seconds / max(sum(first), 1e-9))))
    times = time_interleaved([prog for _, prog in programs], inputs, rounds=rounds, warmup=0)
    for (p, _), t in zip(programs, times):
        p.measured_s = t
    return ShapeResult(label, str(workload), workload.macs, search_s, compile_s,
                       time.perf_counter() - t2, rounds, points)


def print_table(results: list[ShapeResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="tilewise on this CPU through IREE: model vs measured")
    for col in ("shape", "search s", "compile s", "tilewise best µs", "IREE default µs",
                "speed best/default", "best of top", "Spearman", "programs"):
        table.add_column(col, justify="left" if col == "shape" else "right")
    for r in results:
        n = sum(p.passed for p in r.points)
        table.add_row(r.label, f"{r.search_s:.1f}", f"{r.compile_s:.1f}",
                      f"{r.best.measured_s * 1e6:,.0f}", f"{r.default.measured_s * 1e6:,.0f}",
                      f"{r.speed:.2f}x", f"{r.best_of_top_speed:.2f}x", f"{r.spearman:.2f}",
                      f"{n}/{len(r.points)}")
    Console(highlight=False, soft_wrap=True, width=200).print(table)


def summary(results: list[ShapeResult]) -> dict:
    speeds = np.array([r.speed for r in results])
    tops = np.array([r.best_of_top_speed for r in results])
    rho = np.array([r.spearman for r in results])
    worst = results[int(np.argmin(speeds))]
    return {"shapes": len(results),
            "geomean_speed": float(np.exp(np.log(speeds).mean())),
            "worst_speed": float(speeds.min()), "worst_shape": worst.label,
            "geomean_best_of_top_speed": float(np.exp(np.log(tops).mean())),
            "median_spearman": float(np.nanmedian(rho)),
            "min_spearman": float(np.nanmin(rho)), "max_spearman": float(np.nanmax(rho))}


def plot(results: list[ShapeResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 6))
    cmap = plt.get_cmap("tab20")
    for i, r in enumerate(results):
        pts = [p for p in r.points if p.model_s is not None and p.passed]
        ax.scatter([p.model_s * 1e6 for p in pts], [p.measured_s * 1e6 for p in pts], s=12,
                   color=cmap(i % 20), label=f"{r.label} (ρ={r.spearman:.2f})")
        ax.scatter([r.best.model_s * 1e6], [r.best.measured_s * 1e6], s=60, marker="*",
                   color=cmap(i % 20), edgecolor="black", linewidth=0.5)
    lo = min(p.model_s for r in results for p in r.points if p.model_s) * 1e6
    hi = max(p.measured_s for r in results for p in r.points if p.passed) * 1e6
    ax.plot([lo, hi], [lo, hi], color="gray", linewidth=0.8, linestyle="--", label="measured = model")
    ax.set(xscale="log", yscale="log", xlabel="model latency on the host preset (µs)",
           ylabel="measured median through IREE (µs)",
           title="tilewise model vs measured time (★ = the model's best)")
    ax.legend(fontsize=5.5, loc="upper left", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 shapes, top 3, 5 random, 5 rounds")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--random", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10, help="timed rounds at most (median)")
    ap.add_argument("--seconds", type=float, default=4.0, help="timing budget per shape (s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, choices=(1, 0), default=1,
                    help="1: one thread (IREE local-sync) and the host preset cut to one core "
                         "(steady timings on a shared machine); 0: every core (local-task)")
    ap.add_argument("--only", default=None, help="only shapes whose label contains this text")
    ap.add_argument("--out", type=Path, default=RESULTS / "hardware.json")
    ap.add_argument("--plot", type=Path, default=RESULTS / "hardware.png")
    args = ap.parse_args()
    chosen = shapes()
    if args.quick:
        args.top, args.random, args.rounds, args.seconds = 3, 5, 5, 1.5
        chosen = [s for s in chosen if s[0] in QUICK]
    if args.only:
        chosen = [s for s in chosen if args.only in s[0]]
    arch = tw.load_arch("host") if args.threads == 0 else one_core(tw.load_arch("host"))
    t0 = time.perf_counter()
    results = []
    for label, workload in chosen:
        r = run_shape(label, workload, arch, args)
        print(f"{label}: search {r.search_s:.1f} s, compile {r.compile_s:.1f} s, timing "
              f"{r.time_s:.1f} s ({r.rounds} rounds); best/default {r.speed:.2f}x, "
              f"Spearman {r.spearman:.2f}", flush=True)
        results.append(r)
    total = time.perf_counter() - t0
    print_table(results)
    s = summary(results)
    print(f"{s['shapes']} shapes in {total:.0f} s: speed tilewise best / IREE default geomean "
          f"{s['geomean_speed']:.2f}x, worst {s['worst_speed']:.2f}x ({s['worst_shape']}); best "
          f"of tilewise's top geomean {s['geomean_best_of_top_speed']:.2f}x; Spearman model vs "
          f"measured: median {s['median_spearman']:.2f} (min {s['min_spearman']:.2f}, max "
          f"{s['max_spearman']:.2f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({
        "machine": platform.processor() or platform.machine(), "arch": tw.load_arch("host").description,
        "date": time.strftime("%Y-%m-%d"), "seconds": total, "args": {k: str(v) for k, v in vars(args).items()},
        "summary": s,
        "shapes": [{**{k: v for k, v in asdict(r).items() if k != "points"},
                    "spec": workload_to_dict(workload),
                    "speed": r.speed, "spearman": r.spearman,
                    "points": [asdict(p) for p in r.points]}
                   for r, (_, workload) in zip(results, chosen)]},
        indent=1, default=float))
    plot(results, args.plot)
    preset = args.out.with_name(args.out.stem + "-host.yaml")  # the preset the model used
    preset.write_text(arch_to_yaml(arch), encoding="utf-8")
    print(f"wrote {args.out}, {args.plot} and {preset}")


if __name__ == "__main__":
    main()
