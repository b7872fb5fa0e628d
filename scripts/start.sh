#!/usr/bin/env bash
# The main job: install what is missing, build the WASM module, then serve the demo at
# http://127.0.0.1:${PORT:-8080}/web/demo/ (loopback only) until stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export PORT="${PORT:-8080}" HOST="${HOST:-127.0.0.1}"
exec node scripts/serve.mjs "$PORT"
