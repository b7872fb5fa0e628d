// Projections over many rows, split across threads by row blocks (see parallel.h).
#pragma once

#include "kernels/kernels.h"

namespace webattention {

// kernels::linear over `rows` rows of x, in row chunks on the available threads.
void project(const float* x, int rows, std::ptrdiff_t x_stride,
             const kernels::LinearTarget* targets, int target_count);

}  // namespace webattention
