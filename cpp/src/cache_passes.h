// The one pass splitter of a cached forward (docs/attention-math/decoding.md §9): a step of `rows` new
// rows runs as consecutive passes of at most rows_per_pass rows (RingGeometry), each appending
// its rows to the cache and attending before the next overwrites a slot. The WebGPU backend
// splits the same way (web/src/webgpu/cached_passes.js).
#pragma once

#include <algorithm>
#include <cstdint>

namespace webattention {

// Calls pass(first_row, pass_rows) for the passes [first_row, first_row + pass_rows), in order.
template <class Pass>
void for_each_pass(int rows, std::int64_t rows_per_pass, Pass&& pass) {
  for (int r0 = 0; r0 < rows;) {
    const int n = static_cast<int>(std::min<std::int64_t>(rows_per_pass, rows - r0));
    pass(r0, n);
    r0 += n;
  }
}

}  // namespace webattention
