"""Architectures built directly from the spec value types, for the model tests."""

from tilewise.arch.spec import Arch, Compute, Level, SpatialArray

GiB = 2**30


def aie_like(rows: int = 4, cols: int = 2, broadcast: bool = True, reduce_cols: bool = True,
             alignment: dict | None = None) -> Arch:
    """DDR (unbounded) -> memtile 512 KiB x2 -> core 48 KiB (6 banks of 8 KiB), 4x2 array."""
    return Arch(
        name="aie-like",
        levels=(
            Level("ddr", None),
            Level("memtile", 512 * 1024, instances=2, read_bandwidth=8 * GiB,
                  write_bandwidth=8 * GiB, channels=2),
            Level("core", 48 * 1024, instances=rows * cols, banks=6, bank_bytes=8192,
                  bank_granular=True, read_bandwidth=8 * GiB, write_bandwidth=8 * GiB, channels=2),
        ),
        compute=Compute(1e9, {"i8": 256, "i16": 64, "i32": 32, "bf16": 128, "f16": 128, "f32": 32},
                        {"i8": 256, "i16": 128, "bf16": 128, "f16": 128, "f32": 64, "i32": 64}),
        array=SpatialArray("core", rows, cols, broadcast, broadcast, reduce_cols),
        alignment=alignment or {},
    )


def two_level(capacity: int | None = 64 * 1024, block_bytes: int = 1) -> Arch:
    """GM -> one buffer (an Ascend-like UB), no array."""
    return Arch(
        name="two-level",
        levels=(Level("gm", None),
                Level("ub", capacity, block_bytes=block_bytes, read_bandwidth=100e9,
                      write_bandwidth=50e9)),
        compute=Compute(1e9, {"i8": 64, "i16": 32, "i32": 16, "bf16": 32, "f16": 32, "f32": 16},
                        call_overhead_cycles=20),
    )


def four_level(rows: int = 2, cols: int = 3) -> Arch:
    """DRAM -> L2 (x2 instances) -> L1 -> register file of each core (the array level)."""
    return Arch(
        name="four-level",
        levels=(
            Level("dram", None),
            Level("l2", 256 * 1024, instances=2, block_bytes=64, read_bandwidth=50e9,
                  write_bandwidth=50e9, channels=1),
            Level("l1", 64 * 1024, read_bandwidth=100e9, write_bandwidth=100e9, channels=2,
                  double_buffer=False),
            Level("rf", 4096, instances=rows * cols, block_bytes=4, read_bandwidth=200e9,
                  write_bandwidth=200e9),
        ),
        compute=Compute(2e9, {"i8": 64, "i16": 32, "i32": 16, "bf16": 32, "f16": 32, "f32": 16}),
        array=SpatialArray("rf", rows, cols, broadcast_rows=True, broadcast_cols=False,
                           reduce_cols=False),
    )


def array_above_innermost() -> Arch:
    """A CPU-like arch whose cores own L2 and L1 (array at L2, the middle of three levels)."""
    return Arch(
        name="cpu-like",
        levels=(Level("l3", 1 << 20, read_bandwidth=0.0),
                Level("l2", 32 * 1024, instances=2, read_bandwidth=64e9, write_bandwidth=64e9),
                Level("l1", 4 * 1024, instances=2, read_bandwidth=128e9, write_bandwidth=128e9)),
        compute=Compute(3e9, {"i8": 32, "i16": 32, "i32": 16, "bf16": 16, "f16": 16, "f32": 16}),
        array=SpatialArray("l2", 1, 2, False, False, False),
    )


def array_in_the_middle(rows: int = 2, cols: int = 3) -> Arch:
    """cpu-6core's shape, smaller: DRAM -> shared L3 -> per-core L2 (the array, broadcast along
    rows) -> per-core L1 (double-buffered), so each core walks its slice through L1."""
    return Arch(
        name="array-middle",
        levels=(Level("dram", None),
                Level("l3", 64 * 1024, block_bytes=8, read_bandwidth=40e9, write_bandwidth=40e9),
                Level("l2", 8 * 1024, instances=rows * cols, read_bandwidth=64e9,
                      write_bandwidth=64e9),
                Level("l1", 1024, instances=rows * cols, read_bandwidth=128e9,
                      write_bandwidth=128e9)),
        compute=Compute(3e9, {"i8": 32, "i16": 32, "i32": 16, "bf16": 16, "f16": 16, "f32": 16}),
        array=SpatialArray("l2", rows, cols, broadcast_rows=True, broadcast_cols=False,
                           reduce_cols=False),
    )


def gpu_like(sram_bytes: int | None = None) -> Arch:
    """HBM -> on-chip SRAM (FlashAttention's two-level model)."""
    return Arch(
        name="gpu-like",
        levels=(Level("hbm", None),
                Level("sram", sram_bytes, read_bandwidth=1.5e12, write_bandwidth=1.5e12)),
        compute=Compute(1.4e9, {"f16": 1024, "bf16": 1024, "f32": 256, "i8": 2048}),
    )


def per_operand(rows: int = 2, cols: int = 2) -> Arch:
    """ZigZag's tpu_like in small: DRAM -> SRAM holding the first inputs and the outputs ->
    per-core registers holding the second inputs and the outputs, each in bytes of its own
    (the first inputs stream from the SRAM into the cores)."""
    return Arch(
        name="per-operand",
        levels=(
            Level("dram", None),
            Level("sram", 16 * 1024, read_bandwidth=64e9, write_bandwidth=64e9,
                  holds=("in1", "out")),
            Level("reg", 512, instances=rows * cols, read_bandwidth=32e9, write_bandwidth=32e9,
                  holds=("in2", "out"), reserved=(("in2", 128), ("out", 128))),
        ),
        compute=Compute(1e9, {"i8": 8, "i16": 8, "i32": 4, "bf16": 8, "f16": 8, "f32": 4}),
        array=SpatialArray("reg", rows, cols, True, False, True),
    )


def output_registers(rows: int = 2, cols: int = 2) -> Arch:
    """ZigZag's gemm_l1_l3 in small: L3 -> L1 -> output-only registers per core (the inputs
    are read from L1 by the cores)."""
    return Arch(
        name="output-registers",
        levels=(
            Level("l3", None),
            Level("l1", 8 * 1024, read_bandwidth=64e9, write_bandwidth=64e9, block_bytes=4),
            Level("reg", 256, instances=rows * cols, read_bandwidth=32e9, write_bandwidth=32e9,
                  holds=("out",), double_buffer=False),
        ),
        compute=Compute(1e9, {"i8": 8, "i16": 8, "i32": 4, "bf16": 8, "f16": 8, "f32": 4}),
        array=SpatialArray("reg", rows, cols, False, True, False),
    )
