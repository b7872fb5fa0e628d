#!/usr/bin/env bash
# A decode step's one-row projections per weights type (projection.cpp), through the package's own
# kernels (the simd and relaxed modules' core libraries), in Node, Chromium and Firefox
# (compare.mjs). With SOURCE=<another checkout> (e.g. a git worktree of an older commit), that
# checkout's kernels too, in the same runs, interleaved: an A/B.
# Usage: [SOURCE=DIR] [ENGINES="node chromium"] [TYPES=f32,int4a8] [VARIANTS=relaxed] [COPIES=24] [ROWS=512] bash bench/decode/projection/run.sh   (needs emcc: bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/../../.."
source scripts/env.sh
out=build/decode_projection
mkdir -p "$out"
# Builds $out/$2_$3 from checkout $1's module $3 (its core library, built in its build folder).
build() {
  local src dir
  src="$(realpath "$1")"
  dir="$src/$(wasm_build_dir "$3")"
  [ -f "$dir/CMakeCache.txt" ] || emcmake cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWEBATTENTION_MODULE="$3" \
    -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)" >/dev/null
  cmake --build "$dir" --target webattention_core -j "$JOBS" >/dev/null
  # The package's link options (CMakeLists.txt), so that Binaryen inlines the same calls: with its
  # default it inlined the one-row kernel into its one caller, which V8 then compiled otherwise.
  local flags=(-msimd128 "$(grep -o -- '-sBINARYEN_EXTRA_PASSES=[^)]*' CMakeLists.txt)")
  [ "$3" = relaxed ] && flags+=(-mrelaxed-simd)
  em++ -std=c++17 -O3 "${flags[@]}" -fwasm-exceptions -I"$src/cpp/src" -I"$src/cpp/include" -sENVIRONMENT=web,node \
    -sMODULARIZE -sALLOW_MEMORY_GROWTH -sMAXIMUM_MEMORY=4GB -sEXPORTED_FUNCTIONS=_setup,_run,_multiply_adds \
    bench/decode/projection/projection.cpp "$dir/libwebattention_core.a" -o "$out/$2_$3.cjs"
  if [ "$3" = relaxed ]; then python3 scripts/relaxed_simd_opcodes.py "$out/$2_$3.wasm" >/dev/null; fi
}
for variant in ${VARIANTS:-simd relaxed}; do
  names=()
  if [ -n "${SOURCE:-}" ]; then build "$SOURCE" before "$variant"; names+=("$out/before_$variant"); fi
  build . this "$variant"
  names+=("$out/this_$variant")
  for engine in ${ENGINES:-node chromium firefox}; do
    flags=()
    [ "$variant" = relaxed ] && [ "$engine" = node ] && flags+=(--experimental-wasm-relaxed-simd)
    node "${flags[@]}" bench/decode/projection/compare.mjs --engine "$engine" --types "${TYPES:-f32,f16,int8}" --copies "${COPIES:-1}" --rows "${ROWS:-1}" "${names[@]}"
  done
done
