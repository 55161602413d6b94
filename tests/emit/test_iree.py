"""Compile and run through IREE (CI installs the ``iree`` extra): a small GEMM and conv, tiled
by tilewise and by IREE's default, equal to the numpy reference."""

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

import tilewise as tw  # noqa: E402
from tilewise.emit.iree import check, compile as iree_compile, time_interleaved  # noqa: E402
from tilewise.executor.reference import random_inputs, reference  # noqa: E402

ARCH = str(Path(__file__).with_name("cpu2.yaml"))


@pytest.mark.parametrize("workload", [
    tw.gemm(48, 80, 72, dtype="i8"),                                   # exact
    tw.gemm(40, 64, 50, dtype="f32"),
    tw.conv2d(1, 8, 9, 9, 16, 3, 3, stride=2, padding=1, dtype="i8"),  # exact
    tw.conv2d(2, 8, 8, 8, 16, 3, 3, padding=1, dtype="f32"),
], ids=["gemm-i8", "gemm-f32", "conv-i8", "conv-f32"])
def test_compiled_best_mapping_equals_the_reference(workload):
    result = tw.search(workload, ARCH, top=1)
    program = tw.compile(result, lanes=16)
    assert program.emitted.config is not None and program.compile_s > 0
    inputs = random_inputs(workload, seed=3)
    report = check(workload, program, inputs)
    assert report.passed, str(report)
    if workload.ops[0].dtype.is_integer:
        (name,) = [t.name for t in workload.ops[0].tensors[-1:]]
        assert np.array_equal(program(inputs), reference(workload, inputs)[name])


def test_default_tiling_and_interleaved_timing():
    w = tw.gemm(32, 48, 16, dtype="i8")
    default = tw.compile(w)
    one_thread = iree_compile(w, driver="local-sync")
    with pytest.raises(tw.TilewiseError, match="driver 'cuda' unknown"):
        iree_compile(w, driver="cuda")
    tiled = tw.compile(w, ARCH, "dram[m32 n48 k16] mnk | l2[m32 n48 k16] mnk | l1[m16 n48 k16] ; cols=m2")
    inputs = random_inputs(w, seed=0)
    assert check(w, default, inputs).passed and check(w, tiled, inputs).passed
    assert check(w, one_thread, inputs).passed and one_thread.driver == "local-sync"
    times = time_interleaved([tiled, default], inputs, rounds=3, warmup=1)
    assert len(times) == 2 and all(t > 0 for t in times)


def test_cli_run_backend_iree(tmp_path, capsys):
    from tilewise.cli import main

    path = tmp_path / "sol.json"
    path.write_text(json.dumps({
        "workload": {"gemm": {"m": 32, "n": 48, "k": 16, "dtype": "f32"}}, "arch": ARCH,
        "mapping": "dram[m32 n48 k16] mnk | l2[m32 n48 k16] mnk | l1[m16 n48 k16] ; cols=m2"}))
    assert main(["run", str(path), "--backend", "iree", "--rounds", "2", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "distribution = [16, 48, 0]" in out and "PASS" in out and "IREE default" in out

