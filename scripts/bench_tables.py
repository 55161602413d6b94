"""Render the benchmark JSONs in benchmarks/results/ as the Markdown tables of the README.

    python scripts/bench_tables.py > /tmp/tables.md
"""

import json
from pathlib import Path

R = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def _load(name):
    p = R / name
    return json.loads(p.read_text()) if p.exists() else None


def _table(caption: str, columns: list[str], rows: list[list[str]], right_from: int) -> str:
    """A Markdown table; columns from index ``right_from`` on are right-aligned (numbers)."""
    align = ["---" if i < right_from else "---:" for i in range(len(columns))]
    lines = [caption, "", "| " + " | ".join(columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def pack():
    d = _load("pack.json")
    if not d:
        return ""
    return _table("**Pack / unpack vs memcpy of the same bytes** (`benchmarks/pack.py`; target >= 0.7 "
                  "of memcpy and never slower than numpy's reshape+transpose)",
                  ["op", "dtype", "shape", "tile", "ratio to memcpy", "ratio to numpy"],
                  [[r["op"], r["dtype"], str(r["shape"]), str(r["tile"]), f"{r['ratio_to_memcpy']:.2f}",
                    f"{r['ratio_to_numpy']:.2f}"] for r in d["rows"]], 4)


def model():
    d = _load("model.json")
    if not d:
        return ""
    return _table("**Cost model throughput** (`benchmarks/model.py`, one core; target >= 1,000,000 "
                  "candidates/s for GEMM; `random` = random mappings, `search` = tile combos x loop "
                  "orders as the search sends them)",
                  ["case", "arch", "batch", "candidates/s (wall)", "candidates/s (CPU)"],
                  [[r["case"], r["arch"], r.get("batch_kind", ""), f"{r['candidates_per_s']:,.0f}",
                    f"{r.get('cpu_candidates_per_s', float('nan')):,.0f}"] for r in d["results"]], 3)


def execute():
    d = _load("execute.json")
    if not d:
        return ""
    return _table("**Blocked attention vs naive numpy attention** (`benchmarks/execute.py`, d=64, "
                  "f32; target: memory O(L·d + tiles), time within 2x of naive at L=4096)",
                  ["L", "method", "median s", "peak memory MiB"],
                  [[str(r["L"]), r["method"], f"{r['median_s']:.3f}", f"{r['peak_bytes'] / 2**20:.1f}"]
                   for case in d["attention"] for r in case["rows"]], 2)


def search():
    d = _load("search.json")
    if not d:
        return ""
    rows = []
    for r in d["rows"]:
        if r["status"] == "ok":
            rows.append([r["case"], "ok", f"{r['seconds']:.2f}", f"{r['tile_combos']:,}",
                         f"{r.get('nodes', 0):,}", f"{r['candidates']:,}", f"{r['xslowdown']:.4f}"])
        else:
            rows.append([r["case"], r["status"], "", "", "", "", ""])
    return _table("**Exact search** (`benchmarks/search.py`, aie-4x2, one core per case; target <= 1 s)",
                  ["case", "status", "seconds", "tile combos", "nodes", "candidates", "x compute-bound min"],
                  rows, 2)


if __name__ == "__main__":
    print("\n\n".join(t for t in (search(), model(), execute(), pack()) if t))
