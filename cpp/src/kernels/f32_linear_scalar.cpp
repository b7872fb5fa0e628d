// f32 projection kernel, portable C++: linear_scalar.h over its F32Panel.
#include "kernels/scalar/linear_scalar.h"

namespace webattention::kernels {

void f32_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  scalar_linear::linear_panels<scalar_linear::F32Panel>(x, rows, x_stride, targets, target_count);
}

// kernels.h's request: the portable kernels' loops are inlined into one call per projection, so
// there is no per-panel call to ask for early.
void request_optimised_linear(const PackedLinear&) noexcept {}

}  // namespace webattention::kernels
