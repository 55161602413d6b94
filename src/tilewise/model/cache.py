"""Whether the cost model's compiled kernel is already in numba's disk cache for this machine.

The model and the search bound are numba kernels compiled on first use and cached on disk
(``__pycache__`` beside their sources). The cache is keyed by the source, the argument types
and the CPU (its name and features): a fresh clone, an edited kernel or another CPU (a VM moved
to other hardware) compiles again, which takes minutes (see the README's Quickstart). The CLI
says so before it starts (:func:`tilewise.cli._util.first_run_notice`).
"""

from __future__ import annotations


def kernel_cached() -> bool | None:
    """True when numba's disk cache holds :func:`tilewise.model.kernel.evaluate_into` compiled
    for this CPU and this source (a search then starts within a second); False when the next
    call compiles it; None when numba's cache cannot be inspected (its internals differ)."""
    from . import kernel

    try:
        dispatcher = kernel.evaluate_into
        if dispatcher.overloads:  # compiled or loaded in this process already
            return True
        magic = dispatcher.targetctx.codegen().magic_tuple()
        index = dispatcher._cache._cache_file._load_index()  # {} when the source changed
    except Exception:  # numba's private API moved: say nothing rather than guess
        return None
    return any(key[1] == magic for key in index)
