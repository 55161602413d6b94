"""tilewise.blocked: blocked (tiled) loop nests — the walker, the simulation trace, tile kernels."""
