#!/usr/bin/env bash
# The test suite's own tools, on top of scripts/setup.sh: kloop's test extras (pytest, xdist,
# hypothesis, ruff, ...), the pinned agent CLIs + Node 22 (scripts/agent-clis.sh) and Debian's
# chromium for the report's browser test. Idempotent; scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "test-tools: $*" >&2; }
STAMP=.venv/.kloop-test-installed
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || ! .venv/bin/python -c "import xdist, pytest" >/dev/null 2>&1; then
  say "installing kloop's test extras"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,cluster]"
  touch "$STAMP"
fi
# The pinned coding-agent CLIs (Claude Code, Codex, Kimi Code + Node 22) into .tools/ for the adapters' tests.
bash scripts/agent-clis.sh
# Headless Chromium renders report.html in the report tests (Debian's package; CI runs as root).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing chromium"
    (apt-get install -y -q chromium >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }) \
      || say "chromium not installed; the report's browser test will fail"
  else
    say "chromium missing and not root: install Debian's 'chromium' package for the report tests"
  fi
fi
# strace records the syscalls a contained writer agent was refused (the agents' confinement tests).
if ! command -v strace >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing strace"
    (apt-get install -y -q strace >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q strace >/dev/null 2>&1; }) \
      || say "strace not installed; the confinement audit tests will fail"
  else
    say "strace missing and not root: install Debian's 'strace' package for the confinement tests"
  fi
fi
