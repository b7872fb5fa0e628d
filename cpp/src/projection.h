// Projections over many rows, split across threads by row blocks (see parallel.h).
#pragma once

#include "kernels/kernels.h"

namespace webattention {

// kernels::linear over `rows` rows of x, in row chunks on the available threads.
void project(const float* x, int rows, std::ptrdiff_t x_stride,
             const kernels::LinearTarget* targets, int target_count);

// The keys (rows of kdim) and values (rows of vdim) of `rows` rows into targets k and v: read once
// for both when they are the same tensor of one width, else each from its own. Shared by the
// forward (project_inputs) and encode(), so that both pick the shared read alike.
void project_keys_values(const float* key, const float* value, int rows, int kdim, int vdim,
                         const kernels::LinearTarget& k, const kernels::LinearTarget& v);

}  // namespace webattention
