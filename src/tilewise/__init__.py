"""tilewise: search, describe and compute blocked (tiled) algorithms for tensor operators.

``import tilewise`` gives the user's vocabulary: workload constructors, ``load_arch``,
``Mapping``, the entry points ``search``, ``search_many``, ``evaluate``, ``simulate``,
``execute``, ``verify``, ``emit_mlir`` and ``compile`` (IREE), ``emit_dma`` (AIE DMA programs), the network ones ``import_onnx``,
``search_model`` and ``sweep``, their results (``Result``, ``Solution``, ``Cost``, ``Trace``,
``VerifyReport``), the errors and the layout helpers. Internals (``MappingBatch``,
``CostBatch``, ``evaluate_batch``, the search engine) are imported from their submodules.

Every entry point takes an arch as an :class:`Arch`, a preset name or a YAML path
(:func:`load_arch`) and a mapping as a :class:`Mapping` or its text form
(:func:`tilewise.mapping.as_mapping`). Names other than the entry points are imported lazily
(``tilewise.pack`` loads the compiled kernels only when first used), so ``import tilewise``
and the CLI start fast. Importing tilewise has no process-wide side effects.
"""

from __future__ import annotations

import importlib

# The subpackage ``tilewise.search`` is imported here, *before* the function ``search`` below
# is defined: Python binds a subpackage as an attribute of its parent when the subpackage is
# first imported, so importing it first (it is light: its modules load lazily) means that a
# later ``import tilewise.search.optimize`` finds it in sys.modules and never rebinds
# ``tilewise.search``; the name stays the function, whatever the import order. (Use ``from
# tilewise.search import optimize``, not ``import tilewise.search.optimize as optimize``: the
# latter looks the package up as an attribute of ``tilewise`` and finds the function.)
from . import search as _search_package  # noqa: F401
from ._version import __version__

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
    "LevelMapping": "tilewise.mapping",
    "Mapping": "tilewise.mapping",
    "Spatial": "tilewise.mapping",
    "Trace": "tilewise.simulation.trace",
    "walk": "tilewise.simulation.walker",
    # --- blocked execution: execute / reference (issue 5) ---
    "SolutionFile": "tilewise.executor.solution",
    "VerifyReport": "tilewise.executor.interpreter",
    "random_inputs": "tilewise.executor.reference",
    "reference": "tilewise.executor.reference",
    # --- AIE data-movement programs (issue 17) ---
    "DmaError": "tilewise.errors",
    "check_program": "tilewise.emit.dma.check",
    "run_program": "tilewise.emit.dma.simulator",
    # --- search (issue 4) ---
    "Problem": "tilewise.search.many",
    "Result": "tilewise.search.result",
    "Solution": "tilewise.search.result",
    "search_many": "tilewise.search.many",
    # --- networks: ONNX import, network search, arch sweeps (issue 16) ---
    "ImportedModel": "tilewise.importers.onnx",
    "ModelError": "tilewise.errors",
    "NetworkResult": "tilewise.network.model_search",
    "SweepResult": "tilewise.network.sweep",
    "import_onnx": "tilewise.importers.onnx",
    "search_model": "tilewise.network.model_search",
    "sweep": "tilewise.network.sweep",
    # --- blocked execution kernels (issue 5) ---
    "IncrementalAttention": "tilewise.tiles.attention",
    "blocked_attention": "tilewise.tiles.attention",
    "blocked_layernorm": "tilewise.tiles.layernorm",
    "naive_attention": "tilewise.tiles.attention",
}

_ENTRY_POINTS = ["compile", "emit_dma", "emit_mlir", "evaluate", "execute", "search", "simulate", "verify"]
__all__ = sorted([*_EXPORTS, *_ENTRY_POINTS]) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tilewise' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__


# --------------------------------------------------------------------------- entry points
# Each coerces its arch with load_arch and its mapping with as_mapping, then calls the
# implementation in its layer (imported here, on first call).


def search(workload, arch, objective: str = "latency", top: int = 10, *, then=None,
           tolerance=0.0, progress=None, monotone=None, time_limit=None, stop=None,
           **constraints):
    """The exact optimum and top-``top`` mappings of ``workload`` on ``arch`` for
    ``objective`` ("latency" s, "traffic" off-chip bytes, "energy" J, "edp" J·s, "space"
    on-chip bytes, "ratio" 𝔽 maximized), as a :class:`Result`; ties, and objectives within
    ``tolerance`` (0.005 or "0.5%") of the optimum, ranked by the secondary keys ``then``
    (e.g. ``("traffic", "energy")``); ``constraints``: ``double_buffer``, ``max_core_tile``, ``orders``,
    ``spatial`` (one text such as ``"rows=n4 cols=m2"`` or a list of them; ``"any"``,
    ``"none"``) and ``tiles`` (:mod:`tilewise.search.optimize`). ``progress(done, total)`` is
    called after each chunk of tile combos. :func:`search_many` answers a list of problems with
    the same Result type. A custom ``objective`` (a function of the metrics, or an expression
    such as ``"latency * energy ** 0.5"``) is searched exactly when ``monotone=True``
    (:mod:`tilewise.search.custom`). ``time_limit`` (seconds): the best found by then, with
    the proven gap to the optimum in ``stats`` (:mod:`tilewise.search.anytime`); ``stop()``
    returning True stops the search the same way."""
    from .arch.loader import load_arch
    from .search.many import normalize_constraints
    from .search.optimize import search as run

    return run(_as_workload(workload), load_arch(arch), objective, top, then=then, tolerance=tolerance,
               progress=progress, monotone=monotone, time_limit=time_limit, stop=stop,
               **normalize_constraints(constraints))


def evaluate(workload, arch, mapping, check_capacity: bool = True):
    """The :class:`Cost` of one mapping (validated: MappingError names the culprit). With
    ``check_capacity`` a footprint over a level's capacity raises CapacityError; without, the
    cost has ``fits=False``."""
    from .arch.loader import load_arch
    from .mapping import as_mapping
    from .model.cost import evaluate as run

    return run(_as_workload(workload), load_arch(arch), as_mapping(mapping), check_capacity)


def simulate(workload, arch, mapping):
    """Walk ``mapping`` tile by tile and count transfers, residency and compute steps (a
    :class:`Trace`; plain Python: small problems or large tiles)."""
    from .arch.loader import load_arch
    from .simulation.trace import simulate as run
    from .mapping import as_mapping
    from .model.legality import validate

    workload, arch, mapping = _as_workload(workload), load_arch(arch), as_mapping(mapping)
    validate(workload, arch, mapping)
    return run(workload, arch, mapping)


def execute(workload, mapping, inputs=None, seed: int = 0, *, arch=None):
    """Run ``mapping`` of ``workload`` tile by tile; the final outputs by name (numpy arrays).
    ``inputs``: name -> array per input tensor (None: random from ``seed``). ``arch`` None
    picks the one preset whose level names match the mapping."""
    from .executor.interpreter import execute as run
    from .mapping import as_mapping

    return run(_as_workload(workload), as_mapping(mapping), inputs, seed, arch=_optional_arch(arch))


def verify(workload, mapping, inputs=None, seed: int = 0, *, arch=None):
    """:func:`execute` compared with the numpy reference on the same inputs: a
    :class:`VerifyReport` (integers exact, floats within a tolerance)."""
    from .executor.interpreter import verify as run
    from .mapping import as_mapping

    return run(_as_workload(workload), as_mapping(mapping), inputs, seed, arch=_optional_arch(arch))


def _as_workload(workload):
    """The workload check of every entry point (:func:`tilewise.ir.workload.as_workload`)."""
    from .ir.workload import as_workload as check

    return check(workload)


def emit_mlir(workload, arch=None, mapping=None, lanes: int | None = None):
    """The MLIR module IREE compiles for ``workload`` tiled as ``mapping`` on ``arch`` (an
    :class:`~tilewise.emit.mlir.Emitted`: ``.text``, ``.config``, ``.dropped``). ``workload``
    may be a search :class:`Result` (its best mapping) or a :class:`SolutionFile`; no mapping:
    IREE's default tiling. ``lanes``: 32-bit lanes per vector (default: this CPU's)."""
    from .emit.iree import host_lanes
    from .emit.mlir import emit_mlir as run

    return run(workload, arch, mapping, host_lanes() if lanes is None else lanes)


def emit_dma(workload, arch=None, mapping=None):
    """The AIE data-movement program of a solution (a :class:`~tilewise.emit.dma.program.Program`:
    buffers, moves with access patterns and buffer descriptors within the arch's DMA limits):
    ``workload`` may be a search :class:`Result` or a :class:`SolutionFile`. Run it with
    :func:`run_program`, check it with :func:`check_program`."""
    from .emit.dma.api import emit_dma as run

    return run(workload, arch, mapping)


def compile(workload, arch=None, mapping=None, lanes: int | None = None):
    """:func:`emit_mlir` compiled by IREE for this CPU: a :class:`~tilewise.emit.iree.Compiled`,
    callable on the inputs (name -> array) and returning the output. Needs the ``iree`` extra
    (``pip install 'tilewise[iree]'``)."""
    from .emit.iree import compile as run
    from .emit.mlir import solution_parts

    return run(*solution_parts(workload, arch, mapping), lanes=lanes)


def _optional_arch(arch):
    from .arch.loader import load_arch

    return None if arch is None else load_arch(arch)
