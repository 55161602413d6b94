"""Visit floors (search/visits.py): the visits listed equal a walk of the tiles, each floor is
below the model's exact bytes on random mappings, and the search with them equals brute force
on a deep hierarchy whose links do not overlap compute."""

import itertools

import numpy as np
import pytest

import tilewise as tw
from tilewise.arch.spec import Arch, Compute, Level
from tilewise.mapping import Mapping
from tilewise.model.cost import evaluate
from tilewise.search.engine import Engine
from tilewise.search.optimize import search
from tilewise.search.visits import (Runs, VisitMemo, box_floors, node_floors, visit_floor,
                                     visit_lists)

from ..consistency.cases import arch as toy_arch, level as toy_level
from ..model.archs import array_in_the_middle
from .helpers import brute_force
from .test_exact import assert_top_matches

GiB = 2**30


def caches(l3=4096, l2=1024, l1=256, block=1) -> Arch:
    """DRAM -> L3 -> L2 -> L1 (no L3 when ``l3`` is None), nothing double-buffered, slow
    links (they decide the latency); caches of ``block``-byte lines."""
    lv = lambda name, cap, bw: Level(name, cap, read_bandwidth=bw * GiB, write_bandwidth=bw * GiB,
                                     double_buffer=False, block_bytes=block)
    mid = (lv("l3", l3, 1),) if l3 else ()
    return Arch(name="caches", levels=(Level("dram", None), *mid, lv("l2", l2, 2), lv("l1", l1, 4)),
                compute=Compute(1e9, {"f32": 16, "i8": 32}, {"f32": 16, "i8": 64}))


def walk_visits(sizes, tiles, k):
    """Per dim ``{extent: visits}`` of the level-``k`` tiles, by walking the tile ranges."""
    out = []
    for d, n in enumerate(sizes):
        ranges = [(0, n)]
        for lvl in range(1, k + 1):
            t = tiles[lvl][d]
            ranges = [(a, min(a + t, b)) for lo, b in ranges for a in range(lo, b, t)]
        counts = {}
        for a, b in ranges:
            counts[b - a] = counts.get(b - a, 0) + 1
        out.append(counts)
    return out


def test_visit_lists_equal_a_walk():
    rng = np.random.default_rng(5)
    for _ in range(400):
        D, k = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        sizes = rng.integers(1, 60, D)
        tiles = [list(sizes)] + [list(rng.integers(1, 70, D)) for _ in range(k)]
        ext, cnt = visit_lists(sizes, np.array([tiles], np.int64), k)
        for d, want in enumerate(walk_visits(sizes, tiles, k)):
            got = {int(e): int(c) for e, c in zip(ext[0, d], cnt[0, d]) if c}
            assert got == want


def _random_mapping(rng, w, arch):
    """A random mapping; on an arch with an array, a random cols split (its tile per core
    at most ``ceil(parent / ways)``)."""
    dims = list(w.sizes)
    names = [lv.name for lv in arch.levels]
    a = names.index(arch.array.level) if arch.array is not None else None
    split, ways = (dims[int(rng.integers(0, len(dims)))], int(rng.integers(1, arch.array.cols + 1))
                   ) if a is not None else (None, 1)
    tiles = [dict(w.sizes)]
    for i in range(1, len(names)):
        up = {d: -(-tiles[-1][d] // ways) if (i == a and d == split) else tiles[-1][d] for d in dims}
        tiles.append({d: int(rng.integers(1, up[d] + 1)) for d in dims})
    parts = []
    for i, name in enumerate(names):
        order = "" if i == len(names) - 1 else "".join(rng.permutation(dims))
        parts.append(f"{name}[{' '.join(f'{d}{tiles[i][d]}' for d in dims)}] {order}".strip())
    text = " | ".join(parts) + (f" ; cols={split}{ways}" if ways > 1 else "")
    return Mapping.parse(text), tiles


def _fitting_mappings(rng, w, arch, draws: int):
    """Of ``draws`` random mappings, those that fit: ``(mapping, cost, tiles [1, L, D])``."""
    dims = list(w.sizes)
    for _ in range(draws):
        m, tiles = _random_mapping(rng, w, arch)
        c = evaluate(w, arch, m, check_capacity=False)
        if c.fits:
            yield m, c, np.array([[tl[d] for d in dims] for tl in tiles], np.int64)[None]


@pytest.mark.parametrize("w", [tw.gemm(12, 10, 16, dtype="f32"), tw.gemm(9, 20, 7, dtype="i8"),
                               tw.batched_gemm(3, 6, 5, 8, dtype="f32")], ids=["f32", "i8", "bgemm"])
@pytest.mark.parametrize("split", [False, True, "lines"], ids=["one-core", "cores", "lines"])
def test_floors_are_below_the_model_on_random_mappings(w, split):
    """Every level ``k+1`` of an unsplit mapping; with a split across the array (in the
    middle: L2 per core, L3 lines of 8 B), every level but the array's (above it the split
    changes no visit; below it each core's visits summed; the array level has its own test
    below); ``lines``: caches of 16 B lines, rows rounded (the floor's granule the model's)."""
    arch = (array_in_the_middle(rows=1, cols=3) if split is True
            else caches(l3=1536, l2=512, l1=160, block=16 if split else 1))
    split = split is True
    eng = Engine(w, arch, {})
    table, dims = eng.visit_table, list(w.sizes)
    assert table is not None
    names = [lv.name for lv in arch.levels]
    rng = np.random.default_rng(len(dims))
    checked = raised = 0
    for m, c, t in _fitting_mappings(rng, w, arch, 300):
        for k in [k for k in range(len(names) - 1) if not split or k + 1 != 2]:
            known = rng.random(len(dims)) < 0.5
            floor = lambda g: node_floors(table, eng.problem.dims.sizes, t, known, k, eng.cap,
                                          VisitMemo(), granule=g)
            r, wr = floor(eng.run_granule[k + 1])
            nxt = names[k + 1]
            assert r[0] <= sum(c.reads[nxt].values()) + 1e-9, (m, k, known)
            assert wr[0] <= sum(c.writes[nxt].values()) + 1e-9, (m, k, known)
            checked += 1
            raised += int(r[0] + wr[0] > sum(x[0] for x in floor(1.0)))
    assert checked > 150
    assert (raised > 20) == (eng.run_granule[1:] > 1).any(), raised   # the rounding counts


def test_floors_are_tight_where_the_order_is_forced():
    """One visit (k = 0) with the level's tiles fixed: the floor is the least of the orders'
    bytes (here each order's exact bytes are the model's)."""
    w, arch = tw.gemm(16, 16, 16, dtype="f32"), caches(l3=4096, l2=1024, l1=256)
    eng = Engine(w, arch, {})
    r, wr = node_floors(eng.visit_table, eng.problem.dims.sizes,
                        np.array([[[16, 16, 16], [8, 4, 16], [8, 4, 16], [8, 4, 16]]]),
                        np.ones(3, bool), 0, eng.cap, VisitMemo())
    text = "dram[m16 n16 k16] {} | l3[m8 n4 k16] mnk | l2[m8 n4 k16] mnk | l1[m8 n4 k16]"
    best_r = min(sum(evaluate(w, arch, Mapping.parse(text.format("".join(o))),
                              check_capacity=False).reads["l3"].values())
                 for o in itertools.permutations("mnk"))
    assert r[0] == best_r


CASES = [  # three levels: brute force stays near 10^4 mappings
    (tw.gemm(8, 8, 16, dtype="f32"), {"orders": ["mnk", "kmn"], "tiles": {"l2": {"k": 16}}}),
    (tw.batched_gemm(2, 8, 4, 8, dtype="f32"), {"orders": ["bmnk", "nkbm"], "tiles": {"l2": {"b": 1}}}),
]


@pytest.mark.parametrize("case", CASES, ids=["gemm", "bgemm"])
@pytest.mark.parametrize("objective", ["latency", "traffic", "energy"])
def test_search_with_visit_floors_equals_brute_force(case, objective):
    w, cons = case
    arch = caches(l3=None, l2=512, l1=192)
    if objective == "energy":
        arch = _with_energy(arch)
    metric = {"latency": lambda c: c.latency_s, "traffic": lambda c: c.offchip_bytes,
              "energy": lambda c: c.energy_j}[objective]
    brute = brute_force(w, arch, metric, **cons)
    assert brute
    r = search(w, arch, objective=objective, top=3, **cons)
    assert_top_matches([metric(s.cost) for s in r.top], [v for v, _, _ in brute])


def _with_energy(arch: Arch) -> Arch:
    import dataclasses
    pj = [(40.0, 50.0), (2.0, 2.5), (1.0, 1.0)]
    levels = tuple(dataclasses.replace(lv, read_energy_pj=r, write_energy_pj=wr)
                   for lv, (r, wr) in zip(arch.levels, pj))
    return dataclasses.replace(arch, levels=levels,
                               compute=dataclasses.replace(arch.compute, energy_pj_per_mac=0.5))


def _gemm_visit(e, cap, across):
    """One GEMM visit's floor (f32 A[m,k], B[k,n], C[m,n]) of tile ``e`` into ``cap`` bytes."""
    uses = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0]], np.bool_)
    width = np.full(3, 4.0)
    runs = Runs(np.array([2, 1, 1]), np.array([e[2], e[1], e[1]]), 1.0)
    return visit_floor(np.array(e, np.int64), np.zeros(3, np.int64), uses, width,
                       np.array([False, False, True]), np.ones(3, np.bool_), runs, float(cap),
                       across)


def test_only_a_tensor_whose_visit_tile_fits_whole_is_kept_across_visits():
    """Between visits a tensor keeps its tile only if its level tile covered all of the visit's
    (the visit before ended on its last tile, the next starts on its first). With every
    tensor's visit tile over the capacity nothing is kept; with A's 8 x 8 (256 B) within it,
    at most A's bytes are."""
    big = (64, 64, 64)                       # every tensor 16 KiB, cap 4 KiB: none covered
    assert _gemm_visit(big, 4096, True) == _gemm_visit(big, 4096, False)
    e = (8, 64, 8)                           # A 256 B fits; B and C 2 KiB each
    alone, across = _gemm_visit(e, 1024, False), _gemm_visit(e, 1024, True)
    assert across[0] < alone[0]
    assert alone[0] - across[0] <= 8 * 8 * 4


def _cores_without_broadcast(cols: int = 3, block: int = 1) -> Arch:
    """cpu-6core's shape (array_in_the_middle) with no broadcast and no merge along the array:
    the bytes into the per-core L2 are the cores' sum; L2 and L1 of ``block``-byte lines."""
    import dataclasses
    arch = array_in_the_middle(rows=1, cols=cols)
    levels = tuple(dataclasses.replace(lv, block_bytes=block) if lv.name in ("l2", "l1") else lv
                   for lv in arch.levels)
    return dataclasses.replace(arch, levels=levels, array=dataclasses.replace(
        arch.array, broadcast_rows=False, broadcast_cols=False, reduce_cols=False))


@pytest.mark.parametrize("w", [tw.gemm(12, 10, 16, dtype="f32"), tw.gemm(47, 20, 7, dtype="i8"),
                               tw.gemm(64, 6, 40, dtype="f32"),
                               tw.batched_gemm(3, 6, 5, 8, dtype="f32")],
                         ids=["f32", "i8", "long-m", "bgemm"])
@pytest.mark.parametrize("block", [1, 8], ids=["bytes", "lines"])
def test_floors_into_the_array_level_are_below_the_cores_sum(w, block):
    """Into the array level (each core's L2, no broadcast) and the level below it: each visit
    of an L3 tile cut into the regions the cores walk (their core tiles known), each region a
    visit of one core's L2, or of its L1 with the L2 tiles taken as open; the floor is below
    the model's bytes, every core's summed (``lines``: rows rounded to 8 B lines)."""
    arch = _cores_without_broadcast(block=block)
    eng = Engine(w, arch, {})
    assert eng._cores_sum_at_array()
    dims = list(w.sizes)
    rng = np.random.default_rng(11 + len(dims))
    checked = split = 0
    for m, c, t in _fitting_mappings(rng, w, arch, 600):
        ways = np.ones((1, len(dims)), np.int64)
        if m.cols is not None:
            ways[0, dims.index(m.cols.dim)] = m.cols.ways
        known = rng.random(len(dims)) < 0.5
        known |= ways[0] > 1     # the core tiles of the split dims are known
        for into, name in ((2, "l2"), (3, "l1")):   # l1: through the core tiles, open
            r, wr = node_floors(eng.visit_table, eng.problem.dims.sizes, t, known, 1, eng.cap,
                                VisitMemo(), into=into, cores=(t[:, 2], ways),
                                granule=eng.run_granule[into])
            assert r[0] <= sum(c.reads[name].values()) + 1e-9, (m, known, name)
            assert wr[0] <= sum(c.writes[name].values()) + 1e-9, (m, known, name)
        checked += 1
        split += int((ways > 1).any())
    assert checked > 150 and split > 50


@pytest.mark.parametrize("w, least", [(tw.gemm(12, 10, 16, dtype="f32"), 0),
                                      (tw.batched_gemm(3, 6, 5, 8, dtype="f32"), 0),
                                      (tw.gemm(64, 6, 40, dtype="f32"), 100),
                                      (tw.gemm(64, 64, 64, dtype="f32"), 100)],
                         ids=["f32", "bgemm", "long-m", "64^3"])
@pytest.mark.parametrize("block", [1, 8], ids=["bytes", "lines"])
def test_box_floors_with_the_core_tiles_open_are_below_the_cores_sum(w, least, block):
    """Into the array level and the level below it with a split dim's core tile open: each
    visit of an L3 tile taken as one region, less (cores - 1) x capacity per visit
    (:func:`box_floors`), is below the model's bytes, every core's summed; and on the larger
    GEMMs it is often above zero (``least`` times: the test would see it switched off)."""
    arch = _cores_without_broadcast(block=block)
    eng = Engine(w, arch, {})
    dims = list(w.sizes)
    rng = np.random.default_rng(29 + len(dims))
    checked = positive = 0
    for m, c, t in _fitting_mappings(rng, w, arch, 600):
        if m.cols is None or m.cols.ways == 1:
            continue
        known = rng.random(len(dims)) < 0.5
        known[dims.index(m.cols.dim)] = False   # the split dim's core tile open
        for into, name in ((2, "l2"), (3, "l1")):
            r, wr = box_floors(eng.visit_table, eng.problem.dims.sizes, t, known, 1, eng.cap,
                               VisitMemo(), into, np.array([m.cols.ways]),
                               granule=eng.run_granule[into])
            assert r[0] <= sum(c.reads[name].values()) + 1e-9, (m, known, name)
            assert wr[0] <= sum(c.writes[name].values()) + 1e-9, (m, known, name)
            positive += int(r[0] + wr[0] > 0)
        checked += 1
    assert checked > 100 and positive >= least, (checked, positive)


def test_core_regions_follow_the_split_walk():
    """A dim of 256 split 6 ways into core tiles of 43 (43 x 5 + 41) and of 30 (steps of 180:
    cores 0-1 walk 30 + 30, core 2 30 + 16, cores 3-5 30)."""
    from tilewise.search.visits import core_regions
    for tile, want in ((43, {43: 5, 41: 1}), (30, {60: 2, 46: 1, 30: 3})):
        e, c = core_regions(np.array([[[256, 0]]]), np.array([[[1, 0]]]), np.array([[tile]]),
                            np.array([[6]]))
        assert {int(x): int(n) for x, n in zip(e[0, 0], c[0, 0]) if n} == want


@pytest.mark.parametrize("objective", ["latency", "traffic"])
@pytest.mark.parametrize("block", [None, 8], ids=["bytes", "lines"])
def test_search_with_floors_into_the_array_level_equals_brute_force(objective, block):
    """ddr -> l3 -> l2 (the array, 2 cores, no broadcast) -> l1: the floors into the cores' L2
    prune, and the search's top values equal brute force (splits included); ``lines``: caches
    of 8 B lines, where the dims of the tensors' rows are tiled first
    (:meth:`.Engine._stages`) and the L1 floors are taken in a second step
    (:meth:`.Engine.has_deep_visits`)."""
    a = toy_arch("toy-mid3", [toy_level("l3", 2048, double_buffer=False, block=block),
                              toy_level("l2", 512, instances=2, double_buffer=False, block=block),
                              toy_level("l1", 128, instances=2, bandwidth=32e9,
                                        double_buffer=False, block=block)],
                 array={"level": "l2", "rows": 1, "cols": 2, "broadcast": [],
                        "reduce_cols": False})
    w = tw.gemm(4, 8, 6, dtype="f32")
    first = next(st.dim for st in Engine(w, a, {}).stages if st.kind == "tile")
    # n, the rows of B and C, first on lines; else m, the dim of fewest tiles
    assert list(w.sizes)[first] == ("n" if block else "m")
    metric = {"latency": lambda c: c.latency_s, "traffic": lambda c: c.offchip_bytes}[objective]
    cons = {"orders": ["mnk", "kmn"], "tiles": {"l3": {"k": 6, "n": 4}, "l1": {"n": 4}}}
    brute = brute_force(w, a, metric, **cons)
    assert any(m.cols for _, m, _ in brute)
    r = search(w, a, objective=objective, top=4, **cons)
    assert_top_matches([metric(s.cost) for s in r.top], [v for v, _, _ in brute])


def _row_by_hand(ex, trips, full, w, g):
    """Bytes per row of a sweep: each of ``trips`` runs at least one granule ``g``, the row at
    least its bytes rounded up to granules; a tile spanning the whole axis (``full``) merges."""
    if trips == 1 and ex >= full:
        return ex * w
    return max(-(-ex * w // g) * g, trips * g)


def _sweep_by_hand(i, trips, e, uses, width, runs):
    x = runs.last[i]
    rest = np.prod([e[d] for d in range(len(e)) if uses[i, d] and d != x])
    return _row_by_hand(e[x], trips, runs.full[i], width[i], runs.granule) * rest


def _visit_bytes_by_hand(e, c, j, j_open, uses, width, output, held, runs, cap, across):
    """(reads, writes) of a visit of ``e`` with tiles ``c`` and innermost real loop ``j``
    (None: no loop real; ``j_open``: an open dim, whose runs count as 2 tiles) by the module
    doc's formula, less what may stay from the visit before."""
    D = len(e)
    trips = [-(-e[d] // c[d]) if c[d] < e[d] else 1 for d in range(D)]
    kept = 0.0
    if across:
        for a in range(D):   # the dim that advances between visits
            kept = max(kept, sum(_sweep_by_hand(i, 1, e, uses, width, runs)
                                 for i in range(len(uses)) if held[i] and not uses[i, a]
                                 and all(c[d] >= e[d] for d in range(D) if uses[i, d])))
        kept = min(kept, cap)
    r = w = 0.0
    for i in range(len(uses)):
        if not held[i]:
            continue
        x = runs.last[i]
        pts = _sweep_by_hand(i, 2 if (j_open and x == j) else trips[x], e, uses, width, runs)
        sweeps = j is not None and uses[i, j]
        f = np.prod([trips[d] for d in range(D) if not uses[i, d]]) if sweeps else 1
        if output[i]:
            r, w = r + pts * (f - 1), w + pts * f
        else:
            r += pts * f
    return max(r - kept, 0.0), max(w - kept, 0.0)


def _visit_floor_by_hand(e, fixed, uses, width, output, held, runs, cap, across):
    """The least over every tile (each open dim 1 .. e, fixed ones as given) that fits and
    every real innermost loop of :func:`_visit_bytes_by_hand`: every choice enumerated (an
    open innermost dim's footprint at its tile 1, its runs at 2 tiles)."""
    D = len(e)
    ranges = [range(1, e[d] + 1) if fixed[d] == 0 else (fixed[d],) for d in range(D)]
    best = [np.inf, np.inf]
    for c in itertools.product(*ranges):
        foot = sum(width[i] * np.prod([min(c[d], e[d]) for d in range(D) if uses[i, d]])
                   for i in range(len(uses)) if held[i])
        if foot > cap:
            continue
        real = [d for d in range(D) if c[d] < e[d]]
        for j in real or [None]:
            j_open = j is not None and fixed[j] == 0
            got = _visit_bytes_by_hand(e, c, j, j_open, uses, width, output, held, runs, cap,
                                       across)
            best = [min(best[0], got[0]), min(best[1], got[1])]
    return tuple(best)


def test_the_branch_and_bound_floor_equals_every_tile_enumerated():
    """The visit floor's branch and bound (one innermost loop at a time, the open dims' least
    tiles largest first, smaller tiles dropped once the bytes with the rest whole reach the
    least so far) equals the least over every tile choice, on random contractions of 1-4 dims
    (open, fixed under or over the visit, every tensor held or not, with and without what
    stays from the visit before, rows rounded to granules of 1-16 bytes, the visit spanning
    the tensor's innermost axis or not), none past the step limit."""
    rng = np.random.default_rng(13)
    checked = closed = 0
    for _ in range(300):
        D = int(rng.integers(1, 5))
        T = int(rng.integers(2, 4))
        uses = rng.random((T, D)) < 0.6
        uses[np.arange(T), rng.integers(0, D, T)] = True
        output = np.zeros(T, np.bool_)
        output[-1] = True
        width = rng.choice([1.0, 2.0, 4.0], T)
        held = rng.random(T) < 0.85
        e = rng.integers(1, 13 if D < 4 else 7, D)
        fixed = np.where(rng.random(D) < 0.35, rng.integers(1, 15, D), 0)
        cap = float(rng.integers(1, 2 + int(sum(width[i] * np.prod(e[uses[i]]) for i in range(T)))))
        across = bool(rng.random() < 0.5)
        last = np.array([rng.choice(np.nonzero(u)[0]) for u in uses])
        full = e[last] + rng.integers(0, 2, T) * rng.integers(1, 9, T)
        runs = Runs(last, full, float(rng.choice([1, 2, 4, 8, 16])))
        got = visit_floor(e.astype(np.int64), fixed.astype(np.int64), uses, width, output, held,
                          runs, cap, across)
        want = _visit_floor_by_hand(e, fixed, uses, width, output, held, runs, cap, across)
        assert got == want, (e, fixed, uses, width, held, runs, cap, across)
        checked += np.isfinite(want[0])
        closed += int((fixed > 0).all())
    assert checked > 200 and closed > 5


def test_visit_floors_in_two_parts_equal_them_all_at_once():
    """The tile stages' children are floored in two parts (:func:`.expand.bounded_tile_children`):
    the levels down to the array first, then those below it reached through an open level
    for the nodes still kept. The two parts, merged, are the floors computed at once, and each
    part leaves the other's levels at zero."""
    import dataclasses
    arch = _cores_without_broadcast(block=8)
    w = tw.gemm(64, 6, 40, dtype="f32")
    eng = Engine(w, arch, {})
    run = dataclasses.replace(eng.config(("latency",)), floor_levels=(False, True, True, True))
    stages = [st for st in range(len(eng.stages)) if eng.has_deep_visits(run, st)]
    assert stages
    dims = list(w.sizes)
    rng = np.random.default_rng(5)
    checked, positive = 0, np.zeros(2, int)
    for m, _, t in _fitting_mappings(rng, w, arch, 300):
        ways = np.ones(len(dims), np.int64)
        if m.cols is not None:
            ways[dims.index(m.cols.dim)] = m.cols.ways
        s = np.nonzero((eng.ways == ways).all(1))[0][:1]
        if not len(s):
            continue
        for st in stages:
            every = eng.visit_floors(run, s, t, st)
            shallow = eng.visit_floors(run, s, t, st, "shallow")
            deep = eng.visit_floors(run, s, t, st, "deep")
            for a, b, c in zip(every, shallow, deep):
                assert np.array_equal(np.maximum(b, c), a)
                assert not (b[:, eng.st.array_level + 1:]).any()
                assert not (c[:, :eng.st.array_level + 1]).any()
                positive += np.array([b.any(), c.any()])
            checked += 1
    assert checked > 100 and (positive > 50).all(), (checked, positive)
