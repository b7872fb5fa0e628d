#!/usr/bin/env bash
# Builds the package's WASM modules, those web/modules.json lists, into web/dist/ with
# Emscripten: <stem>.mjs + <stem>.wasm each (+ <stem>.worker.js for the pthreads ones), and their
# loaders (scripts/gen_modules.mjs), and the bundled Node entry (scripts/bundle_node.mjs). Each build folder also holds the GoogleTest suite for that
# module (run by scripts/test.sh). Also the package's prepack step (npm pack, npm publish).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# From empty: the package ships web/dist whole, so nothing a past build left (a module since
# taken out of web/modules.json) may stay. The modules are relinked, not recompiled.
rm -rf web/dist
node scripts/gen_modules.mjs
for variant in $WASM_VARIANTS; do
  dir="$(wasm_build_dir "$variant")"
  emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWEBATTENTION_MODULE="$variant" \
    -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" >/dev/null
  cmake --build "$dir" --target webattention_wasm -j "$JOBS"
done
# Again, now that the pthreads modules' worker scripts are built: browser_modules.js embeds them.
node scripts/gen_modules.mjs
# The Node entry (web/dist/node.js, package.json's "node" export, with its chunks) and its pool
# worker's: a cold start loads two files instead of the ~40 of web/src.
node scripts/bundle_node.mjs
ls -l web/dist/
