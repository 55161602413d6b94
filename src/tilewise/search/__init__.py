"""tilewise.search: exact search over the tiling space (optimum, top-k, Pareto front),
problem sets in worker processes, and the SQLite solution store."""
