"""``tilewise run solution.json`` and the solution file format."""

from tilewise.arch.loader import load_arch
import doctest
import json

import numpy as np
import pytest

import tilewise as tw
import tilewise.executor.interpreter
import tilewise.executor.reference
import tilewise.executor.solution
from tilewise.arch.loader import arch_to_yaml
from tilewise import Mapping, SolutionFile
from tilewise.executor.solution import workload_from_dict, workload_to_dict
from tilewise.cli import main
from tilewise.errors import SpecError, WorkloadError

from .workloads import attention

GEMM = {"workload": {"gemm": {"m": 40, "n": 48, "k": 32, "dtype": "i8"}},
        "arch": "aie-4x2",
        "mapping": "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn db:A | core[m16 n8 k16] db:A,B "
                   "; rows=n4 cols=m2"}


def _write(tmp_path, doc) -> str:
    p = tmp_path / "solution.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(p)


def test_run_passes_and_prints_the_error_table(tmp_path, capsys):
    assert main(["run", _write(tmp_path, GEMM)]) == 0
    out = capsys.readouterr().out
    assert "gemm(m=40 n=48 k=32): C[m, n]:i32 = mac(A, B)" in out
    assert "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn db:A" in out  # brackets not eaten
    assert "inputs: random, seed 0" in out
    row = next(line for line in out.splitlines() if line.startswith("│ C "))
    assert "40x48" in row and "exact" in row and "PASS" in row
    assert out.rstrip().endswith("PASS")


def test_run_full_ir_form_with_a_masked_causal_attention(tmp_path, capsys):
    w = attention(7, 9, 4, heads=2, dtype="bf16", causal=True, mask=True, scale=0.5)
    sol = SolutionFile(w, tw.load_arch("ascend-vec"),
                   Mapping.parse("gm[h2 m7 n9 k4 e4] hmnke | ub[h1 m4 n4 k4 e4] db:K,V"), seed=3)
    assert main(["run", _write(tmp_path, sol.to_json()), "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "softmax(S, mask)" in out and "inputs: random, seed 5" in out and "PASS" in out


def test_run_fails_with_exit_1_when_execution_differs(tmp_path, capsys, monkeypatch):
    real = tilewise.executor.interpreter.reference

    def off_by_one(workload, inputs):
        out = real(workload, inputs)
        out["C"][3, 4] += 1
        return out

    monkeypatch.setattr(tilewise.executor.interpreter, "reference", off_by_one)
    assert main(["run", _write(tmp_path, GEMM)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in next(line for line in out.splitlines() if line.startswith("│ C "))
    assert out.rstrip().endswith("FAIL")


@pytest.mark.parametrize("doc, message", [
    ("{not json", "solution.json: not JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
    ({"workload": GEMM["workload"], "arch": "aie-4x2"}, "solution.json: missing key mapping"),
    ({**GEMM, "seeds": 1}, "unknown key seeds; valid: workload, arch, mapping, seed"),
    ({**GEMM, "arch": "aie-9x9"}, "aie-9x9"),
    ({**GEMM, "workload": {"constructor": "gemv", "args": {}}}, "workload constructor 'gemv' unknown; valid: gemm,"),
    ({**GEMM, "workload": {"constructor": "gemm", "args": {"M": 4}}}, "workload gemm: bad arguments ['M']"),
    ({**GEMM, "mapping": "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16 kmn"}, "malformed mapping"),
    ({**GEMM, "workload": {"constructor": "gemm", "args": {"M": 512, "N": 768, "K": 768}},
      "mapping": "ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk | core[m64 n64 k128] "
                 "db:A,B,C ; rows=n4 cols=m2"},
     "error: level core (core (0, 0)): allocating C (32768 bytes) needs 65536 bytes but it holds 49152"),
    ({**GEMM, "seed": -1}, "seed -1 must be a non-negative integer"),
    ({**GEMM, "workload": {"gemv": {"m": 4}}}, "workload kind 'gemv' unknown (did you mean 'gemm'?); "
                                               "valid: gemm, batched-gemm, conv2d, mha"),
    ({**GEMM, "workload": {"gemm": {"m": 4, "n": 4, "kk": 4}}},
     "gemm: unknown parameter 'kk' (did you mean 'k'?); valid: m, n, k, dtype, out_dtype"),
])
def test_bad_solutions_are_one_line_errors_with_exit_2(tmp_path, capsys, doc, message):
    assert main(["run", _write(tmp_path, doc)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1, err


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.json")]) == 2
    assert "cannot read solution file" in capsys.readouterr().err


def test_solution_round_trips_full_ir_and_presets():
    w = attention(5, 6, 3, dtype="f16", causal=True, mask=True, scale=0.25)
    sol = SolutionFile(w, "ascend-vec", Mapping.parse("gm[h1 m5 n6 k3 e3] hmnke | ub[h1 m5 n3 k3 e3]"), 9)
    back = SolutionFile.from_json(sol.to_json())
    assert back == sol and back.workload.ops[1].attrs["causal"] is True
    conv = tw.conv2d(1, 3, 9, 8, 4, 3, 3, stride=2, padding=1, dilation=(1, 2))
    assert workload_from_dict(workload_to_dict(conv)) == conv
    arch = tw.load_arch("npu1")
    assert SolutionFile.from_json(SolutionFile(conv, arch, sol.mapping).to_json()).arch == arch
    assert workload_from_dict({"constructor": "einsum", "args": {"spec": "mk,kn->mn", "m": 2,
                                                                  "k": 3, "n": 4}}).sizes == {"m": 2, "k": 3, "n": 4}
    with pytest.raises(WorkloadError, match="workload einsum needs args.spec"):
        workload_from_dict({"constructor": "einsum", "args": {"m": 2}})
    with pytest.raises(WorkloadError, match="workload IR is malformed \\(KeyError: 'dims'\\)"):
        workload_from_dict({"name": "x", "ops": []})
    with pytest.raises(SpecError, match="a solution is a JSON object"):
        SolutionFile.from_json("[1, 2]")


def test_solution_files_write_the_kind_form_and_read_the_former_constructor_form(tmp_path, capsys):
    sol = SolutionFile.from_json(GEMM)
    assert json.loads(sol.to_json())["workload"] == {"gemm": {"m": 40, "n": 48, "k": 32, "dtype": "i8"}}
    old = {**GEMM, "workload": {"constructor": "gemm", "args": {"M": 40, "N": 48, "K": 32, "dtype": "i8"}}}
    assert SolutionFile.from_json(old) == sol
    for w in (tw.batched_gemm(2, 3, 4, 5, "bf16"), tw.mha(8, 6, 4, heads=2),
              tw.layernorm(3, 5, eps=1e-3), tw.gemm_chain(2, 3, 4, 5, out_dtype="i8"),
              tw.einsum("mk,kn->mn", m=2, k=3, n=4),
              tw.conv2d(1, 3, 9, 8, 4, 3, 3, stride=2, padding=1, dilation=(1, 2))):
        d = workload_to_dict(w)
        assert len(d) == 1 and "name" not in d, d  # the kind form
        assert workload_from_dict(json.loads(json.dumps(d))) == w
    # the arch may be a YAML path, as everywhere else
    spec = tmp_path / "aie.yaml"
    spec.write_text(arch_to_yaml(tw.load_arch("aie-4x2")))
    assert main(["run", _write(tmp_path, {**GEMM, "arch": str(spec)})]) == 0
    assert capsys.readouterr().out.rstrip().endswith("PASS")


@pytest.mark.parametrize("module", [tilewise.executor.interpreter, tilewise.executor.reference,
                                    tilewise.executor.solution], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_reference_is_independent_plain_numpy():
    """Spot-check the reference itself against textbook formulas."""
    w = tw.batched_gemm(2, 3, 4, 5, dtype="f32")
    x = tw.random_inputs(w, 0)
    assert np.allclose(tw.reference(w, x)["C"], x["A"].astype(np.float64) @ x["B"], rtol=1e-6)
    ln = tw.layernorm(3, 7, dtype="f32", eps=1e-3)
    x = tw.random_inputs(ln, 0)
    X = x["X"].astype(np.float64)
    want = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-3) * x["gamma"] + x["beta"]
    assert np.allclose(tw.reference(ln, x)["Y"], want, rtol=1e-6, atol=1e-6)
