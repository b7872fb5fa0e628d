#include "projection.h"

#include <algorithm>

#include "parallel.h"

namespace webattention {

void project(const float* x, int rows, std::ptrdiff_t x_stride,
             const kernels::LinearTarget* targets, int target_count) {
  constexpr int kMaxTargets = 3;  // Q, K and V of one input
  // About two chunks per thread (dynamic balance), each a multiple of the kernel's 4-row block
  // and at least 32 rows so every chunk amortises its pass over the weights.
  const int threads = thread_count();
  const int per_chunk = (rows + 2 * threads - 1) / (2 * threads);
  const int chunk = std::max(32, (per_chunk + 3) / 4 * 4);
  parallel_for(rows, chunk, [&](int begin, int end) {  // one call fn(0, rows) on one thread
    kernels::LinearTarget shifted[kMaxTargets];
    for (int t = 0; t < target_count; ++t) {
      shifted[t] = targets[t];
      shifted[t].y += static_cast<std::ptrdiff_t>(begin) * targets[t].y_stride;
    }
    kernels::linear(x + begin * x_stride, end - begin, x_stride, shifted, target_count);
  });
}

}  // namespace webattention
