#!/usr/bin/env bash
# Every test, in one command (installs what it needs first):
#   1. C++ core vs the reference oracle, native (GoogleTest via CTest), then fuzzed on a fixed path (~30 s)
#      (libFuzzer, ASan + UBSan; scripts/fuzz.sh)
#   2. the same GoogleTest suite compiled to WASM, one build per module of web/modules.json
#      (SIMD128, relaxed SIMD, scalar, pthreads, pthreads + relaxed SIMD), run by node (CTest)
#   3. the safetensors loader fuzzed for 15 s (tests/fuzz/safetensors_fuzz.mjs), the GGUF loader
#      for 10 s (tests/fuzz/gguf_fuzz.mjs), the JS boundary for
#      30 s (tests/fuzz/js_boundary_fuzz.mjs: hostile shapes, proxies, getters, realms); the
#      hand-written types (tsc), then the JS API: PyTorch parity fixtures, bad inputs, leaks
#      (on every single-threaded module of web/modules.json, and on the worker pool with
#      WEBATTENTION_THREADS=2)
#   4. the demo page in headless Chromium; the WebGPU backend without a GPU (Node with npm
#      `webgpu` on SwiftShader's Vulkan driver, and headless Chromium's SwiftShader adapter)
#   (node --test through scripts/node_test.mjs: a test file that hangs is stopped and named, not
#   waited on)
#   5. as a user would: npm pack, install, Node ESM, Vite build, headless Chromium; then every
#      code block of the README run as pasted against that tarball (Node, Chromium, Vite)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

# Each heading says how long the run has taken so far, so that a slow step shows in the log.
step() { printf '\n=== [%d min %02d s] %s ===\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

step "C++ native: core vs reference"
cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/native -j "$JOBS"
ctest --test-dir build/native --output-on-failure

step "C++ core under libFuzzer with ASan + UBSan against the reference: a fixed path of about 30 s (bash scripts/fuzz.sh N to search for N s)"
FUZZ_SEED=1 bash scripts/fuzz.sh

step "C++ as WASM under node, one build per module of web/modules.json ($WASM_VARIANTS): core vs reference; package modules"
bash scripts/build.sh
for variant in $WASM_VARIANTS; do
  dir="$(wasm_build_dir "$variant")"
  cmake --build "$dir" -j "$JOBS"
  ctest --test-dir "$dir" --output-on-failure
done

step "loadSafetensors() under a mutation fuzzer, 15 s (node tests/fuzz/safetensors_fuzz.mjs 1000000 for a long run)"
node tests/fuzz/safetensors_fuzz.mjs --seconds 15

step "loadGguf() under a mutation fuzzer, 10 s (node tests/fuzz/gguf_fuzz.mjs 1000000 for a long run)"
node tests/fuzz/gguf_fuzz.mjs --seconds 10

step "The JS boundary under a property-based fuzzer, 30 s: hostile tensors and options give a typed error or the right answer (node tests/fuzz/js_boundary_fuzz.mjs --seconds 600 for a long run)"
node tests/fuzz/js_boundary_fuzz.mjs --seconds 30 --seed 1

step "Types: web/index.d.ts against a user's TypeScript"
npx tsc -p tests/types/tsconfig.json

step "JS API and demo page (node --test), the module Node picks"
node $NODE_TEST_FLAGS scripts/node_test.mjs tests/js/ tests/browser/
default_module="$(node --input-type=module -e "import('./web/src/wasm/variant.js').then((v) => console.log(v.pickVariant()))")"

for variant in $SINGLE_THREADED_MODULES; do
  [ "$variant" = "$default_module" ] && continue
  step "JS API again on the $variant module"
  # shellcheck disable=SC2046  # the flags are words or nothing
  WEBATTENTION_WASM="$variant" node $NODE_TEST_FLAGS $(node_flags_for_module "$variant") scripts/node_test.mjs tests/js/
done

step "JS API again on the worker pool: every module made with threads: 2"
WEBATTENTION_THREADS=2 node $NODE_TEST_FLAGS scripts/node_test.mjs tests/js/

step "JS API's kernel cases on a pthreads module under Node (WEBATTENTION_WASM=mt: the core's own two threads, cached calls too)"
WEBATTENTION_WASM=mt WEBATTENTION_THREADS=2 node $NODE_TEST_FLAGS scripts/node_test.mjs tests/js/kernel_cases.test.js

step "WebGPU backend on SwiftShader (no GPU needed): Node (npm webgpu / Dawn) and headless Chromium"
node $NODE_TEST_FLAGS scripts/node_test.mjs tests/webgpu/  # node_setup.mjs points Dawn at SwiftShader (VK_ICD_FILENAMES)

step "Package as a user installs it, and every README code block as pasted"
node tests/package/run.mjs
step "All tests passed"
