"""What one search looked at: counters filled during the walk, reported as ``Result.stats``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class SearchStats:
    """Counters of one walk (counts of nodes or candidates).

    ``tile_combos`` the size of the tile space; ``examined_combos`` nodes with every tile fixed;
    ``evaluated`` full mappings bounded exactly; ``candidates`` those x double-buffer choices;
    ``valid`` the ones that fit; ``ranked`` those costed as leaves and ranked (the others,
    ``pruned_candidates``, were dropped by their bound: ``candidates = ranked +
    pruned_candidates``); ``rejected`` nodes (or candidates) dropped per constraint;
    ``smallest`` per level the smallest rejected candidate ``(bytes, tiles, buffers, other,
    capacity)`` for the empty-space message; ``pruned_candidates`` candidates dropped by their
    bound before ranking (once each, when finally dropped: a deferred one is counted only if
    no later pass ranks it); ``leaves`` full mappings costed under every double-buffer choice;
    ``nodes`` nodes expanded; ``passes`` threshold passes; ``timed_out`` whether the walk
    stopped early (:mod:`.anytime`): at its time limit, or at a stop request
    (``interrupted``); then ``lower_bound`` is the proven least objective of any mapping (the
    objective's units), else None."""

    tile_combos: int
    examined_combos: int = 0
    evaluated: int = 0
    candidates: int = 0
    valid: int = 0
    ranked: int = 0
    rejected: dict = field(default_factory=dict)
    smallest: dict = field(default_factory=dict)
    pruned_candidates: int = 0
    leaves: int = 0
    nodes: int = 0
    passes: int = 0
    timed_out: bool = False
    interrupted: bool = False
    lower_bound: float | None = None

    def reject(self, key: str, mask: np.ndarray, per: int = 1) -> None:
        """Count the ``True`` entries of ``mask`` (``per`` candidates each) as rejected by ``key``."""
        if mask.any():
            self.rejected[key] = self.rejected.get(key, 0) + int(mask.sum()) * per

    def report(self, seconds: float) -> dict:
        """The ``Result.stats`` dict: the counters (``smallest`` as ``smallest_rejected``, the
        bytes per level), ``seconds`` and ``candidates_per_s``."""
        out = asdict(self)
        smallest = out.pop("smallest")
        out["seconds"] = seconds
        out["candidates_per_s"] = self.candidates / max(seconds, 1e-9)
        out["smallest_rejected"] = {k: v[0] for k, v in smallest.items()}
        return out
