// bf16 projection kernel, portable C++: linear_scalar.h over its BF16Panel.
#include "kernels/scalar/linear_scalar.h"

namespace webattention::kernels {

void bf16_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
               int target_count) noexcept {
  scalar_linear::linear_panels<scalar_linear::BF16Panel>(x, rows, x_stride, targets, target_count);
}

}  // namespace webattention::kernels
