"""Brute force over the unpruned declared space, and small archs for the search tests."""

import numpy as np

from tilewise.arch.spec import Arch, Compute, Level, SpatialArray
from tilewise.errors import MappingError
from tilewise.model.cost import evaluate
from tilewise.search.space import Space, iter_mappings

GiB = 2**30


def small_aie(rows=2, cols=2, core_bytes=4096, bank=512, mem_bytes=16384, alignment=None,
              energy=False, memtile=True) -> Arch:
    """A scaled-down aie-4x2: DDR -> memtile (x2) -> core (banked), rows x cols array;
    ``memtile=False`` drops the memtile (DDR -> core) to keep brute force small."""
    e = {"energy_pj_per_byte": 10.0} if energy else {}
    mem = (Level("memtile", mem_bytes, instances=2, read_bandwidth=8 * GiB,
                 write_bandwidth=8 * GiB, channels=2, **e),) if memtile else ()
    return Arch(
        name="small-aie",
        levels=(Level("ddr", None),
                *mem,
                Level("core", core_bytes, instances=rows * cols, banks=core_bytes // bank,
                      bank_bytes=bank, bank_granular=True, read_bandwidth=4 * GiB,
                      write_bandwidth=4 * GiB, channels=2, **({"energy_pj_per_byte": 1.0} if energy else {}))),
        compute=Compute(1e9, {"i8": 16, "i16": 8, "i32": 4, "bf16": 8},
                        {"i8": 32, "i16": 16, "bf16": 16, "i32": 8},
                        **({"energy_pj_per_mac": 0.5} if energy else {})),
        array=SpatialArray("core", rows, cols, True, True, True),
        alignment=alignment or {},
    )


def brute_force(workload, arch, metric, **constraints):
    """(value, core volume, mapping) of every valid mapping of the unpruned space, evaluated one
    by one with tilewise.evaluate."""
    space = Space.build(workload, arch, **constraints)
    out = []
    for m in iter_mappings(space):
        try:
            c = evaluate(workload, arch, m, check_capacity=False)
        except MappingError:
            continue
        if not c.fits:
            continue
        out.append((metric(c), m, c))
    return out
