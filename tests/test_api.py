"""The public API: what ``import tilewise`` exports, and that every entry point takes an arch
as an Arch, a preset name or a YAML path and a mapping as a Mapping or its text."""

import copyreg
import inspect
import pickle
import subprocess
import sys
import types

import pytest

import tilewise as tw
from tilewise.arch.loader import arch_to_yaml, load_arch
from tilewise.errors import MappingError, SpecError

W = tw.gemm(40, 48, 32)
M = "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn db:A | core[m16 n8 k16] db:A,B ; rows=n4 cols=m2"


@pytest.fixture(scope="module")
def yaml_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("arch") / "aie.yaml"
    path.write_text(arch_to_yaml(load_arch("aie-4x2")))
    return path


def test_exports_are_the_users_vocabulary_not_internals():
    for name in ("gemm", "conv2d", "mha", "load_arch", "Arch", "Mapping", "search", "search_many",
                 "evaluate", "simulate", "execute", "verify", "Result", "Solution", "Cost",
                 "TilewiseError", "MappingError", "pack", "Layout", "__version__"):
        assert name in tw.__all__, name
    for name in ("MappingBatch", "CostBatch", "evaluate_batch"):
        assert name not in tw.__all__
        with pytest.raises(AttributeError):
            getattr(tw, name)
    from tilewise.model.batch import MappingBatch  # noqa: F401  (from its submodule)
    from tilewise.model.cost import CostBatch, evaluate_batch  # noqa: F401


def test_search_is_a_function_whatever_the_import_order():
    code = ("import tilewise, inspect; import tilewise.search.space, tilewise.search.optimize; "
            "from tilewise.search import many; import tilewise.search; "
            "assert inspect.isfunction(tilewise.search), tilewise.search; "
            "assert callable(tilewise.search) and type(tilewise.search).__name__ == 'function'; "
            "from tilewise import search; assert search is tilewise.search; print('ok')")
    for prefix in ("", "import tilewise.search.optimize; ", "from tilewise.search.space import Space; "):
        out = subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip() == "ok", (prefix, out.stderr)
    assert inspect.isfunction(tw.search)


def test_import_has_no_process_wide_side_effects():
    code = ("import copyreg, types; import tilewise; "
            "tilewise.gemm(4, 4, 4); tilewise.load_arch('aie-4x2'); "
            "ours = [t for t, f in copyreg.dispatch_table.items() "
            "        if getattr(f, '__module__', '').startswith('tilewise')]; "
            "assert not ours, ours; "
            "assert types.MappingProxyType not in copyreg.dispatch_table; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    assert types.MappingProxyType not in copyreg.dispatch_table


def test_values_pickle_by_themselves():
    for w in (W, tw.mha(8, 8, 4), tw.layernorm(4, 8)):
        assert pickle.loads(pickle.dumps(w)) == w
    a = load_arch("npu2")
    assert pickle.loads(pickle.dumps(a)) == a
    m = tw.Mapping.parse(M)
    assert pickle.loads(pickle.dumps(m)) == m


def test_every_entry_point_takes_a_preset_a_yaml_path_or_an_arch(yaml_path):
    arch = load_arch("aie-4x2")
    for spec in ("aie-4x2", str(yaml_path), yaml_path, arch):
        assert tw.evaluate(W, spec, M).latency_s == tw.evaluate(W, arch, tw.Mapping.parse(M)).latency_s
        assert tw.simulate(W, spec, M).steps == tw.simulate(W, arch, M).steps
        assert tw.verify(W, M, arch=spec).passed
        assert tw.execute(W, M, arch=spec)["C"].shape == (40, 48)
    r = tw.search(W, yaml_path, top=1, double_buffer="none")
    assert r.best == tw.search(W, "aie-4x2", top=1, double_buffer="none").best
    many = tw.search_many([W], str(yaml_path), workers=1, double_buffer="none")
    assert type(many[0]) is type(r) is tw.Result and many[0].best == r.best


@pytest.mark.parametrize("call", [
    lambda a: tw.evaluate(W, a, M), lambda a: tw.simulate(W, a, M),
    lambda a: tw.search(W, a), lambda a: tw.search_many([W], a),
    lambda a: tw.verify(W, M, arch=a) if a is not None else tw.verify(W, M, arch=3),
])
def test_a_bad_arch_is_one_clear_error(call):
    with pytest.raises(SpecError, match=r"arch must be an Arch, a preset name or a YAML path, got "
                                        r"(NoneType None|int 3); presets: aie-4x2"):
        call(None)


@pytest.mark.parametrize("call", [
    lambda m: tw.evaluate(W, "aie-4x2", m), lambda m: tw.simulate(W, "aie-4x2", m),
    lambda m: tw.execute(W, m, arch="aie-4x2"), lambda m: tw.verify(W, m, arch="aie-4x2"),
])
def test_every_entry_point_takes_a_mapping_or_its_text_and_names_a_bad_one(call):
    call(M)
    call(tw.Mapping.parse(M))
    for bad in (None, 42):
        with pytest.raises(MappingError, match=r"mapping must be a Mapping, its text form .* got "
                                               r"(NoneType None|int 42)"):
            call(bad)


def test_spatial_constraint_text_is_one_choice():
    r = tw.search(tw.gemm(64, 64, 64), "aie-4x2", top=1, spatial="rows=n4 cols=m2",
                  double_buffer="none")
    assert (str(r.best.mapping.rows), str(r.best.mapping.cols)) == ("n4", "m2")


def test_mapping_is_a_value_and_validation_is_the_models():
    from tilewise.model.legality import validate

    m = tw.Mapping.parse("ddr[m40 n48 k32] mnk | memtile[m64 n32 k16] kmn | core[m16 n8 k16]")
    with pytest.raises(MappingError, match="tile m=64 exceeds its parent tile m=40"):
        validate(W, load_arch("aie-4x2"), m)
