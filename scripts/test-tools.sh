#!/usr/bin/env bash
# The test suite's own tools, on top of scripts/setup.sh: kloop's test extras (pytest, xdist,
# hypothesis, ruff, ...), the pinned agent CLIs + Node 22 (scripts/agent-clis.sh) and Debian's
# chromium for the report's browser test. Idempotent; scripts/test.sh runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "test-tools: $*" >&2; }
STAMP=.venv/.kloop-test-installed
# The agent CLIs download and unpack ~1.3 GB (81 s here one after the other, most of it CPU): they
# install beside the test extras and the Debian tools, not after them.
bash scripts/agent-clis.sh & clis=$!
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || ! .venv/bin/python -c "import xdist, pytest" >/dev/null 2>&1; then
  say "installing kloop's test extras"
  if [ -x .venv/bin/uv ]; then  # scripts/setup.sh put it there; it reads no pip.conf, so the find-links go along
    LINKS=()
    for link in ${PIP_FIND_LINKS:-$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)}; do
      LINKS+=(--find-links "$link")
    done
    .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python "${LINKS[@]}" -e ".[test,cluster]"
  else
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,cluster]"
  fi
  touch "$STAMP"
fi
# Debian package PKG for the tests named by WHY, when none of the commands after it exists (CI runs as root).
apt_tool() {
  local pkg=$1 why=$2; shift 2
  for cmd in "$@"; do command -v "$cmd" >/dev/null 2>&1 && return 0; done
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing $pkg"
    (apt-get install -y -q "$pkg" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$pkg" >/dev/null 2>&1; }) \
      || say "$pkg not installed; $why will fail"
  else
    say "$pkg missing and not root: install Debian's '$pkg' package for $why"
  fi
}
# Headless Chromium renders report.html in the report's browser test.
apt_tool chromium "the report's browser test" chromium chromium-browser
# strace records the syscalls a contained writer agent was refused.
apt_tool strace "the agents' confinement audit tests" strace
# The pinned coding-agent CLIs (Claude Code, Codex, Kimi Code + Node 22), started above, for the adapters' tests.
wait "$clis"
