"""tilewise: search, describe and compute blocked (tiled) algorithms for tensor operators.

Public names are imported lazily (``tilewise.pack`` loads the compiled kernels only when first
used), so ``import tilewise`` and the CLI start fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

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
    # --- layouts: MLIR pack/unpack and conversions (issue 2) ---
    # --- workload IR (issue 3) ---
    # --- architecture specs (issue 3) ---
    # --- mapping, cost model, simulation (issue 3) ---
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
