#!/usr/bin/env bash
# Set up kloop and the test-only tools, then run the whole test suite.
#
#   bash scripts/test.sh [PYTEST ARGS...]
#
# The suite runs on one worker more than the machine has cores (pytest-xdist; KLOOP_TEST_WORKERS
# overrides the count, 0 runs it in one process): with one worker a core, a clean run on 2 cores
# used 1,009 CPU-seconds in 1,198 s of wall time (42 % of the cores), the rest waiting on agent
# time limits, sandboxes starting and Ray. Tests grouped with `xdist_group` share one worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/test-tools.sh
exec .venv/bin/python -m pytest -q -n "${KLOOP_TEST_WORKERS:-$(( $(nproc) + 1 ))}" --dist loadgroup "$@"
