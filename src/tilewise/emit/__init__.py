"""Code from tilewise solutions: MLIR for IREE (:mod:`.mlir`) and compiling and running it
(:mod:`.iree`)."""
