#!/usr/bin/env bash
# Makes a fresh clone runnable: installs the locked dependencies when they are missing or stale,
# patches TypeScript for the typia transform, and builds every package.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund >&2
fi
npx --no-install ts-patch install -s >&2
TURBO_TELEMETRY_DISABLED=1 npx --no-install turbo run build --output-logs=errors-only >&2
