#!/usr/bin/env bash
# Makes a fresh clone runnable: installs the locked dependencies when they are missing or stale,
# patches TypeScript for the typia transform, and builds every package. Each step says what it
# does and how long it took, on stderr: a first run installs and builds for minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '[setup %3ss] %s\n' "$SECONDS" "$1" >&2; }

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "installing the locked dependencies (npm ci; about a minute the first time)"
  npm ci --no-audit --no-fund --loglevel=error >&2
  step "installed"
fi
npx --no-install ts-patch install -s >&2
# turbo replays a build whose inputs did not change: a quick step after the first.
step "building every package (tsc with the typia transform, through turbo)"
TURBO_TELEMETRY_DISABLED=1 npx --no-install turbo run build --output-logs=errors-only >&2
step "built"
