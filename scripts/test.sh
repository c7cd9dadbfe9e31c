#!/usr/bin/env bash
# Set up kloop and the test-only tools, then run the whole test suite.
#
#   bash scripts/test.sh [PYTEST ARGS...]
#
# The suite runs on every core (pytest-xdist; KLOOP_TEST_WORKERS overrides the worker count,
# 0 runs it in one process). Tests grouped with `xdist_group` share one worker.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/test-tools.sh
exec .venv/bin/python -m pytest -q -n "${KLOOP_TEST_WORKERS:-auto}" --dist loadgroup "$@"
