"""Render the benchmark JSONs in benchmarks/results/ as the Markdown tables of the README.

    python scripts/bench_tables.py > /tmp/tables.md
"""

import json
from pathlib import Path

R = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _load(name):
    p = R / name
    return json.loads(p.read_text()) if p.exists() else None


def pack():
    d = _load("pack.json")
    if not d:
        return ""
    out = ["**Pack / unpack vs memcpy of the same bytes** (`benchmarks/pack.py`; target >= 0.7 of "
           "memcpy and never slower than numpy's reshape+transpose)", "",
           "| op | dtype | shape | tile | ratio to memcpy | ratio to numpy |", "|---|---|---|---|---:|---:|"]
    for r in d["rows"]:
        out.append(f"| {r['op']} | {r['dtype']} | {r['shape']} | {r['tile']} | "
                   f"{r['ratio_to_memcpy']:.2f} | {r['ratio_to_numpy']:.2f} |")
    return "\n".join(out)


def model():
    d = _load("model.json")
    if not d:
        return ""
    out = ["**Cost model throughput** (`benchmarks/model.py`, one core; target >= 1,000,000 "
           "candidates/s for GEMM; `random` = random mappings, `search` = tile combos x loop orders "
           "as the search sends them)", "",
           "| case | arch | batch | candidates/s (wall) | candidates/s (CPU) |", "|---|---|---|---:|---:|"]
    for r in d["results"]:
        out.append(f"| {r['case']} | {r['arch']} | {r.get('batch_kind', '')} | "
                   f"{r['candidates_per_s']:,.0f} | {r.get('cpu_candidates_per_s', float('nan')):,.0f} |")
    return "\n".join(out)


def execute():
    d = _load("execute.json")
    if not d:
        return ""
    out = ["**Blocked attention vs naive numpy attention** (`benchmarks/execute.py`, d=64, f32; "
           "target: memory O(L·d + tiles), time within 2x of naive at L=4096)", "",
           "| L | method | median s | peak memory MiB |", "|---:|---|---:|---:|"]
    for case in d["attention"]:
        for r in case["rows"]:
            out.append(f"| {r['L']} | {r['method']} | {r['median_s']:.3f} | "
                       f"{r['peak_bytes'] / 2**20:.1f} |")
    return "\n".join(out)


def search():
    d = _load("search.json")
    if not d:
        return ""
    out = ["**Exact search** (`benchmarks/search.py`, aie-4x2, one core per case; target <= 1 s)", "",
           "| case | status | seconds | tile combos | candidates | x compute-bound min |",
           "|---|---|---:|---:|---:|---:|"]
    for r in d["rows"]:
        if r["status"] == "ok":
            out.append(f"| {r['case']} | ok | {r['seconds']:.2f} | {r['tile_combos']:,} | "
                       f"{r['candidates']:,} | {r['xslowdown']:.4f} |")
        else:
            out.append(f"| {r['case']} | {r['status']} | | | | |")
    return "\n".join(out)


if __name__ == "__main__":
    print("\n\n".join(t for t in (search(), model(), execute(), pack()) if t))
