"""``benchmarks/stream_rows.py`` (the store-order measurement behind the two-lines-a-row
unpacks) runs and writes one row per row distance with every candidate's bandwidth."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_stream_rows_benchmark_writes_its_table(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import stream_rows
    finally:
        sys.path.pop(0)
    out = tmp_path / "rows.json"
    stream_rows.main(["--mib", "1", "--rounds", "1", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [r["row_bytes"] for r in rows] == [4096, 8192, 16384, 1 << 20]
    for r in rows:
        assert set(r["gb_per_s"]) == {"copyto", "in order", "K=1", "K=2", "K=4", "K=8"}
        assert all(v > 0 for v in r["gb_per_s"].values())
    assert "K=2" in capsys.readouterr().out
