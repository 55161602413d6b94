"""Workload IR: constructors, chains (intermediates, spine), and their errors."""

import pytest

from tilewise import Chain, Dim, Op, Tensor, batched_gemm, conv2d, einsum, gemm, gemm_chain, layernorm, mha
from tilewise.errors import ParseError, WorkloadError


def test_gemm():
    w = gemm(512, 768, 768, dtype="i8")
    assert w.sizes == {"m": 512, "n": 768, "k": 768}
    assert [str(t) for t in w.tensors] == ["A[m, k]:i8", "B[k, n]:i8", "C[m, n]:i32"]
    assert w.ops[0].reduction_dims == ("k",) and w.macs == 512 * 768 * 768
    assert gemm(4, 4, 4, dtype="bf16").tensor("C").dtype.name == "f32"
    assert gemm(4, 4, 4, dtype="i8", out_dtype="i8").tensor("C").dtype.name == "i8"
    assert gemm(4, 4, 4, dtype="i16").ops[0].accumulator.name == "i32"


def test_batched_gemm_and_einsum_agree():
    b = batched_gemm(2, 3, 4, 5)
    e = einsum("bmk,bkn->bmn", b=2, m=3, n=4, k=5)
    assert [str(t) for t in b.tensors] == [str(t) for t in e.tensors]
    assert b.ops[0].reduction_dims == e.ops[0].reduction_dims == ("k",)


def test_conv2d_output_size_and_window_index():
    w = conv2d(1, 8, 14, 14, 16, 3, 3, stride=2, padding=1)
    assert w.sizes == {"n": 1, "k": 16, "c": 8, "p": 7, "q": 7, "r": 3, "s": 3}
    assert str(w.tensor("I")) == "I[n, c, p*2 + r - 1, q*2 + s - 1]:i8"
    assert w.tensor("I").shape == (1, 8, 14, 14)
    d = conv2d(1, 1, 9, 9, 1, 3, 3, dilation=2)
    assert d.sizes["p"] == 9 - 2 * 2 and str(d.tensor("I").axes[2]) == "p + r*2"


def test_chains():
    c = gemm_chain(8, 6, 10, 4)
    assert [t.name for t in c.intermediates] == ["C"] and c.spine == ("m", "l")
    assert c.producer("C").name == "C" and [o.name for o in c.readers("C")] == ["E"]
    a = mha(64, 128, 32, heads=2)
    assert [t.name for t in a.intermediates] == ["S", "P"] and a.spine == ("h", "m", "n")
    assert a.ops[1].kind == "softmax" and a.state[0].lanes == 2
    assert a.ops[2].reduction_dims == ("n",) and a.ops[0].reduction_dims == ("k",)
    ln = layernorm(8, 16)
    assert ln.spine == ("r",) and ln.ops[0].reduction_dims == ("c",)


def _biased(name, b_axes=("n",)):
    from tilewise import Op, Tensor

    A, W = Tensor("A", "i8", ("m", "k"), (2, 3)), Tensor("W", "i8", ("k", "n"), (3, 4))
    B = Tensor("B", "i32", b_axes, (2,) if b_axes == ("m",) else (4,))
    C = Tensor("C", "i32", ("n",), (4,))
    return Op("C", "mac", C, (A, W, B), "i8", attrs={"bias": name})


def test_conv_bias_is_an_added_input():
    w = conv2d(1, 4, 6, 6, 8, 3, 3, groups=2, bias=True)
    op = w.ops[0]
    assert [t.name for t in op.factors] == ["I", "W"] and str(op.bias) == "bias[g, k]:i32"
    assert str(w).endswith("mac(I, W) + bias") and op.reduction_dims == ("c", "r", "s")


@pytest.mark.parametrize("call,message", [
    (lambda: gemm(0, 4, 4), "dim m: size 0 must be a positive integer"),
    (lambda: gemm(4, -1, 4), "dim n: size -1"),
    (lambda: gemm(4, 4, 2.5), "dim k: size 2.5"),
    (lambda: gemm(4, 4, 4, dtype="int3"), "unknown dtype 'int3'; valid: i8, i16, i32, bf16, f16, f32$"),
    (lambda: mha(4, 4, 4, dtype="bf16", out_dtype="fp8"), "unknown out_dtype 'fp8'; valid: i8, i16"),
    (lambda: layernorm(4, 4, dtype="f64"), "f64 is not supported by workloads"),
    (lambda: gemm(True, 4, 4), "dim m: size True must be a positive integer"),
    (lambda: conv2d(1, 1, 8, 8, 1, 3, 3, stride=(1, 2, 3)), "stride .* must be an int or a pair"),
    (lambda: conv2d(1, 1, 8, 8, 0, 3, 3), "conv2d: K=0 must be a positive integer"),
    (lambda: batched_gemm(0, 4, 4, 4), "dim b: size 0"),
    (lambda: gemm_chain(4, 4, -2, 4), "dim l: size -2"),
    (lambda: layernorm(4, 0), "dim c: size 0"),
    (lambda: einsum("mk,kn->mn", m=2, k=3, n=0), "dim n: size 0"),
    (lambda: gemm(4, 4, 4, dtype="f64"), "f64 is not supported by workloads; valid: i8, i16"),
    (lambda: conv2d(1, 1, 2, 2, 1, 5, 5), "does not fit the 2x2 input"),
    (lambda: conv2d(1, 1, 8, 8, 1, 3, 3, stride=0), "stride 0 .* must be >= 1"),
    (lambda: einsum("mk,kn->mn", m=2, k=3), "no size for n"),
    (lambda: einsum("mk,kn->mn", m=2, k=3, n=4, z=1), "letters not in the spec: z"),
    (lambda: mha(4, 4, 0), "size 0"),
    (lambda: mha(4, 4, 4, dv=0), "dim e: size 0"),
    (lambda: conv2d(1, 1, 8, 8, 1, 3, 3, bias="yes"), "bias='yes' must be True or False"),
    (lambda: _biased("Z"), "attrs\\['bias'\\] = 'Z' must name an input of a mac op"),
    (lambda: _biased("B", b_axes=("m",)), "bias B is indexed by m, which do not index the output"),
])
def test_bad_workloads(call, message):
    with pytest.raises(WorkloadError, match=message):
        call()


@pytest.mark.parametrize("spec,pos,expected", [
    ("mk,kn", 5, "'->'"),
    ("mK,kn->mn", 1, "lowercase letter"),
    ("mk,,kn->mn", 3, "operand letters"),
    ("mm,kn->mn", 1, "distinct letters"),
    ("mk,kn->mz", 8, "appears in an input"),
    ("mk,kn->", 7, "at least one output letter"),
])
def test_einsum_spec_errors_point_at_the_character(spec, pos, expected):
    with pytest.raises(ParseError, match=expected) as info:
        einsum(spec, m=2, k=2, n=2)
    assert info.value.pos == pos


def test_inconsistent_index_expressions():
    d = (Dim("m", 4), Dim("k", 3))
    A = Tensor("A", "i8", ("m", "k"), (4, 3))
    with pytest.raises(WorkloadError, match="indexed by unknown dim 'q'"):
        Chain("x", d, (Op("Y", "mac", Tensor("Y", "i32", ("q",), (4,)), (A,), "i8"),))
    with pytest.raises(WorkloadError, match="axis 0 is indexed by m of size 4 but its shape says 5"):
        Chain("x", d, (Op("Y", "mac", Tensor("Y", "i32", ("m",), (5,)), (A,), "i8"),))
    with pytest.raises(WorkloadError, match="elementwise op reduces nothing, but dims k"):
        Op("Y", "elementwise", Tensor("Y", "i8", ("m",), (4,)), (A,), "i8")
    with pytest.raises(WorkloadError, match="2 index expressions but shape"):
        Tensor("B", "i8", ("m", "k"), (4,))
    with pytest.raises(WorkloadError, match="unknown dtype"):
        Tensor("B", "q7", ("m",), (4,))
    with pytest.raises(WorkloadError, match="two different tensors are named 'A'"):
        A2 = Tensor("A", "i16", ("m", "k"), (4, 3))
        Chain("x", d, (Op("Y", "mac", Tensor("Y", "i32", ("m",), (4,)), (A, A2), "i8"),))
    with pytest.raises(WorkloadError, match="dims k index no tensor"):
        Chain("x", d, (Op("Y", "elementwise", Tensor("Y", "i8", ("m",), (4,)),
                          (Tensor("X", "i8", ("m",), (4,)),), "i8"),))
    with pytest.raises(WorkloadError, match="duplicate dim names"):
        Chain("x", (Dim("m", 2), Dim("m", 3)), ())
    with pytest.raises(WorkloadError, match="index p\\*2 - 9 spans"):
        Chain("x", (Dim("p", 2),), (Op("Y", "mac", Tensor("Y", "i32", ("p",), (2,)),
                                       (Tensor("X", "i8", ("p*2 - 9",), (4,)),), "i8"),))


def test_chain_ops_must_share_the_spine():
    d = (Dim("m", 4), Dim("k", 3), Dim("n", 2))
    A = Tensor("A", "i8", ("m", "k"), (4, 3))
    T = Tensor("T", "i32", ("m",), (4,))
    Y = Tensor("Y", "i32", ("n",), (2,))
    B = Tensor("B", "i8", ("n",), (2,))
    U = Tensor("U", "i32", ("m",), (4,))
    with pytest.raises(WorkloadError, match="op Y does not use dim 'm' of the fused intermediates"):
        Chain("x", d, (Op("T", "mac", T, (A,), "i8"), Op("U", "elementwise", U, (T,), "i8"),
                       Op("Y", "elementwise", Y, (B,), "i8")))
    with pytest.raises(WorkloadError, match="reads T before op T produces it"):
        Chain("x", d, (Op("Y", "mac", Y, (T, B), "i8"), Op("T", "mac", T, (A,), "i8")))


def test_numpy_integer_sizes_are_sizes():
    """Sizes often come out of numpy arrays: any integer type is accepted and stored as int."""
    np = pytest.importorskip("numpy")
    w = gemm(np.int64(64), np.int32(48), np.uint16(32))
    assert w == gemm(64, 48, 32) and all(type(s) is int for s in w.sizes.values())
    c = conv2d(*map(np.int64, (1, 8, 14, 14, 16, 3, 3)), stride=np.int64(2), padding=(np.int8(1), 1))
    assert c == conv2d(1, 8, 14, 14, 16, 3, 3, stride=2, padding=1)
    assert Tensor("A", "i8", ("m",), (np.int64(4),)).shape == (4,)
    with pytest.raises(WorkloadError, match=r"dim m: size np.float64\(4.0\) must be a positive"):
        gemm(np.float64(4.0), 4, 4)


CONSTRUCTED = {
    "gemm": lambda dt: gemm(4, 5, 6, dtype=dt),
    "batched_gemm": lambda dt: batched_gemm(2, 4, 5, 6, dtype=dt),
    "conv2d": lambda dt: conv2d(1, 2, 6, 6, 3, 3, 3, padding=1, dtype=dt),
    "gemm_chain": lambda dt: gemm_chain(4, 5, 6, 7, dtype=dt),
    "mha": lambda dt: mha(8, 12, 4, heads=2, dtype=dt),
    "layernorm": lambda dt: layernorm(4, 8, dtype=dt),
    "einsum": lambda dt: einsum("abc,c->ab", a=2, b=3, c=4, dtype=dt),
}
ACCUMULATOR = {"i8": "i32", "i16": "i32", "i32": "i32", "bf16": "f32", "f16": "f32", "f32": "f32"}


@pytest.mark.parametrize("name", CONSTRUCTED)
@pytest.mark.parametrize("dt", ACCUMULATOR)
def test_every_constructor_takes_every_dtype_and_accumulates_wide(name, dt):
    """Inputs keep the dtype; every op accumulates in i32 (integers) or f32 (16-bit floats and
    f32); mac outputs and fused mac intermediates are stored in the accumulator type."""
    w = CONSTRUCTED[name](dt)
    for op in w.ops:
        assert op.dtype.name == dt and op.accumulator.name == ACCUMULATOR[dt], op.name
        if op.kind == "mac":
            assert op.output.dtype.name == ACCUMULATOR[dt], op.name
    inputs = {t.name for op in w.ops for t in op.inputs} - {t.name for t in w.intermediates}
    for name_ in inputs - {"stats"}:
        assert w.tensor(name_).dtype.name == dt, name_


def test_alignment_per_role_and_dtype():
    """conv2d's input channels take role c_in (by dtype where the arch says so, else as k);
    other dims named c (LayerNorm's) are not that role."""
    table = {"m": 16, "n": 8, "k": 16, "c_in": {"i8": 8, "default": 16}}
    conv = lambda dt: conv2d(1, 3, 8, 8, 16, 3, 3, padding=1, dtype=dt)  # noqa: E731
    assert conv("i8").alignment(table) == {"n": 1, "k": 8, "c": 8, "p": 1, "q": 1, "r": 1, "s": 1}
    assert conv("i16").alignment(table)["c"] == 16
    assert conv("i8").alignment({"k": 16, "n": 8})["c"] == 16  # no c_in: aligned as k
    assert conv("i8").alignment({"c_in": {"i16": 4}})["c"] == 1  # no i8 entry, no default
    assert layernorm(4, 64, dtype="i16").alignment(table) == {"r": 1, "c": 1}
    assert gemm(8, 8, 8, dtype="i8").alignment(table) == {"m": 16, "n": 8, "k": 16}
