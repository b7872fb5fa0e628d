#!/usr/bin/env bash
# The SIMD limit of this CPU, one core: f32x4 mul+add natively (SSE, no FMA) and in WASM SIMD128
# under Node (V8), plus native 128-bit FMA for comparison (what relaxed SIMD would allow).
# Usage: bash bench/limits/simd_peak/run.sh     (needs gcc and emcc: bash scripts/setup.sh; ENGINES="node chromium"
# runs the register blocks in those engines only)
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/env.sh
out=build/simd_peak
mkdir -p "$out"
src=bench/limits/simd_peak/simd_peak.c
gcc -O2 -mavx -mno-fma -ffp-contract=off "$src" -o "$out/native_mul_add"
gcc -O2 -mavx -mfma -ffp-contract=fast "$src" -o "$out/native_fma" -DPEAK_FMA
# One-caller inlining would fold run() into main(), which V8 then never tiers up.
emcc -O3 -msimd128 -sENVIRONMENT=node -sBINARYEN_EXTRA_PASSES=--one-caller-inline-max-function-size=100 \
  "$src" -o "$out/wasm_mul_add.cjs"
echo "native f32x4 mul+add: $("$out/native_mul_add" 200000000 1 0)"
echo "native f32x4 FMA:     $("$out/native_fma" 200000000 1 0)"
# --no-experimental-fetch: Emscripten 3.1.6's glue would fetch() the .wasm path under Node 18+.
echo "WASM SIMD128 mul+add: $(node --no-experimental-fetch "$out/wasm_mul_add.cjs" 200000000 1 0)"
if grep -qw avx512vl /proc/cpuinfo; then
  gcc -O2 -mavx512f -mavx512vl bench/limits/simd_peak/simd_peak_avx512vl.c -o "$out/native_mul_add_24_registers"
  echo "native f32x4 mul+add, 24 registers (hand-written): $("$out/native_mul_add_24_registers" 200000000)"
fi
# Register blocks (acc[r][c] += broadcast(x[r][k]) · w[k][c]) and FMA / mul+add chains, in
# relaxed SIMD and SIMD128 in Node, Chromium and Firefox (bench/limits/simd_peak/register_blocks.cpp).
# clang 14 emits the prototype FMA opcode: rewritten as in the package's build.
em++ -std=c++17 -O3 -msimd128 -mrelaxed-simd -DWEBATTENTION_RELAXED_SIMD -Icpp/src -sENVIRONMENT=web,node bench/limits/simd_peak/register_blocks.cpp \
  -o "$out/register_blocks.cjs"
python3 scripts/relaxed_simd_opcodes.py "$out/register_blocks.wasm"
node bench/limits/simd_peak/engines.mjs ${ENGINES:-node chromium firefox}
