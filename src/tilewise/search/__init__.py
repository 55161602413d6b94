"""tilewise.search: exact search over the tiling space (optimum, top-k, Pareto front),
problem sets in worker processes, and the SQLite solution store.

The entry points are :func:`tilewise.search` and :func:`tilewise.search_many` (both answer
with :class:`~tilewise.search.result.Result`); the engine is :mod:`.optimize`, the space
:mod:`.space`. This package imports nothing on its own (``tilewise/__init__.py`` imports it
early so that the name ``tilewise.search`` stays the function).
"""
