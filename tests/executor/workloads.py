"""Workloads for the executor tests: every constructor with random (often prime, non-divisible)
sizes, and attention variants with causal/explicit masks and a scale."""

import dataclasses

from hypothesis import strategies as st

from tilewise.ir import library as lib
from tilewise.ir.workload import Tensor

FLOATS = st.sampled_from(["bf16", "f16", "f32"])
ANY = st.sampled_from(["i8", "i16", "bf16", "f32"])


def attention(Lq, Lkv, d, heads=1, dtype="f32", causal=False, mask=False, scale=1.0,
              out_dtype=None):
    """``mha`` with its softmax made causal / scaled, and an explicit bool mask input[m, n]."""
    w = lib.mha(Lq, Lkv, d, heads=heads, dtype=dtype, out_dtype=out_dtype)
    S, P, O = w.ops
    inputs = P.inputs + ((Tensor("mask", "bool", ("m", "n"), (Lq, Lkv)),) if mask else ())
    P = dataclasses.replace(P, inputs=inputs, attrs={**P.attrs, "causal": causal, "scale": scale})
    return dataclasses.replace(w, ops=(S, P, O))


def n(lo=1, hi=9):
    return st.integers(lo, hi)


@st.composite
def constructor(draw, kind):
    if kind == "gemm":
        dt = draw(ANY)
        out = draw(st.sampled_from([None, dt]))  # the narrow output: partial sums in its dtype
        return lib.gemm(draw(n()), draw(n()), draw(n()), dtype=dt, out_dtype=out)
    if kind == "batched_gemm":
        return lib.batched_gemm(draw(n(1, 3)), draw(n(1, 7)), draw(n(1, 7)), draw(n(1, 7)),
                                dtype=draw(ANY))
    if kind == "conv2d":
        R, S = draw(n(1, 3)), draw(n(1, 3))
        sh, sw, dh, dw = (draw(n(1, 2)) for _ in range(4))
        ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        H = draw(st.integers(max(1, dh * (R - 1) + 1 - 2 * ph), 9))
        W = draw(st.integers(max(1, dw * (S - 1) + 1 - 2 * pw), 9))
        return lib.conv2d(draw(n(1, 2)), draw(n(1, 3)), H, W, draw(n(1, 3)), R, S,
                          stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), dtype=draw(ANY),
                          bias=draw(st.booleans()))
    if kind == "gemm_chain":
        return lib.gemm_chain(draw(n()), draw(n()), draw(n()), draw(n()), dtype=draw(ANY))
    if kind == "mha":
        d = draw(n(1, 6))  # a value head dim dv other than d half of the time (seed 003's r)
        return lib.mha(draw(n()), draw(n()), d, heads=draw(n(1, 2)), dtype=draw(FLOATS),
                       dv=draw(st.sampled_from([d, draw(n(1, 6))])))
    if kind == "mha_masked":
        return attention(draw(n()), draw(n()), draw(n(1, 5)), heads=draw(n(1, 2)),
                         dtype=draw(FLOATS), causal=draw(st.booleans()), mask=draw(st.booleans()),
                         scale=draw(st.sampled_from([1.0, 0.5, 0.125])),
                         out_dtype=draw(st.sampled_from([None, "bf16"])))
    if kind == "layernorm":
        return lib.layernorm(draw(n(1, 12)), draw(n(1, 13)), dtype=draw(FLOATS),
                             eps=draw(st.sampled_from([1e-5, 1e-2])))
    assert kind == "einsum"
    spec = draw(st.sampled_from(["mk,kn->mn", "bik,bkj->bij", "ij->ji", "abc,c->ab", "ik,jk->ij"]))
    letters = dict.fromkeys(c for c in spec if c.isalpha())
    return lib.einsum(spec, dtype=draw(ANY), **{c: draw(n(1, 7)) for c in letters})


KINDS = ["gemm", "batched_gemm", "conv2d", "gemm_chain", "mha", "mha_masked", "layernorm", "einsum"]
