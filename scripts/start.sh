#!/usr/bin/env bash
# The main job: install what is missing, build the WASM module and the static copy of the demo
# (npm run build:demo: build/demo), then serve the demo at http://127.0.0.1:${PORT:-8080}/web/demo/
# (loopback only; the static copy at /build/demo/) until stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
node scripts/build_demo.mjs
export PORT="${PORT:-8080}" HOST="${HOST:-127.0.0.1}"
exec node scripts/serve.mjs "$PORT"
