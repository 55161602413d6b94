"""search_many with the SQLite store (resume, keys), the search CLI, empty-space errors."""

import json
import re

import pytest

import tilewise as tw
from tilewise.cli import main
from tilewise.errors import CapacityError, TilewiseError
from tilewise.search.many import Problem, load_problems, search_many
from tilewise.search.store import Store

from .helpers import small_aie


def _problems():
    return [tw.gemm(16, 8, 32), tw.gemm(8, 8, 16, dtype="i16"), tw.gemm(16, 16, 16)]


def test_search_many_equals_search_and_resumes_from_the_store(tmp_path):
    arch, db = small_aie(rows=2, cols=1, memtile=False), tmp_path / "s.sqlite"
    ws = _problems()
    first = search_many(ws[:2], arch, workers=1, store=str(db), double_buffer="none")
    assert [r.cached for r in first] == [False, False]
    for w, r in zip(ws, first):
        want = tw.search(w, arch, top=1, double_buffer="none")
        assert type(r) is type(want) is tw.Result
        assert r.best.mapping == want.best.mapping and r.best.cost == want.best.cost
        assert r.best.latency_s == want.best.latency_s and r.workload is w
    # an "interrupted" run resumes: finished problems come from the store, the new one is solved
    again = search_many(ws, arch, workers=2, store=str(db), double_buffer="none")
    assert [r.cached for r in again] == [True, True, False]
    assert [r.best for r in again[:2]] == [r.best for r in first]  # the same Solutions, exactly
    assert again[0].pareto() == tw.search(ws[0], arch, top=1, double_buffer="none").pareto()
    assert len(Store(str(db))) == 3
    # other constraints are another question: not answered from the store
    other = search_many(ws[:1], arch, workers=1, store=str(db), double_buffer="all")
    assert other[0].cached is False
    # per-problem constraints override the common ones (and are another question too)
    own = search_many([Problem(ws[0], {"double_buffer": "all"})], arch, workers=1, store=str(db),
                      double_buffer="none")
    assert own[0].cached is True and own[0].best == other[0].best


def test_search_many_in_worker_processes_pickles_workloads_and_archs(tmp_path):
    arch = small_aie(rows=2, cols=1, memtile=False)
    out = search_many(_problems(), arch, workers=2, double_buffer="none")
    assert [r.best.mapping for r in out] == [
        tw.search(w, arch, top=1, double_buffer="none").best.mapping for w in _problems()]


def test_search_many_rejects_bad_workers():
    with pytest.raises(TilewiseError, match="workers=0 must be a positive integer"):
        search_many(_problems(), small_aie(), workers=0)


def test_empty_space_is_explained_with_bytes():
    arch = small_aie(rows=1, cols=1, core_bytes=1024, bank=512, memtile=False, alignment={"m": 64})
    with pytest.raises(CapacityError, match=r"capacity is 1,024 B \(short by [\d,]+ B\)"):
        tw.search(tw.gemm(64, 64, 64), arch)


def test_unknown_constraint_and_objective_are_named():
    with pytest.raises(TilewiseError, match="unknown search constraint 'tile'.*valid: double_buffer"):
        tw.search(tw.gemm(16, 16, 16), small_aie(), tile={})
    with pytest.raises(TilewiseError, match="objective 'speed' unknown; valid: latency"):
        tw.search(tw.gemm(16, 16, 16), small_aie(), objective="speed")


def test_cli_search_table_json_and_verify(capsys):
    args = ["search", "gemm", "--m", "64", "--n", "96", "--k", "80", "--dtype", "i8",
            "--arch", "aie-4x2", "--top", "2"]
    assert main(args + ["--verify"]) == 0
    out = capsys.readouterr().out
    assert "ddr" in out and "m64 n96 k80" in out and "verify: PASS" in out
    assert main(args + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    best = tw.search(tw.gemm(64, 96, 80, dtype="i8"), "aie-4x2", top=2).best
    assert res["top"][0]["mapping"] == str(best.mapping)
    assert res["top"][0]["xslowdown"] >= 1


def test_cli_search_many(tmp_path, capsys):
    probs = tmp_path / "p.yaml"
    probs.write_text("arch: aie-4x2\ntop: 1\nproblems:\n  - gemm: {m: 64, n: 64, k: 64}\n")
    assert main(["search-many", str(probs), "--store", str(tmp_path / "s.sqlite"), "--workers", "1"]) == 0
    assert "m64 n64 k64" in capsys.readouterr().out
    assert main(["search-many", str(probs), "--store", str(tmp_path / "s.sqlite"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["cached"] is True


def test_cli_problem_list_typo_is_one_clear_error(tmp_path, capsys):
    probs = tmp_path / "p.yaml"
    probs.write_text("arch: aie-4x2\nproblem:\n  - gemm: {m: 64, n: 64, k: 64}\n")
    assert main(["search-many", str(probs)]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'problem'" in err and "Traceback" not in err


def test_problem_lists_use_the_kind_registry_with_per_problem_constraints(tmp_path):
    probs = tmp_path / "p.yaml"
    probs.write_text("arch: aie-4x2\nconstraints: {double_buffer: none}\nproblems:\n"
                     "  - gemm: {m: 64, n: 64, k: 64}\n"
                     "  - batched_gemm: {b: 2, m: 16, n: 16, k: 16}\n"
                     "  - conv2d: {c: 8, h: 8, w: 8, k: 16, stride: [1, 2]}\n"
                     "    constraints: {spatial: rows=n4 cols=m2}\n"
                     "  - mha: {lq: 64, d: 16}\n"
                     "    constraints: {spatial: [rows=n2, none]}\n")
    spec = load_problems(str(probs))
    ws = [p.workload for p in spec["problems"]]
    assert [w.name for w in ws] == ["gemm", "batched_gemm", "conv2d", "mha"]
    assert ws[2] == tw.conv2d(1, 8, 8, 8, 16, 3, 3, stride=(1, 2)) and ws[3] == tw.mha(64, 64, 16)
    assert spec["constraints"] == {"double_buffer": "none"}
    # a spatial text is one choice, never split into characters
    assert [p.constraints for p in spec["problems"]] == [
        {}, {}, {"spatial": ["rows=n4 cols=m2"]}, {"spatial": ["rows=n2", "none"]}]
    r = tw.search(ws[0], "aie-4x2", top=1, spatial="rows=n4 cols=m2", double_buffer="none")
    assert (str(r.best.mapping.rows), str(r.best.mapping.cols)) == ("n4", "m2")


@pytest.mark.parametrize("problem, message", [
    ("gem: {m: 64}", "problem 0: workload kind 'gem' unknown (did you mean 'gemm'?); valid: gemm, "
                     "batched-gemm, conv2d, mha, layernorm, chain, einsum"),
    ("gemm: {m: 64, n: 64, kk: 64}", "problem 0: gemm: unknown parameter 'kk' (did you mean 'k'?); "
                                     "valid: m, n, k, dtype, out_dtype"),
    ("gemm: {m: 64, n: 64}", "problem 0: gemm: missing parameter 'k'"),
    ("gemm: {m: 64, n: 64, k: x}", "problem 0: gemm: k='x' must be an integer"),
    ("{gemm: {m: 4, n: 4, k: 4}, constraint: {}}", "problem 0: unknown key 'constraint'"),
    ("{gemm: {m: 4, n: 4, k: 4}, constraints: {spatil: none}}",
     "problem 0: constraints: unknown search constraint 'spatil'; valid: double_buffer"),
    ("einsum: {spec: 'mk,kn->mn', sizes: 'm=4,k'}", "problem 0: malformed sizes 'm=4,k'"),
])
def test_problem_list_errors_name_the_key_and_the_valid_ones(tmp_path, problem, message):
    probs = tmp_path / "p.yaml"
    probs.write_text(f"arch: aie-4x2\nproblems:\n  - {problem}\n")
    with pytest.raises(TilewiseError, match=re.escape(message)):
        load_problems(str(probs))


def test_cli_search_plot_writes_the_pareto_png(tmp_path, capsys):
    png = tmp_path / "front.png"
    assert main(["search", "gemm", "--m", "64", "--n", "64", "--k", "64", "--arch", "aie-4x2",
                 "--top", "1", "--double-buffer", "none", "--plot", str(png)]) == 0
    assert "Pareto front" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("tiles, message", [
    ({"core": {"m": 7}}, "tiles={'core': {'m': 7}}: the innermost tile of m must be a multiple of its alignment 16 on aie-4x2"),
    ({"memtile": {"k": 1000}}, "tiles={'memtile': {'k': 1000}}: a tile must be an integer in 1 .. 768 (k has size 768)"),
    ({"core": {"n": 0}}, "tiles={'core': {'n': 0}}: a tile must be an integer in 1 .. 768 (n has size 768)"),
    ({"core": {"n": 8.5}}, "a tile must be an integer"),
])
def test_a_fixed_tile_outside_the_space_is_one_clear_error(tiles, message):
    with pytest.raises(tw.TilewiseError, match=re.escape(message)):
        tw.search(tw.gemm(512, 768, 768, dtype="i8"), "aie-4x2", tiles=tiles)
