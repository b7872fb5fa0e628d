#!/usr/bin/env bash
# Builds the package's WASM module (web/dist/webattention_core.{mjs,wasm}) with Emscripten.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" >/dev/null
cmake --build build/wasm --target webattention_wasm -j "$JOBS"
ls -l web/dist/webattention_core.mjs web/dist/webattention_core.wasm
