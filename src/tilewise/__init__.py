"""tilewise: search, describe and compute blocked (tiled) algorithms for tensor operators.

Public names are imported lazily (``tilewise.pack`` loads the compiled kernels only when first
used), so ``import tilewise`` and the CLI start fast.
"""

from __future__ import annotations

import importlib
from . import _pickle  # noqa: F401  (frozen values picklable for worker processes)

__version__ = "0.2.0"  # bumped when results change: the solution store keys on it

# name -> module that defines it. One section per area; keep each section sorted.
_EXPORTS: dict[str, str] = {
    # errors and dtypes
    "TilewiseError": "tilewise.errors",
    "ParseError": "tilewise.errors",
    "DTypeError": "tilewise.errors",
    "LayoutError": "tilewise.errors",
    "PackError": "tilewise.errors",
    "WorkloadError": "tilewise.errors",
    "SpecError": "tilewise.errors",
    "MappingError": "tilewise.errors",
    "CapacityError": "tilewise.errors",
    "ISAError": "tilewise.errors",
    "DType": "tilewise.dtypes",
    "dtype": "tilewise.dtypes",
    # --- layouts: XLA tiled layouts (issue 2) ---
    "Collapse": "tilewise.layout.convert",
    "Expand": "tilewise.layout.convert",
    "Layout": "tilewise.layout.xla",
    "PackStep": "tilewise.layout.convert",
    "Shape": "tilewise.layout.xla",
    "Tile": "tilewise.layout.xla",
    "Transpose": "tilewise.layout.convert",
    "pack_to_xla": "tilewise.layout.convert",
    "render_png": "tilewise.layout.render",
    "render_text": "tilewise.layout.render",
    "to_mlir": "tilewise.layout.convert",
    "xla_to_pack": "tilewise.layout.convert",
    # --- layouts: MLIR pack/unpack and conversions (issue 2) ---
    "Packing": "tilewise.layout.pack",
    "pack": "tilewise.layout.pack",
    "pack_reference": "tilewise.layout.pack",
    "packed_shape": "tilewise.layout.pack",
    "parse_tensor_type": "tilewise.layout.pack",
    "unpack": "tilewise.layout.pack",
    "unpack_reference": "tilewise.layout.pack",
    # --- workload IR (issue 3) ---
    "Affine": "tilewise.ir.affine",
    "Chain": "tilewise.ir.workload",
    "Dim": "tilewise.ir.workload",
    "Op": "tilewise.ir.workload",
    "Tensor": "tilewise.ir.workload",
    "batched_gemm": "tilewise.ir.library",
    "conv2d": "tilewise.ir.library",
    "einsum": "tilewise.ir.library",
    "gemm": "tilewise.ir.library",
    "gemm_chain": "tilewise.ir.library",
    "layernorm": "tilewise.ir.library",
    "mha": "tilewise.ir.library",
    # --- architecture specs (issue 3) ---
    "Arch": "tilewise.arch.spec",
    "Compute": "tilewise.arch.spec",
    "Level": "tilewise.arch.spec",
    "SpatialArray": "tilewise.arch.spec",
    "load_arch": "tilewise.arch.loader",
    # --- mapping, cost model, simulation (issue 3) ---
    "Cost": "tilewise.model.cost",
    "CostBatch": "tilewise.model.cost",
    "LevelMapping": "tilewise.mapping",
    "Mapping": "tilewise.mapping",
    "MappingBatch": "tilewise.model.batch",
    "Spatial": "tilewise.mapping",
    "Trace": "tilewise.blocked.trace",
    "evaluate": "tilewise.model.cost",
    "evaluate_batch": "tilewise.model.cost",
    "simulate": "tilewise.blocked.trace",
    "walk": "tilewise.blocked.walker",
    # --- blocked execution: execute / reference (issue 5) ---
    "SolutionFile": "tilewise.blocked.solution",
    "VerifyReport": "tilewise.blocked.interpreter",
    "execute": "tilewise.blocked.interpreter",
    "random_inputs": "tilewise.blocked.reference",
    "reference": "tilewise.blocked.reference",
    "verify": "tilewise.blocked.interpreter",
    # --- search (issue 4) ---
    "Result": "tilewise.search.result",
    "search": "tilewise.search.optimize",
    "search_many": "tilewise.search.many",
    # --- blocked execution kernels (issue 5) ---
    "IncrementalAttention": "tilewise.attention",
    "blocked_attention": "tilewise.attention",
    "blocked_layernorm": "tilewise.blocked.layernorm",
    "naive_attention": "tilewise.attention",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tilewise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
