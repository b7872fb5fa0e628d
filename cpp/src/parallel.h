// Work splitting for the multi-threaded builds (native, and the WASM pthreads module used on
// cross-origin-isolated pages). In single-threaded builds parallel_for() is a plain call, so the
// core has one code path.
#pragma once

#include <memory>
#include <type_traits>

namespace webattention {

// The work parallel_for() runs, held by reference: the caller's lambda outlives the call, which
// returns when every chunk is done. std::function allocated for a lambda of more than a few
// captures: three mallocs and frees in every forward (docs/performance/memory_and_startup.md#cold-start).
class ChunkFn {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, ChunkFn>>>
  ChunkFn(F&& f)  // implicit: each call site passes its lambda as it is
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, int begin, int end) {
          (*static_cast<std::remove_reference_t<F>*>(object))(begin, end);
        }) {}
  void operator()(int begin, int end) const { call_(object_, begin, end); }

 private:
  void* object_;
  void (*call_)(void*, int, int);
};

// Threads parallel_for() spreads work over, the calling thread included (1 without threads).
int thread_count();

// Caps the threads later parallel_for() calls use; 1 makes them serial (a module created with
// threads: 1 in the pthreads build). Default: every thread of the pool.
void set_thread_limit(int threads);

// Calls fn(begin, end) on disjoint chunks covering [0, n) — chunks of `grain` indices, the last
// shorter — on the pool's threads and the caller; returns when every chunk is done. With one
// thread, for n <= grain, and for nested calls (from inside fn) it is one call fn(0, n).
void parallel_for(int n, int grain, ChunkFn fn);

}  // namespace webattention
