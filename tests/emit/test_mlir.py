"""MLIR emission (no IREE needed): linalg forms, the lowering config of a mapping, errors."""

from pathlib import Path

import numpy as np
import pytest

import tilewise as tw
from tilewise.emit.forms import linalg_form
from tilewise.emit.mlir import emit_mlir, lowering_config, register_tile
from tilewise.errors import MappingError, TilewiseError

ARCH = str(Path(__file__).with_name("cpu2.yaml"))
GEMM_MAP = "dram[m256 n384 k512] mnk | l2[m128 n384 k512] nkm | l1[m64 n96 k8] ; cols=m2"


def test_gemm_levels_map_onto_iree_levels():
    w = tw.gemm(256, 384, 512, dtype="f32")
    cfg, dropped = lowering_config(w, tw.load_arch(ARCH), tw.Mapping.parse(GEMM_MAP))
    # per-core (array = l1) tile -> distribution; l1 reduction tile -> cache_reduction;
    # register tile: 2 x 16 lanes on n, 8 on m, 1 on k
    assert cfg.distribution == (64, 96, 0)
    assert (cfg.cache_parallel, cfg.cache_reduction) == ((64, 96, 0), (0, 0, 8))
    assert (cfg.vector_common_parallel, cfg.vector_reduction) == ((8, 32, 0), (0, 0, 1))
    assert any("l2 tile (m128 n384 k512)" in d for d in dropped)
    assert any("loop order nkm at l2" in d for d in dropped)
    assert cfg.attr() == ("#iree_cpu.lowering_config<distribution = [64, 96, 0], cache_parallel = "
                          "[64, 96, 0], cache_reduction = [0, 0, 8], vector_common_parallel = "
                          "[8, 32, 0], vector_reduction = [0, 0, 1]>")


def test_emitted_gemm_module_text():
    e = emit_mlir(tw.gemm(256, 384, 512, dtype="f32"), ARCH, GEMM_MAP)
    assert "func.func @main(%A: tensor<256x512xf32>, %B: tensor<512x384xf32>) -> tensor<256x384xf32>" in e.text
    assert "linalg.fill ins(%zero : f32)" in e.text
    assert "linalg.matmul {compilation_info = #compilation}" in e.text
    assert "#iree_cpu.pipeline<DoubleTilingExpert>" in e.text
    assert e.text.startswith("// gemm(m=256 n=384 k=512)")
    default = emit_mlir(tw.gemm(256, 384, 512, dtype="f32"))
    assert default.config is None and "#compilation" not in default.text


def test_conv_is_nhwc_hwcf_with_the_conv_pipeline():
    w = tw.conv2d(1, 16, 9, 9, 32, 3, 3, stride=2, padding=1, dtype="i8")
    r = tw.search(w, ARCH, top=1)
    e = emit_mlir(r)  # a search Result: its best mapping
    f = e.form
    assert f.op == "linalg.conv_2d_nhwc_hwcf" and f.loops == ("n", "p", "q", "k", "r", "s", "c")
    assert [o.shape for o in f.inputs] == [(1, 11, 11, 16), (3, 3, 16, 32)] and f.result.shape == (1, 5, 5, 32)
    assert "strides = dense<[2, 2]>" in e.text and "ConvTileAndDecomposeExpert" in e.text
    assert any("n=1: IREE 3.13 folds unit dims" in d for d in e.dropped)  # said, not hidden
    # the decomposition to 1-D convs needs unit vector tiles on oh (p) and kh (r)
    assert e.config.vector_common_parallel[1] == 1 and e.config.vector_reduction[4:6] == (1, 1)
    assert e.config.vector_reduction[6] in (1, 2, 4)  # c: i8 products per 32-bit lane, cut to divide
    x = np.arange(1 * 16 * 9 * 9).reshape(1, 16, 9, 9)
    nhwc = f.inputs[0].convert(x)
    assert nhwc.shape == (1, 11, 11, 16) and nhwc[0, 1, 1, 3] == x[0, 3, 0, 0] and nhwc[0, 0].sum() == 0


def test_einsum_is_a_generic_contraction():
    e = emit_mlir(tw.einsum("bmk,kn->bmn", b=2, m=3, k=4, n=5))
    assert "affine_map<(b, m, k, n) -> (k, n)>" in e.text
    assert 'iterator_types = ["parallel", "parallel", "reduction", "parallel"]' in e.text
    assert "arith.extsi %in0 : i8 to i32" in e.text and "arith.addi" in e.text


def test_register_tile_divides_the_cache_tile():
    form = linalg_form(tw.gemm(100, 48, 30, dtype="f32"))
    assert register_tile(form, {"m": 20, "n": 48, "k": 30}, lanes=16) == {"m": 5, "n": 24, "k": 1}
    i8 = linalg_form(tw.gemm(100, 48, 30, dtype="i8"))
    assert register_tile(i8, {"m": 8, "n": 64, "k": 64}, lanes=16) == {"m": 8, "n": 32, "k": 4}


@pytest.mark.parametrize("workload, message", [
    (tw.mha(64, 64, 64), "one multiply-accumulate op"),
    (tw.layernorm(8, 64), "one multiply-accumulate op"),
    (tw.gemm(16, 16, 16, dtype="bf16"), "bf16"),
    (tw.gemm(16, 16, 16, dtype="i8", out_dtype="i8"), "narrower than its i32 accumulator"),
])
def test_unsupported_workloads_are_one_clear_error(workload, message):
    with pytest.raises(TilewiseError, match=message):
        emit_mlir(workload)


def test_a_reduction_split_across_cores_is_refused():
    from dataclasses import replace

    arch = tw.load_arch(ARCH)
    arch = replace(arch, array=replace(arch.array, rows=2, cols=1, reduce_cols=True))  # legal to the model
    w = tw.gemm(64, 64, 64, dtype="f32")
    with pytest.raises(TilewiseError, match="reduction dim 'k' 2 ways across cores"):
        emit_mlir(w, arch, "dram[m64 n64 k64] mnk | l2[m64 n64 k64] mnk | l1[m16 n16 k32] ; rows=k2")


def test_an_illegal_mapping_is_the_models_error():
    with pytest.raises(MappingError):
        emit_mlir(tw.gemm(64, 64, 64, dtype="f32"), ARCH, "dram[m64 n64 k64] mnk | l1[m16 n16 k16]")
    with pytest.raises(TilewiseError, match="needs the arch"):
        emit_mlir(tw.gemm(64, 64, 64, dtype="f32"), None, GEMM_MAP)


def test_cli_emit_mlir(capsys):
    from tilewise.cli import main

    assert main(["emit", "mlir", "gemm", "--m", "256", "--n", "384", "--k", "512", "--dtype", "f32",
                 "--arch", ARCH, "--mapping", GEMM_MAP]) == 0
    out = capsys.readouterr().out
    assert "distribution = [64, 96, 0]" in out and out.rstrip().endswith("}")
    assert main(["emit", "mlir", "mha", "--lq", "64", "--lkv", "64", "--d", "64"]) == 2
    assert "error: MLIR emission takes one multiply-accumulate op" in capsys.readouterr().err


def test_without_iree_the_error_says_how_to_install(monkeypatch):
    import builtins

    from tilewise.emit import iree

    real = builtins.__import__

    def no_iree(name, *args, **kwargs):
        if name.startswith("iree"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_iree)
    with pytest.raises(tw.TilewiseError, match=r"pip install 'tilewise\[iree\]'"):
        iree.compile(tw.gemm(8, 8, 8))
