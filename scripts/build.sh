#!/usr/bin/env bash
# Builds the package's five WASM modules into web/dist/ with Emscripten:
#   webattention_core.{mjs,wasm}         SIMD128 kernels (default)
#   webattention_core_relaxed.{mjs,wasm} SIMD128 + relaxed-SIMD multiply-add, where engines have it
#   webattention_core_scalar.{mjs,wasm}  portable kernels, for engines without WASM SIMD
#   webattention_core_mt.{mjs,wasm,worker.js}  SIMD128 + pthreads, for cross-origin-isolated pages
#   webattention_core_mt_relaxed.{mjs,wasm,worker.js}  the same with relaxed-SIMD multiply-add
# Each build folder also holds the GoogleTest suite for that variant (run by scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
for variant in $WASM_VARIANTS; do
  dir="$(wasm_build_dir "$variant")"; simd=ON; threads=OFF; relaxed=OFF
  case "$variant" in
    relaxed) relaxed=ON ;;
    scalar) simd=OFF ;;
    mt) threads=ON ;;
    mt-relaxed) threads=ON; relaxed=ON ;;
  esac
  emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWEBATTENTION_SIMD=$simd \
    -DWEBATTENTION_THREADS=$threads -DWEBATTENTION_RELAXED_SIMD=$relaxed \
    -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" >/dev/null
  cmake --build "$dir" --target webattention_wasm -j "$JOBS"
done
ls -l web/dist/
