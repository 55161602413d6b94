"""AIE data-movement programs: access patterns per transfer, their buffer descriptors within the
hardware's DMA limits, a byte-level DMA simulator, listings and pictures (issue 17)."""
