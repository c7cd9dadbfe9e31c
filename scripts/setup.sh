#!/usr/bin/env bash
# Set up kloop to run its main job in .venv/ at the repository root: the venv, torch (CPU build),
# kloop, Triton (interpreter mode on the CPU) and flashinfer-bench. Idempotent: a second run
# installs nothing new. Test-only tools (pytest, the agent CLIs + Node, chromium) are installed
# by scripts/test-tools.sh, which scripts/test.sh runs; the demo does not wait for them.
#
# Installs go through uv (from PyPI, into the venv) where it can be had: it downloads in parallel
# and unpacks wheels natively, where pip unpacks the 750 MB torch and 1 GB Triton wheels file by
# file in Python (here: torch 9 s with uv, 177 s with pip, side by side at load 27). uv reads no
# pip.conf, so the machine's pip find-links (where the CPU build of torch lies) are handed to it.
# Without uv, pip does the same installs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
say() { echo "setup: $*" >&2; }
if [ ! -x .venv/bin/python ]; then
  say "creating .venv/"
  "$PY" -m venv .venv
  touch .venv/.kloop-bytecode  # every install into it compiles its own (uv --compile-bytecode, pip by default)
fi
# What is missing, read from the installed packages' metadata in one interpreter (importing torch
# and Triton only to ask would take seconds each). kloop counts as missing when pyproject.toml
# changed since its last install.
STAMP=.venv/.kloop-installed
MISSING=$(.venv/bin/python - "$STAMP" <<'PY'
import importlib.metadata as md, os, sys
stamp = sys.argv[1]
def have(name: str, version: str | None = None) -> bool:
    try:
        found = md.version(name)
    except md.PackageNotFoundError:
        return False
    return version is None or found.split("+")[0] == version
missing = [] if have("torch", "2.13.0") else ["torch"]
fresh = os.path.exists(stamp) and os.path.getmtime("pyproject.toml") <= os.path.getmtime(stamp)
missing += [] if have("kloop") and fresh else ["kloop"]
missing += [] if have("triton") else ["triton"]
missing += [] if have("flashinfer-bench") else ["flashinfer-bench"]
print(" ".join(missing))
PY
)
has() { [[ " $MISSING " == *" $1 "* ]]; }

# Bytecode for every installed module and for kloop's own sources. uv writes none unless asked,
# and where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it) Python never caches any
# either, so each process compiled its imports from source: every sandbox imports torch (4.3 s
# without .pyc files, 2.0 s with), a fresh `kloop verify --no-timing` took 7.1 s instead of 3.9 s.
# A venv made before this step is compiled once (~30 s on 2 cores); later installs compile as they go.
compile_bytecode() {
  local site
  site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  if [ ! -f .venv/.kloop-bytecode ]; then
    say "compiling the venv's bytecode"
    .venv/bin/python -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
    touch .venv/.kloop-bytecode
  fi
  .venv/bin/python -m compileall -q -j 0 src >/dev/null 2>&1 || true
}
if [ -z "$MISSING" ]; then
  compile_bytecode
  exit 0
fi

# uv into the venv (a single wheel); pip where it cannot be had.
INSTALL=(.venv/bin/python -m pip install -q --disable-pip-version-check)
if [ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1; then
  INSTALL=(.venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python)
  # the machine's pip find-links: the CPU build of torch lies there (PyPI's torch is a CUDA build)
  LINKS=${PIP_FIND_LINKS:-$(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true)}
  for link in $LINKS; do INSTALL+=(--find-links "$link"); done
fi

# The CPU build of torch this machine kind offers (a bare 'torch' would download a CUDA build),
# kloop itself (editable) and Triton (correctness in interpreter mode on the CPU), in one resolve.
WANT=()
has torch && WANT+=("torch==2.13.0")
has kloop && WANT+=(-e .)
if [ ${#WANT[@]} -gt 0 ]; then
  say "installing $(echo "${MISSING/flashinfer-bench/}") with ${INSTALL[0]##*/}"
  if has triton && "${INSTALL[@]}" "${WANT[@]}" "triton>=3.3"; then
    MISSING=${MISSING/triton/}
  else
    "${INSTALL[@]}" "${WANT[@]}"
  fi
  has kloop && touch "$STAMP"
fi
if has triton; then
  say "installing triton"
  "${INSTALL[@]}" "triton>=3.3" || say "triton not installed; triton solutions will be skipped"
fi
# FlashInfer-Bench's own schema classes validate our trace output; its GPU dependencies are not needed.
if has flashinfer-bench; then
  say "installing flashinfer-bench (schemas only)"
  "${INSTALL[@]}" --no-deps "flashinfer-bench==0.1.2"
fi
compile_bytecode
