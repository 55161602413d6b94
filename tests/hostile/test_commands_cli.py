"""Hostile options on every command of `tilewise --help`: sizes, dtypes, objectives, custom
expressions, constraints, mappings, output paths; each a clear error (or a correct answer)."""

import pytest

from tilewise.cli import app

G = ["--m", "64", "--n", "64", "--k", "64"]
GEMM = ["search", "gemm", *G, "--top", "1"]
EVAL = ["evaluate", "gemm", *G, "--arch", "aie-4x2", "--mapping"]
MAP = "ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m16 n16 k16] ; rows=m4 cols=n2"


@pytest.mark.parametrize("argv, names", [
    (["search", "gemm", "--m", "0", "--n", "64", "--k", "64"], ["dim m", "size 0", "positive"]),
    (["search", "gemm", "--m", "-3", "--n", "64", "--k", "64"], ["size -3"]),
    (["search", "gemm", "--m", "99999999999999999999999", "--n", "64", "--k", "64"],
     ["99999999999999999999999", "2^40"]),
    (["search", "gemm", "--m", "4294967296", "--n", "4294967296", "--k", "4294967296"],
     ["int64", "2^62"]),
    (["search", "gemm", "--m", "1.5", "--n", "64", "--k", "64"], ["'1.5'", "integer"]),
    (["search", "gemm", "--m", "true", "--n", "64", "--k", "64"], ["'true'", "integer"]),
    (["search", "gemm", "--n", "64", "--k", "64"], ["--m"]),
    ([*GEMM, "--dtype", "q7"], ["'q7'", "i8, i16"]),
    ([*GEMM, "--dtype", ""], ["''", "i8"]),
    ([*GEMM, "--dtype", "float64"], ["f64", "not supported", "bf16"]),
    ([*GEMM, "--out-dtype", "xx"], ["'xx'"]),
    ([*GEMM, "--objective", "fast"], ["'fast'", "latency"]),
    ([*GEMM, "--custom", "latency +"], ["'latency +'", "does not parse"]),
    ([*GEMM, "--custom", "__import__('os')"], ["__import__", "not allowed"]),
    ([*GEMM, "--custom", "foo"], ["'foo'", "latency, traffic"]),
    ([*GEMM, "--custom", "latency/0"], ["latency/0", "not a finite number"]),
    ([*GEMM, "--custom", ""], ["''", "does not parse"]),
    ([*GEMM, "--custom", "latency.real"], ["not allowed"]),
    ([*GEMM, "--custom", "[latency]"], ["not allowed"]),
    ([*GEMM, "--monotone"], ["--monotone", "--custom"]),
    ([*GEMM, "--then", "bogus"], ["'bogus'", "traffic"]),
    ([*GEMM, "--tolerance", "abc"], ["'abc'", "0.5%"]),
    ([*GEMM, "--tolerance", "-1"], ["'-1'"]),
    ([*GEMM, "--tolerance", "nan"], ["'nan'"]),
    ([*GEMM, "--tolerance", "inf"], ["'inf'"]),
    (["search", "gemm", *G, "--top", "0"], ["top=0"]),
    (["search", "gemm", *G, "--top", "-1"], ["top=-1"]),
    (["search", "gemm", *G, "--top", "100000000"], ["100000000", "10000"]),
    ([*GEMM, "--spatial", "rows=q4"], ["'rows=q4'", "valid"]),
    ([*GEMM, "--spatial", "rows=m999"], ["'rows=m999'"]),
    ([*GEMM, "--spatial", "garbage"], ["'garbage'"]),
    ([*GEMM, "--double-buffer", "maybe"], ["'maybe'"]),
    ([*GEMM, "--time-limit", "0"], ["time_limit=0.0", "positive number of seconds"]),
    ([*GEMM, "--time-limit", "-3"], ["time_limit=-3.0", "positive number of seconds"]),
    ([*GEMM, "--time-limit", "nan"], ["time_limit=nan", "positive number of seconds"]),
    ([*GEMM, "--time-limit", "soon"], ["--time-limit", "'soon' is not a valid float"]),
    ([*GEMM, "--dma-limits=maybe"], ["--dma-limits", "does not take a value"]),
    ([*GEMM, "--no-dma-limits=1"], ["--no-dma-limits", "does not take a value"]),
    ([*GEMM, "--arch", "nosuch"], ["'nosuch'", "aie-4x2"]),
    ([*GEMM, "--arch", ""], ["--arch is empty", "aie-4x2"]),
    ([*GEMM, "--plot", "/no/such/dir/p.png"], ["/no/such/dir", "does not exist"]),
    ([*GEMM, "--json", "--plot", "/dev/full"], ["/dev/full", "No space left"]),
    (["search", "einsum", "ij,jk->", "--sizes", "i=4,j=4,k=4"], ["ij,jk->", "output letter"]),
    (["search", "einsum", "garbage", "--sizes", "i=4"], ["garbage"]),
    (["search", "einsum", "ij,jk->ik", "--sizes", "i=4,j=x,k=4"], ["'x'", "integer size"]),
    (["search", "einsum", "ij,jk->ik", "--sizes", "i=4,j=4"], ["no size for k"]),
    (["search", "conv2d", "--c", "3", "--k", "8", "--h", "2", "--w", "2", "--r", "5", "--s", "5"],
     ["5x5 filter", "2x2 input"]),
    (["search", "conv2d", "--c", "3", "--k", "8", "--h", "8", "--w", "8", "--stride", "0"],
     ["stride 0"]),
    (["search", "conv2d", "--c", "3", "--k", "8", "--h", "8", "--w", "8", "--groups", "2"],
     ["groups"]),
    (["search", "batched-gemm", "--b", "0", *G], ["size 0"]),
    (["search", "chain", "--m", "8", "--k", "8", "--l", "-8", "--n", "8"], ["size -8"]),
    (["search", "layernorm", "--rows", "0", "--cols", "8"], ["size 0"]),
    (["search", "mha", "--lq", "-1", "--d", "8"], ["size -1"]),
])
def test_search_options(fails_clearly, argv, names):
    fails_clearly(argv, *names)


@pytest.mark.parametrize("mapping, names", [
    ("garbage", ["'garbage'", "'['"]),
    ("", ["level name"]),
    ("ddr[m64 n64 k64] mnk | core[m16 n8 k16] ; rows=n4", ["['ddr', 'core']", "memtile"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m128 n8 k8]", ["128"]),
    ("ddr[m64 n64 k64] mnq | memtile[m64 n64 k64] mnk | core[m16 n8 k16]", ["mnq"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m0 n8 k16]", ["m=0", "positive"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m16 n8 z16]", ["z"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m16 n8 k16] ; rows=m9", ["rows=m9"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m16 n8 k16] db:Q", ["Q"]),
    ("ddr[m64 n64 k64] mnk | memtile[m64 n64 k64] mnk | core[m64 n64 k64] ; rows=m4 cols=n2",
     ["core", "tile"]),
])
def test_bad_mappings(fails_clearly, mapping, names):
    fails_clearly([*EVAL, mapping], *names)


def test_a_good_mapping_is_evaluated(succeeds):
    assert "µs" in succeeds([*EVAL, MAP]) or "s" in succeeds([*EVAL, MAP])


@pytest.mark.parametrize("argv, names", [
    (["emit", "mlir", "gemm", *G, "--mapping", "garbage"], ["'garbage'"]),
    (["emit", "mlir", "gemm", *G, "--dtype", "q3"], ["'q3'"]),
    (["emit", "mlir", "gemm", *G, "--mapping", MAP, "--output", "/no/dir/x.mlir"], ["/no/dir"]),
    (["run", "examples/gemm-aie.json", "--backend", "tpu"], ["'tpu'"]),
    (["run", "examples/gemm-aie.json", "--rounds", "0", "--backend", "iree"], ["--rounds", "0"]),
    (["run", "examples/gemm-aie.json", "--seed", "-1"], ["--seed", "-1"]),
    (["run", "/nonexistent.json"], ["/nonexistent.json", "No such file"]),
    (["arch", "show", "nosuch"], ["'nosuch'", "presets"]),
    (["arch", "calibrate", "/nonexistent.json"], ["/nonexistent.json"]),
    (["import", "/nonexistent.onnx"], ["/nonexistent.onnx"]),
    (["import", "examples/models/resnet18.onnx", "--dim", "garbage"], ["garbage"]),
    (["import", "examples/models/resnet18.onnx", "--dtype", "q9"], ["q9"]),
    (["search-many", "examples/problems.yaml", "--workers", "0"], ["workers=0"]),
    (["search-many", "examples/problems.yaml", "--workers", "-2"], ["workers=-2"]),
    (["search-many", "examples/problems.yaml", "--engine", "mpi"], ["'mpi'"]),
    (["search-many", "examples/problems.yaml", "--store", "/no/such/dir/s.sqlite"],
     ["/no/such/dir", "does not exist"]),
    (["search-model", "/nonexistent.onnx"], ["/nonexistent.onnx"]),
    (["sweep", "examples/problems.yaml", "--vary", "garbage"], ["'garbage'", "KEY=V1,V2"]),
    (["sweep", "examples/problems.yaml", "--vary", "compute.clock=abc"], ["'abc'", "GHz"]),
    (["sweep", "examples/problems.yaml", "--vary", "compute.clock=[x"], ["'[x'", "GHz"]),
    (["sweep", "examples/problems.yaml", "--vary", "compute.clock="], ["none empty"]),
    (["sweep", "examples/problems.yaml", "--vary", "nosuch.key=1,2"], ["nosuch", "sections"]),
    (["sweep", "examples/problems.yaml", "--vary", "compute.clock=1GHz", "--plot", "/nope/x.png"],
     ["/nope", "does not exist"]),
    (["vector", "plan", "frob", "--cols", "128"], ["'frob'", "Add"]),
    (["vector", "plan", "add", "--cols", "0"], ["cols=0"]),
    (["vector", "plan", "add", "--cols", "-5"], ["cols=-5"]),
    (["vector", "plan", "add", "--cols", "128", "--dtype", "q3"], ["'q3'"]),
    (["vector", "plan", "add", "--cols", "128", "--dtype", "i8"], ["i8"]),
    (["vector", "plan", "add", "--cols", "128", "--pitch", "3"], ["pitch 3"]),
    (["vector", "plan", "add", "--rows", "300", "--cols", "128", "--no-counter", "--check"],
     ["196608", "past the unified buffer"]),
    (["vector", "plan", "duplicate", "--rows", "1000", "--cols", "128", "--scalar", "1"],
     ["196608"]),
    (["vector", "copy", "--gm", "100000,100000", "--size", "100000,100000"],
     ["100000x100000", "196608"]),
    (["vector", "copy", "--gm", "a,b", "--size", "1,1"], ["'a,b'"]),
    (["vector", "copy", "--gm", "10,10", "--size", "20,20"], ["10x10 GM"]),
    (["vector", "copy", "--gm", "10,10", "--size", "5,5", "--origin", "8,8"], ["rows 8..12"]),
    (["vector", "copy", "--gm", "10,10", "--size", "5,5", "--ub-base", "-32"], ["-32", "negative"]),
    (["vector", "copy", "--gm", "10,10", "--size", "5,5", "--ub-base", "196576"], ["196608"]),
    (["vector", "copy", "--gm", "10", "--size", "5,5"], ["'10'", "two"]),
    (["vector", "copy", "--gm", "10,10", "--size", "5,5", "--dtype", "q3"], ["'q3'"]),
])
def test_every_command(fails_clearly, argv, names):
    fails_clearly(argv, *names)


def test_every_subcommand_is_covered():
    """Each command of `tilewise --help` appears in this module's cases (a new command without
    hostile-input cases fails here)."""
    import ast
    import pathlib

    text = pathlib.Path(__file__).read_text() + pathlib.Path(__file__).with_name(
        "test_layout_pack_cli.py").read_text() + pathlib.Path(__file__).with_name(
        "test_files.py").read_text()
    strings = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)}
    missing = [name for name in app.commands if name not in strings]
    assert not missing, missing


def test_vector_plan_at_the_capacity_edge_checks_the_whole_ub(succeeds):
    """A tile that exactly fills what the UB has left is planned, and --check holds over the
    whole 192 KiB (every byte outside dst untouched)."""
    out = succeeds(["vector", "plan", "relu", "--rows", "383", "--cols", "128", "--check"])
    assert "equals numpy" in out and "untouched" in out


@pytest.mark.parametrize("argv", [["search", "mha", "--lq", "64", "--d", "32"],
                                  ["search", "layernorm", "--rows", "64", "--cols", "96"]])
def test_default_dtype_works_on_the_default_arch(capsys, argv):
    """mha and layernorm default to bf16, which aie-4x2 (the default arch) does not compute:
    the default then falls back to a type it does, said on stderr (issue 18: a default must
    work); an explicit --dtype is never replaced."""
    from tilewise.cli import main

    assert main([*argv, "--top", "1"]) == 0
    out, err = capsys.readouterr()
    assert "no bf16 rate; --dtype defaults to i16" in err and ":i16" in out
    assert main([*argv, "--top", "1", "--dtype", "bf16"]) == 2
    assert "gives no" in capsys.readouterr().err


def test_an_infeasible_problem_says_why_before_searching(fails_clearly, tmp_path):
    """Nothing fits an 8-byte core: the error names the smallest tile, its bytes and the
    capacity (found from the smallest tiles, not after enumerating the space)."""
    arch = tmp_path / "tiny.yaml"
    arch.write_text("name: tiny\nlevels:\n  - {name: dram, capacity: unbounded}\n"
                    "  - {name: sram, capacity: 8 B, bandwidth: 16 GB/s, instances: 4}\n"
                    "array: {level: sram, rows: 2, cols: 2}\n"
                    "compute: {clock: 1 GHz, macs_per_cycle: {i8: 64, i16: 32}}\n")
    fails_clearly(["search", "layernorm", "--rows", "16384", "--cols", "8192", "--dtype", "i16",
                   "--arch", arch], "no mapping fits", "smallest sram tile (r1 c1)", "16 B",
                  "capacity is 8 B")
