// Work splitting for the multi-threaded builds (native, and the WASM pthreads module used on
// cross-origin-isolated pages). In single-threaded builds parallel_for() is a plain call, so the
// core has one code path.
#pragma once

#include <functional>

namespace webattention {

// Threads parallel_for() spreads work over, the calling thread included (1 without threads).
int thread_count();

// Caps the threads later parallel_for() calls use; 1 makes them serial (a module created with
// threads: 1 in the pthreads build). Default: every thread of the pool.
void set_thread_limit(int threads);

// Calls fn(begin, end) on disjoint chunks covering [0, n) — chunks of `grain` indices, the last
// shorter — on the pool's threads and the caller; returns when every chunk is done. With one
// thread, for n <= grain, and for nested calls (from inside fn) it is one call fn(0, n).
void parallel_for(int n, int grain, const std::function<void(int begin, int end)>& fn);

}  // namespace webattention
