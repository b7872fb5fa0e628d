// i8 (int8) weights times int8 activations, portable C++: scalar/q8_linear_scalar.h over I8Codes.
#include "kernels/scalar/q8_linear_scalar.h"

namespace webattention::kernels {

void i8q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  scalar_q8::linear_panels<scalar_q8::I8Codes>(x, rows, x_stride, targets, target_count);
}

}  // namespace webattention::kernels
