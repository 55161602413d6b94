"""DMA limits as legality: search never returns a mapping whose program breaks them."""

import dataclasses

import pytest

from tilewise.errors import TilewiseError

import tilewise
from tilewise.arch.loader import load_arch
from tilewise.emit.dma.check import check_program
from tilewise.emit.dma.legal import UNCHECKED, dma_verdict, dma_violation
from tilewise.emit.dma.program import build_program
from tilewise.errors import DmaError
from tilewise.ir.library import gemm


def _full_check(workload, arch, mapping):
    """The independent verdict: the whole program built and every descriptor checked."""
    try:
        check_program(build_program(workload, arch, mapping), arch)
    except DmaError as e:
        return str(e)
    return None


def _with_dma(arch, level, **changes):
    """``arch`` with level ``level``'s DMA limits changed and no fixed cost per BD: a pattern
    over the tightened limits is split into more BDs, and with their cost charged the model
    itself would rank such mappings lower; without it, the model alone ranks first mappings
    whose programs break the limits, which is what the check must drop."""
    levels = [dataclasses.replace(lv, transfer_overhead_cycles=0.0) for lv in arch.levels]
    levels[level] = dataclasses.replace(levels[level], dma=dataclasses.replace(levels[level].dma, **changes))
    return dataclasses.replace(arch, levels=tuple(levels))


def test_search_drops_mappings_whose_program_breaks_the_limits():
    """``dma_limits=True``; ``dma_limits=False`` ranks by the model alone. K = 302 int8 (rows
    of 302 B) is programmable since split rows are padded to whole words: no rejection."""
    w = gemm(256, 256, 256, dtype="i8")
    tight = _with_dma(load_arch("aie-4x2"), 0, max_stride_words=64)
    r = tilewise.search(w, tight, top=5, dma_limits=True)
    assert r.stats["rejected"]["dma limits"] > 0 and len(r.top) == 5
    for s in r.top:
        assert _full_check(w, tight, s.mapping) is None
    off = tilewise.search(w, tight, top=1, dma_limits=False)
    assert "dma limits" not in off.stats["rejected"] and "dma_unchecked" not in off.stats
    assert _full_check(w, tight, off.best.mapping) is not None
    odd = gemm(100, 200, 302, dtype="i8")
    r = tilewise.search(odd, "aie-4x2", top=3, dma_limits=True)
    assert "dma limits" not in r.stats["rejected"]
    for s in r.top:
        assert _full_check(odd, load_arch("aie-4x2"), s.mapping) is None


def test_fast_verdict_equals_the_full_check():
    """Both answers (fits / the same first violation), on the limits and on tighter ones."""
    w, arch = gemm(100, 200, 302, dtype="i8"), load_arch("aie-4x2")
    verdicts = []
    picks = [s.mapping for lim in (True, False)
             for s in tilewise.search(w, arch, top=3, dma_limits=lim).top]
    for m in picks:
        for a in (arch, _with_dma(arch, 0, max_stride_words=64)):
            fast, full = dma_violation(w, a, m), _full_check(w, a, m)
            assert (fast is None) == (full is None) == (dma_verdict(w, a, m) is None)
            if fast is not None:  # the same move, buffer, descriptor and field
                assert fast.split(" ", 2)[:2] == full.split(" ", 2)[:2]
                assert fast.split("): ", 1)[1] == full.split("): ", 1)[1]
            verdicts.append(fast)
    assert None in verdicts and any(v is not None for v in verdicts)


def test_a_tighter_dma_changes_the_answer_and_every_returned_program_fits():
    w = gemm(256, 256, 256, dtype="i8")
    arch = load_arch("aie-4x2")
    tight = _with_dma(arch, 0, max_stride_words=64)  # the shim DMA: strides of 256 B at most
    r = tilewise.search(w, tight, top=4, dma_limits=True)
    assert r.stats["rejected"]["dma limits"] > 0
    for s in r.top:
        assert _full_check(w, tight, s.mapping) is None
    assert r.stats["dma_check_capped"] is False and r.stats["dma_unchecked"] == 0


def test_no_programmable_mapping_is_an_error_naming_the_first_violation():
    arch = _with_dma(load_arch("aie-4x2"), 0, word_bytes=3)
    with pytest.raises(DmaError, match=r"no mapping's data movement fits the DMA limits of aie-4x2 .*field"):
        tilewise.search(gemm(32, 32, 32, dtype="i8"), arch, top=2, dma_limits=True)


def test_long_programs_are_reported_unchecked():
    w, arch = gemm(64, 64, 64, dtype="i8"), load_arch("aie-4x2")
    m = tilewise.search(w, arch, top=1).best.mapping
    assert dma_violation(w, arch, m, max_events=1) == UNCHECKED
    assert dma_violation(w, arch, m, max_events=None) is None
    assert dma_verdict(w, arch, m, max_events=1) is None  # the shapes need no walk


def test_archs_without_dma_limits_are_not_checked():
    r = tilewise.search(gemm(16, 16, 16), "cpu-6core", top=2, dma_limits=True)
    assert "dma limits" not in r.stats["rejected"] and "dma_unchecked" not in r.stats


def test_the_check_is_on_by_default_and_dma_limits_must_be_a_bool():
    """The default equals ``dma_limits=True`` (the same top, the same rejections: the check
    costs about 1 ms per listed mapping, docs/usage/dma.md); a non-bool value is one clear
    error."""
    w = gemm(256, 256, 256, dtype="i8")
    tight = _with_dma(load_arch("aie-4x2"), 0, max_stride_words=64)
    default, on = tilewise.search(w, tight, top=3), tilewise.search(w, tight, top=3, dma_limits=True)
    assert [str(s.mapping) for s in default.top] == [str(s.mapping) for s in on.top]
    assert default.stats["rejected"]["dma limits"] == on.stats["rejected"]["dma limits"] > 0
    with pytest.raises(TilewiseError, match="dma_limits='yes' must be True or False"):
        tilewise.search(w, tight, top=1, dma_limits="yes")


def test_cli_dma_limits_is_on_unless_no_dma_limits(tmp_path, capsys):
    from tilewise.arch.loader import arch_to_yaml
    from tilewise.cli import main

    spec = tmp_path / "tight.yaml"
    spec.write_text(arch_to_yaml(_with_dma(load_arch("aie-4x2"), 0, max_stride_words=64)))
    args = ["search", "gemm", "--m", "256", "--n", "256", "--k", "256", "--dtype", "i8",
            "--arch", str(spec), "--top", "3"]
    for on in ([], ["--dma-limits"]):
        assert main(args + on) in (0, None)
        assert "dma limits" in capsys.readouterr().out
    assert main(args + ["--no-dma-limits"]) in (0, None)
    assert "dma limits" not in capsys.readouterr().out


def test_a_ddr_read_over_a_limit_is_rejected_before_the_walk_ends(monkeypatch):
    """The early check (a load's read of the whole tensor in DDR, as the walk streams) stops
    at the first violating move: far fewer walk events than the program has, the same verdict
    as the full check, a violation the full program has too."""
    import tilewise.emit.dma.legal as legal
    from tilewise.simulation.walker import walk

    w = gemm(256, 256, 256, dtype="i8")
    arch = _with_dma(load_arch("aie-4x2"), 0, max_stride_words=32)  # the shim: 128 B strides
    m = tilewise.search(w, load_arch("aie-4x2"), top=1).best.mapping
    used = []

    def counted(*args):
        for ev in walk(*args):
            used.append(ev)
            yield ev

    monkeypatch.setattr(legal, "walk", counted)
    fast = dma_violation(w, arch, m)
    full = _full_check(w, arch, m)
    assert fast is not None and full is not None
    assert fast.split(": ", 1)[1] == full.split(": ", 1)[1]  # ddr.B: needs 256 BDs, ...
    assert len(used) < sum(1 for _ in walk(w, arch, m)) // 4


def test_an_infeasible_search_is_a_capacity_error_with_the_check_on():
    from tilewise.errors import CapacityError

    arch = load_arch("aie-4x2")
    levels = list(arch.levels)
    levels[-1] = dataclasses.replace(levels[-1], capacity_bytes=16)
    tiny = dataclasses.replace(arch, levels=tuple(levels))
    with pytest.raises(CapacityError):
        tilewise.search(gemm(64, 64, 64, dtype="i8"), tiny, top=1)
