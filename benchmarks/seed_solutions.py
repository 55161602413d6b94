"""Seed 003's worked solutions as tilewise mappings, each beside tilewise's optimum (issue 14).

Every worked example of seed 003 ("Tiling/Blocking MHA, GEMM, LN, CONV" for the 4x2 AIE
overlay, preset ``aie-4x2``) that states a concrete tiling is written here as a tilewise mapping,
with the section it comes from. For each the script prints the model's latency, its ratio to the
compute-bound minimum, the off-chip bytes and whether its buffers fit, then the same for the
exact optimum of ``tilewise.search`` on the same problem (its default space), and the best
mapping with the seed's own spatial split (``spatial=`` naming it, which also reaches the
splits the default space leaves out, such as attention's keys over cores), and writes
``benchmarks/results/seed_solutions.json``. ``--markdown`` prints the table of
``docs/seed-cases.md``. ``tests/search/test_seed_solutions.py`` simulates and executes every
case (the model must equal the simulation; the executor the reference).

    python benchmarks/seed_solutions.py
    python benchmarks/seed_solutions.py --markdown
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import NamedTuple


class SeedCase(NamedTuple):
    """One worked solution: ``make`` builds the workload (``tilewise`` constructor name and
    keyword arguments), ``mapping`` is the seed's tiling in tilewise's text form."""

    name: str
    source: str
    make: tuple
    mapping: str


def _gemm(M, N, K, dtype):
    return ("gemm", dict(M=M, N=N, K=K, dtype=dtype))


_EQ15 = "rows=n4 cols=m2"  # seed Eq. 15, "fat C": C blocks 2 (cols, m) x 4 (rows, n)

CASES = [
    SeedCase("GEMM i8 512x768x768, fat C (Eq. 15)",
             "§III.A.1 core C 128x64, A 128x64, B 64x64; §III.B A whole in the memtile, B in "
             "3 column parts of 768x256, double-buffered",
             _gemm(512, 768, 768, "i8"),
             "ddr[m512 n768 k768] nmk | memtile[m512 n256 k768] mnk db:B | "
             f"core[m128 n64 k64] db:A,B ; {_EQ15}"),
    SeedCase("GEMM i8 512x768x768, tall C (Eq. 17)",
             "§III.A.1 Eq. 17: the same core subvolume on C blocks 4 (rows, m) x 2 (cols, n)",
             _gemm(512, 768, 768, "i8"),
             "ddr[m512 n768 k768] nmk | memtile[m512 n128 k768] mnk db:B | "
             "core[m128 n64 k64] db:A,B ; rows=m4 cols=n2"),
    SeedCase("GEMM i16 512x768x768, 64x64x64",
             "§III.A.2 core C, A, B 64x64 (one bank each); §III.C A in 4 tiles of 128 rows",
             _gemm(512, 768, 768, "i16"),
             "ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk db:A | "
             f"core[m64 n64 k64] db:A,B ; {_EQ15}"),
    SeedCase("GEMM i16 512x768x768, Small Small",
             "§III.C core C 64x32, A 64x64, B 64x32; A and B ping-pong in the memtile; "
             "i 0..8 step 2, j 0..24 step 4, k 12",
             _gemm(512, 768, 768, "i16"),
             "ddr[m512 n768 k768] mnk | memtile[m128 n128 k768] mnk db:A,B | "
             f"core[m64 n32 k64] db:A,B ; {_EQ15}"),
    SeedCase("GEMM i8 A 512x768 B 768x3072",
             "§III.D A whole in the memtile, B in 12 column parts of 768x256 double-buffered, "
             "the §III.B core subvolume",
             _gemm(512, 3072, 768, "i8"),
             "ddr[m512 n3072 k768] nmk | memtile[m512 n256 k768] mnk db:B | "
             f"core[m128 n64 k64] db:A,B ; {_EQ15}"),
    SeedCase("GEMM i8 A 512x3072 B 3072x768",
             "§III.E slices of A 64x3072 and B 3072x64 double-buffered; core C 32x16, A 32x64, "
             "B 64x16",
             _gemm(512, 768, 3072, "i8"),
             "ddr[m512 n768 k3072] mnk | memtile[m64 n64 k3072] mnk db:A,B | "
             f"core[m32 n16 k64] db:A,B ; {_EQ15}"),
    SeedCase("MHA i16 L=512 d=64, keys over a column",
             "§II.B K and V split over the 4 cores of a column (2 slices of 64x64 each), "
             "Q_i 32x64, Eq. 10-11 per core, Eq. 12 reduced along the column; the next "
             "column takes the next Q_i",
             ("mha", dict(Lq=512, Lkv=512, d=64, dtype="i16")),
             "ddr[h1 m512 n512 k64 e64] mhnke | memtile[h1 m64 n512 k64 e64] hmnke | "
             "core[h1 m32 n64 k64 e64] ; rows=n4 cols=m2"),
    SeedCase("MHA i8 L=512 d=64, keys over a column",
             "§II.B Fig. 2, the int8 head on the same 2x4 split",
             ("mha", dict(Lq=512, Lkv=512, d=64, dtype="i8")),
             "ddr[h1 m512 n512 k64 e64] mhnke | memtile[h1 m64 n512 k64 e64] hmnke | "
             "core[h1 m32 n64 k64 e64] ; rows=n4 cols=m2"),
    SeedCase("LayerNorm i8 768x768",
             "§V.C and the seed tool's test_layernorm: P 768x768, memtile 384x384, core "
             "96x96 (memtile rows 192 here: legality rule 1, see docs/seed-cases.md)",
             ("layernorm", dict(rows=768, cols=768, dtype="i8")),
             "ddr[r768 c768] rc | memtile[r192 c384] rc | core[r96 c96] ; rows=c4 cols=r2"),
]


def workload(case: SeedCase):
    import tilewise as tw

    kind, kwargs = case.make
    return getattr(tw, kind)(**kwargs)


def measure(case: SeedCase, arch, optima: dict) -> dict:
    """The seed mapping's cost and the optimum's (cached per workload)."""
    import tilewise as tw
    from tilewise.model.rules import compute_bound_s

    w = workload(case)
    bound = compute_bound_s(w, arch)
    c = tw.evaluate(w, arch, tw.Mapping.parse(case.mapping), check_capacity=False)
    over = {lv: (c.footprint[lv], c.capacity[lv]) for lv in c.footprint
            if c.footprint[lv] > c.capacity[lv]}
    key = w.key
    if key not in optima:
        t0 = time.perf_counter()
        best = tw.search(w, arch, top=1).best
        optima[key] = dict(mapping=str(best.mapping), latency_us=best.latency_s * 1e6,
                           xmin=best.xslowdown, offchip_bytes=int(best.offchip_bytes),
                           search_s=time.perf_counter() - t0)
    split = case.mapping.split(";")[1].strip()  # the seed's spatial split, searched alone
    same = tw.search(w, arch, top=1, spatial=[split]).best
    return dict(case=case.name, source=case.source, mapping=case.mapping,
                latency_us=c.latency_s * 1e6, xmin=c.latency_s / bound,
                offchip_bytes=int(c.offchip_bytes), fits=bool(c.fits),
                over={lv: [int(a), float(b)] for lv, (a, b) in over.items()},
                optimum=optima[key],
                same_split=dict(split=split, mapping=str(same.mapping),
                                latency_us=same.latency_s * 1e6, xmin=same.xslowdown))


def _markdown(rows) -> str:
    """The docs table (numbers), then each case's two mappings."""
    out = ["| # | seed solution | fits | latency µs | × min | off-chip B | optimum µs | × min "
           "| off-chip B | best with the seed's split µs |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(rows, 1):
        o = r["optimum"]
        fit = "yes" if r["fits"] else "no: " + ", ".join(
            f"{lv} {a:,} B > {b:,.0f} B" for lv, (a, b) in r["over"].items())
        out.append(f"| {i} | {r['case']} | {fit} | {r['latency_us']:.2f} | {r['xmin']:.3f} | "
                   f"{r['offchip_bytes']:,} | {o['latency_us']:.2f} | {o['xmin']:.3f} | "
                   f"{o['offchip_bytes']:,} | {r['same_split']['latency_us']:.2f} |")
    out.append("")
    for i, r in enumerate(rows, 1):
        out.append(f"{i}. {r['source']}  \n   seed: `{r['mapping']}`  \n"
                   f"   optimum: `{r['optimum']['mapping']}`  \n"
                   f"   best with `{r['same_split']['split']}`: `{r['same_split']['mapping']}`")
    return "\n".join(out)


def main(argv=None):
    import tilewise as tw

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true", help="print the docs table")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "seed_solutions.json"))
    args = ap.parse_args(argv)
    arch = tw.load_arch("aie-4x2")
    optima: dict = {}
    rows = [measure(c, arch, optima) for c in CASES]
    if args.markdown:
        print(_markdown(rows))
    else:
        print(f"{'case':44} {'fits':>4} {'µs':>9} {'x min':>6} {'off-chip B':>12} | "
              f"{'opt µs':>9} {'x min':>6} {'off-chip B':>12} {'search s':>8} | {'split µs':>9}")
        for r in rows:
            o = r["optimum"]
            print(f"{r['case'][:44]:44} {'yes' if r['fits'] else 'no':>4} {r['latency_us']:9.2f} "
                  f"{r['xmin']:6.3f} {r['offchip_bytes']:12,} | {o['latency_us']:9.2f} "
                  f"{o['xmin']:6.3f} {o['offchip_bytes']:12,} {o['search_s']:8.2f} | "
                  f"{r['same_split']['latency_us']:9.2f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
