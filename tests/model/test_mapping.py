"""Mapping text and JSON forms, and validation errors that name the level, dim or tensor."""

import pytest
from hypothesis import given, settings, strategies as st

from tilewise.model.legality import validate
from tilewise import Mapping, conv2d, gemm, gemm_chain, layernorm, mha
from tilewise.errors import MappingError, ParseError

from .archs import aie_like, array_above_innermost, two_level
from .strategies import ARCHS, mappings, workloads

AIE = aie_like(alignment={"m": 4, "n": 2})
G = gemm(20, 24, 16)
BASE = "ddr[m20 n24 k16] mnk | memtile[m8 n24 k16] kmn db:A | core[m4 n6 k8] db:A,B ; rows=n4 cols=m2"


def test_text_form_round_trips_and_reads_well():
    m = Mapping.parse(BASE)
    assert str(m) == BASE and Mapping.parse(str(m)) == m
    assert m.levels[1].order == ("k", "m", "n") and m.levels[2].double_buffer == {"A", "B"}
    assert m.rows.dim == "n" and m.rows.ways == 4 and m.cols.dim == "m"
    multi = Mapping.parse("a[xy3 z2] xy,z | b[xy1 z1] bypass:T")
    assert multi.levels[0].order == ("xy", "z") and str(multi) == "a[xy3 z2] xy,z | b[xy1 z1] bypass:T"


@settings(max_examples=100)
@given(st.data())
def test_text_and_json_round_trip_for_random_mappings(data):
    wl, arch = data.draw(workloads()), data.draw(ARCHS)
    m = data.draw(mappings(wl, arch, legal_only=False))
    assert Mapping.parse(str(m)) == m
    assert Mapping.from_json(m.to_json()) == m


def test_numpy_integer_tiles_and_ways_are_ints():
    """Tiles and ways built from numpy arrays compare equal to the parsed form and serialize."""
    import numpy as np

    from tilewise import LevelMapping, Spatial

    parsed = Mapping.parse(BASE)
    built = Mapping(tuple(LevelMapping(lv.level, {d: np.int64(t) for d, t in lv.tiles}, lv.order,
                                       lv.bypass, lv.double_buffer) for lv in parsed.levels),
                    Spatial("n", np.int32(4)), Spatial("m", np.uint8(2)))
    assert built == parsed and str(built) == BASE and Mapping.from_json(built.to_json()) == parsed
    validate(G, AIE, built)


@pytest.mark.parametrize("text,pos,expected", [
    ("ddr[m20 n24 k16 mnk", 19, "the tile size of mnk"),
    ("ddr[m20 m4] mnk", 8, "each dim once"),
    ("ddr[m20] mnk | ", 15, "a level name"),
    ("ddr[m20] mnk ; rows=m", 21, "the number of ways"),
    ("ddr[m20] mnk ; rows=m2 rows=m3", 23, "rows given only once"),
    ("ddr[m20] mnk kmn", 13, "'db:', 'bypass:'"),
    ("ddr[m20] mnk ; diag=m2", 15, "'rows=' or 'cols='"),
    ("ddr m20", 3, "'\\['"),
])
def test_parse_errors_point_at_the_character(text, pos, expected):
    with pytest.raises(ParseError, match=expected) as info:
        Mapping.parse(text)
    assert info.value.pos == pos


def test_from_json_errors():
    with pytest.raises(MappingError, match="mapping JSON is malformed"):
        Mapping.from_json('{"levels": [{"tiles": {}}]}')


def _bad(text, wl=G, arch=AIE):
    with pytest.raises(MappingError) as info:
        validate(wl, arch, Mapping.parse(text))
    return str(info.value)


@pytest.mark.parametrize("text,message", [
    ("ddr[m20 n24 k16] mnk | core[m4 n6 k8]", "levels \\['ddr', 'core'\\] do not match"),
    (BASE.replace("memtile[m8", "memtile[x8"), "level memtile: unknown dim 'x'; dims: m, n, k"),
    (BASE.replace("k16] kmn", "] kmn").replace("memtile[m8 n24", "memtile[m8 n24"),
     "level memtile: no tile size for dim 'k'"),
    (BASE.replace("ddr[m20", "ddr[m16"), "tile m=16 must equal the size 20"),
    (BASE.replace("memtile[m8", "memtile[m24"), "level memtile: tile m=24 exceeds its parent tile m=20"),
    (BASE.replace("core[m4", "core[m12"), "level core: tile m=12 exceeds its parent tile m=8 at memtile split 2 ways"),
    (BASE.replace("core[m4", "core[m2"), "tile m=2 violates the alignment of m to multiples of 4"),
    (BASE.replace("] kmn", "] kmm"), "level memtile: loop order kmm is not a permutation"),
    (BASE.replace("db:A,B ;", "mnk db:A,B ;"), "level core is innermost: it has no loops"),
    (BASE.replace("db:A |", "db:Z |"), "level memtile: double buffer names unknown tensor 'Z'"),
    (BASE.replace("db:A |", "bypass:A db:A |"), "A both bypassed and double-buffered"),
    (BASE.replace("db:A,B ;", "bypass:C ;"), "level core is innermost: .*C cannot be bypassed"),
    (BASE.replace("rows=n4", "rows=n5"), "rows=n5: 5 ways, but the array has 4 rows"),
    # LayerNorm's fused statistics merge only along a column (not through the parent)
    ("ddr[r8 c64] rc | memtile[r8 c64] rc | core[r8 c32] ; cols=c2",
     "cols=c2: splitting the reduction dim c needs its partials merged along a column"),
    # a dim on both axes is cut rows x cols ways: 8 x 6 > 24
    (BASE.replace("cols=m2", "cols=n2"), "tile n=6 exceeds its parent tile n=24 at memtile split 8 ways"),
])
def test_validation_errors(text, message):
    import re

    assert re.search(message, _bad(text, layernorm(8, 64) if text.startswith("ddr[r8") else G))


def test_reduction_split_through_the_parent_is_legal():
    """GEMM's K on the columns: partials merged through the memtile (issue 14)."""
    validate(G, aie_like(), Mapping.parse(BASE.replace("cols=m2", "cols=k2").replace("core[m4", "core[m8")))


def test_spatial_needs_an_array_and_splits_below_it_only_plain_dims():
    assert "has no core array" in _bad("gm[m4 n4 k4] mnk | ub[m2 n4 k4] ; rows=m2", gemm(4, 4, 4),
                                       two_level())
    validate(gemm(4, 4, 4), array_above_innermost(),
             Mapping.parse("l3[m4 n4 k4] mnk | l2[m2 n4 k4] mnk | l1[m2 n2 k2] ; cols=m2"))
    conv = conv2d(1, 2, 6, 6, 2, 3, 3)
    text = ("l3[n1 k2 p4 q4 c2 r3 s3] nkpqcrs | l2[n1 k2 p2 q4 c2 r3 s3] nkpqcrs | "
            "l1[n1 k2 p2 q4 c2 r3 s3] ; cols=p2")
    assert "indexes a window (affine) axis" in _bad(text, conv, array_above_innermost())
    arch = aie_like(reduce_cols=False)
    assert "cannot reduce_cols" in _bad("ddr[r8 c64] rc | memtile[r8 c64] rc | core[r8 c16] ; rows=c4",
                                        layernorm(8, 64), arch)


def _reread_over_other_dims():
    """X[r, c] read by a norm op over (r, c) and by an op over (r, c, z): walked differently."""
    from tilewise import Chain, Dim, Op, Tensor

    X, G = Tensor("X", "f32", ("r", "c"), (4, 8)), Tensor("G", "f32", ("z",), (3,))
    S, Y = Tensor("S", "f32", ("r",), (4,), lanes=2), Tensor("Y", "f32", ("r", "c", "z"), (4, 8, 3))
    return Chain("reread", (Dim("r", 4), Dim("c", 8), Dim("z", 3)),
                 (Op("S", "norm", S, (X,), "f32"), Op("Y", "elementwise", Y, (X, S, G), "f32")))


def test_chain_legality_rules():
    wl = gemm_chain(8, 6, 10, 4)
    arch = two_level()
    ok = Mapping.parse("gm[m8 k6 l10 n4] mlkn | ub[m4 k3 l5 n2]")
    validate(wl, arch, ok)
    # k outside l, seed 004's semantics: below k each op runs its own loops, C the panel
    # T_M x L (issue 14); so is seed 004's own example order mnkl
    validate(wl, arch, Mapping.parse("gm[m8 k6 l10 n4] mkln | ub[m4 k3 l5 n2]"))
    validate(wl, arch, Mapping.parse("gm[m8 k6 l10 n4] mnkl | ub[m4 k3 l5 n2]"))
    # attention keeps its shared loops outside its private ones (online state)
    assert ("loop over k at gm (private to op S) encloses the loop over the shared dim n at gm; "
            "the ops of mha") in _bad("gm[h1 m8 n8 k4 e4] hmkne | ub[h1 m4 n4 k2 e4]",
                                      mha(8, 8, 4), arch)
    validate(mha(8, 8, 4), arch, Mapping.parse("gm[h1 m8 n8 k4 e4] hmkne | ub[h1 m4 n8 k2 e4]"))
    # LayerNorm's c may be tiled: the statistics pass and the normalize pass each read X
    validate(layernorm(4, 8), arch, Mapping.parse("gm[r4 c8] rc | ub[r2 c4]"))
    assert "X is read by ops S, Y over different dims; tiling its private dim c" in _bad(
        "gm[r4 c8 z3] rcz | ub[r2 c4 z3]", _reread_over_other_dims(), arch)
    a = mha(8, 8, 4)
    # attention's keys merge across cores (Eq. 12); a GEMM chain's second reduction does not
    validate(a, aie_like(), Mapping.parse(
        "ddr[h1 m8 n8 k4 e4] hmnke | memtile[h1 m8 n8 k4 e4] hmnke | core[h1 m8 n2 k4 e4] ; rows=n4"))
    assert "l is reduced by op E of a fused chain" in _bad(
        "ddr[m8 k6 l8 n4] mlkn | memtile[m8 k6 l8 n4] mlkn | core[m8 k6 l2 n4] ; rows=l4",
        gemm_chain(8, 6, 8, 4), aie_like())
    assert "P is a fused intermediate" in _bad(
        "ddr[h1 m8 n8 k4 e4] hmnke | memtile[h1 m8 n8 k4 e4] hmnke db:P | core[h1 m8 n8 k4 e4]",
        a, aie_like())


def test_from_triplet():
    arch = aie_like()
    m = Mapping.from_triplet(G, arch, {"m": 20, "n": 24, "k": 16}, (8, 24, 16), (4, 6, 8),
                             orders=["mnk", "kmn"], rows="n4", cols="m2",
                             double_buffer=[(), ("A",), ("A", "B")])
    assert m == Mapping.parse(BASE)
    with pytest.raises(MappingError, match="triplet m gives dims \\['m', 'n'\\]"):
        Mapping.from_triplet(G, arch, (20, 24, 16), {"m": 8, "n": 24}, (4, 6, 8))
    with pytest.raises(MappingError, match="needs a 3-level arch; two-level has 2"):
        Mapping.from_triplet(G, two_level(), (20, 24, 16), (8, 24, 16), (4, 6, 8))


@settings(max_examples=50)
@given(st.data())
def test_mapping_batch_round_trips_mappings(data):
    from tilewise.model.batch import MappingBatch

    wl, arch = data.draw(workloads()), data.draw(ARCHS)
    ms = [data.draw(mappings(wl, arch)) for _ in range(3)]
    batch = MappingBatch.from_mappings(wl, arch, ms)
    assert [batch.mapping(i, wl, arch) for i in range(3)] == ms
    with pytest.raises(MappingError, match="candidate 3 out of range: batch has 3"):
        batch.mapping(3, wl, arch)
