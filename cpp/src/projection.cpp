#include "projection.h"

#include <algorithm>

#include "kernels/q8_rows.h"
#include "parallel.h"

namespace webattention {
namespace {

constexpr int kMaxTargets = 3;  // Q, K and V of one input
constexpr int kBlockRows = 4;   // the kernel's register block

// A few rows (a decode step: one per batch entry) split over the threads by weight panels: each
// thread reads its share of the weights, which is what bounds such a step, instead of one thread
// reading them all. Panels [begin, end) count across the targets, one after the other.
void project_by_panels(const float* x, int rows, std::ptrdiff_t x_stride,
                       const kernels::LinearTarget* targets, int target_count, int threads) {
  int total = 0;
  for (int t = 0; t < target_count; ++t) total += targets[t].weights->panel_count();
  // About four chunks per thread, each a multiple of 4 panels (the one-row loops' group). With
  // two, the caller waited for the last chunk of a slower or later thread (a VM's); each chunk
  // more restarts the weight streams, which the hardware prefetcher must find again: eight per
  // thread ran a two-thread step of the 24-layer stack 4-8 % slower than four on an Intel VM
  // (docs/performance/platform.md#threads).
  const int grain = std::max(4, ((total + 4 * threads - 1) / (4 * threads) + 3) / 4 * 4);
  // int8 activations: the rows quantised once here for every chunk, not again in each. A module's
  // weights share one activations mode.
  // The calling thread's scratch (q8_rows.h; the chunks' linear_quantised never quantises into
  // it), named by a reference the chunks capture: a thread_local named inside the lambda would be
  // each worker's own (empty) one.
  const bool int8_activations = targets[0].weights->quantises_input();
  kernels::Q8Rows& quantised = kernels::q8_rows_scratch();
  if (int8_activations) kernels::quantise_activations(x, rows, x_stride, targets[0].weights->in, quantised);
  parallel_for(total, grain, [&](int begin, int end) {
    kernels::LinearTarget part[kMaxTargets];
    int parts = 0, first = 0;
    for (int t = 0; t < target_count; ++t) {
      const int count = targets[t].weights->panel_count();
      const int b = std::max(begin - first, 0), e = std::min(end - first, count);
      if (b < e) {
        part[parts] = targets[t];
        part[parts].panel_begin = b;
        part[parts].panel_end = e;
        ++parts;
      }
      first += count;
    }
    if (int8_activations) {
      kernels::linear_quantised(quantised, part, parts);
    } else {
      kernels::linear(x, rows, x_stride, part, parts);
    }
  });
}

}  // namespace

void project(const float* x, int rows, std::ptrdiff_t x_stride,
             const kernels::LinearTarget* targets, int target_count) {
  const int threads = thread_count();
  // Split by panels where rows are too few for a 4-row block per thread, and the weights many
  // enough (about 1 MiB of f32) to be worth waking the threads for.
  std::size_t weights = 0;
  for (int t = 0; t < target_count; ++t) weights += static_cast<std::size_t>(targets[t].weights->in) * targets[t].weights->out;
  if (threads > 1 && rows < kBlockRows * threads && weights >= (std::size_t{1} << 18)) {
    project_by_panels(x, rows, x_stride, targets, target_count, threads);
    return;
  }
  // About two chunks per thread (dynamic balance), each a multiple of the kernel's 4-row block
  // and at least 32 rows so every chunk amortises its pass over the weights.
  const int per_chunk = (rows + 2 * threads - 1) / (2 * threads);
  const int chunk = std::max(32, (per_chunk + kBlockRows - 1) / kBlockRows * kBlockRows);
  parallel_for(rows, chunk, [&](int begin, int end) {  // one call fn(0, rows) on one thread
    kernels::LinearTarget shifted[kMaxTargets];
    for (int t = 0; t < target_count; ++t) {
      shifted[t] = targets[t];
      shifted[t].y += static_cast<std::ptrdiff_t>(begin) * targets[t].y_stride;
    }
    kernels::linear(x + begin * x_stride, end - begin, x_stride, shifted, target_count);
  });
}

void project_keys_values(const float* key, const float* value, int rows, int kdim, int vdim,
                         const kernels::LinearTarget& k, const kernels::LinearTarget& v) {
  if (key == value && kdim == vdim) {
    const kernels::LinearTarget both[] = {k, v};
    project(key, rows, kdim, both, 2);
  } else {
    project(key, rows, kdim, &k, 1);
    project(value, rows, vdim, &v, 1);
  }
}

}  // namespace webattention
