#!/usr/bin/env bash
# Every test, in one command (installs what it needs first):
#   1. C++ core vs the reference oracle, native (GoogleTest via CTest)
#   2. the same GoogleTest suite compiled to WASM (SIMD128, relaxed SIMD, scalar, pthreads,
#      pthreads + relaxed SIMD builds), run by node (CTest)
#   3. the hand-written types (tsc), then the JS API: PyTorch parity fixtures, bad inputs, leaks
#      (SIMD128, relaxed-SIMD and scalar modules, and on the worker pool with
#      WEBATTENTION_THREADS=2)
#   4. the demo page in headless Chromium; the WebGPU backend without a GPU (Node with npm
#      `webgpu` on SwiftShader's Vulkan driver, and headless Chromium's SwiftShader adapter)
#   5. as a user would: npm pack, install, Node ESM, Vite build, headless Chromium
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

step() { printf '\n=== %s ===\n' "$*"; }

step "C++ native: core vs reference"
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j "$JOBS"
ctest --test-dir build/native --output-on-failure

step "C++ as WASM under node, SIMD128, relaxed-SIMD, scalar, pthreads and pthreads + relaxed-SIMD builds: core vs reference; package modules"
bash scripts/build.sh
for variant in $WASM_VARIANTS; do
  dir="$(wasm_build_dir "$variant")"
  cmake --build "$dir" -j "$JOBS"
  ctest --test-dir "$dir" --output-on-failure
done

step "Types: web/index.d.ts against a user's TypeScript"
npx tsc -p tests/types/tsconfig.json

step "JS API and demo page (node --test), SIMD128 module"
node --test tests/js/ tests/browser/

step "JS API again on the relaxed-SIMD module (Node 20 runs relaxed SIMD behind a flag)"
WEBATTENTION_WASM=relaxed node --experimental-wasm-relaxed-simd --test tests/js/

step "JS API again on the scalar module (engines without WASM SIMD)"
WEBATTENTION_WASM=scalar node --test tests/js/

step "JS API again on the worker pool: every module made with threads: 2"
WEBATTENTION_THREADS=2 node --test tests/js/

step "WebGPU backend on SwiftShader (no GPU needed): Node (npm webgpu / Dawn) and headless Chromium"
node --test tests/webgpu/  # node.test.mjs points Dawn at SwiftShader (VK_ICD_FILENAMES)

step "Package as a user installs it"
node tests/package/run.mjs
