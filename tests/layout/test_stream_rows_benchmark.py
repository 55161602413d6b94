"""``benchmarks/stream_rows.py`` (the store-order measurement behind the two-lines-a-row
unpacks) runs and writes one row per row distance with every candidate's bandwidth."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _benchmark():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import stream_rows
    finally:
        sys.path.pop(0)
    return stream_rows


def test_stream_rows_benchmark_writes_its_table(tmp_path, capsys):
    stream_rows = _benchmark()
    out = tmp_path / "rows.json"
    stream_rows.main(["--mib", "16", "--rounds", "1", "--out", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [r["row_bytes"] for r in rows] == [4096, 8192, 16384, 1 << 20]
    for r in rows:
        assert set(r["gb_per_s"]) == {"copyto", "in order", "K=1", "K=2", "K=4", "K=8"}
        assert all(v > 0 for v in r["gb_per_s"].values())
    assert "K=2" in capsys.readouterr().out


def test_stream_rows_benchmark_refuses_too_few_bytes(capsys):
    stream_rows = _benchmark()
    with pytest.raises(SystemExit):
        stream_rows.main(["--mib", "1"])
    assert "--mib 1 --rounds 7: 16 rows 1 MiB apart need --mib 16" in capsys.readouterr().err


def test_stream_rows_candidates_write_every_line():
    # A candidate that skipped lines would report a bandwidth it never moved.
    stream_rows = _benchmark()
    v = np.uint64(0x0123456789ABCDEF)
    for k in (1, 2, 4, 8):
        dst = stream_rows._aligned(2 * 16 * 512)  # two bands of 16 rows of 4 KiB
        dst[:] = 0
        stream_rows._rows(dst, 512, v, k)
        assert (dst == v).all(), k
    dst = stream_rows._aligned(4096)
    dst[:] = 0
    stream_rows._in_order(dst, v)
    assert (dst == v).all()
