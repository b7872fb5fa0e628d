#!/usr/bin/env bash
# The int4 × int8 one-row loop per layout and instruction set, in Node (int4_dot.cpp says what).
# Usage: bash bench/limits/int4_dot/run.sh      (needs emcc: bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/env.sh
out=build/int4_dot
mkdir -p "$out"
em++ -std=c++17 -O3 -msimd128 -mrelaxed-simd -DWEBATTENTION_RELAXED_SIMD -Icpp/src -sENVIRONMENT=node -sALLOW_MEMORY_GROWTH=1 bench/limits/int4_dot/int4_dot.cpp -o "$out/int4_dot.cjs"
python3 scripts/relaxed_simd_opcodes.py "$out/int4_dot.wasm"
node --no-experimental-fetch --experimental-wasm-relaxed-simd "$out/int4_dot.cjs"
