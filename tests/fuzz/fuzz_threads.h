// The core's threads inside a harness, set from LLVMFuzzerInitialize. libFuzzer's coverage
// counters are plain bytes bumped without atomics, and inline functions that the core shares with a
// harness are counted wherever the linker keeps the harness's instrumented copy, so two threads
// bumping one counter lose counts at random: with the pool's worker the same input's features
// varied from run to run (the kept corpus replayed one input at a time: 209 or 212 of the same
// input), and a fixed seed did not fix the path. WEBATTENTION_FUZZ_THREADS=1 (scripts/fuzz.sh
// sets it with FUZZ_SEED) keeps the core on the calling thread, where a seed and a run count fix
// the path; unset, the pool's every thread runs (long runs that look for finds in threaded paths).
#pragma once

#include <cstdlib>

#include "parallel.h"

namespace webattention::fuzz {

inline void limit_threads_from_environment() {
  if (const char* threads = std::getenv("WEBATTENTION_FUZZ_THREADS")) set_thread_limit(std::atoi(threads));
}

}  // namespace webattention::fuzz
