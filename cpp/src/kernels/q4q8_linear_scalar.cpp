// q4 (int4) weights times int8 activations, portable C++: scalar/q8_linear_scalar.h over Q4Codes.
#include "kernels/scalar/q8_linear_scalar.h"

namespace webattention::kernels {

void q4q8_linear(const float* x, int rows, std::ptrdiff_t x_stride, const LinearTarget* targets,
                 int target_count) noexcept {
  scalar_q8::linear_panels<scalar_q8::Q4Codes>(x, rows, x_stride, targets, target_count);
}

void q4q8_linear_rows(const Q8Rows& q, const LinearTarget* targets, int target_count) noexcept {
  q8_panels(q, targets, target_count, scalar_q8::panel_rows<scalar_q8::Q4Codes>);
}

}  // namespace webattention::kernels
