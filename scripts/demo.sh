#!/usr/bin/env bash
# Set up kloop, then run its main job on a shipped CPU example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/kloop verify examples/rmsnorm examples/rmsnorm/solutions/cpp_fused
