#!/usr/bin/env bash
# The main job: install what is missing, build the WASM modules (when their sources changed) and
# the static copy of the demo (npm run build:demo: build/demo), then serve the demo at http://127.0.0.1:${PORT:-8080}/web/demo/
# (loopback only; the static copy at /build/demo/) until stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Relink the WASM modules only when something they are made from changed since the last build
# here (the stamp in build/): an unchanged tree serves in about a second instead of relinking all
# five modules (about 17 s). A full build is always `npm run build`.
stamp=build/wasm-modules.stamp
sources=(cpp CMakeLists.txt web/modules.json scripts/build.sh scripts/env.sh scripts/gen_modules.mjs scripts/relaxed_simd_opcodes.py scripts/wasm_code.py)
if [ ! -f "$stamp" ] || [ ! -f web/dist/browser_modules.js ] || [ -n "$(find "${sources[@]}" -newer "$stamp" -print -quit)" ]; then
  bash scripts/build.sh
  mkdir -p build && touch "$stamp"
fi
node scripts/build_demo.mjs
export PORT="${PORT:-8080}" HOST="${HOST:-127.0.0.1}"
exec node scripts/serve.mjs "$PORT"
