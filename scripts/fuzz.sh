#!/usr/bin/env bash
# Fuzzes the C++ core with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer:
#   tests/fuzz/mha_fuzz.cpp     multi-head attention against the float64 reference
#   tests/fuzz/decode_fuzz.cpp  KV cache / GQA / RoPE: chunks fed to a cache = one plain forward
#   bash scripts/fuzz.sh [seconds]    a search for new finds: N seconds in all (default 60, split
#                                     between the harnesses), a seed of its own, the pool's threads
#   FUZZ_SEED=N bash scripts/fuzz.sh  a fixed path (scripts/test.sh): the same inputs on every
#                                     machine, a fixed count per harness (SEEDED_RUNS below)
# A fixed path needs more than a seed. The core runs on the calling thread alone
# (WEBATTENTION_FUZZ_THREADS=1, tests/fuzz/fuzz_threads.h): libFuzzer's coverage counters are
# bumped without atomics, and with the pool's worker the same input counted differently from run
# to run. No comparison operands guide the mutations (-use_cmp=0 -use_memmem=0): they carry
# addresses, which differ between runs and between builds in other folders. Address randomisation
# is off where setarch may turn it off: decode_fuzz's corpus counted one feature more in a few
# replays of six, and with it off the same in each (yet one more in a build in another folder). And
# a count of inputs, not seconds, ends each harness.
# Seeds come from tests/fuzz/corpus/<harness>/ (kept in the repo); new inputs go to
# build/fuzz/corpus/<harness>/ (with FUZZ_SEED to build/fuzz/seeded/<harness>/, emptied first).
# A crash leaves its input in build/fuzz/ (crash-*): replay it with build/fuzz/<harness> FILE.
# To fold new finds into the kept corpus (smallest set, same coverage):
#   build/fuzz/mha_fuzz -merge=1 tests/fuzz/corpus/mha_fuzz build/fuzz/corpus/mha_fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
harnesses=(mha_fuzz decode_fuzz)
# Inputs per harness on a fixed path: about 15 s each on one 3 GHz core.
declare -A SEEDED_RUNS=([mha_fuzz]=60000 [decode_fuzz]=15000)
run=()  # what runs each harness: setarch with a fixed path where it may
if [ -n "${FUZZ_SEED:-}" ]; then
  export WEBATTENTION_FUZZ_THREADS=1
  if setarch "$(uname -m)" -R true 2>/dev/null; then
    run=(setarch "$(uname -m)" -R)
  else
    echo "fuzz.sh: setarch cannot turn address randomisation off here; the path may vary" >&2
  fi
fi
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEBATTENTION_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" >/dev/null
cmake --build build/fuzz --target "${harnesses[@]}" -j "$(nproc)"
cd build/fuzz
for h in "${harnesses[@]}"; do
  if [ -n "${FUZZ_SEED:-}" ]; then
    found="seeded/$h"
    rm -rf "$found"
    budget=(-seed="$FUZZ_SEED" -runs="${SEEDED_RUNS[$h]}" -reload=0 -use_cmp=0 -use_memmem=0)
  else
    found="corpus/$h"  # kept across long runs
    budget=(-max_total_time="$((seconds / ${#harnesses[@]}))")
  fi
  mkdir -p "$found"
  echo "--- $h, ${budget[*]}"
  # -timeout: one input running 20 s is a hang, a finding (libFuzzer's default, 1200 s, never fires here).
  "${run[@]}" "./$h" "${budget[@]}" -timeout=20 -max_len=8192 -print_final_stats=1 "$found" "../../tests/fuzz/corpus/$h"
done
