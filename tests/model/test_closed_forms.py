"""The model against closed forms: seed 004's GEMM-chain DV, FlashAttention's HBM count, a
hand-computed latency, and seed 003's AIE GEMM on the aie-4x2 preset."""

from tilewise.arch.loader import load_arch
import math

import pytest

from tilewise import Arch, Mapping, evaluate, gemm, gemm_chain, mha
from tilewise.errors import CapacityError

from .archs import gpu_like, two_level
from .test_model_vs_simulation import _compare


def _elements(cost, level, tensor, wl, table="reads"):
    return getattr(cost, table)[level].get(tensor, 0) // wl.tensor(tensor).element_bytes


@pytest.mark.parametrize("M,K,L,N,TM,TK,TL,TN", [
    (8, 6, 10, 4, 4, 3, 5, 2),      # divisible
    (9, 7, 10, 5, 4, 3, 4, 2),      # partial tiles everywhere
    (12, 16, 12, 8, 12, 4, 3, 4),   # one m tile
])
def test_seed004_gemm_chain_dv_for_order_mlkn(M, K, L, N, TM, TK, TL, TN):
    """DV = MK⌈L/T_L⌉ + KL⌈M/T_M⌉ + NL⌈M/T_M⌉ + MN⌈L/T_L⌉ (A, B, D reads; E write-backs).

    Derivation: A[m,k] changes with every (m, l, k) step because k (trip > 1) is innermost in
    C's nest; B[k,l] and D[l,n] change every step; E[m,n] is written back per l tile because l
    (E's reduction) encloses n. The seed leaves out that each write-back but the first is
    preceded by a reload: MN(⌈L/T_L⌉ - 1) more, checked separately. C moves 0 bytes.
    """
    wl = gemm_chain(M, K, L, N, dtype="i8")
    m = Mapping.parse(f"gm[m{M} k{K} l{L} n{N}] mlkn | ub[m{TM} k{TK} l{TL} n{TN}]")
    cost, _ = _compare(wl, two_level(capacity=None), m)
    cl, cm = math.ceil(L / TL), math.ceil(M / TM)
    assert _elements(cost, "ub", "A", wl) == M * K * cl
    assert _elements(cost, "ub", "B", wl) == K * L * cm
    assert _elements(cost, "ub", "D", wl) == N * L * cm
    assert _elements(cost, "ub", "E", wl, "writes") == M * N * cl
    assert _elements(cost, "ub", "E", wl, "reloads") == M * N * (cl - 1)
    assert "C" not in cost.reads["ub"] and "C" not in cost.writes["ub"]
    dv = sum(_elements(cost, "ub", t, wl) for t in "ABD") + _elements(cost, "ub", "E", wl, "writes")
    assert dv == M * K * cl + K * L * cm + N * L * cm + M * N * cl


def test_gemm_chain_reuse_when_a_loop_iterates_once_beats_chimera():
    """With k whole, A's tile does not change across l: loaded once, not ⌈L/T_L⌉ times
    (Chimera's formula counts MK⌈L/T_L⌉ regardless)."""
    wl = gemm_chain(8, 6, 10, 4)
    m = Mapping.parse("gm[m8 k6 l10 n4] mlkn | ub[m4 k6 l5 n2]")
    cost, _ = _compare(wl, two_level(capacity=None), m)
    assert _elements(cost, "ub", "A", wl) == 8 * 6


@pytest.mark.parametrize("N,d,Br,Bc", [(64, 8, 16, 16), (64, 8, 8, 32), (48, 4, 16, 8),
                                       (50, 8, 16, 16)])
def test_flashattention_hbm_traffic(N, d, Br, Bc):
    """FlashAttention (Dao et al. 2022, Thm 2): Q, O once, K and V once per query block:
    Nd + 2Nd⌈N/B_r⌉ + Nd elements — Θ(N²d²/M) for B_r = Θ(M/d)."""
    wl = mha(N, N, d, heads=1, dtype="f16", out_dtype="f16")
    m = Mapping.parse(f"hbm[h1 m{N} n{N} k{d} e{d}] hmnke | sram[h1 m{Br} n{Bc} k{d} e{d}]")
    cost, _ = _compare(wl, gpu_like(), m)
    e = lambda t, table="reads": _elements(cost, "sram", t, wl, table)
    blocks = math.ceil(N / Br)
    assert e("Q") == N * d and e("O", "writes") == N * d and e("O", "reloads") == 0
    assert e("K") == N * d * blocks and e("V") == N * d * blocks
    assert cost.offchip_bytes == 2 * (2 * N * d + 2 * N * d * blocks)


def test_flashattention_traffic_scales_as_n2_d2_over_m():
    """Fix SRAM M (elements) and B_r = M / (4d): K/V traffic ∝ N²d²/M."""
    def kv_traffic(N, d, M):
        Br = M // (4 * d)
        wl = mha(N, N, d, dtype="f16", out_dtype="f16")
        m = Mapping.parse(f"hbm[h1 m{N} n{N} k{d} e{d}] hmnke | sram[h1 m{Br} n{Br} k{d} e{d}]")
        c = evaluate(wl, gpu_like(), m)
        return (c.reads["sram"]["K"] + c.reads["sram"]["V"]) // 2
    base = kv_traffic(128, 8, 1024)
    assert base == 2 * 128 * 128 * 8 * 8 * 4 // 1024
    assert kv_traffic(256, 8, 1024) == 4 * base   # N x2 -> x4
    assert kv_traffic(128, 16, 2048) == 2 * base  # d x2 at M x2 -> x2 (d²/M)
    assert kv_traffic(128, 8, 2048) * 2 == base   # M x2 -> /2


def test_latency_hand_computed():
    """gm -> ub: read 100 GB/s, write 50 GB/s; f32 16 MACs/cycle at 1 GHz, 20 cycles per kernel
    call; 64³ GEMM, 32x32x64 tiles.

    A loads: 2 x 8192 B (reused across n); B: 4 x 8192; C written 4 x 4096 x 4 B.
    T_link = max(49152 / 100e9, 16384 / 50e9) = 4.9152e-7 s;
    T_c = 4 calls x (32·32·64 / 16 + 20) cycles / 1e9.
    """
    wl = gemm(64, 64, 64, dtype="f32", out_dtype="f32")
    arch = two_level(capacity=None)
    assert arch.compute.call_overhead_cycles == 20
    Tc, Tl = 4 * (32 * 32 * 64 / 16 + 20) / 1e9, 49152 / 100e9
    none = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] mnk | ub[m32 n32 k64]"))
    assert none.reads["ub"] == {"A": 16384, "B": 32768} and none.writes["ub"] == {"C": 16384}
    assert none.compute_s == pytest.approx(Tc) and none.transfer_s["ub"] == pytest.approx(Tl)
    assert none.latency_s == pytest.approx(Tc + Tl)
    assert none.ratio["ub"] == pytest.approx(64 ** 3 / 16 / 1e9 / Tl)  # useful compute / link
    assert none.utilization == pytest.approx(64 ** 3 / 16 / 1e9 / (Tc + Tl))
    db = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] mnk | ub[m32 n32 k64] db:A,B,C"))
    assert db.latency_s == pytest.approx(max(Tc, Tl) + Tl / 4)
    part = evaluate(wl, arch, Mapping.parse("gm[m64 n64 k64] mnk | ub[m32 n32 k64] db:A"))
    exposed = max(32768 / 100e9, 16384 / 50e9)
    assert part.latency_s == pytest.approx(max(Tc + exposed, Tl) + (Tl - exposed) / 4)


def test_seed003_gemm_on_aie_4x2_preset():
    """512x768x768 i8 -> i8 (seed §III.B): core c = (64, 64, 128): A, B ping/pong 8 KiB each,
    C 16 KiB of i32 sums = 6 banks; memtile m = (2·64, 4·64, 768) over cols=m2, rows=n4."""
    arch = load_arch("aie-4x2")
    wl = gemm(512, 768, 768, dtype="i8", out_dtype="i8")
    m = Mapping.from_triplet(wl, arch, (512, 768, 768), (128, 256, 768), (64, 64, 128),
                             orders=["mnk", "mnk"], rows="n4", cols="m2",
                             double_buffer=[(), ("B",), ("A", "B")])
    cost = evaluate(wl, arch, m)
    assert cost.footprint["core"] == 48 * 1024
    # C leaves every core once per tile: 384 KiB in total, not once per outer loop
    assert cost.writes["core"]["C"] == cost.writes["memtile"]["C"] == 512 * 768
    # A is broadcast along the 4 cores of a row, B along the 2 of a column
    assert cost.reads["memtile"]["A"] == 512 * 768       # A (m) reused across the n tiles
    assert cost.reads["memtile"]["B"] == 768 * 768 * 4   # B once per m tile
    assert cost.reads["core"]["A"] == 512 * 768 * 3      # per core tile column block
    assert cost.reads["core"]["B"] == 768 * 768 * 4
    with pytest.raises(CapacityError, match="level core: the tiles need 65536 bytes per instance but it holds 49152"):
        evaluate(wl, arch, Mapping.from_triplet(
            wl, arch, (512, 768, 768), (128, 256, 768), (64, 64, 128), rows="n4", cols="m2",
            double_buffer=[(), (), ("A", "B", "C")]))
