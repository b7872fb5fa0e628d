#!/usr/bin/env bash
# Builds build/membw/membw.wasm from membw.c and stream_work.c: a standalone module (no imports, no glue) whose
# memory can grow to 2 GiB. bench/decode/decode.mjs runs this when the file is missing.
# Usage: bash bench/limits/membw/build.sh     (needs emcc: bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/env.sh
mkdir -p build/membw
emcc -O3 -msimd128 --no-entry -sSTANDALONE_WASM -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=2GB \
  bench/limits/membw/membw.c bench/limits/membw/stream_work.c -o build/membw/membw.wasm
