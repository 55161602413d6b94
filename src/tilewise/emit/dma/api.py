"""``emit_dma``: the checked data-movement program of a solution (the API and CLI entry)."""

from __future__ import annotations

from ...errors import DmaError
from ..mlir import solution_parts
from .check import check_program
from .program import Program, build_program


def emit_dma(what, arch=None, mapping=None) -> Program:
    """The program of a search Result (its best solution), a SolutionFile, or a workload with
    ``arch`` and ``mapping``; every descriptor checked against the arch's DMA limits
    (:func:`~.check.check_program`; DmaError names the move, descriptor and field)."""
    workload, arch, mapping = solution_parts(what, arch, mapping)
    if mapping is None:
        raise DmaError("a DMA program needs a mapping (mapping=, or a search Result / solution file)")
    program = build_program(workload, arch, mapping)
    check_program(program)
    return program
