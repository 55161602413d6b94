#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite, one worker per core. pytest's exit code 5 ("no tests
# collected") is a failure here, never a silent success.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "setup failed" >&2; exit 1; }
# one worker per core (pytest-xdist); TEST_WORKERS=0 runs in this process. loadgroup: the layout
# kernel tests share one worker (tests/conftest.py), so their numba specializations compile once
.venv/bin/python -m pytest -n "${TEST_WORKERS:-auto}" --dist loadgroup "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    exit 1
fi
exit "$rc"
