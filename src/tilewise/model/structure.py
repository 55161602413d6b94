"""What the model and the walker derive once from a (workload, arch) pair.

``Structure`` names the dims (workload order), the tensors that move (everything but fused
intermediates and state), the level holding the core array and, per moved tensor, the op whose
loop nest decides its reuse (its first reader or its writer) and, for a tensor read by several
ops of a chain, how many passes walk its tiles (:meth:`Structure.passes`); which level keeps
which tensor (:attr:`Structure.held`, from the levels' ``holds``) and in which part of its
capacity (:attr:`Structure.part`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import MappingError, SpecError
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

    @cached_property
    def projected(self) -> bool:
        """Whether the chain runs seed 004's fused loop tree in every loop order: every op a
        plain ``mac`` (no online state, no softmax or normalization) and every moved tensor
        read by one op. The ops then share the loops above the first real private loop and
        each runs the rest of the nest projected onto its own dims, one op after the other,
        the intermediates kept whole over that rest (:func:`.rules.panel_tile`). Other chains
        (attention, LayerNorm) keep their spine loops first (:mod:`.legality` rule 1)."""
        ops = self.workload.ops
        return (len(ops) > 1 and all(op.kind == "mac" and not op.state and not op.attrs
                                     for op in ops)
                and all(len(self.workload.readers(t.name)) <= 1 for t in self.moved))

    @cached_property
    def mergeable(self) -> frozenset[str]:
        """Reduction dims whose partial results from several cores merge exactly, so a
        spatial split may cut them (partials combined along the array's reduction path):
        every reduction dim of a single op (partial sums add); in a chain, a dim reduced only
        by ops rescaled online by a softmax along that dim (attention's keys ``n``: each core
        keeps a partial (max, denominator, numerator), merged by seed 003's Eq. 12)."""
        ops = self.workload.ops
        if len(ops) == 1:
            return frozenset(ops[0].reduction_dims)
        by_name = {op.name: op for op in ops}
        out = set()
        for d in self.workload.sizes:
            reducing = [op for op in ops if d in op.reduction_dims]
            if reducing and all(_online_along(op, by_name) == d or _moments_over(op, d, ops)
                                for op in reducing):
                out.add(d)
        return frozenset(out)

    @cached_property
    def parent_mergeable(self) -> frozenset[str]:
        """The :attr:`mergeable` dims whose partials may also merge *through the parent
        level* (a split on an axis without a reduction path): those whose reducing ops write
        final outputs, so that the partials are moved tensors the model counts (GEMM/conv
        sums, attention's numerator), not fused statistics (LayerNorm's moments)."""
        return frozenset(d for d in self.mergeable
                         if _final_outputs(self.workload.ops, d, self.outputs))

    def holders(self, word: str) -> tuple[int, ...]:
        """Indices (into :attr:`tensors`) of the moved tensors a level's ``holds`` word names:
        a tensor name, else a role (``in1`` / ``in2`` / ``in3``: that input of every op, where
        it moves; ``out``: every final output). SpecError naming the valid words otherwise."""
        names = [t.name for t in self.tensors]
        if word in names:
            return (names.index(word),)
        moved = {t.name for t in self.moved}
        if word == "out":
            return tuple(i for i, n in enumerate(names) if n in self.outputs)
        if word in ("in1", "in2", "in3"):
            k = int(word[2]) - 1
            hit = {op.inputs[k].name for op in self.workload.ops
                   if len(op.inputs) > k and op.inputs[k].name in moved}
            return tuple(i for i, n in enumerate(names) if n in hit)
        raise SpecError(f"arch {self.arch.name}: a level holds {word!r}, but workload "
                        f"{self.workload.name} has no tensor or role of that name; tensors: "
                        f"{', '.join(t.name for t in self.moved)}; roles: in1, in2, in3, out")

    @cached_property
    def held(self) -> np.ndarray:
        """``[L, T]`` bool: level ``l`` keeps tensor ``t`` (every level keeps every tensor
        unless it declares ``holds``; fused intermediates live innermost whatever it says).
        A moved tensor a level does not hold bypasses it."""
        out = np.ones((self.n_levels, len(self.tensors)), bool)
        moved = [t.name not in self.intermediate_names for t in self.tensors]
        for l, lv in enumerate(self.arch.levels):
            if lv.holds is not None:
                keep = {i for w in lv.holds for i in self.holders(w)}
                out[l] = [i in keep or not moved[i] for i in range(len(self.tensors))]
        return out

    @cached_property
    def part(self) -> np.ndarray:
        """``[L, T]`` int: the part of level ``l``'s capacity tensor ``t`` is allocated in: 0
        the shared part, ``i + 1`` the ``i``-th reserved part of ``Level.reserved``."""
        out = np.zeros((self.n_levels, len(self.tensors)), np.int64)
        for l, lv in enumerate(self.arch.levels):
            owner: dict[int, str] = {}
            for i, (word, _) in enumerate(lv.reserved):
                for t in self.holders(word):
                    if t in owner:
                        raise SpecError(
                            f"arch {self.arch.name}: level {lv.name} reserves bytes for "
                            f"{self.tensors[t].name} twice (as {owner[t]!r} and {word!r})")
                    owner[t] = word
                    out[l, t] = i + 1
        return out

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


def _final_outputs(ops, d: str, outputs) -> bool:
    """Whether every op reducing ``d`` writes a final output (its partials are moved)."""
    return all(op.output.name in outputs for op in ops if d in op.reduction_dims)


def _online_along(op: Op, ops: dict) -> str | None:
    """The dim of the softmax that rescales ``op`` online (its ``online_rescale``), or None."""
    sm = ops.get(op.attrs.get("online_rescale", ""))
    return None if sm is None else sm.attrs.get("along")


def _moments_over(op: Op, d: str, ops) -> bool:
    """Whether ``op`` reduces ``d`` into mergeable statistics (a ``norm`` op, Welford moments)
    and every op of the chain walks ``d`` (so every op's tiles split alike)."""
    return op.kind == "norm" and all(d in o.dims for o in ops)
