"""Model importers: network files -> tilewise workloads (ONNX: :func:`.onnx.import_onnx`)."""
