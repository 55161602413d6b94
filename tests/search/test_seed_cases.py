"""Seed 003's worked cases on ``aie-4x2``, searched exactly (``docs/seed-cases.md`` puts them
beside the seed's hand derivations). The optima are pinned: a change of the model or of the
search that moves one must say why in that document."""

import pytest

import tilewise as tw

CASES = [
    # (workload, optimum latency µs, x compute-bound minimum, a feature of the optimum); the
    # preset charges 64 cycles per kernel call and 32 per DMA transfer (docs/fixed-overheads.md),
    # so core tiles are large
    (tw.gemm(512, 768, 768, dtype="i8"), 304.84, 1.0337, "core[m64 n32 k256]"),
    (tw.gemm(512, 768, 768, dtype="i16"), 607.35, 1.0297, "core[m64 n32 k128]"),
    (tw.gemm(512, 3072, 768, dtype="i8"), 1203.40, 1.0201, "core[m64 n32 k256]"),
    (tw.mha(512, 512, 64, dtype="i16"), 72.73, 1.0926, "rows=m4 cols=m2"),  # one head, 8 cores
]


@pytest.mark.parametrize("w,lat_us,ratio,feature", CASES,
                         ids=[f"{c[0].name}-{c[1]}" for c in CASES])
def test_seed_case_optimum(w, lat_us, ratio, feature):
    r = tw.search(w, "aie-4x2", top=3)
    assert r.best.latency_s * 1e6 == pytest.approx(lat_us, abs=0.005)
    assert r.best.xslowdown == pytest.approx(ratio, abs=5e-5 if ratio < 2 else 5e-4)
    assert any(feature in str(s.mapping) for s in r.top if s.latency_s == r.best.latency_s)
    # the reported cost is the model's for the reported mapping
    assert tw.evaluate(w, "aie-4x2", r.best.mapping).latency_s == pytest.approx(r.best.latency_s)
