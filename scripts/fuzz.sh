#!/usr/bin/env bash
# Fuzzes the C++ core for N seconds (default 60) with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer: tests/fuzz/mha_fuzz.cpp against the float64 reference.
#   bash scripts/fuzz.sh [seconds]
# Seeds come from tests/fuzz/corpus/ (kept in the repo); new inputs go to build/fuzz/corpus/.
# A crash leaves its input in build/fuzz/ (crash-*): replay it with build/fuzz/mha_fuzz FILE.
# To fold new finds into the kept corpus (smallest set with the same coverage):
#   build/fuzz/mha_fuzz -merge=1 tests/fuzz/corpus build/fuzz/corpus
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEBATTENTION_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" >/dev/null
cmake --build build/fuzz --target mha_fuzz -j "$(nproc)"
mkdir -p build/fuzz/corpus
cd build/fuzz
./mha_fuzz -max_total_time="$seconds" -max_len=8192 -print_final_stats=1 corpus ../../tests/fuzz/corpus
