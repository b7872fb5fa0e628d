// q4 (int4) projection kernel, portable C++: linear_scalar.h over its Q4Panel.
#include "kernels/scalar/linear_scalar.h"

namespace webattention::kernels {

void q4_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  scalar_linear::linear_panels<scalar_linear::Q4Panel>(x, rows, x_stride, targets, target_count);
}

}  // namespace webattention::kernels
