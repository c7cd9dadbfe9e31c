#!/usr/bin/env bash
# Set up kloop to run its main job in .venv/ at the repository root: the venv, torch (CPU build),
# kloop, Triton (interpreter mode on the CPU) and flashinfer-bench. Idempotent: a second run
# installs nothing new. Test-only tools (pytest, the agent CLIs + Node, chromium) are installed
# by scripts/test-tools.sh, which scripts/test.sh runs; the demo does not wait for them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { echo "setup: $*" >&2; }
PIP=".venv/bin/python -m pip"
PIPQ="$PIP install -q --disable-pip-version-check"
if [ ! -x .venv/bin/python ]; then
  say "creating .venv/"
  "$PY" -m venv .venv
  $PIPQ --upgrade pip >/dev/null 2>&1 || true
fi
# The CPU build of torch this machine kind offers (a bare 'torch' would download a CUDA build).
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  say "installing torch==2.13.0 (CPU build)"
  $PIPQ "torch==2.13.0"
fi
# kloop itself; re-installed only when pyproject.toml changed since the last install.
STAMP=.venv/.kloop-installed
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || ! .venv/bin/python -c "import kloop" >/dev/null 2>&1; then
  say "installing kloop (editable)"
  $PIPQ -e .
  touch "$STAMP"
fi
# Triton runs correctness in interpreter mode on the CPU.
if ! .venv/bin/python -c "import triton" >/dev/null 2>&1; then
  say "installing triton"
  $PIPQ "triton>=3.3" || say "triton not installed; triton solutions will be skipped"
fi
# FlashInfer-Bench's own schema classes validate our trace output; its GPU dependencies are not needed.
if ! .venv/bin/python -c "import flashinfer_bench" >/dev/null 2>&1; then
  say "installing flashinfer-bench (schemas only)"
  $PIPQ --no-deps "flashinfer-bench==0.1.2"
fi
