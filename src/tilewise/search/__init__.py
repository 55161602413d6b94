"""tilewise.search: exact search over the tiling space (optimum, top-k, Pareto front),
problem sets in worker processes, and the SQLite solution store.

Importing any ``tilewise.search.*`` module binds the name ``tilewise.search`` to this package
(Python sets a subpackage as an attribute of its parent), which would shadow the function
``tilewise.search(workload, arch, ...)``. So the package itself is callable and forwards to
:func:`tilewise.search.optimize.search`: ``tilewise.search(...)`` works either way.
"""

import sys
import types


class _SearchPackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from .optimize import search

        return search(*args, **kwargs)


sys.modules[__name__].__class__ = _SearchPackage
