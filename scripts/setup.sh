#!/usr/bin/env bash
# Create .venv (if missing) and install tilewise with its test extras (onnx: the importer's
# tests read real ONNX models; ray: a test runs searches on a local Ray cluster; iree: the
# tests compile and run a GEMM and a conv through it). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e ".[dev,onnx,ray,iree]"
