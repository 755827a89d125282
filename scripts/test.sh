#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite.
# The suite runs on every core (pytest-xdist); P2GEN_TEST_JOBS=N for N worker processes,
# P2GEN_TEST_JOBS=0 for one process without workers. `loadgroup`: tests/conftest.py keeps
# each file's tests on one worker (their module fixtures build once), except the files it
# names as spread test by test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
PY=${PYTHON:-python3}
exec "$PY" -m pytest -q -n "${P2GEN_TEST_JOBS:-logical}" --dist loadgroup "$@"
