#!/usr/bin/env bash
# Set up kloop in .venv/ at the repository root. Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/python -m pip"
$PIP install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
# The CPU build of torch this machine kind offers (a bare 'torch' would download a CUDA build).
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  $PIP install -q --disable-pip-version-check "torch==2.13.0"
fi
$PIP install -q --disable-pip-version-check -e ".[test]"
# Triton runs correctness in interpreter mode on the CPU.
if ! .venv/bin/python -c "import triton" >/dev/null 2>&1; then
  $PIP install -q --disable-pip-version-check "triton>=3.3" || echo "setup: triton not installed; triton solutions will be skipped" >&2
fi
# The pinned coding-agent CLIs (Claude Code, Codex, Kimi Code + Node 22) into .tools/ for the adapters' tests.
bash scripts/agent-clis.sh
# FlashInfer-Bench's own schema classes validate our trace output; its GPU dependencies are not needed.
if ! .venv/bin/python -c "import flashinfer_bench" >/dev/null 2>&1; then
  $PIP install -q --disable-pip-version-check --no-deps "flashinfer-bench==0.1.2"
fi
# Headless Chromium renders report.html in the report tests (Debian's package; CI runs as root).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
      || echo "setup: chromium not installed; the report's browser test will fail" >&2
  else
    echo "setup: chromium missing and not root: install Debian's 'chromium' package for the report tests" >&2
  fi
fi
