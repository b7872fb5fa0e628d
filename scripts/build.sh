#!/usr/bin/env bash
# Builds the package's two WASM modules into web/dist/ with Emscripten:
#   webattention_core.{mjs,wasm}         SIMD128 kernels (default)
#   webattention_core_scalar.{mjs,wasm}  portable kernels, for engines without WASM SIMD
# Each build folder also holds the GoogleTest suite for that variant (run by scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
for variant in simd scalar; do
  dir=build/wasm; simd=ON
  [ "$variant" = scalar ] && dir=build/wasm-scalar && simd=OFF
  emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWEBATTENTION_SIMD=$simd \
    -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" >/dev/null
  cmake --build "$dir" --target webattention_wasm -j "$JOBS"
done
ls -l web/dist/
