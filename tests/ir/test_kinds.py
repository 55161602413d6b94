"""The workload kind registry: one schema for the CLI, problem lists and solution files."""

import doctest

import pytest

import tilewise as tw
from tilewise.cli import main
from tilewise.errors import WorkloadError
from tilewise.ir import kinds
from tilewise.ir.kinds import KINDS, build, kind, params_of


def test_docstring_examples():
    result = doctest.testmod(kinds)
    assert result.attempted > 0 and result.failed == 0


def test_kinds_and_aliases():
    assert list(KINDS) == ["gemm", "batched-gemm", "conv2d", "mha", "layernorm", "chain", "einsum"]
    assert kind("batched_gemm") is KINDS["batched-gemm"] and kind("gemm_chain") is KINDS["chain"]
    assert build("chain", {"m": 2, "k": 3, "l": 4, "n": 5}) == tw.gemm_chain(2, 3, 4, 5)
    assert build("einsum", {"spec": "mk,kn->mn", "sizes": "m=2,k=3,n=4"}) == \
        tw.einsum("mk,kn->mn", m=2, k=3, n=4)
    assert build("conv2d", {"c": 3, "h": 9, "w": 9, "k": 4, "padding": [1, 0]}) == \
        tw.conv2d(1, 3, 9, 9, 4, 3, 3, padding=(1, 0))
    schema = KINDS["mha"].to_dict()
    assert [p["name"] for p in schema["params"]] == ["lq", "lkv", "d", "dv", "heads", "dtype",
                                                     "out_dtype"]
    assert [p["required"] for p in schema["params"]] == [True, False, True, False, False, False,
                                                         False]
    assert build("mha", {"lq": 8, "d": 4, "dv": 6}) == tw.mha(8, 8, 4, dv=6)


@pytest.mark.parametrize("name, params, message", [
    ("gem", {}, "workload kind 'gem' unknown (did you mean 'gemm'?); valid: gemm, batched-gemm"),
    ("gemm", {"m": 1, "n": 1, "K": 1}, "gemm: unknown parameter 'K' (did you mean 'k'?); valid: m, n, k"),
    ("layernorm", {"rows": 2}, "layernorm: missing parameter 'cols'"),
    ("conv2d", {"c": 1, "h": 4, "w": 4, "k": 1, "stride": [1, 2, 3]}, "stride=[1, 2, 3] must be an "
                                                                      "integer or a [rows, cols] pair"),
    ("mha", {"lq": 4, "d": True}, "mha: d=True must be an integer"),
    ("gemm", [1, 2, 3], "gemm: expected a mapping of parameters (m, n, k, dtype, out_dtype)"),
])
def test_errors_name_the_key_and_the_valid_ones(name, params, message):
    with pytest.raises(WorkloadError) as e:
        build(name, params)
    assert message in str(e.value)


def test_params_of_inverts_build_and_gives_up_on_other_workloads():
    for w in (tw.gemm(3, 4, 5, "bf16", out_dtype="bf16"), tw.batched_gemm(2, 3, 4, 5),
              tw.mha(6, 8, 4, heads=2), tw.mha(6, 8, 4, dv=3), tw.layernorm(3, 5),
              tw.gemm_chain(2, 3, 4, 5),
              tw.conv2d(2, 3, 9, 8, 4, 3, 2, stride=(2, 1), padding=1, dilation=(1, 2)),
              tw.einsum("bmk,bkn->bmn", b=2, m=3, k=4, n=5)):
        name, params = params_of(w)
        assert build(name, params) == w
    hand = tw.Chain("mine", tw.gemm(2, 2, 2).dims, tw.gemm(2, 2, 2).ops)
    assert params_of(hand) is None


def test_cli_options_are_the_registry_parameters(capsys):
    for k in KINDS.values():
        assert main(["search", k.name, "--help"]) == 0
        out = capsys.readouterr().out
        for p in k.params:
            assert (p.name.upper() if p.type == "spec" else f"--{p.name.replace('_', '-')}") in out
    assert main(["search", "gemm", "--m", "4", "--n", "4"]) == 2
    assert "Missing option '--k'" in capsys.readouterr().err
