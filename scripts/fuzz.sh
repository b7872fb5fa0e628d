#!/usr/bin/env bash
# Fuzzes the C++ core for N seconds in all (default 60, split between the harnesses) with
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer:
#   tests/fuzz/mha_fuzz.cpp     multi-head attention against the float64 reference
#   tests/fuzz/decode_fuzz.cpp  KV cache / GQA / RoPE: chunks fed to a cache = one plain forward
#   bash scripts/fuzz.sh [seconds]
# FUZZ_SEED=N fixes libFuzzer's seed (scripts/test.sh does); unset, each run draws its own (long
# runs that look for new finds). A fixed seed does not fix the path: two 15 s runs of mha_fuzz with
# seed 1 took different ones, and only one met a failing input. Nor does a fixed -runs=N with
# -reload=0 (two runs of 20 000 from seed 1 kept 288 and 290 inputs): the core's thread pool runs
# inside the harnesses, and which of its branches an input covers follows timing.
# Seeds come from tests/fuzz/corpus/<harness>/ (kept in the repo); new inputs go to
# build/fuzz/corpus/<harness>/. A crash leaves its input in build/fuzz/ (crash-*): replay it with
# build/fuzz/<harness> FILE. To fold new finds into the kept corpus (smallest set, same coverage):
#   build/fuzz/mha_fuzz -merge=1 tests/fuzz/corpus/mha_fuzz build/fuzz/corpus/mha_fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
seed="${FUZZ_SEED:-0}"  # libFuzzer: 0 draws a seed
harnesses=(mha_fuzz decode_fuzz)
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEBATTENTION_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" >/dev/null
cmake --build build/fuzz --target "${harnesses[@]}" -j "$(nproc)"
cd build/fuzz
for h in "${harnesses[@]}"; do
  mkdir -p "corpus/$h"
  echo "--- $h, $((seconds / ${#harnesses[@]})) s"
  # -timeout: one input running 20 s is a hang, a finding (libFuzzer's default, 1200 s, never fires here).
  "./$h" -max_total_time="$((seconds / ${#harnesses[@]}))" -timeout=20 -seed="$seed" -max_len=8192 -print_final_stats=1 "corpus/$h" "../../tests/fuzz/corpus/$h"
done
