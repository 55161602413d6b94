"""Ascend-style vector instructions: model, exact simulator, planner, DataCopy.

- :mod:`.mask` — lanes per repeat, continuous / bitwise / counter-mode masks;
- :mod:`.instr` — :class:`VectorInstr` with Ascend C's field ranges and its Ascend C text;
- :mod:`.simulate` — execute instructions on a unified-buffer byte array;
- :mod:`.plan` — the fewest instructions covering a strided tile;
- :mod:`.cover` — exact fewest instructions of the general family ``W`` on small regions;
- :mod:`.templates` — constructive ``W`` covers (overlapping runs, column strips, windows);
- :mod:`.bruteforce` — exhaustive minimum over the planner's families, for small tiles;
- :mod:`.datacopy` — ``DataCopy`` / ``DataCopyPad`` parameters for a GM tile, and their simulation.

Example::

    >>> from tilewise.isa.ascend import Tile, plan, to_ascend_c
    >>> t = lambda base: Tile(base, 30, 100, 128)
    >>> print(to_ascend_c(plan("Add", "f16", t(0), [t(8192), t(16384)])))
    Add(dst[0], src0[0], src1[0], 100, 30, {1, 1, 1, 8, 8, 8});
"""

from .bruteforce import min_plan_length
from .cover import REACH, min_cover
from .datacopy import (CopyCall, DataCopyExtParams, DataCopyParams, GMTensor, UBTile,
                       simulate_copies, tile_copies)
from .instr import (OPS, BinaryRepeatParams, DuplicateParams, Operand, OpSpec,
                    UnaryRepeatParams, VectorInstr, op_spec, to_ascend_c)
from .mask import BitMask, ContinuousMask, CounterMask, block_elems, lanes
from .plan import Tile, plan, tile_of_shape
from .simulate import UB_BYTES, lane_addresses, poison_value, simulate

__all__ = [
    "OPS", "REACH", "BinaryRepeatParams", "BitMask", "ContinuousMask", "CopyCall", "CounterMask",
    "DataCopyExtParams", "DataCopyParams", "DuplicateParams", "GMTensor", "OpSpec", "Operand",
    "Tile", "UBTile", "UB_BYTES", "UnaryRepeatParams", "VectorInstr", "block_elems",
    "lane_addresses", "lanes", "min_cover", "min_plan_length", "op_spec", "plan", "poison_value",
    "simulate",
    "simulate_copies", "tile_copies", "tile_of_shape", "to_ascend_c",
]
