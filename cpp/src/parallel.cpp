// A small persistent thread pool: workers sleep on a condition variable and take chunks of the
// current job through an atomic counter; the calling thread takes chunks too, then waits. After a
// job a worker watches for the next one a while before it sleeps: a decode step's jobs (its
// projections, its attention) take 50-100 µs each and follow each other closely, and a worker
// woken from its sleep joined a job tens of µs late, when the caller had done half of it.
#include "parallel.h"

#include <algorithm>

#ifdef WEBATTENTION_USE_THREADS
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#endif

namespace webattention {

#ifndef WEBATTENTION_USE_THREADS

int thread_count() { return 1; }

void set_thread_limit(int) {}

void parallel_for(int n, int, ChunkFn fn) {
  if (n > 0) fn(0, n);
}

#else

namespace {

thread_local bool inside_job = false;
std::atomic<int> thread_limit{1 << 30};

// How long a worker watches for the next job before it sleeps: longer than the gaps between a
// decode step's jobs (one layer's JS and single-threaded steps between two layers' projections),
// short enough that an idle page's workers are soon asleep.
constexpr auto kWatchForNextJob = std::chrono::microseconds(500);

// Gives the calling thread a thread_local with a destructor, before the pool's workers exist. The
// first such variable any thread meets registers its destructor through libc++abi's
// __cxa_thread_atexit, whose first call builds a function-local static under a guard: where a
// worker and the calling thread met theirs in the same job (the chunks' scratch: attention
// workspace, quantised rows), one of them waited for the other's guard on a condition variable.
// A browser's main thread that waits on one makes Emscripten warn on the console ("Blocking on the
// main thread is very dangerous"): 1 page in 20 of the pthreads module's parity page here.
void register_thread_exit_first() {
  thread_local std::vector<char> with_destructor;
  with_destructor.clear();
}
// One parallel_for call. Workers hold it through a shared_ptr, so one that wakes late sees its
// own (finished) job, never the next one's counter.
struct Job {
  const ChunkFn* fn;
  int n, grain;
  std::atomic<int> next{0};
  std::atomic<int> pending{0};  // chunks not finished yet
};

// The calling thread's hold on the pool mutex, taken by spinning on try_lock: a worker holds it
// only while it picks up or finishes a job, and a blocking lock is a futex wait, which a browser's
// main thread may not do (Emscripten's runtime busy-waits it there anyway).
class SpinLock {
 public:
  explicit SpinLock(std::mutex& m) : m_(m) {
    while (!m_.try_lock()) {
    }
  }
  ~SpinLock() { m_.unlock(); }
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

 private:
  std::mutex& m_;
};

class Pool {
 public:
  Pool() {
    register_thread_exit_first();
    const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
    const int workers = static_cast<int>(std::min(hw, 16u)) - 1;
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  int size() const { return static_cast<int>(threads_.size()) + 1; }

  void run(int n, int grain, const ChunkFn& fn) {
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    job->grain = grain;
    job->pending.store((n + grain - 1) / grain);
    {
      SpinLock lock(mutex_);
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    take_chunks(*job);
    // Spin for the last chunks instead of sleeping: they are about one chunk long, and a browser
    // main thread may not block in a futex wait (Emscripten warns and busy-waits there anyway).
    while (job->pending.load(std::memory_order_acquire) > 0) {
    }
    SpinLock lock(mutex_);
    job_.reset();
  }

 private:
  // Runs chunks of `job` until none is left.
  void take_chunks(Job& job) {
    inside_job = true;
    int finished = 0;
    for (;;) {
      const int begin = job.next.fetch_add(job.grain);
      if (begin >= job.n) break;
      (*job.fn)(begin, std::min(job.n, begin + job.grain));
      ++finished;
    }
    inside_job = false;
    if (finished) job.pending.fetch_sub(finished, std::memory_order_release);
  }

  void work() {
    unsigned seen = 0;
    for (;;) {
      watch_for_job(seen);
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
      if (stop_) return;
      seen = generation_.load();
      // Null where the caller finished the job alone before this worker came: it watches again.
      std::shared_ptr<Job> job = job_;
      lock.unlock();
      if (job) take_chunks(*job);
    }
  }

  // Returns once a job after `seen` is posted, or after kWatchForNextJob (the clock read every
  // 256 checks: in WASM it is a call out to JS).
  void watch_for_job(unsigned seen) const {
    const auto until = std::chrono::steady_clock::now() + kWatchForNextJob;
    for (unsigned checks = 1;; ++checks) {
      if (generation_.load(std::memory_order_acquire) != seen) return;
      if (checks % 256 == 0 && std::chrono::steady_clock::now() > until) return;
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  std::atomic<unsigned> generation_{0};
  bool stop_ = false;
};

Pool& pool() {
  static Pool instance;
  return instance;
}

std::mutex& caller_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

int thread_count() { return pool().size(); }

void set_thread_limit(int threads) { thread_limit.store(std::max(1, threads)); }

void parallel_for(int n, int grain, ChunkFn fn) {
  if (n <= 0) return;
  grain = std::max(1, grain);
  if (inside_job || n <= grain || thread_limit.load() == 1 || pool().size() == 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> one_job_at_a_time(caller_mutex());
  pool().run(n, grain, fn);
}

#endif

}  // namespace webattention
