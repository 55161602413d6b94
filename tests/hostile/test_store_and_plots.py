"""Hostile inputs get one clear line naming the bad value, never a traceback or a silent
success (issue 18; the rest of that issue's categories are still open). Each CLI case: a
non-zero exit, at most a few lines on stderr, no traceback, the offending value named."""

import os
import sqlite3

import pytest

import tilewise as tw
from tilewise.cli import main

GEMM = ["search", "gemm", "--m", "64", "--n", "64", "--k", "64", "--dtype", "i8", "--top", "1"]


def _fails_clearly(capsys, argv, *names):
    code = main(argv)
    err = capsys.readouterr().err
    assert code != 0, argv
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3, err
    for name in names:
        assert name in err, (name, err)
    return err


@pytest.mark.parametrize("plot,why", [
    ("/nonexistent-folder/p.png", "does not exist"),
    ("/dev/full", "No space left on device"),
])
def test_plot_paths(capsys, plot, why):
    _fails_clearly(capsys, GEMM + ["--plot", plot], plot, why)


def test_png_path_checked_before_work(capsys):
    _fails_clearly(capsys, ["layout", "f32[2,3]{1,0}", "--png", "/nope/x.png"], "/nope", "does not exist")


@pytest.mark.parametrize("content", [b"garbage, not a database" * 10, b"", b"SQLite format 3\x00" + b"\x01" * 50])
def test_corrupt_store(capsys, tmp_path, content):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(content)
    if content == b"":  # an empty file is a fresh SQLite database: it must simply work
        assert main(["search-many", "examples/problems.yaml", "--store", str(bad), "--workers", "1"]) == 0
        return
    _fails_clearly(capsys, ["search-many", "examples/problems.yaml", "--store", str(bad)],
                   "bad.sqlite", "move it aside")


def test_store_in_a_missing_folder_or_a_folder(capsys, tmp_path):
    _fails_clearly(capsys, ["search-many", "examples/problems.yaml", "--store", "/no/such/dir/s.sqlite"],
                   "/no/such/dir", "does not exist")
    _fails_clearly(capsys, ["search-many", "examples/problems.yaml", "--store", str(tmp_path)],
                   "is a folder")


def test_a_bad_row_is_recomputed_with_a_warning(tmp_path):
    store = tmp_path / "s.sqlite"
    w = tw.gemm(32, 32, 32, dtype="i8")
    first = tw.search_many([w], "aie-4x2", store=str(store), workers=1)[0]
    db = sqlite3.connect(store)
    db.execute("UPDATE solutions SET result = '{not json'")
    db.commit()
    db.close()
    with pytest.warns(UserWarning, match="bad row"):
        again = tw.search_many([w], "aie-4x2", store=str(store), workers=1)[0]
    assert not again.cached and again.best.latency_s == first.best.latency_s


@pytest.mark.parametrize("workload", ["gemm", None, 42, [1, 2]])
def test_api_workload_types(workload):
    for call in (lambda: tw.search(workload, "aie-4x2"),
                 lambda: tw.evaluate(workload, "aie-4x2", "x"),
                 lambda: tw.verify(workload, "x")):
        with pytest.raises(tw.WorkloadError, match="workload must be a workload"):
            call()


@pytest.mark.parametrize("line,name", [
    ("{name: ub, capacity: 64 KiB, bandwidth: .inf}", "inf"),
    ("{name: ub, capacity: 64 KiB, bandwidth: .nan}", "nan"),
    ("{name: ub, capacity: 64 KiB, bandwidth: 1e400 GB/s}", "1e400 GB/s"),
    ("{name: ub, bandwidth: 100 GB/s, capacity: 1e29 TiB}", "1e29 TiB"),
    ("{name: ub, bandwidth: 100 GB/s, capacity: .nan}", "nan"),
])
def test_non_finite_and_huge_arch_numbers(capsys, tmp_path, line, name):
    spec = tmp_path / "a.yaml"
    spec.write_text("name: t\nlevels:\n  - {name: gm, capacity: unbounded}\n  - " + line +
                    "\ncompute: {clock: 1 GHz, macs_per_cycle: {i8: 64}}\n")
    _fails_clearly(capsys, GEMM + ["--arch", str(spec)], name)


@pytest.mark.parametrize("clock", [".nan", ".inf", "-1 GHz", "1e400 Hz"])
def test_bad_clock(capsys, tmp_path, clock):
    spec = tmp_path / "a.yaml"
    spec.write_text("name: t\nlevels:\n  - {name: gm, capacity: unbounded}\n"
                    "  - {name: ub, capacity: 64 KiB, bandwidth: 1 GB/s}\n"
                    f"compute: {{clock: {clock}, macs_per_cycle: {{i8: 64}}}}\n")
    _fails_clearly(capsys, ["arch", "show", str(spec)], "clock")
