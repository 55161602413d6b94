"""Hostile files: arch YAML typos, unknown keys, wrong types, NaN/inf/negative/bools-as-ints;
corrupt, empty, non-UTF-8 and binary files and folders where a file is expected (arch YAML,
solution JSON, problem lists, ONNX models, measurements); every one a single clear line."""

import pytest

LV = "\n  - {name: gm, capacity: unbounded}\n  - {name: ub, %s}"
UB = "capacity: 64 KiB, bandwidth: 1 GB/s"
BASE = {"name": "t", "levels": LV % UB, "compute": "{clock: 1 GHz, macs_per_cycle: {i8: 64}}"}


def _spec(extra="", **kw):
    d = {**BASE, **kw}
    return "".join(f"{k}: {v}\n" for k, v in d.items() if v is not None) + extra


@pytest.mark.parametrize("text, names", [
    (_spec("nme: x\n"), ["'nme'", "did you mean 'name'"]),
    (_spec("levles: []\n", levels=None), ["'levles'", "'levels'"]),
    (_spec(name="5"), ["name: 5", "expected a name"]),
    (_spec(name="[a]"), ["name: ['a']"]),
    (_spec(levels="[]"), ["levels", "non-empty list"]),
    (_spec(levels="lots"), ["'lots'"]),
    (_spec(levels=LV % "capacity: -64 KiB, bandwidth: 1 GB/s"), ["'-64 KiB'", "positive"]),
    (_spec(levels=LV % "capacity: 0, bandwidth: 1 GB/s"), ["size 0", "positive"]),
    (_spec(levels=LV % "capacity: true, bandwidth: 1 GB/s"), ["True is not a size"]),
    (_spec(levels=LV % "capacity: 64 KB/s, bandwidth: 1 GB/s"), ["'KB/s'", "KiB"]),
    (_spec(levels=LV % "capacty: 64 KiB, bandwidth: 1 GB/s"), ["'capacty'", "'capacity'"]),
    (_spec(levels=LV % "capacity: 64 KiB, bandwidth: -1 GB/s"), ["'-1 GB/s'", "positive"]),
    (_spec(levels=LV % "capacity: 64 KiB, bandwidth: yes"), ["True is not a bandwidth"]),
    (_spec(levels=LV % "capacity: 64 KiB, bandwidth: fast"), ["'fast'", "GB/s"]),
    (_spec(levels=LV % "capacity: 64 KiB, bandwidth: .inf"), ["inf"]),
    (_spec(levels=LV % "capacity: 64 KiB, bandwidth: .nan"), ["nan"]),
    (_spec(levels=LV % "capacity: 1e29 TiB, bandwidth: 1 GB/s"), ["1e29 TiB"]),
    (_spec(levels=LV % "capacity: 99999999999999999999999999999999, bandwidth: 1 GB/s"), ["2^60"]),
    (_spec(levels=LV % f"{UB}, instances: 0"), ["instances: 0", "positive integer"]),
    (_spec(levels=LV % f"{UB}, instances: 1.5"), ["instances: 1.5"]),
    (_spec(levels=LV % f"{UB}, instances: true"), ["instances: True"]),
    (_spec(levels=LV % f"{UB}, double_buffer: maybe"), ["'maybe'", "true or false"]),
    (_spec(levels=LV % f"{UB}, block: 3 B"), ["not a multiple of block 3 B"]),
    (_spec(levels="\n  - {name: gm, capacity: unbounded}\n  - {name: gm, %s}" % UB),
     ["'gm' is already used"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: {i8: -64}}"), ["i8: -64"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: {i8: .nan}}"), ["i8: nan"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: {i8: .inf}}"), ["i8: inf"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: {i8: true}}"), ["i8: True"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: {q8: 64}}"), ["'q8'", "valid"]),
    (_spec(compute="{clock: 1 GHz, macs_per_cycle: [64]}"), ["[64]", "{i8: 256}"]),
    (_spec(compute="{clock: true, macs_per_cycle: {i8: 64}}"), ["True is not a frequency"]),
    (_spec(compute="{clock: 1 GB, macs_per_cycle: {i8: 64}}"), ["'GB'", "GHz"]),
    (_spec(compute="{clock: .nan, macs_per_cycle: {i8: 64}}"), ["clock"]),
    (_spec(compute="{clok: 1 GHz, macs_per_cycle: {i8: 64}}"), ["'clok'", "'clock'"]),
    (_spec(compute=None), ["'compute'", "required"]),
    (_spec("array: 4y2\n"), ["'4y2'", "rows, cols"]),
    (_spec("array: {level: ub, rows: 0, cols: 2}\n"), ["rows"]),
    (_spec("array: {level: ub, rows: true, cols: 2}\n"), ["rows"]),
    (_spec("array: {level: nowhere, rows: 2, cols: 2}\n"), ["nowhere"]),
    (_spec("name: u\n"), ["duplicate key 'name'"]),
    ("name: [unclosed\n", ["YAML syntax error"]),
    ("name: t\n\tlevels: []\n", ["'\\t'"]),
    ("- 1\n- 2\n", ["expected a mapping", "[1, 2]"]),
    ("", ["empty spec"]),
])
def test_arch_yaml_errors(fails_clearly, tmp_path, text, names):
    spec = tmp_path / "a.yaml"
    spec.write_text(text)
    fails_clearly(["arch", "show", spec], "a.yaml", *names)


BINARY = b"\xff\xfe\x00garbage\x80\x81"


def _bad_file(tmp_path, kind, suffix):
    """A file of ``kind`` (binary, latin-1 text, empty), or a folder named like a file."""
    path = tmp_path / f"bad{suffix}"
    if kind == "folder":
        path.mkdir()
    else:
        path.write_bytes({"binary": BINARY, "latin1": "name: caf\xe9\n".encode("latin-1"),
                          "empty": b""}[kind])
    return path


@pytest.mark.parametrize("kind", ["binary", "latin1", "folder"])
@pytest.mark.parametrize("argv, suffix", [
    (["arch", "show", "{}"], ".yaml"),
    (["search", "gemm", "--m", "8", "--n", "8", "--k", "8", "--arch", "{}"], ".yaml"),
    (["run", "{}"], ".json"),
    (["search-many", "{}", "--store", "STORE"], ".yaml"),
    (["sweep", "{}", "--vary", "compute.clock=1GHz", "--store", "STORE"], ".yaml"),
    (["arch", "calibrate", "{}"], ".json"),
])
def test_non_utf8_binary_and_folder_files(fails_clearly, tmp_path, kind, argv, suffix):
    bad = _bad_file(tmp_path, kind, suffix)
    argv = [str(bad) if a == "{}" else str(tmp_path / "s.sqlite") if a == "STORE" else a
            for a in argv]
    why = {"binary": "not UTF-8", "latin1": "not UTF-8", "folder": ""}[kind]
    fails_clearly(argv, "bad" + suffix, why)


@pytest.mark.parametrize("argv", [["import", "{}"], ["search-model", "{}", "--store", "STORE"]])
@pytest.mark.parametrize("kind, why", [("binary", "not an ONNX model"), ("empty", "no nodes"),
                                       ("folder", "directory")])
def test_corrupt_onnx(fails_clearly, tmp_path, argv, kind, why):
    bad = _bad_file(tmp_path, kind, ".onnx")
    argv = [str(bad) if a == "{}" else str(tmp_path / "s.sqlite") if a == "STORE" else a
            for a in argv]
    fails_clearly(argv, "bad.onnx", why)


@pytest.mark.parametrize("text, names", [
    ("", ["not JSON"]),
    ('{"workload": {"gemm": {"m": 40', ["not JSON", "line 1"]),
    ("[1, 2]", ["JSON object"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2"}', ["mapping"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": "x", '
     '"colour": 1}', ["colour"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": 5, "mapping": "x"}', ["arch", "5"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": "x"}',
     ["malformed mapping 'x'"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": {"levels": 3}}',
     ["mapping JSON is malformed"]),
    ('{"workload": {"gemm": {"m": -40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": "x"}',
     ["-40"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": '
     '"ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn | core[m16 n8 k16] ; rows=n4 cols=m2", '
     '"seed": -1}', ["seed -1"]),
    ('{"workload": {"gemm": {"m": 40, "n": 48, "k": 32}}, "arch": "aie-4x2", "mapping": '
     '"ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn | core[m16 n8 k16] ; rows=n4 cols=m2", '
     '"seed": true}', ["seed True"]),
    ('{"workload": {"conv3d": {"m": 4}}, "arch": "aie-4x2", "mapping": "x"}', ["conv3d"]),
])
def test_bad_solution_json(fails_clearly, tmp_path, text, names):
    sol = tmp_path / "s.json"
    sol.write_text(text)
    fails_clearly(["run", sol], *names)


@pytest.mark.parametrize("text, names", [
    ("arch: aie-4x2\nproblems: []\ncolour: red\n", ["'colour'"]),
    ("problems:\n  - gemm: {m: 8, n: 8, k: 8}\n", ["arch"]),
    ("arch: aie-4x2\nproblems:\n  - gemm: {m: 8, n: 8}\n", ["k"]),
    ("arch: aie-4x2\nproblems:\n  - gemm: {m: 8, n: 8, k: -8}\n", ["-8"]),
    ("arch: aie-4x2\nproblems:\n  - gemm: {m: 8, n: 8, k: 8, dtype: q8}\n", ["q8"]),
    ("arch: aie-4x2\nproblems:\n  - frob: {m: 8}\n", ["frob"]),
    ("arch: aie-4x2\nproblems: [unclosed\n", ["p.yaml:3:1: YAML syntax error"]),
    ("arch: aie-4x2\ntop: 0\nproblems:\n  - gemm: {m: 8, n: 8, k: 8}\n", ["top"]),
    ("arch: aie-4x2\nobjective: fast\nproblems:\n  - gemm: {m: 8, n: 8, k: 8}\n", ["fast"]),
    ("arch: nowhere\nproblems:\n  - gemm: {m: 8, n: 8, k: 8}\n", ["nowhere"]),
])
def test_bad_problem_lists(fails_clearly, tmp_path, text, names):
    problems = tmp_path / "p.yaml"
    problems.write_text(text)
    fails_clearly(["search-many", problems, "--store", tmp_path / "s.sqlite", "--workers", "1"],
                  *names)
