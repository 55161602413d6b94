#!/usr/bin/env bash
# Create .venv (if missing) and install tilewise with its test extras and IREE (the tests
# compile and run a GEMM and a conv through it). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e ".[dev,iree]"
