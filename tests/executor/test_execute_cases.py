"""Example tests of execute / reference / verify: capacity errors, partial sums, fused chains,
attention orders and masks, LayerNorm's single pass, and clear errors for bad input."""

from tilewise.arch.loader import load_arch
import subprocess
import sys

import numpy as np
import pytest

import tilewise as tw
from tilewise import Chain, Dim, Mapping, Op, Tensor
from tilewise.executor.interpreter import _Executor, execute, verify
from tilewise.executor.reference import random_inputs, reference
from tilewise.simulation.trace import simulate
from tilewise.simulation.walker import Transfer, walk
from tilewise.errors import CapacityError, DTypeError, MappingError, WorkloadError

from ..model.archs import aie_like, four_level, two_level
from .workloads import attention

AIE = "ddr[m40 n48 k32] mnk | memtile[m32 n32 k16] kmn db:A | core[m16 n8 k16] db:A,B ; rows=n4 cols=m2"


def test_gemm_on_the_aie_preset_is_exact_and_text_mappings_work():
    w = tw.gemm(40, 48, 32)
    report = verify(w, AIE, seed=1, arch="aie-4x2")
    assert report.passed and report.outputs[0].max_abs == 0 and report.outputs[0].tolerance == 0
    x = random_inputs(w, seed=1)
    got = tw.execute(w, Mapping.parse(AIE), x, arch=tw.load_arch("aie-4x2"))["C"]
    assert got.dtype == np.int32
    assert np.array_equal(got, x["A"].astype(np.int64) @ x["B"].astype(np.int64))


def test_arch_is_inferred_only_when_one_preset_matches():
    w = tw.gemm(4, 4, 4, dtype="f16")
    out = execute(w, "gm[m4 n4 k4] mnk | ub[m2 n4 k4]", seed=0)
    assert np.allclose(out["C"], reference(w, random_inputs(w, 0))["C"], rtol=1e-3)
    with pytest.raises(MappingError, match="match the presets aie-4x2, npu1, npu2; pass arch="):
        execute(tw.gemm(40, 48, 32), AIE)
    with pytest.raises(MappingError, match="x, y match no preset; pass arch="):
        execute(w, "x[m4 n4 k4] mnk | y[m4 n4 k4]")


def test_capacity_error_names_level_tensors_and_bytes():
    w = tw.gemm(512, 768, 768)
    m = ("ddr[m512 n768 k768] mnk | memtile[m128 n256 k768] mnk | core[m64 n64 k128] db:A,B,C "
         "; rows=n4 cols=m2")
    with pytest.raises(CapacityError) as e:
        execute(w, m, arch="aie-4x2")
    msg = str(e.value)
    assert msg.startswith("level core (core (0, 0)): allocating C (32768 bytes) needs 65536 bytes "
                          "but it holds 49152; buffers: A 16384 (double-buffered), B 16384 "
                          "(double-buffered), C 32768 (double-buffered)"), msg
    # the memtile: 2 instances of 512 KiB are one logical memory of 1 MiB
    big = "ddr[m512 n768 k768] mnk | memtile[m512 n768 k768] mnk | core[m64 n64 k128] ; rows=n4 cols=m2"
    with pytest.raises(CapacityError, match=r"^level memtile: allocating C \(1572864 bytes\) needs "
                                            r"2555904 bytes but it holds 1048576; buffers: A 393216, B 589824, C 1572864$"):
        execute(w, big, arch="aie-4x2")


def test_capacity_counts_block_rounding_and_double_buffers():
    w = tw.gemm(64, 64, 63, dtype="f32")
    m = Mapping.parse("gm[m64 n64 k63] mnk | ub[m64 n64 k63] db:A")
    # A 64x63 f32 = 16128 bytes -> 16128 (32-byte blocks), x2 double-buffered; B 16128; C 16384
    fits = two_level(capacity=2 * 16128 + 16128 + 16384, block_bytes=32)
    assert verify(w, m, seed=0, arch=fits).passed
    with pytest.raises(CapacityError, match=r"^level ub: allocating C \(16384 bytes\) needs 64768 "
                                            r"bytes but it holds 64767; buffers: A 32256 "
                                            r"\(double-buffered\), B 16128, C 16384$"):
        execute(w, m, arch=two_level(capacity=64767, block_bytes=32))


def test_narrow_outputs_keep_partial_sums_in_the_accumulator_and_saturate_once():
    """int8 outputs: K split at DDR stores int32 partial sums (the accumulator), and the result
    is converted once, saturating: the exact int64 sum clipped to [-128, 127] (it used to wrap
    modulo 256, silently)."""
    w = tw.gemm(9, 7, 30, dtype="i8", out_dtype="i8")
    rng = np.random.default_rng(0)
    x = {"A": rng.integers(-128, 128, (9, 30), dtype=np.int8),
         "B": rng.integers(-128, 128, (30, 7), dtype=np.int8)}
    m = "ddr[m9 n7 k30] kmn | memtile[m9 n7 k8] mnk | core[m4 n7 k4] ; rows=m2"
    got = execute(w, m, x, arch=aie_like())["C"]
    exact = x["A"].astype(np.int64) @ x["B"].astype(np.int64)
    assert got.dtype == np.int8 and np.abs(exact).max() > 127
    assert np.array_equal(got, np.clip(exact, -128, 127).astype(np.int8))


def test_reduction_split_over_array_rows_sums_partial_sums_per_column():
    w = tw.gemm(10, 12, 29, dtype="i16")
    m = "ddr[m10 n12 k29] kmn | memtile[m10 n12 k16] mnk | core[m5 n6 k3] ; rows=k4 cols=n2"
    events = list(walk(w, aie_like(), Mapping.parse(m)))
    reloads = [e for e in events if isinstance(e, Transfer) and e.kind == "reload" and e.level == 2]
    assert reloads  # partial sums come back to the cores of a column
    assert verify(w, m, seed=4, arch=aie_like()).outputs[0].max_abs == 0


def test_gemm_chain_intermediate_never_leaves_the_innermost_level():
    w = tw.gemm_chain(13, 6, 11, 7, dtype="bf16")
    m = Mapping.parse("dram[m13 k6 l11 n7] mlkn | l2[m8 k6 l6 n7] mlkn | l1[m8 k6 l6 n7] lmkn "
                      "| rf[m2 k6 l3 n7] ; rows=m2")
    arch = four_level()
    ex = _Executor(w, arch, m, random_inputs(w, 0))
    out = ex.run()
    inner = len(arch.levels) - 1
    assert all(name != "C" or level == inner for (level, _), bufs in ex.allocated.items()
               for name in bufs)
    assert not any(name == "C" for (_, _, name) in ex.buffers)  # no level buffer, DDR included
    assert any("C" in bufs for (level, _), bufs in ex.allocated.items() if level == inner)
    ref = reference(w, random_inputs(w, 0))["E"]
    assert np.abs(out["E"] - ref).max() <= 0.05 * np.abs(ref).max()


def test_layernorm_reads_x_once_per_row_tile():
    w = tw.layernorm(11, 13, dtype="f32")
    m = Mapping.parse("gm[r11 c13] rc | ub[r3 c13]")
    arch = two_level()
    x_loads = sum(e.nbytes for e in walk(w, arch, m)
                  if isinstance(e, Transfer) and e.tensor == "X" and e.kind == "load")
    assert x_loads == 11 * 13 * 4  # statistics and normalization from one resident tile
    report = verify(w, m, seed=2, arch=arch)
    assert report.passed and report.outputs[0].max_rel < 1e-6


def test_layernorm_split_columns_off_chip_reads_x_twice_and_matches_the_reference():
    """c cut at the outermost level: each row tile streams X twice from GM (statistics
    merged over the column tiles, then the normalize pass), as the model counts."""
    w = tw.layernorm(11, 13, dtype="bf16")
    m = Mapping.parse("gm[r11 c13] rc | ub[r3 c4]")
    arch = two_level()
    x_loads = sum(e.nbytes for e in walk(w, arch, m)
                  if isinstance(e, Transfer) and e.tensor == "X" and e.kind == "load")
    assert x_loads == 2 * 11 * 13 * 2 == tw.evaluate(w, arch, m).reads["ub"]["X"]
    report = verify(w, m, seed=3, arch=arch)
    assert report.passed, report


def test_layernorm_keeps_precision_at_a_large_offset():
    w = tw.layernorm(4, 64, dtype="f32")
    rng = np.random.default_rng(0)
    x = {"X": (1e4 + rng.standard_normal((4, 64))).astype(np.float32),
         "gamma": np.ones(64, np.float32), "beta": np.zeros(64, np.float32)}
    got = execute(w, "gm[r4 c64] rc | ub[r1 c64]", x, arch=two_level())["Y"]
    ref = reference(w, x)["Y"]
    assert np.abs(got - ref).max() < 5e-3  # E[x²]-E[x]² in f32 would be off by O(1)
    # the mean is kept as a double word (mean + low): x - mean loses nothing to the offset
    report = verify(w, "gm[r4 c64] rc | ub[r1 c64]", x, arch=two_level())
    assert report.passed and report.outputs[0].max_rel < 4e-7, report


def test_attention_key_loop_outside_query_loop_restores_row_state():
    """FlashAttention-1's order (keys outer, queries inner): each query tile's running max and
    denominator are set aside and restored for the next key tile."""
    w = attention(13, 17, 5, heads=2, dtype="f32", causal=True, scale=0.5)
    m = ("dram[h2 m13 n17 k5 e5] nhmke | l2[h1 m8 n8 k5 e5] hmnke | l1[h1 m8 n8 k5 e5] hmnke "
         "| rf[h1 m4 n5 k5 e5] ; rows=m2")
    x = random_inputs(w, 5)
    got = execute(w, m, x, arch=four_level())["O"]
    want = tw.naive_attention(x["Q"], x["K"], x["V"], causal=True, scale=0.5,
                              compute_dtype=np.float64)
    assert np.abs(got - want).max() < 1e-5


def test_attention_fully_masked_rows_are_zero_and_masks_combine():
    w = attention(9, 11, 4, dtype="bf16", causal=True, mask=True)
    x = random_inputs(w, 3)
    x["mask"][2] = False          # row 2 sees nothing
    x["mask"][:, 0] = False       # key 0 hidden: row 0 (causal: only key 0) sees nothing either
    m = "gm[h1 m9 n11 k4 e4] hmnke | ub[h1 m4 n3 k4 e4]"
    with np.errstate(invalid="raise", divide="raise"):
        got = execute(w, m, x, arch=two_level())["O"]
    assert not np.isnan(got).any()
    assert np.all(got[0, 0] == 0) and np.all(got[0, 2] == 0) and np.any(got[0, 1] != 0)
    want = tw.naive_attention(x["Q"], x["K"], x["V"], mask=x["mask"], causal=True,
                              compute_dtype=np.float64)
    assert np.abs(got - want).max() < 0.02


def test_attention_whose_f16_softmax_overflows_is_right():
    w = tw.mha(16, 16, 8, dtype="f16")
    rng = np.random.default_rng(0)
    x = {"Q": (rng.standard_normal((1, 16, 8)) * 100).astype(np.float16),
         "K": (rng.standard_normal((1, 16, 8)) * 100).astype(np.float16),
         "V": rng.standard_normal((1, 16, 8)).astype(np.float16)}
    with np.errstate(over="ignore", invalid="ignore"):
        s = x["Q"][0] @ x["K"][0].T
        assert np.isinf(s).any()  # the scores themselves overflow f16
    report = verify(w, "gm[h1 m16 n16 k8 e8] hmnke | ub[h1 m4 n8 k8 e8]", x, arch=two_level())
    assert report.passed and report.outputs[0].max_rel < 1e-2


def test_attention_with_a_value_width_other_than_the_key_width():
    """Seed 003's P = (d, L0, L1, r) with r != d: V and O are 24 wide, Q and K 8; the value
    width tiled (e6) and the keys streamed (n4) execute to the reference, costed as walked."""
    w = tw.mha(12, 16, 8, dtype="f32", dv=24)
    assert (w.tensor("V").shape, w.tensor("O").shape) == ((1, 16, 24), (1, 12, 24))
    m = "gm[h1 m12 n16 k8 e24] hmnke | ub[h1 m4 n4 k8 e6]"
    report = verify(w, m, seed=4, arch=two_level())
    assert report.passed and report.outputs[0].max_rel < 1e-5, report
    v_loads = sum(e.nbytes for e in walk(w, two_level(), Mapping.parse(m))
                  if isinstance(e, Transfer) and e.tensor == "V" and e.kind == "load")
    assert v_loads == 3 * 16 * 24 * 4 == tw.evaluate(w, two_level(), m).reads["ub"]["V"]


def test_convolution_bias_added_once_where_a_split_reduction_completes():
    """c split over two rows of cores (partial sums summed down the column) and over the DDR
    loop: the bias is added once per output element, and moves as the model counts."""
    w = tw.conv2d(1, 5, 9, 9, 6, 3, 3, padding=1, bias=True)
    arch = aie_like(alignment={})
    m = ("ddr[n1 k6 c5 p9 q9 r3 s3] cnkpqrs | memtile[n1 k6 c2 p9 q9 r3 s3] nkcpqrs | "
         "core[n1 k3 c1 p3 q9 r3 s3] ; rows=c2 cols=k2")
    report = verify(w, m, seed=5, arch=arch)
    assert report.passed and report.outputs[0].max_abs == 0, report
    reads = {lv: row["bias"] for lv, row in tw.evaluate(w, arch, m).reads.items()}
    assert reads == {lv: row["bias"] for lv, row in simulate(w, arch, Mapping.parse(m)).reads.items()}
    # the DDR c loop does not index the bias: its memtile tile stays; each core gets its k half
    assert reads == {"memtile": 6 * 4, "core": 6 * 4}


def test_convolution_with_halo_stride_padding_dilation_is_exact():
    w = tw.conv2d(2, 5, 11, 9, 3, 3, 2, stride=(2, 1), padding=(1, 2), dilation=(2, 3), dtype="i8")
    sizes = w.sizes
    m = Mapping.parse(
        f"ddr[n2 k3 c5 p{sizes['p']} q{sizes['q']} r3 s2] nkcpqrs | "
        f"memtile[n1 k3 c3 p3 q{sizes['q']} r3 s2] pqnkcrs | core[n1 k2 c2 p2 q3 r2 s1] ; rows=p2")
    assert verify(w, m, seed=9, arch=aie_like()).outputs[0].max_abs == 0


def test_generic_affine_windows_are_gathered():
    """A tensor whose two axes share a dim (X[p + r - 1, p*2 + s]): not conv2d's form."""
    X = Tensor("X", "i8", ("p + r - 1", "p*2 + s"), (6, 11))
    W = Tensor("W", "i8", ("r", "s"), (3, 2))
    Y = Tensor("Y", "i32", ("p",), (5,))
    w = Chain("coupled", (Dim("p", 5), Dim("r", 3), Dim("s", 2)), (Op("Y", "mac", Y, (X, W), "i8"),))
    x = random_inputs(w, 1)
    ref = [sum(int(x["X"][p + r - 1, 2 * p + s]) * int(x["W"][r, s])
               for r in range(3) for s in range(2) if 0 <= p + r - 1 < 6) for p in range(5)]
    assert reference(w, x)["Y"].tolist() == ref
    got = execute(w, "gm[p5 r3 s2] rps | ub[p2 r2 s1]", x, arch=two_level())["Y"]
    assert got.tolist() == ref


def test_bad_inputs_are_clear_errors():
    w = tw.gemm(4, 5, 6)
    m = "gm[m4 n5 k6] mnk | ub[m4 n5 k6]"
    good = random_inputs(w, 0)
    with pytest.raises(WorkloadError, match=r"inputs lack B; gemm needs A \(4, 6\):i8, B \(6, 5\):i8"):
        execute(w, m, {"A": good["A"]}, arch=two_level())
    with pytest.raises(WorkloadError, match=r"input A has shape \(6, 4\); A\[m, k\]:i8 needs \(4, 6\)"):
        execute(w, m, {"A": good["A"].T, "B": good["B"]}, arch=two_level())
    with pytest.raises(WorkloadError, match="inputs name Z, which gemm does not read; its inputs: A, B"):
        execute(w, m, {**good, "Z": good["A"]}, arch=two_level())
    with pytest.raises(DTypeError, match="input A is float64; A\\[m, k\\]:i8 needs i8"):
        execute(w, m, {"A": good["A"] * 1.5, "B": good["B"]}, arch=two_level())
    with pytest.raises(DTypeError, match="op P \\(softmax\\) of mha has i8 inputs; a softmax or "
                                         "normalization needs a float dtype"):
        execute(tw.mha(4, 4, 2, dtype="i8"), "gm[h1 m4 n4 k2 e2] hmnke | ub[h1 m4 n4 k2 e2]",
                arch=two_level())
    with pytest.raises(MappingError, match="mapping must be a Mapping, its text form .* got int 3"):
        execute(w, 3, arch=two_level())
    with pytest.raises(tw.SpecError, match="no-such-arch"):
        execute(w, m, arch="no-such-arch")
    with pytest.raises(MappingError, match="level ub: tile m=8 exceeds its parent tile m=4"):
        execute(w, "gm[m4 n5 k6] mnk | ub[m8 n5 k6]", arch=two_level())


def test_random_inputs_are_typed_small_and_deterministic():
    w = attention(3, 4, 2, dtype="bf16", mask=True)
    a, b = random_inputs(w, 7), random_inputs(w, 7)
    assert sorted(a) == ["K", "Q", "V", "mask"]
    assert a["Q"].dtype.name == "bfloat16" and a["mask"].dtype == np.bool_
    assert all(np.array_equal(a[k], b[k]) for k in a)
    ints = random_inputs(tw.gemm(30, 30, 30, dtype="i16"), 0)["A"]
    assert ints.dtype == np.int16 and -8 <= ints.min() < 0 < ints.max() <= 8


def test_execute_is_the_function_even_after_importing_the_blocked_package():
    code = ("import tilewise.simulation.walker, tilewise.executor.interpreter, tilewise, inspect; "
            "assert inspect.isfunction(tilewise.execute), tilewise.execute; "
            "assert inspect.isfunction(tilewise.reference); "
            "from tilewise import execute; assert execute is tilewise.execute; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_executed_attention_memory_is_tiles_not_l_squared():
    """tilewise.execute of mha holds the inputs, the L x d output and the SRAM's tiles (P in
    S's array, one array per intermediate reused across steps), never L x L scores."""
    import tracemalloc

    from ..model.archs import gpu_like

    L, d = 2048, 16
    w = tw.mha(L, L, d, dtype="f32")
    m = f"hbm[h1 m{L} n{L} k{d} e{d}] hmnke | sram[h1 m256 n512 k{d} e{d}]"
    x = random_inputs(w, 0)
    execute(tw.mha(8, 8, d, dtype="f32"), f"hbm[h1 m8 n8 k{d} e{d}] hmnke | sram[h1 m8 n8 k{d} e{d}]",
            arch=gpu_like(1 << 20))  # one-time costs (lazy imports, caches) out of the count
    tracemalloc.start()
    try:
        out = execute(w, m, x, arch=gpu_like(2 << 20))["O"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    tiles = (256 + 512 + 512 + 256) * d * 4 + 256 * 512 * 4 + 256 * 8  # Q K V O; S/P; (M, D)
    # + a constant: tracemalloc also counts Python objects (walk events, dicts) and temporaries
    assert peak < L * d * 4 + tiles + 512 * 1024 < L * L * 4 / 8, peak
    want = tw.naive_attention(x["Q"], x["K"], x["V"])
    assert np.abs(out - want).max() < 1e-5
