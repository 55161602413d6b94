"""``tilewise evaluate``: tables, JSON equal to ``evaluate``, --simulate, one-line errors."""

from tilewise.arch.loader import load_arch
import json
import math

import pytest

from tilewise import Arch, Mapping, evaluate, gemm, gemm_chain
from tilewise.cli import main

GEMM_MAPPING = ("ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk db:B | "
                "core[m64 n64 k128] db:A,B ; rows=n4 cols=m2")
GEMM = ["evaluate", "gemm", "--m", "512", "--n", "768", "--k", "768", "--dtype", "i8",
        "--arch", "aie-4x2"]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_table_shows_the_cost_and_the_simulation_agrees(capsys):
    code, out, err = _run(capsys, GEMM + ["--mapping", GEMM_MAPPING, "--simulate"])
    assert code == 0 and err == ""
    cost = evaluate(gemm(512, 768, 768, dtype="i8"), load_arch("aie-4x2"),
                    Mapping.parse(GEMM_MAPPING))
    assert GEMM_MAPPING in out  # brackets survive rich markup
    for level in ("memtile", "core"):
        assert f"{cost.footprint[level]:,}" in out
    assert f"{cost.reads['core']['B']:,}" in out and f"{cost.writes['core']['C']:,}" in out
    assert f"{cost.compute_cycles:,.0f}" in out and f"{cost.utilization:.1%}" in out
    assert "simulation agrees" in out


def test_json_equals_evaluate(capsys):
    code, out, _ = _run(capsys, GEMM + ["--mapping", GEMM_MAPPING, "--json", "--simulate"])
    assert code == 0
    got = json.loads(out)
    cost = evaluate(gemm(512, 768, 768, dtype="i8"), load_arch("aie-4x2"),
                    Mapping.parse(GEMM_MAPPING))
    assert got["mapping"] == GEMM_MAPPING and got["arch"] == "aie-4x2"
    assert got["simulation_agrees"] is True and got["mismatches"] == []
    for key, value in cost.__dict__.items():
        if isinstance(value, dict):
            value = {k: (None if isinstance(v, float) and math.isinf(v) else v)
                     for k, v in value.items()}
        assert got["cost"][key] == value, key


@pytest.mark.parametrize("argv,mapping,workload", [
    (["chain", "--m", "64", "--k", "16", "--l", "48", "--n", "32"],
     "ddr[m64 k16 l48 n32] mlkn | memtile[m32 k16 l48 n32] mlkn | core[m16 k16 l16 n32]",
     lambda: gemm_chain(64, 16, 48, 32)),
    (["einsum", "mk,kn->mn", "--sizes", "m=40,k=24,n=16"],
     "ddr[m40 k24 n16] mkn | memtile[m40 k24 n16] mkn | core[m16 k16 n8] ; rows=m2",
     lambda: gemm(40, 16, 24)),
])
def test_other_workloads_simulate_and_agree(capsys, argv, mapping, workload):
    code, out, _ = _run(capsys, ["evaluate", *argv, "--arch", "aie-4x2", "--mapping", mapping,
                                 "--json", "--simulate"])
    assert code == 0
    got = json.loads(out)
    assert got["simulation_agrees"] is True
    want = evaluate(workload(), load_arch("aie-4x2"), Mapping.parse(mapping))
    assert got["cost"]["reads"] == want.reads and got["cost"]["writes"] == want.writes


def test_conv2d_table(capsys):
    # aie-4x2 aligns conv channels by role: C_out k as GEMM n (8), C_in c to 8 for i8 (c_in, seed
    # 003 §IV; 16 for wider types); the batch n and the pixels are not aligned
    code, out, _ = _run(capsys, ["evaluate", "conv2d", "--c", "8", "--h", "12", "--w", "12",
                                 "--k", "32", "--padding", "1", "--arch", "aie-4x2", "--mapping",
                                 "ddr[n1 k32 c8 p12 q12 r3 s3] nkcpqrs | "
                                 "memtile[n1 k32 c8 p12 q12 r3 s3] nkcpqrs | "
                                 "core[n1 k16 c8 p4 q12 r3 s3] ; rows=k2", "--simulate"])
    assert code == 0 and "simulation agrees" in out and "op O" in out


@pytest.mark.parametrize("mapping,message", [
    ("ddr[m512 n768 k768 mnk",
     "error: malformed mapping 'ddr[m512 n768 k768 mnk': at character 23 (end of text) expected "
     "the tile size of mnk"),
    ("ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk | core[m64 n64 k128] db:A,B,C ; "
     "rows=n4 cols=m2",
     "error: level core: the tiles need 65536 bytes per instance but it holds 49152"),
    ("ddr[m512 n768 k768] mnk | memtile[m1024 n256 k768] mnk | core[m64 n64 k128]",
     "error: level memtile: tile m=1024 exceeds its parent tile m=512 at ddr"),
])
def test_errors_are_one_line_exit_2(capsys, mapping, message):
    code, out, err = _run(capsys, GEMM + ["--mapping", mapping])
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_unknown_arch_is_an_error(capsys):
    code, _, err = _run(capsys, ["evaluate", "gemm", "--m", "8", "--n", "8", "--k", "8",
                                 "--arch", "no-such-arch", "--mapping", "x[m8]"])
    assert code == 2 and err.startswith("error: ") and "no-such-arch" in err
