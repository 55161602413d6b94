"""Tile kernels: one tile of a MAC/einsum, convolution, online softmax, LayerNorm statistics; blocked and incremental attention on arrays."""
