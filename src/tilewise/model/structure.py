"""What the model and the walker derive once from a (workload, arch) pair.

``Structure`` names the dims (workload order), the tensors that move (everything but fused
intermediates and state), the level holding the core array and, per moved tensor, the op whose
loop nest decides its reuse (its first reader or its writer) and, for a tensor read by several
ops of a chain, how many passes walk its tiles (:meth:`Structure.passes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..errors import MappingError
from ..ir.workload import Chain, Op, Tensor


@dataclass(frozen=True)
class Structure:
    workload: Chain
    arch: object

    @cached_property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.workload.sizes)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.workload.sizes.values())

    @property
    def n_levels(self) -> int:
        return len(self.arch.levels)

    @cached_property
    def array_level(self) -> int | None:
        """Index of the level made of the array's cores (None without an array)."""
        if self.arch.array is None:
            return None
        return [lv.name for lv in self.arch.levels].index(self.arch.array.level)

    @cached_property
    def tensors(self) -> tuple[Tensor, ...]:
        return self.workload.tensors

    @cached_property
    def intermediate_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.workload.intermediates)

    @cached_property
    def moved(self) -> tuple[Tensor, ...]:
        """Tensors that travel between levels (chain inputs and final outputs)."""
        return tuple(t for t in self.tensors if t.name not in self.intermediate_names)

    @cached_property
    def outputs(self) -> frozenset[str]:
        """Final outputs (written back, partial sums reloaded)."""
        return frozenset(op.output.name for op in self.workload.ops) - self.intermediate_names

    def owner(self, tensor: str) -> Op:
        """The op whose loop nest sequences this tensor's tiles."""
        for op in self.workload.ops:
            if any(t.name == tensor for t in op.tensors):
                return op
        raise MappingError(f"no op uses tensor {tensor!r}")

    @cached_property
    def spine(self) -> frozenset[str]:
        return frozenset(self.workload.spine)

    def passes(self, tensor: str) -> int:
        """How many times the tiles of a moved input are walked below a real private loop:
        the number of ops reading it when they walk it alike (every reader's dims are the
        tensor's own: LayerNorm's X, read by the statistics pass and again by the normalize
        pass), so each reader moves exactly what one would; 1 for a tensor with one reader.
        0 for several readers that walk it differently (the model cannot count that: such a
        tensor keeps its private dims whole, :mod:`tilewise.model.legality` rule 3)."""
        readers = self.workload.readers(tensor)
        if tensor in self.intermediate_names or len(readers) < 2:
            return 1
        own = set(self.workload.tensor(tensor).dims)
        return len(readers) if all(set(op.dims) == own for op in readers) else 0

