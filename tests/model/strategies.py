"""Hypothesis strategies: small workloads of every constructor and valid mappings for them."""

from hypothesis import strategies as st

from tilewise.ir import library as lib
from tilewise.mapping import LevelMapping, Mapping, Spatial
from tilewise.model.legality import below_array_refusal
from tilewise.model.structure import Structure

from .archs import (aie_like, array_above_innermost, array_in_the_middle, four_level,
                    output_registers, per_operand, two_level)

DTYPES = st.sampled_from(["i8", "i16", "bf16", "f32"])


def small(lo=1, hi=9):
    return st.integers(lo, hi)


CONSTRUCTORS = ("gemm", "batched_gemm", "conv2d", "gemm_chain", "mha", "layernorm", "einsum")


@st.composite
def workloads(draw, kinds=CONSTRUCTORS):
    """A small workload from one of the constructors ``kinds``."""
    kind = draw(st.sampled_from(list(kinds)))
    dt = draw(DTYPES)
    if kind == "gemm":  # an output narrower than the accumulator: partial sums at its width
        out = draw(st.sampled_from([None, dt])) if dt in ("i8", "i16", "bf16") else None
        return lib.gemm(draw(small()), draw(small()), draw(small()), dtype=dt, out_dtype=out)
    if kind == "batched_gemm":
        out = draw(st.sampled_from([None, dt])) if dt in ("i8", "i16", "bf16") else None
        return lib.batched_gemm(draw(small(1, 3)), draw(small(1, 6)), draw(small(1, 6)),
                                draw(small(1, 6)), dtype=dt, out_dtype=out)
    if kind == "conv2d":
        R, S = draw(small(1, 3)), draw(small(1, 3))
        stride, dil, pad = draw(small(1, 2)), draw(small(1, 2)), draw(st.integers(0, 2))
        H = draw(st.integers(max(1, dil * (R - 1) + 1 - 2 * pad), 8))
        W = draw(st.integers(max(1, dil * (S - 1) + 1 - 2 * pad), 8))
        return lib.conv2d(draw(small(1, 2)), draw(small(1, 3)), H, W, draw(small(1, 3)), R, S,
                          stride=stride, padding=pad, dilation=dil, dtype=dt,
                          bias=draw(st.booleans()))
    if kind == "gemm_chain":
        return lib.gemm_chain(draw(small()), draw(small()), draw(small()), draw(small()), dtype=dt)
    if kind == "mha":
        d = draw(small(1, 6))  # dv other than d half of the time (seed 003's r != d)
        return lib.mha(draw(small()), draw(small()), d, heads=draw(small(1, 2)), dtype=dt,
                       dv=draw(st.sampled_from([d, draw(small(1, 6))])))
    if kind == "layernorm":
        return lib.layernorm(draw(small(1, 12)), draw(small(1, 12)), dtype=dt)
    spec = draw(st.sampled_from(["mk,kn->mn", "bik,bkj->bij", "ij->ji", "abc,c->ab"]))
    letters = dict.fromkeys(c for c in spec if c.isalpha())
    return lib.einsum(spec, dtype="i8", **{c: draw(small(1, 6)) for c in letters})


ARCHS = st.sampled_from([
    aie_like(), aie_like(2, 3, broadcast=False, reduce_cols=False),
    aie_like(4, 2, alignment={"m": 2, "k": 2}), two_level(block_bytes=32), four_level(),
    array_above_innermost(), array_in_the_middle(), per_operand(), output_registers(),
])


@st.composite
def mappings(draw, workload, arch, legal_only=True, through=False):
    """A mapping of ``workload`` onto ``arch``; legal (by construction) unless asked otherwise.
    ``through``: reductions may also be split where their partials merge through the parent
    level (cols, or rows without ``reduce_cols``)."""
    s = Structure(workload, arch)
    dims, sizes, n = s.dims, workload.sizes, s.n_levels
    chain = len(workload.ops) > 1 and not s.projected  # a GEMM chain takes every order
    spine = [d for d in dims if d in s.spine]
    private = [d for d in dims if d not in s.spine]
    # private dims of a tensor that several ops read differently stay whole (legality rule 3)
    shared_private = {d for t in s.moved for d in t.dims if d not in s.spine
                      and s.passes(t.name) == 0}
    # spatial split (with levels below the array: of the dims each core can walk there)
    ways = {}
    rows = cols = None
    if arch.array is not None:
        for axis in ("rows", "cols"):
            if draw(st.booleans()):
                # a dim on both axes (cut rows x cols ways) as often as a fresh one
                cand = [d for d in dims if d not in ways or ways[d] * getattr(arch.array, axis) <= sizes[d]]
                if s.array_level < n - 1:
                    cand = [d for d in cand if below_array_refusal(s, d) is None]
                red = {d for op in workload.ops for d in op.reduction_dims}
                if len(workload.ops) > 1:  # attention's key dim merges (Structure.mergeable)
                    cand = [d for d in cand if (d in s.spine and d not in red) or d in s.mergeable]
                if axis == "cols" or not arch.array.reduce_cols:
                    cand = [d for d in cand if d not in red
                            or (through and d in s.parent_mergeable)]
                if cand:
                    d = draw(st.sampled_from(cand))
                    top = min(getattr(arch.array, axis), max(1, sizes[d] // ways.get(d, 1)))
                    w = draw(st.integers(1, top))
                    ways[d] = ways.get(d, 1) * w
                    if axis == "rows":
                        rows = Spatial(d, w)
                    else:
                        cols = Spatial(d, w)
    tiles = [dict(sizes)]
    for k in range(1, n):
        t = {}
        for d in dims:
            parent = tiles[k - 1][d]
            if k == n - 1:
                align = workload.alignment(arch.alignment)[d]
                w = ways.get(d, 1)
                limit = -(-(-(-parent // w)) // align) * align
                if legal_only and d in shared_private:
                    t[d] = -(-parent // align) * align  # read by several ops: keep it whole
                else:
                    t[d] = align * draw(st.integers(1, limit // align))
            elif legal_only and chain and d in private:
                t[d] = parent  # private dims stay whole above the innermost loops
            elif k == s.array_level:  # a core tile of at most the parent's share
                t[d] = draw(st.integers(1, -(-parent // ways.get(d, 1))))
            else:
                t[d] = draw(st.integers(1, parent))
        tiles.append(t)
    levels = []
    names = [x.name for x in s.tensors if x.name not in s.intermediate_names]
    for k, lv in enumerate(arch.levels):
        if k < n - 1:
            if legal_only and chain:
                order = tuple(draw(st.permutations(spine))) + tuple(draw(st.permutations(private)))
            else:
                order = tuple(draw(st.permutations(dims)))
        else:
            order = ()
        bypass = frozenset()
        if 0 < k < n - 1:
            bypass = frozenset(draw(st.sets(st.sampled_from(names))))
        db = frozenset()
        unheld = {x.name for i, x in enumerate(s.tensors) if not s.held[k, i]}
        bypass |= unheld  # stated, as MappingBatch.mapping writes it
        if k > 0 and lv.double_buffer:
            db = frozenset(draw(st.sets(st.sampled_from(names)))) - bypass - unheld
        levels.append(LevelMapping(lv.name, tuple((d, tiles[k][d]) for d in dims), order,
                                   bypass, db))
    return Mapping(tuple(levels), rows, cols)
