"""Whole networks and design-space sweeps: :mod:`.model_search` (every layer of an imported
model on one arch, each distinct workload solved once) and :mod:`.sweep` (arch parameters
varied over a model or a workload set, with the Pareto front)."""
