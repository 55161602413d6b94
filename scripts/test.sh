#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite. pytest's exit code 5 ("no tests
# collected") is a failure here, never a silent success.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed" >&2; exit 1; }
.venv/bin/python -m pytest "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$rc"
